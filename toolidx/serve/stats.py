"""`toolidx stats`: what serving the index saves in an agent's context.

A client that connects to every server puts every tool definition (name, description, input and
output schemas, annotations: the `tools/list` entries) into the model's context. Through
`toolidx serve` it gets the six meta-tools instead. Both sides are counted with
`budget.estimate_tokens` (compact JSON characters / 4): a documented approximation, the same on
every machine, applied identically to both sides so the ratio is fair.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..core.budget import CHARS_PER_TOKEN, estimate_tokens
from ..core.filters import Filters
from ..store.index import Reader
from ..store.stats import definitions_by_server, server_statuses
from .metatools import META_TOOLS, SHOWN_SERVERS, SUMMARY_NAMES, meta_tools

if TYPE_CHECKING:
    from ..catalog.listing import CatalogSummary
    from ..catalog.metrics import UsageReport


@dataclass
class ServerTokens:
    server: str
    status: str | None
    tools: int
    tokens: int
    max_tool_tokens: int


@dataclass
class IndexStats:
    """What `index_stats` returns (`to_json()`: the `stats --json` document's body)."""

    servers: list[ServerTokens]  # most tokens first
    meta_tokens: int  # the meta-tools as serve sends them, with this catalog's summary
    filters: dict[str, Any]
    cache: dict[str, Any]  # what this process derived from the index so far (store/cache.py)
    usage: UsageReport | None = None  # stats --usage
    meta_tools: int = len(META_TOOLS)
    tokenizer: str = f"approximation: ceil(compact JSON characters / {CHARS_PER_TOKEN}) per definition"

    @property
    def tools(self) -> int:
        return sum(r.tools for r in self.servers)

    @property
    def tool_tokens(self) -> int:
        return sum(r.tokens for r in self.servers)

    @property
    def saved_tokens(self) -> int:
        return self.tool_tokens - self.meta_tokens

    @property
    def saving_pct(self) -> float:
        return round(100.0 * self.saved_tokens / self.tool_tokens, 1) if self.tool_tokens else 0.0

    @property
    def ratio(self) -> float | None:
        return round(self.tool_tokens / self.meta_tokens, 1) if self.meta_tokens else None

    @property
    def break_even(self) -> int | None:
        """About how many tools of this catalog's mean size the meta-tools' tokens stand for."""
        return math.ceil(self.meta_tokens / (self.tool_tokens / self.tools)) if self.tool_tokens else None

    def to_json(self) -> dict[str, Any]:
        out = {
            "servers": [asdict(r) for r in self.servers],
            "tools": self.tools,
            "tool_tokens": self.tool_tokens,
            "meta_tools": self.meta_tools,
            "meta_tokens": self.meta_tokens,
            "saved_tokens": self.saved_tokens,
            "saving_pct": self.saving_pct,
            "ratio": self.ratio,
            "tokenizer": self.tokenizer,
            "filters": self.filters,
            "cache": self.cache,
        }
        if self.usage is not None:
            out["usage"] = self.usage.to_json()
        return out


def catalog_of(db: Reader, filters: Filters | None) -> CatalogSummary:
    """The catalog summary serve puts in its instructions and search_tools' description: counted
    in the database, a few hundred names at most whatever the catalog's size (SUMMARY_NAMES)."""
    from ..catalog.listing import summary

    return summary(db, filters, names=SUMMARY_NAMES, largest=SHOWN_SERVERS)


def index_stats(db: Reader, filters: Filters | None = None, usage: UsageReport | None = None) -> IndexStats:
    """Tokens of every tool definition in scope, per server, against the meta-tools'; with `usage`
    (`catalog.metrics.usage_report`), the usage report beside them."""
    defs = definitions_by_server(db, filters)
    status = server_statuses(db)
    rows: list[ServerTokens] = []
    for server, items in sorted(defs.items()):
        per = [estimate_tokens(json.loads(d)) for d in items]
        rows.append(ServerTokens(server, status.get(server), len(items), sum(per), max(per) if per else 0))
    rows.sort(key=lambda r: (-r.tokens, r.server))
    meta = sum(estimate_tokens(t) for t in meta_tools(catalog=catalog_of(db, filters)))  # as sent
    return IndexStats(rows, meta, filters.to_json() if filters else {}, db.cache.stats(), usage)
