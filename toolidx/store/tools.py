"""Reading tools and servers: the rows every query command starts from."""

from __future__ import annotations

import difflib
import json
from typing import overload

from ..core.filters import Filters, compile_pattern
from .base import in_chunks
from .index import Reader, own

JSON_COLUMNS = ("input_schema", "output_schema", "annotations", "icons", "meta", "definition", "tags", "param_names")
SERVER_JSON_COLUMNS = ("connect", "capabilities", "tags", "invalid_tools")


@overload
def decode(row: dict, columns: tuple[str, ...] = ...) -> dict: ...
@overload
def decode(row: None, columns: tuple[str, ...] = ...) -> None: ...
@overload
def decode(row: dict | None, columns: tuple[str, ...] = ...) -> dict | None: ...
def decode(row: dict | None, columns: tuple[str, ...] = JSON_COLUMNS) -> dict | None:
    """A row with its JSON columns parsed and 0/1 flags as booleans."""
    if row is None:
        return None
    out = dict(row)
    for c in columns:
        if c in out and isinstance(out[c], str):
            out[c] = json.loads(out[c])
    for c in ("read_only", "destructive", "stale"):
        if c in out and out[c] is not None:
            out[c] = bool(out[c])
    return out


def where(db: Reader, filters: Filters, alias: str = "t") -> tuple[str, list]:
    """A SQL condition over the `tools` table (as `alias`) that keeps what `filters` keeps, and its
    parameters. `approved_only`: a person approved the tool, at any definition (one changed since
    stays visible, serve refuses to run it)."""
    db = own(db)
    f, a = filters, alias
    if f.nothing:
        return "0 = 1", []
    conds: list[str] = []
    params: list = []
    if f.servers:
        conds.append(f"{a}.server IN ({', '.join('?' * len(f.servers))})")
        params += f.servers
    if f.categories:
        conds.append(f"{a}.category IN ({', '.join('?' * len(f.categories))})")
        params += f.categories
    if f.tags:
        conds.append(
            f"EXISTS (SELECT 1 FROM {db.sql.json_each(f'{a}.tags', 'tg')} "
            f"WHERE tg.value IN ({', '.join('?' * len(f.tags))}))"
        )
        params += f.tags
    if f.exclude_tags:
        conds.append(
            f"NOT EXISTS (SELECT 1 FROM {db.sql.json_each(f'{a}.tags', 'tg')} "
            f"WHERE tg.value IN ({', '.join('?' * len(f.exclude_tags))}))"
        )
        params += f.exclude_tags
    if f.name_pattern:  # RE2 on both engines (regexp() below on a file; names matched here on PostgreSQL)
        cond, more = db.writer.name_matches(f"{a}.name", f.name_pattern)
        conds.append(cond)
        params += more
    if f.description_contains:
        conds.append(f"{db.sql.strpos(f'lower({a}.description)', 'lower(?)')} > 0")
        params.append(f.description_contains)
    if f.read_only:
        conds.append(f"{a}.read_only = 1")
    if f.no_destructive:
        # MCP's defaults: destructiveHint is true unless said otherwise, and means nothing for a
        # read-only tool; so only a read-only tool or one that says destructiveHint: false is kept
        conds.append(f"(coalesce({a}.read_only, 0) = 1 OR coalesce({a}.destructive, 1) = 0)")
    if not f.include_stale:
        conds.append(f"{a}.stale = 0")
    if f.has_examples:  # one parameter however many ids
        conds.append(f"{a}.id IN (SELECT ex.value FROM {db.sql.json_each('?', 'ex')})")
        params.append(json.dumps(f.example_ids))
    sql = " AND ".join(conds) or "TRUE"
    if f.approved_only:
        sql = f"({sql}) AND EXISTS (SELECT 1 FROM approvals ap WHERE ap.tool_id = {a}.id)"
    return sql, params


