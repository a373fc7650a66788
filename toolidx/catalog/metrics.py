"""Usage as the CLI and the meta-tools show it: one tool's metrics, and the per-tool and
per-server report of `toolidx stats --usage`. The figures come from the usage store
(store/usage.py: the usage file, or a catalog in PostgreSQL's own tables), the tool list from the
index."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.counts import plural
from ..core.filters import Filters
from ..store.catalog import ids_within, page_tools
from ..store.index import Reader
from ..store.usage import UsageStore


@dataclass
class Metrics:
    """One tool's (or server's) calls as the usage store holds them (zeros: never called)."""

    calls: int = 0
    ok: int = 0
    success_rate: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    last_used: str | None = None
    outcomes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "ok": self.ok,
            "success_rate": self.success_rate,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "last_used": self.last_used,
            "outcomes": self.outcomes,
        }


@dataclass
class UsageReport:
    """What `usage_report` returns (`to_json()`: `stats --usage --json`'s `usage`)."""

    usage_file: str | None  # where usage is kept: the file, or the catalog's URL (no password)
    calls: int
    unresolved: int  # refused calls that named no tool in scope: in neither list
    tools: list[tuple[str, Metrics, bool]]  # (id, its metrics, removed from the index since)
    servers: list[tuple[str, Metrics]]
    notes: list[str]
    # what serve learned (store.usage.UsageStore.learned, search.learned): per tool, most pairs first
    learned: list[dict] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "usage_file": self.usage_file,
            "calls": self.calls,
            "unresolved": self.unresolved,
            "tools": [
                {"id": tid, **m.to_json(), **({"removed": True} if removed else {})} for tid, m, removed in self.tools
            ],
            "servers": [{"server": s, **m.to_json()} for s, m in self.servers],
            "learned": self.learned,
            "notes": self.notes,
        }


def tool_usage(usage: UsageStore | None, tool_id: str) -> Metrics:
    """`tool_id`'s metrics (zeros when it was never called or nothing is recorded)."""
    m = usage.tool_metrics([tool_id]).get(tool_id) if usage is not None else None
    return Metrics(**m) if m is not None else Metrics()


def usage_report(
    db: Reader, usage: UsageStore | None, filters: Filters | None = None, usage_file: str | None = None
) -> UsageReport:
    """Per tool (those called, most calls first) and per server: calls, success rate, p50/p95
    duration, last used. Tools called but no longer in the index are kept (marked `removed`)."""
    notes: list[str] = []
    if usage is None:
        notes.append("no calls recorded yet (toolidx serve records every execute_tool)")
        return UsageReport(usage_file, 0, 0, [], [], notes)
    filtered = filters is not None and not filters.is_empty()
    called = usage.tool_metrics()
    # the called tools looked up, not every tool listed: 0.4 s less at 10,000 tools (the console)
    indexed = ids_within(db, list(called), filters if filtered else None)
    tools = [(tid, Metrics(**m), tid not in indexed) for tid, m in called.items() if not filtered or tid in indexed]
    tools.sort(key=lambda t: (-t[1].calls, t[0]))
    servers_seen = None
    if filtered:
        rows = page_tools(db, sort="name", descending=False, limit=-1, offset=0, filters=filters)
        servers_seen = {r["server"] for r in rows}
    servers = [
        (s, Metrics(**m))
        for s, m in sorted(usage.server_metrics().items())
        if servers_seen is None or s in servers_seen
    ]
    unresolved = 0 if filtered else usage.unresolved_calls()
    if unresolved:
        notes.append(
            f"{plural(unresolved, 'refused call')} named no tool in scope (unknown, ambiguous or "
            "out of scope): counted neither per tool nor per server"
        )
    try:
        learned = usage.learned()
    except Exception as e:  # usage tables of an older toolidx (no `pairs` yet): the figures still stand
        learned = []
        notes.append(f"what serve learned cannot be read: {type(e).__name__}: {e}")
    in_index = ids_within(db, [t["id"] for t in learned], filters if filtered else None)
    learned = [{**t, **({"removed": True} if t["id"] not in in_index else {})} for t in learned]
    if filtered:
        learned = [t for t in learned if t["id"] in in_index]
    return UsageReport(usage_file, sum(m.calls for _, m, _ in tools), unresolved, tools, servers, notes, learned)
