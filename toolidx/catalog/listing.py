"""Browsing the index: pages of tools (`list_tools`) and what it holds (`categories`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..core.errors import UsageError
from ..core.filters import Filters
from ..core.servers import stderr_lines
from ..core.taxonomy import definition
from ..core.toolcard import ToolSummary
from ..store import catalog as q
from ..store.index import Reader
from ..store.tools import unknown_servers_note
from ..store.usage import UsageStore

USAGE_SORTS = ("calls", "success", "recent")  # from the usage file (store/usage.py); most first by default
SORTS = (*q.SORTS, *USAGE_SORTS)
ORDERS = ("asc", "desc")
MAX_PAGE_SIZE = 1000


@dataclass
class ToolUsage:
    """A listed tool's usage (with the usage sorts)."""

    calls: int
    success_rate: float | None
    last_used: str | None

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "success_rate": self.success_rate, "last_used": self.last_used}


@dataclass
class ListedTool(ToolSummary):
    """A tool on a page of `list_tools`: its summary, and its usage with the usage sorts."""

    usage: ToolUsage | None = None

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.usage is not None:
            out["usage"] = self.usage.to_json()
        return out


@dataclass
class ToolPage:
    """What `list_tools` returns (`to_json()`: the `list --json` document's body)."""

    items: list[ListedTool]
    total: int
    page: int
    page_size: int
    pages: int
    next_page: int | None
    sort: str
    order: str
    filters: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "items": [t.to_json() for t in self.items],
            "total": self.total,
            "page": self.page,
            "page_size": self.page_size,
            "pages": self.pages,
            "next_page": self.next_page,
            "sort": self.sort,
            "order": self.order,
            "filters": self.filters,
        }
        if self.notes:
            out["notes"] = self.notes
        return out


@dataclass
class CountRow:
    name: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count}


@dataclass
class CategoryRow(CountRow):
    definition: str | None  # the taxonomy's one line; None for a category a config named

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "definition": self.definition}


@dataclass
class ServerCountRow(CountRow):
    stale: int
    status: str | None
    error: str | None
    transport: str | None
    crawled_at: str | None
    stderr: list[str]  # a failed server's last stderr lines (core.servers.stderr_lines); [] when ok

    def to_json(self) -> dict[str, Any]:
        return {
            **super().to_json(),
            "stale": self.stale,
            "status": self.status,
            "error": self.error,
            "transport": self.transport,
            "crawled_at": self.crawled_at,
            "stderr": self.stderr,
        }


@dataclass
class Categories:
    """What `categories` returns (`to_json()`: the `categories --json` document's body)."""

    categories: list[CategoryRow]
    tags: list[CountRow]
    servers: list[ServerCountRow]
    total: int
    filters: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "categories": [c.to_json() for c in self.categories],
            "tags": [t.to_json() for t in self.tags],
            "servers": [s.to_json() for s in self.servers],
            "total": self.total,
            "filters": self.filters,
        }


