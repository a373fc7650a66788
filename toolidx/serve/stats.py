"""`toolidx stats`: what serving the index saves in an agent's context.

A client that connects to every server puts every tool definition (name, description, input and
output schemas, annotations: the `tools/list` entries) into the model's context. Through
`toolidx serve` it gets the six meta-tools instead. Both sides are counted with
`budget.estimate_tokens` (compact JSON characters / 4): a documented approximation, the same on
every machine, applied identically to both sides so the ratio is fair.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

from ..core.budget import CHARS_PER_TOKEN, estimate_tokens
from ..core.filters import Filters
from ..store.db import Database
from ..store.stats import definitions_by_server, server_statuses
from .metatools import META_TOOLS, meta_tools


class ServerTokens(TypedDict):
    server: str
    status: str | None
    tools: int
    tokens: int
    max_tool_tokens: int


class IndexStats(TypedDict):
    """What `index_stats` returns (the `stats --json` document's body)."""

    servers: list[ServerTokens]
    tools: int
    tool_tokens: int
    meta_tools: int
    meta_tokens: int
    saved_tokens: int
    saving_pct: float
    ratio: float | None
    tokenizer: str
    filters: dict[str, Any]
    cache: dict[str, Any]


def catalog_of(db: Database, rows: list[ServerTokens], filters: Filters | None) -> tuple:
    """The catalog summary serve puts in search_tools' description, for these rows."""
    from ..catalog.listing import categories

    cats = [c.name for c in categories(db, filters).categories if c.name]
    return sum(r["tools"] for r in rows), [(r["server"], r["tools"]) for r in rows], cats


def index_stats(db: Database, filters: Filters | None = None) -> IndexStats:
    """{"servers": [{"server", "status", "tools", "tokens", "max_tool_tokens"}], "tools",
    "tool_tokens", "meta_tools", "meta_tokens", "saved_tokens", "saving_pct", "ratio", "tokenizer"}."""
    defs = definitions_by_server(db, filters)
    status = server_statuses(db)
    rows: list[ServerTokens] = []
    for server, items in sorted(defs.items()):
        per = [estimate_tokens(json.loads(d)) for d in items]
        rows.append(
            {
                "server": server,
                "status": status.get(server),
                "tools": len(items),
                "tokens": sum(per),
                "max_tool_tokens": max(per) if per else 0,
            }
        )
    rows.sort(key=lambda r: (-r["tokens"], r["server"]))
    total = sum(r["tokens"] for r in rows)
    meta = sum(estimate_tokens(t) for t in meta_tools(catalog=catalog_of(db, rows, filters)))  # as sent
    return {
        "servers": rows,
        "tools": sum(r["tools"] for r in rows),
        "tool_tokens": total,
        "meta_tools": len(META_TOOLS),
        "meta_tokens": meta,
        "saved_tokens": total - meta,
        "saving_pct": round(100.0 * (total - meta) / total, 1) if total else 0.0,
        "ratio": round(total / meta, 1) if meta else None,
        "tokenizer": f"approximation: ceil(compact JSON characters / {CHARS_PER_TOKEN}) per definition",
        "filters": filters.to_json() if filters else {},
        # what this process derived from the index so far (store/cache.py): entries and their sizes
        "cache": db.cache.stats(),
    }
