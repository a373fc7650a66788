"""Reads behind describe, list, categories and similar: pages of tools, counts, id look-ups."""

from __future__ import annotations

from ..core.filters import Filters
from .base import in_chunks
from .index import Index, Reader, own
from .tools import decode
from .tools import where as filter_sql

# sort key -> ORDER BY columns (the id last, so equal keys keep one stable order)
SORTS = {
    "name": ("lower(t.name)", "t.name"),
    "server": ("t.server", "lower(t.name)"),
    "category": ("coalesce(t.category, '')", "t.server", "lower(t.name)"),
}
LIST_COLUMNS = (
    "t.id, t.server, t.name, t.title, t.description, t.tags, t.category, t.param_names, "
    "t.read_only, t.destructive, t.stale"
)


def _where(db: Index, filters: Filters | None) -> tuple[str, list]:
    return filter_sql(db, filters, "t") if filters is not None else ("TRUE", [])


def count_tools(db: Reader, filters: Filters | None = None) -> int:
    db = own(db)
    where, params = _where(db, filters)
    return int(db.scalar(f"SELECT count(*) FROM tools t WHERE {where}", params))


def page_tools(
    db: Reader, *, sort: str, descending: bool, limit: int, offset: int, filters: Filters | None = None
) -> list[dict]:
    db = own(db)
    where, params = _where(db, filters)
    direction = "DESC" if descending else "ASC"
    order = ", ".join(f"{c} {direction}" for c in SORTS[sort])
    bound = db.sql.every_row if limit < 0 else limit
    rows = db.query(
        f"SELECT {LIST_COLUMNS} FROM tools t WHERE {where} ORDER BY {order}, t.id ASC LIMIT ? OFFSET ?",
        [*params, bound, offset],
    )
    return [decode(r) for r in rows]


def category_counts(db: Reader, filters: Filters | None = None) -> list[dict]:
    db = own(db)
    where, params = _where(db, filters)
    return db.query(
        f"SELECT t.category AS name, count(*) AS count FROM tools t WHERE {where} "
        "GROUP BY t.category ORDER BY count DESC, name",
        params,
    )


def tag_counts(db: Reader, filters: Filters | None = None) -> list[dict]:
    db = own(db)
    where, params = _where(db, filters)
    return db.query(
        f"SELECT j.value AS name, count(*) AS count FROM tools t, {db.sql.json_each('t.tags', 'j')} "
        f"WHERE {where} GROUP BY j.value ORDER BY count DESC, name",
        params,
    )


def server_counts(db: Reader, filters: Filters | None = None) -> list[dict]:
    """Every server with its matching tools, stale tools, and last crawl status."""
    db = own(db)
    where, params = _where(db, filters)
    return db.query(
        "SELECT s.name, s.status, s.error, s.stderr_tail, s.transport, s.category, s.crawled_at, s.last_ok_at, "
        "coalesce(c.count, 0) AS count, coalesce(c.stale, 0) AS stale "
        "FROM servers s LEFT JOIN (SELECT t.server, count(*) AS count, sum(t.stale) AS stale "
        f"FROM tools t WHERE {where} GROUP BY t.server) c ON c.server = s.name ORDER BY s.name",
        params,
    )


def server_summary(
    db: Reader, filters: Filters | None, *, first: int, largest: int, named: list[str]
) -> tuple[int, int, list[dict]]:
    """(tools passing `filters`, servers having one, [{name, count}] of those servers: the first
    `first` by name, in name order, then the `largest` with the most tools (count, then name) and
    any of `named`). Counted in the database, one pass over the tools (an index-only scan with no
    filter) and look-ups: a catalog of 200k servers sends a few hundred rows. Run it in a snapshot."""
    db = own(db)
    where, params = _where(db, filters)
    grouped = f"SELECT t.server AS name, count(*) AS count FROM tools t WHERE {where} GROUP BY t.server"
    # equal counts by code point, as Python orders names (the texts rank the rows they get again)
    top = db.query(
        f"SELECT name, count, count(*) OVER () AS servers, sum(count) OVER () AS tools FROM ({grouped}) c "
        f"ORDER BY count DESC, {db.sql.by_code('name')} LIMIT ?",
        [*params, largest],
    )
    if not top:
        return 0, 0, []
    rows = db.query(f"{grouped} ORDER BY t.server LIMIT ?", [*params, first])
    more = list(top)
    for marks, chunk in in_chunks(named):
        more += db.query(
            f"SELECT t.server AS name, count(*) AS count FROM tools t WHERE ({where}) AND t.server IN ({marks}) "
            "GROUP BY t.server",
            [*params, *chunk],
        )
    seen = {r["name"] for r in rows}
    rows += sorted({r["name"]: r for r in more if r["name"] not in seen}.values(), key=lambda r: r["name"])
    return int(top[0]["tools"]), int(top[0]["servers"]), [{"name": r["name"], "count": r["count"]} for r in rows]


