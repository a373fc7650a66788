"""Usage as the CLI and the meta-tools show it: one tool's metrics, and the per-tool and
per-server report of `toolidx stats --usage`. The figures come from the usage file
(store/usage.py), the tool list from the index."""

from __future__ import annotations

from typing import Any, TypedDict

from ..core.counts import plural
from ..core.filters import Filters
from ..store.catalog import page_tools
from ..store.db import Database
from ..store.usage import UsageStore


class Metrics(TypedDict):
    calls: int
    ok: int
    success_rate: float | None
    p50_ms: float | None
    p95_ms: float | None
    last_used: str | None
    outcomes: dict[str, int]


class UsageReport(TypedDict):
    """What `usage_report` returns (`stats --usage --json`'s `usage`)."""

    usage_file: str | None
    calls: int
    unresolved: int  # refused calls that named no tool in scope: in neither list
    tools: list[dict[str, Any]]
    servers: list[dict[str, Any]]
    notes: list[str]


NEVER_CALLED: Metrics = {"calls": 0, "ok": 0, "success_rate": None, "p50_ms": None, "p95_ms": None,
                         "last_used": None, "outcomes": {}}


def tool_usage(usage: UsageStore | None, tool_id: str) -> Metrics:
    """`tool_id`'s metrics (zeros when it was never called or nothing is recorded)."""
    if usage is None:
        return dict(NEVER_CALLED)  # type: ignore[return-value]
    m = usage.tool_metrics([tool_id]).get(tool_id)
    return m if m is not None else dict(NEVER_CALLED)  # type: ignore[return-value]


def usage_report(db: Database, usage: UsageStore | None, filters: Filters | None = None,
                 usage_file: str | None = None) -> UsageReport:
    """Per tool (those called, most calls first) and per server: calls, success rate, p50/p95
    duration, last used. Tools called but no longer in the index are kept (marked `removed`)."""
    notes: list[str] = []
    if usage is None:
        notes.append("no calls recorded yet (toolidx serve records every execute_tool)")
        return {"usage_file": usage_file, "calls": 0, "unresolved": 0, "tools": [], "servers": [], "notes": notes}
    rows = page_tools(db, sort="name", descending=False, limit=-1, offset=0, filters=filters)
    indexed = {r["id"] for r in rows}
    filtered = filters is not None and not filters.is_empty()
    metrics = usage.tool_metrics()
    tools = []
    for tid, m in metrics.items():
        if filtered and tid not in indexed:
            continue
        tools.append({"id": tid, **m, **({} if tid in indexed else {"removed": True})})
    tools.sort(key=lambda t: (-t["calls"], t["id"]))
    servers_seen = {r["server"] for r in rows} if filtered else None
    servers = [{"server": s, **m} for s, m in sorted(usage.server_metrics().items())
               if servers_seen is None or s in servers_seen]
    unresolved = 0 if filtered else usage.unresolved_calls()
    if unresolved:
        notes.append(f"{plural(unresolved, 'refused call')} named no tool in scope (unknown, ambiguous or "
                     "out of scope): counted neither per tool nor per server")
    return {"usage_file": usage_file, "calls": sum(t["calls"] for t in tools), "unresolved": unresolved,
            "tools": tools, "servers": servers, "notes": notes}