def names_matching(db: Reader, pattern: str) -> list[str]:
    """The tool names `pattern` finds (RE2, as `regexp`), from the names cached per index version,
    with the answers of the last patterns asked (RE2 costs ~10 us a name: 1 s at 100k names)."""
    db = own(db)

    def build() -> tuple[list[str], dict[str, list[str]]]:
        return [r["name"] for r in db.query("SELECT DISTINCT name FROM tools")], {}

    names, found = db.cache.get("tool_names", build, lambda e: len(e[0]))
    hit = found.get(pattern)
    if hit is None:
        rx = compile_pattern(pattern)
        hit = [n for n in names if rx.search(n)]
        if len(found) >= 64:
            found.clear()
        found[pattern] = hit
    return hit


def regexp(pattern: str, value: str | None) -> int:
    """SQLite REGEXP(pattern, value), registered on every connection by store.sqlite.database: RE2, linear in
    the name, whatever an agent sends (core.filters.compile_pattern)."""
    return int(value is not None and compile_pattern(pattern).search(value) is not None)


def get_tool(db: Reader, tool_id: str) -> dict | None:
    db = own(db)
    return decode(db.one("SELECT * FROM tools WHERE id = ?", (tool_id,)))


def get_tools_by_rowid(db: Reader, rowids: list[int], columns: str = "*") -> dict[int, dict]:
    db = own(db)
    if not rowids:
        return {}
    out: dict[int, dict] = {}
    for marks, chunk in in_chunks(rowids):
        for r in db.query(f"SELECT rowid AS _rowid, {columns} FROM tools WHERE rowid IN ({marks})", chunk):
            out[int(r.pop("_rowid"))] = decode(r)
    return out


def all_ids(db: Reader) -> list[str]:
    db = own(db)
    return [r["id"] for r in db.query("SELECT id FROM tools ORDER BY id")]


def filtered_rowids(db: Reader, filters: Filters | None) -> set[int] | None:
    """Rowids passing the filters, or None when there are no filters (everything passes)."""
    db = own(db)
    if filters is None or filters.is_empty():
        return None
    cond, params = where(db, filters, "t")
    return {r["rowid"] for r in db.query(f"SELECT t.rowid AS rowid FROM tools t WHERE {cond}", params)}


def get_server(db: Reader, name: str) -> dict | None:
    db = own(db)
    return decode(db.one("SELECT * FROM servers WHERE name = ?", (name,)), SERVER_JSON_COLUMNS)


def list_servers(db: Reader) -> list[dict]:
    db = own(db)
    return [decode(r, SERVER_JSON_COLUMNS) for r in db.query("SELECT * FROM servers ORDER BY name")]


def server_names(db: Reader, limit: int | None = None) -> list[str]:
    """The servers' names in name order (the first `limit` of them): names only, no row decoded."""
    db = own(db)
    tail, params = (" LIMIT ?", [limit]) if limit is not None else ("", [])
    return [r["name"] for r in db.query("SELECT name FROM servers ORDER BY name" + tail, params)]


def unknown_servers_note(db: Reader, names: list[str]) -> str | None:
    """What a list or a search says when its --server names a server the index lacks ("no server
    'gti' in the index (did you mean git?)"): a misspelt filter matches nothing, silently, else."""
    unknown = sorted(set(names) - known_servers(db, names))
    if not unknown:
        return None
    have = server_names(db)
    by_lower = {h.lower(): h for h in have}  # a name of the right letters, cased otherwise, first
    said = []
    for name in unknown[:5]:
        close = [by_lower[c] for c in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)]
        said.append(f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    return f"no server {', '.join(said)} in the index"


def known_servers(db: Reader, names: list[str]) -> set[str]:
    """Those of `names` the index has a server of."""
    db = own(db)
    out: set[str] = set()
    for marks, chunk in in_chunks(sorted(set(names))):
        out.update(r["name"] for r in db.query(f"SELECT name FROM servers WHERE name IN ({marks})", chunk))
    return out