def category_summary(db: Reader, filters: Filters | None, limit: int) -> tuple[int, list[dict]]:
    """(named categories of the tools passing `filters`, the first `limit` of them by size as in
    category_counts, [{name, count}])."""
    db = own(db)
    where, params = _where(db, filters)
    rows = db.query(
        "SELECT name, count, count(*) OVER () AS categories FROM (SELECT t.category AS name, count(*) AS count "
        f"FROM tools t WHERE ({where}) AND t.category <> '' GROUP BY t.category) c ORDER BY count DESC, name LIMIT ?",
        [*params, limit],
    )
    return (int(rows[0]["categories"]) if rows else 0), [{"name": r["name"], "count": r["count"]} for r in rows]


def id_names(db: Reader, filters: Filters | None = None) -> list[dict]:
    db = own(db)
    where, params = _where(db, filters)
    return db.query(f"SELECT t.id, t.server, t.name FROM tools t WHERE {where} ORDER BY t.id", params)


def ids_named(db: Reader, name: str, filters: Filters | None = None) -> list[str]:
    db = own(db)
    where, params = _where(db, filters)
    rows = db.query(f"SELECT t.id FROM tools t WHERE ({where}) AND t.name = ? ORDER BY t.id", [*params, name])
    return [r["id"] for r in rows]


def tool_exists(db: Reader, tool_id: str, filters: Filters | None = None) -> bool:
    db = own(db)
    where, params = _where(db, filters)
    return db.scalar(f"SELECT 1 FROM tools t WHERE ({where}) AND t.id = ?", [*params, tool_id]) is not None


def ids_within(db: Reader, ids: list[str], filters: Filters | None) -> set[str]:
    """Those of `ids` that are tools passing `filters` (a scope check by look-up, not a set of
    every id in scope)."""
    db = own(db)
    where, params = _where(db, filters)
    out: set[str] = set()
    for marks, chunk in in_chunks(sorted(set(ids))):
        rows = db.query(f"SELECT t.id FROM tools t WHERE ({where}) AND t.id IN ({marks})", [*params, *chunk])
        out.update(r["id"] for r in rows)
    return out


def rowids_and_hashes(db: Reader, ids: list[str], filters: Filters | None) -> dict[str, tuple[int, str]]:
    """id -> (rowid, definition hash) of those of `ids` that are tools passing `filters` (what
    search.learned may lift: in scope, and as defined now)."""
    db = own(db)
    where, params = _where(db, filters)
    out: dict[str, tuple[int, str]] = {}
    for marks, chunk in in_chunks(sorted(set(ids))):
        rows = db.query(
            f"SELECT t.rowid AS rowid, t.id AS id, t.hash AS hash FROM tools t WHERE ({where}) AND t.id IN ({marks})",
            [*params, *chunk],
        )
        out.update((r["id"], (int(r["rowid"]), r["hash"])) for r in rows)
    return out


def tool_rowid(db: Reader, tool_id: str) -> int | None:
    db = own(db)
    v = db.scalar("SELECT rowid FROM tools WHERE id = ?", (tool_id,))
    return None if v is None else int(v)


def lexical_rows(db: Reader) -> list[dict]:
    """What the lexical fallback of `similar` compares: every tool's name, text and params."""
    db = own(db)
    return db.query("SELECT rowid, id, server, name, title, description FROM tools ORDER BY id")


def documented_example_rows(db: Reader) -> list[dict]:
    """Tools whose input schema or saved definition may hold examples of their own (the schema's
    `examples`, a property's `examples` / `default`, a tools_file row's `examples`): {id,
    input_schema, definition}, decoded. Whether one validates is the caller's check."""
    db = own(db)
    q = db.sql
    rows = db.query(
        f"SELECT id, input_schema, definition FROM tools t WHERE {q.json_has('t.input_schema', 'examples')} "
        f"OR {q.json_has('t.definition', 'examples')} "
        f"OR EXISTS (SELECT 1 FROM {q.json_members('t.input_schema', 'properties', 'p')} "
        f"WHERE {q.member_is_object('p')} "
        f"AND ({q.json_has('p.value', 'examples')} OR {q.json_has('p.value', 'default')})) "
        "ORDER BY id"
    )
    return [decode(r, ("input_schema", "definition")) for r in rows]
