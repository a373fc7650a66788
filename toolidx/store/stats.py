"""Reads behind `toolidx stats`: every tool's wire definition, grouped by server."""

from __future__ import annotations

from ..core.filters import Filters
from .index import Reader, own
from .tools import where as filter_sql


def definitions_by_server(db: Reader, filters: Filters | None = None) -> dict[str, list[str]]:
    """server -> the tools' definitions as sent (compact JSON text), in id order."""
    db = own(db)
    where, params = filter_sql(db, filters, "t") if filters is not None else ("TRUE", [])
    out: dict[str, list[str]] = {}
    for r in db.query(f"SELECT t.server, t.definition FROM tools t WHERE {where} ORDER BY t.id", params):
        out.setdefault(r["server"], []).append(r["definition"])
    return out


def server_statuses(db: Reader) -> dict[str, str]:
    db = own(db)
    return {r["name"]: r["status"] for r in db.query("SELECT name, status FROM servers")}
