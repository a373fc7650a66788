"""Reading tools and servers: the rows every query command starts from."""

from __future__ import annotations

import json
from typing import overload

from ..core.filters import Filters
from .db import Database, in_chunks

JSON_COLUMNS = ("input_schema", "output_schema", "annotations", "icons", "meta", "definition",
                "tags", "param_names")
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


def where(filters: Filters, alias: str = "t") -> tuple[str, list]:
    """`filters.where(alias)` plus the one filter over another table: `approved_only` (a person
    approved the tool, at any definition: one changed since stays visible, serve refuses to run it)."""
    sql, params = filters.where(alias)
    if filters.approved_only:
        sql = f"({sql}) AND EXISTS (SELECT 1 FROM approvals ap WHERE ap.tool_id = {alias}.id)"
    return sql, params


def get_tool(db: Database, tool_id: str) -> dict | None:
    return decode(db.one("SELECT * FROM tools WHERE id = ?", (tool_id,)))


def get_tools_by_rowid(db: Database, rowids: list[int], columns: str = "*") -> dict[int, dict]:
    if not rowids:
        return {}
    out: dict[int, dict] = {}
    for marks, chunk in in_chunks(rowids):
        for r in db.query(f"SELECT rowid AS _rowid, {columns} FROM tools WHERE rowid IN ({marks})", chunk):
            out[int(r.pop("_rowid"))] = decode(r)
    return out


def all_ids(db: Database) -> list[str]:
    return [r["id"] for r in db.query("SELECT id FROM tools ORDER BY id")]


def filtered_rowids(db: Database, filters: Filters | None) -> set[int] | None:
    """Rowids passing the filters, or None when there are no filters (everything passes)."""
    if filters is None or filters.is_empty():
        return None
    cond, params = where(filters, "t")
    return {r["rowid"] for r in db.query(f"SELECT t.rowid AS rowid FROM tools t WHERE {cond}", params)}


def get_server(db: Database, name: str) -> dict | None:
    return decode(db.one("SELECT * FROM servers WHERE name = ?", (name,)), SERVER_JSON_COLUMNS)


def list_servers(db: Database) -> list[dict]:
    return [decode(r, SERVER_JSON_COLUMNS) for r in db.query("SELECT * FROM servers ORDER BY name")]
