"""Browsing the index: pages of tools (`list_tools`) and what it holds (`categories`)."""

from __future__ import annotations

import math
from typing import Any, TypedDict

from ..core.errors import UsageError
from ..core.filters import Filters
from ..core.servers import stderr_lines
from ..core.taxonomy import definition
from ..core.tooldoc import first_line
from ..store import catalog as q
from ..store.db import Database
from ..store.usage import UsageStore

USAGE_SORTS = ("calls", "success", "recent")  # from the usage file (store/usage.py); most first by default
SORTS = (*q.SORTS, *USAGE_SORTS)
ORDERS = ("asc", "desc")
MAX_PAGE_SIZE = 1000


class ToolSummary(TypedDict):
    """A tool as list and search show it."""

    id: str
    server: str
    name: str
    title: str | None
    description: str
    tags: list[str]
    category: str | None
    params: list[str]
    read_only: bool | None
    destructive: bool | None
    stale: bool


class ToolUsage(TypedDict):
    """A listed tool's usage (with the usage sorts)."""

    calls: int
    success_rate: float | None
    last_used: str | None


class _ToolPageBase(TypedDict):
    items: list[ToolSummary]
    total: int
    page: int
    page_size: int
    pages: int
    next_page: int | None
    sort: str
    order: str
    filters: dict[str, Any]


class ToolPage(_ToolPageBase, total=False):
    """What `list_tools` returns (the `list --json` document's body)."""

    notes: list[str]


class CountRow(TypedDict):
    name: str
    count: int


class CategoryRow(CountRow):
    definition: str | None  # the taxonomy's one line; None for a category a config named


class ServerCountRow(CountRow):
    stale: int
    status: str | None
    error: str | None
    transport: str | None
    crawled_at: str | None
    stderr: list[str]  # a failed server's last stderr lines (core.servers.stderr_lines); [] when ok


class Categories(TypedDict):
    """What `categories` returns (the `categories --json` document's body)."""

    categories: list[CategoryRow]
    tags: list[CountRow]
    servers: list[ServerCountRow]
    total: int
    filters: dict[str, Any]


def compact_tool(row: dict) -> ToolSummary:
    """A tool as list and search show it: enough to choose, not to call (see describe)."""
    return {"id": row["id"], "server": row["server"], "name": row["name"], "title": row.get("title"),
            "description": first_line(row.get("description")), "tags": row.get("tags") or [],
            "category": row.get("category"), "params": row.get("param_names") or [],
            "read_only": row.get("read_only"), "destructive": row.get("destructive"),
            "stale": bool(row.get("stale"))}


def list_tools(db: Database, *, page: int = 1, page_size: int = 50, sort: str = "name",
               order: str | None = None, filters: Filters | None = None,
               usage: UsageStore | None = None) -> ToolPage:
    """One page of tools: {"items", "total", "page", "page_size", "pages", "next_page", "sort",
    "order", "filters"}. Order is stable: the sort key, then the id. A token budget, applied
    where the page is shown (core.budget), may cut it; `next_page` follows on from the full page.

    The usage sorts (calls, success, recent) rank by what `usage` recorded (most first unless
    `order` is asc; tools never called come last, by name) and add each item's `usage`."""
    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}", fix="use one of: " + ", ".join(SORTS))
    if order is None:
        order = "desc" if sort in USAGE_SORTS else "asc"
    if order not in ORDERS:
        raise UsageError(f"unknown order {order!r}", fix="use asc or desc")
    if page < 1:
        raise UsageError(f"--page must be 1 or more (got {page})")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise UsageError(f"--page-size must be 1..{MAX_PAGE_SIZE} (got {page_size})")
    if sort in USAGE_SORTS:
        total, items = _by_usage(db, sort, order, page, page_size, filters, usage)
    else:
        with db.snapshot():  # the count and the page from the same crawl
            total = q.count_tools(db, filters)
            rows = q.page_tools(db, sort=sort, descending=order == "desc", limit=page_size,
                                offset=(page - 1) * page_size, filters=filters)
        items = [compact_tool(r) for r in rows]
    pages = math.ceil(total / page_size)
    out: ToolPage = {"items": items, "total": total, "page": page,
           "page_size": page_size, "pages": pages, "next_page": page + 1 if page < pages else None,
           "sort": sort, "order": order, "filters": filters.to_json() if filters else {}}
    if page > pages and total:
        out["notes"] = [f"page {page} is past the last page ({pages})"]
    return out


def _by_usage(db: Database, sort: str, order: str, page: int, page_size: int, filters: Filters | None,
              usage: UsageStore | None) -> tuple[int, list[Any]]:
    """Every matching tool ranked by its usage, then one page of it (usage lives in another file,
    so the ranking is done here rather than in SQL)."""
    rows = q.page_tools(db, sort="name", descending=False, limit=-1, offset=0, filters=filters)
    metrics = usage.tool_metrics([r["id"] for r in rows]) if usage is not None else {}
    key_of = {"calls": lambda m: m["calls"], "success": lambda m: (m["success_rate"] or 0.0, m["calls"]),
              "recent": lambda m: m["last_used"] or ""}[sort]
    used = [r for r in rows if r["id"] in metrics]
    used.sort(key=lambda r: r["id"])  # equal keys: by id
    used.sort(key=lambda r: key_of(metrics[r["id"]]), reverse=order == "desc")
    ranked = used + [r for r in rows if r["id"] not in metrics]
    chunk = ranked[(page - 1) * page_size: page * page_size]
    items: list[Any] = []
    for r in chunk:
        m = metrics.get(r["id"])
        item: dict[str, Any] = dict(compact_tool(r))
        item["usage"] = ToolUsage(calls=m["calls"] if m else 0, success_rate=m["success_rate"] if m else None,
                                  last_used=m["last_used"] if m else None)
        items.append(item)
    return len(rows), items


def categories(db: Database, filters: Filters | None = None) -> Categories:
    """{"categories": [{"name","count"}], "tags": [{"name","count"}], "servers": [{"name",
    "count", "stale", "status", "error", "stderr"}], "total"}; counts are of tools passing `filters`.
    With filters, servers with no matching tool are left out."""
    with db.snapshot():
        cats = q.category_counts(db, filters)
        tags = q.tag_counts(db, filters)
        servers = q.server_counts(db, filters)
        total = q.count_tools(db, filters)
    filtered = filters is not None and not filters.is_empty()
    return {
        "categories": [{"name": c["name"], "count": c["count"], "definition": definition(c["name"])}
                       for c in cats],
        "tags": [{"name": t["name"], "count": t["count"]} for t in tags],
        "servers": [{"name": s["name"], "count": s["count"], "stale": s["stale"], "status": s["status"],
                     "error": s["error"], "transport": s["transport"], "crawled_at": s["crawled_at"],
                     # masked when stored (crawl had the spec); only a failure's is worth showing
                     "stderr": stderr_lines(s["stderr_tail"]) if s["status"] != "ok" else []}
                    for s in servers if not filtered or s["count"]],
        "total": total,
        "filters": filters.to_json() if filters else {},
    }
