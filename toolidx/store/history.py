"""Reading crawl history for diff, history and audit: crawl lookup, snapshot rows, definitions by
hash, and per-crawl change counts. Read-only; crawls.py writes."""

from __future__ import annotations

import json
from collections.abc import Iterable

from .base import in_chunks
from .index import Reader, own


def crawl_ids(db: Reader) -> list[int]:
    db = own(db)
    return [int(r["id"]) for r in db.query("SELECT id FROM crawls ORDER BY id")]


def get_crawl(db: Reader, crawl_id: int) -> dict | None:
    db = own(db)
    return db.one("SELECT * FROM crawls WHERE id = ?", (crawl_id,))


def snapshot_rows(db: Reader, crawl_id: int, servers: list[str] | None = None) -> list[tuple]:
    """(tool_id, server, name, hash, stale) tuples for every tool in one crawl's snapshot; no
    definitions, so a diff parses only the definitions that differ. Tuples, not dicts: a
    10,000-tool crawl is read in a few milliseconds."""
    db = own(db)
    sql = "SELECT tool_id, server, name, hash, stale FROM crawl_tools WHERE crawl_id = ?"
    params: list = [crawl_id]
    if servers:
        sql += f" AND server IN ({', '.join('?' * len(servers))})"
        params += servers
    with db.lock:
        return db.conn.execute(sql, params).fetchall()


def tool_rows(db: Reader, tool_id: str, crawl_ids: list[int]) -> list[dict]:
    """{crawl_id, hash, stale} of `tool_id` in each of `crawl_ids` that had it (by the primary
    key: no scan of every crawl's tools)."""
    db = own(db)
    if not crawl_ids:
        return []
    marks = ", ".join("?" * len(crawl_ids))
    return db.query(
        f"SELECT crawl_id, hash, stale FROM crawl_tools WHERE crawl_id IN ({marks}) AND tool_id = ? ORDER BY crawl_id",
        [*crawl_ids, tool_id],
    )


def crawl_server_rows(db: Reader, crawl_id: int) -> list[dict]:
    db = own(db)
    return db.query("SELECT * FROM crawl_servers WHERE crawl_id = ?", (crawl_id,))


def definitions(db: Reader, hashes: Iterable[str]) -> dict[str, dict]:
    """hash -> parsed definition."""
    db = own(db)
    hs = list(dict.fromkeys(hashes))
    out: dict[str, dict] = {}
    for marks, chunk in in_chunks(hs):
        for r in db.query(f"SELECT hash, definition FROM tool_versions WHERE hash IN ({marks})", chunk):
            out[r["hash"]] = _loads(r["definition"])
    return out


def current_definitions(db: Reader, servers: list[str] | None = None) -> list[dict]:
    """id, server, name, definition of every tool in the index now (for the audit)."""
    db = own(db)
    sql = "SELECT id, server, name, definition FROM tools"
    params: list = []
    if servers:
        sql += f" WHERE server IN ({', '.join('?' * len(servers))})"
        params = list(servers)
    return [{**r, "definition": _loads(r["definition"])} for r in db.query(sql + " ORDER BY id", params)]


def crawl_history(db: Reader, limit: int | None = 20, servers: list[str] | None = None) -> list[dict]:
    """Crawls, newest first, each with tool counts and added/removed/changed against the crawl
    before it (by tool id and definition hash: a rename counts as one removed plus one added)."""
    db = own(db)
    rows = db.query("SELECT * FROM crawls ORDER BY id DESC" + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
    srv = ""
    params: list = []
    if servers:
        srv = f" AND {{a}}.server IN ({', '.join('?' * len(servers))})"
        params = list(servers)
    out = []
    for c in rows:
        cid = int(c["id"])
        prev = db.scalar("SELECT max(id) FROM crawls WHERE id < ?", (cid,))
        failed = [
            r["server"]
            for r in db.query(
                "SELECT server FROM crawl_servers WHERE crawl_id = ? AND status != 'ok'"
                + srv.format(a="crawl_servers"),
                [cid, *params],
            )
        ]
        crawled = int(
            db.scalar(
                "SELECT count(*) FROM crawl_servers WHERE crawl_id = ?" + srv.format(a="crawl_servers"), [cid, *params]
            )
        )
        tools = int(
            db.scalar("SELECT count(*) FROM crawl_tools c WHERE crawl_id = ?" + srv.format(a="c"), [cid, *params])
        )
        stale = int(
            db.scalar(
                "SELECT count(*) FROM crawl_tools c WHERE crawl_id = ? AND stale = 1" + srv.format(a="c"),
                [cid, *params],
            )
        )
        entry = {
            **c,
            "servers_crawled": crawled,
            "failed_servers": failed,
            "tools": tools,
            "stale": stale,
            "previous": prev,
            "added": None,
            "removed": None,
            "changed": None,
        }
        if prev is not None:
            entry["added"] = int(
                db.scalar(
                    "SELECT count(*) FROM crawl_tools c WHERE c.crawl_id = ?"
                    + srv.format(a="c")
                    + " AND NOT EXISTS (SELECT 1 FROM crawl_tools p WHERE p.crawl_id = ? AND p.tool_id = c.tool_id)",
                    [cid, *params, prev],
                )
            )
            entry["removed"] = int(
                db.scalar(
                    "SELECT count(*) FROM crawl_tools p WHERE p.crawl_id = ?"
                    + srv.format(a="p")
                    + " AND NOT EXISTS (SELECT 1 FROM crawl_tools c WHERE c.crawl_id = ? AND c.tool_id = p.tool_id)",
                    [prev, *params, cid],
                )
            )
            entry["changed"] = int(
                db.scalar(
                    "SELECT count(*) FROM crawl_tools c JOIN crawl_tools p ON p.crawl_id = ? AND p.tool_id = c.tool_id "
                    "WHERE c.crawl_id = ? AND p.hash != c.hash" + srv.format(a="c"),
                    [prev, cid, *params],
                )
            )
        out.append(entry)
    return out


def crawl_snapshot(db: Reader, crawl_id: int) -> dict[str, dict]:
    """tool id -> {server, name, hash, stale, definition} as of one crawl."""
    db = own(db)
    rows = db.query(
        "SELECT ct.tool_id, ct.server, ct.name, ct.hash, ct.stale, tv.definition "
        "FROM crawl_tools ct JOIN tool_versions tv ON tv.hash = ct.hash "
        "WHERE ct.crawl_id = ?",
        (crawl_id,),
    )
    return {r["tool_id"]: {**r, "definition": _loads(r["definition"])} for r in rows}


def _loads(text: str) -> dict:
    """A stored definition; one nested too deep for Python's parser comes back as a stub that the
    diff reports as "changed, compatibility unknown" rather than a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        import re

        m = re.search(r'"name"\s*:\s*"((?:[^"\\]|\\.){0,256})"', text[-2000:]) or re.search(
            r'"name"\s*:\s*"((?:[^"\\]|\\.){0,256})"', text
        )
        name = json.loads(f'"{m.group(1)}"') if m else ""
        return {"name": name, "_toolidx_unreadable": "nested too deep to read"}
