"""The approvals table: which definition of a tool a person accepted (`toolidx approve`), read by
`serve --quarantine` and `toolidx diff --approved`. Keyed by tool id, with the definition hash
(`tools.hash`); the definition itself stays in `tool_versions`, so a later change can be shown
field by field. An index opened read-only before the migration that adds the table reads as
"nothing approved"."""

from __future__ import annotations

from .db import Database, in_chunks

TABLE = "approvals"


def has_table(db: Database) -> bool:
    return db.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)) is not None


def approvals(db: Database, ids: list[str] | None = None) -> dict[str, dict]:
    """tool id -> {"tool_id", "hash", "approved_by", "approved_at"}; all of them, or those of `ids`."""
    if not has_table(db):
        return {}
    if ids is None:
        return {r["tool_id"]: r for r in db.query("SELECT * FROM approvals ORDER BY tool_id")}
    out: dict[str, dict] = {}
    for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
        for r in db.query(f"SELECT * FROM approvals WHERE tool_id IN ({marks})", chunk):
            out[r["tool_id"]] = r
    return out


def current_hashes(db: Database, ids: list[str] | None = None, servers: list[str] | None = None) -> dict[str, str]:
    """tool id -> tools.hash, for the tools now in the index (all, or `ids`, or `servers`' tools)."""
    if ids is not None:
        out: dict[str, str] = {}
        for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
            out.update({r["id"]: r["hash"] for r in db.query(
                f"SELECT id, hash FROM tools WHERE id IN ({marks})", chunk)})
        return out
    sql, params = "SELECT id, hash FROM tools", []
    if servers:
        sql += f" WHERE server IN ({', '.join('?' * len(servers))})"
        params = list(servers)
    return {r["id"]: r["hash"] for r in db.query(sql + " ORDER BY id", params)}


def record(db: Database, ids: list[str], by: str, at: str) -> list[dict]:
    """Approve the current definition of each tool in `ids`, in one transaction. Returns, per id,
    {"id", "hash", "previous_hash"} (previous_hash: what was approved before, or None). The approved
    definition is kept in tool_versions (a crawl keeps it there too), so a later change can be diffed."""
    with db.transaction() as conn:
        rows = []
        for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
            rows += conn.execute(f"SELECT t.id, t.hash, a.hash FROM tools t LEFT JOIN approvals a "
                                 f"ON a.tool_id = t.id WHERE t.id IN ({marks})", chunk).fetchall()
            conn.execute(f"INSERT OR IGNORE INTO tool_versions(hash, definition) "
                         f"SELECT hash, definition FROM tools WHERE id IN ({marks})", chunk)
        conn.executemany("INSERT INTO approvals(tool_id, hash, approved_by, approved_at) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT(tool_id) DO UPDATE SET hash = excluded.hash, "
                         "approved_by = excluded.approved_by, approved_at = excluded.approved_at",
                         [(tid, h, by, at) for tid, h, _ in rows])
    return [{"id": tid, "hash": h, "previous_hash": prev} for tid, h, prev in sorted(rows)]


def revoke(db: Database, ids: list[str]) -> list[str]:
    """Remove the approvals of `ids`; returns the ids that had one."""
    with db.transaction() as conn:
        had: list[str] = []
        for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
            had += [r[0] for r in conn.execute(f"SELECT tool_id FROM approvals WHERE tool_id IN ({marks})",
                                               chunk).fetchall()]
            conn.execute(f"DELETE FROM approvals WHERE tool_id IN ({marks})", chunk)
    return sorted(had)


def copy_into(out: Database, src: Database, servers: set[str]) -> int:
    """`toolidx merge`: copy `src`'s approvals of the tools of `servers` (those the merged index
    takes from `src`) into `out`, inside the caller's transaction. Returns how many."""
    rows = [(r["tool_id"], r["hash"], r["approved_by"], r["approved_at"]) for r in approvals(src).values()
            if r["tool_id"].partition("/")[0] in servers]
    out.conn.executemany("INSERT OR REPLACE INTO approvals(tool_id, hash, approved_by, approved_at) "
                         "VALUES (?, ?, ?, ?)", rows)
    return len(rows)