def list_tools(
    db: Reader,
    *,
    page: int = 1,
    page_size: int = 50,
    sort: str = "name",
    order: str | None = None,
    filters: Filters | None = None,
    usage: UsageStore | None = None,
) -> ToolPage:
    """One page of tools (see ToolPage). Order is stable: the sort key, then the id. A token budget, applied
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
            rows = q.page_tools(
                db,
                sort=sort,
                descending=order == "desc",
                limit=page_size,
                offset=(page - 1) * page_size,
                filters=filters,
            )
        items = [ListedTool.from_row(r) for r in rows]
    pages = math.ceil(total / page_size)
    return ToolPage(
        items=items,
        total=total,
        page=page,
        page_size=page_size,
        pages=pages,
        next_page=page + 1 if page < pages else None,
        sort=sort,
        order=order,
        filters=filters.to_json() if filters else {},
        notes=[f"page {page} is past the last page ({pages})"]
        if page > pages and total
        else _no_such_server(db, filters),
    )


def _no_such_server(db: Reader, filters: Filters | None) -> list[str]:
    said = unknown_servers_note(db, filters.servers) if filters and filters.servers else None
    return [said] if said else []


def _by_usage(
    db: Reader, sort: str, order: str, page: int, page_size: int, filters: Filters | None, usage: UsageStore | None
) -> tuple[int, list[ListedTool]]:
    """Every matching tool ranked by its usage, then one page of it (usage lives in another file,
    so the ranking is done here rather than in SQL)."""
    rows = q.page_tools(db, sort="name", descending=False, limit=-1, offset=0, filters=filters)
    metrics = usage.tool_metrics([r["id"] for r in rows]) if usage is not None else {}
    key_of = {
        "calls": lambda m: m["calls"],
        "success": lambda m: (m["success_rate"] or 0.0, m["calls"]),
        "recent": lambda m: m["last_used"] or "",
    }[sort]
    used = [r for r in rows if r["id"] in metrics]
    used.sort(key=lambda r: r["id"])  # equal keys: by id
    used.sort(key=lambda r: key_of(metrics[r["id"]]), reverse=order == "desc")
    ranked = used + [r for r in rows if r["id"] not in metrics]
    chunk = ranked[(page - 1) * page_size : page * page_size]
    items = []
    for r in chunk:
        m = metrics.get(r["id"])
        item = ListedTool.from_row(r)
        item.usage = ToolUsage(
            calls=m["calls"] if m else 0,
            success_rate=m["success_rate"] if m else None,
            last_used=m["last_used"] if m else None,
        )
        items.append(item)
    return len(rows), items


def categories(db: Reader, filters: Filters | None = None) -> Categories:
    """The categories, tags and servers with their tool counts (see Categories); counts are of
    tools passing `filters`. With filters, servers with no matching tool are left out."""
    with db.snapshot():
        cats = q.category_counts(db, filters)
        tags = q.tag_counts(db, filters)
        servers = q.server_counts(db, filters)
        total = q.count_tools(db, filters)
    filtered = filters is not None and not filters.is_empty()
    return Categories(
        categories=[CategoryRow(c["name"], c["count"], definition(c["name"])) for c in cats],
        tags=[CountRow(t["name"], t["count"]) for t in tags],
        servers=[
            ServerCountRow(
                s["name"],
                s["count"],
                stale=s["stale"],
                status=s["status"],
                error=s["error"],
                transport=s["transport"],
                crawled_at=s["crawled_at"],
                # masked when stored (crawl had the spec); only a failure's is worth showing
                stderr=stderr_lines(s["stderr_tail"]) if s["status"] != "ok" else [],
            )
            for s in servers
            if not filtered or s["count"]
        ],
        total=total,
        filters=filters.to_json() if filters else {},
    )


class CatalogSummary(NamedTuple):
    """What a catalog holds, in a few hundred names whatever its size: what serve's instructions
    and search_tools' description say (serve.metatools.instructions, catalog_sentence)."""

    tools: int
    servers: list[tuple[str, int]]  # (name, tools) in name order: some of them (summary's docstring)
    categories: list[str]  # by size, then name: the first of them
    server_count: int  # servers with a tool
    category_count: int  # named categories with a tool


def summary(db: Reader, filters: Filters | None, *, names: int, largest: int) -> CatalogSummary:
    """The catalog of the tools passing `filters` (None: every tool, stale ones too), counted in
    the database: its tool, server and category counts; the first `names` categories by size; the
    first `names` servers by name, the `largest` with the most tools and those named like one of
    those categories (what a text needs to rank, show and not repeat them), each with its tools."""
    with db.snapshot():  # the counts and the names from the same crawl
        category_count, cats = q.category_summary(db, filters, names)
        tools, server_count, servers = q.server_summary(
            db, filters, first=names, largest=largest, named=[c["name"] for c in cats]
        )
    return CatalogSummary(
        tools, [(s["name"], s["count"]) for s in servers], [c["name"] for c in cats], server_count, category_count
    )
