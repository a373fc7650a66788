"""The approvals table: which definition of a tool a person accepted (`toolidx approve`), read by
`serve --quarantine` and `toolidx diff --approved`. Keyed by tool id, with the definition hash
(`tools.hash`); the definition itself stays in `tool_versions`, so a later change can be shown
field by field. An index opened read-only before the migration that adds the table reads as
"nothing approved".

A definition's hash is computed here from the definition itself, never read from `tools.hash`: an
index from elsewhere (or a hand edit) can hold a hash that does not match its definition, and an
approval of that hash must not cover the changed tool.

What the agent reads of a server (its title and instructions) is approved with its tools: approving
any tool of a server records that text (`server_approvals`), and quarantine refuses the server's
tools once it changes."""

from __future__ import annotations

import json

from ..core.errors import UsageError
from ..core.tooldoc import definition_hash
from .base import in_chunks
from .index import Reader, own

TABLE = "approvals"
SERVER_TABLE = "server_approvals"


def has_table(db: Reader, table: str = TABLE) -> bool:
    db = own(db)
    return db.writer.table_exists(table)


def text_hash(title: str | None, instructions: str | None) -> str:
    """The hash of what the agent reads of a server, computed from the text."""
    return definition_hash({"title": title, "instructions": instructions})


def server_texts(db: Reader, servers: list[str]) -> dict[str, dict]:
    """server -> {"title", "instructions"} as the index holds them now (servers not there: absent)."""
    db = own(db)
    out: dict[str, dict] = {}
    for marks, chunk in in_chunks(list(dict.fromkeys(servers))):
        for r in db.query(f"SELECT name, server_title, instructions FROM servers WHERE name IN ({marks})", chunk):
            out[r["name"]] = {"title": r["server_title"], "instructions": r["instructions"]}
    return out


def server_approvals(db: Reader, servers: list[str]) -> dict[str, dict]:
    """server -> {"server", "hash", "title", "instructions", "approved_by", "approved_at"}: the text
    approved with its tools (none before migration 3, or for a read-only index that lacks it)."""
    db = own(db)
    if not has_table(db, SERVER_TABLE):
        return {}
    out: dict[str, dict] = {}
    for marks, chunk in in_chunks(list(dict.fromkeys(servers))):
        for r in db.query(f"SELECT * FROM server_approvals WHERE server IN ({marks})", chunk):
            out[r["server"]] = r
    return out


def approvals(db: Reader, ids: list[str] | None = None) -> dict[str, dict]:
    """tool id -> {"tool_id", "hash", "approved_by", "approved_at"}; all of them, or those of `ids`."""
    db = own(db)
    if not has_table(db):
        return {}
    if ids is None:
        return {r["tool_id"]: r for r in db.query("SELECT * FROM approvals ORDER BY tool_id")}
    out: dict[str, dict] = {}
    for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
        for r in db.query(f"SELECT * FROM approvals WHERE tool_id IN ({marks})", chunk):
            out[r["tool_id"]] = r
    return out


def stored_hash(definition: str | None) -> str:
    """The hash of a stored definition (its JSON text), computed; a definition that does not parse
    gets a hash no approval can hold."""
    try:
        return definition_hash(json.loads(definition or ""))
    except (TypeError, ValueError, RecursionError):
        return "unreadable definition"


def current_hashes(db: Reader, ids: list[str] | None = None, servers: list[str] | None = None) -> dict[str, str]:
    """tool id -> the hash of its definition (computed), for the tools now in the index (all, or
    `ids`, or `servers`' tools)."""
    db = own(db)
    if ids is not None:
        out: dict[str, str] = {}
        for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
            out.update(
                {
                    r["id"]: stored_hash(r["definition"])
                    for r in db.query(f"SELECT id, definition FROM tools WHERE id IN ({marks})", chunk)
                }
            )
        return out
    sql, params = "SELECT id, definition FROM tools", []
    if servers:
        sql += f" WHERE server IN ({', '.join('?' * len(servers))})"
        params = list(servers)
    return {r["id"]: stored_hash(r["definition"]) for r in db.query(sql + " ORDER BY id", params)}


class ChangedSinceShown(UsageError):
    """`record(expect=...)`: a tool's definition is no longer the one its approver was shown (a
    crawl landed in between); nothing was approved."""

    def __init__(self, tool_id: str, shown: str, now: str | None):
        self.tool_id, self.shown, self.now = tool_id, shown, now
        super().__init__(
            f"{tool_id}: {'its title or instructions' if tool_id.startswith('server ') else 'its definition'} "
            "changed after it was shown to you; nothing was approved",
            fix="review what changed and approve again",
        )


def record(
    db: Reader,
    ids: list[str],
    by: str,
    at: str,
    expect: dict[str, str] | None = None,
    expect_texts: dict[str, str] | None = None,
) -> list[dict]:
    """Approve the current definition of each tool in `ids`, in one transaction. Returns, per id,
    {"id", "hash", "previous_hash"} (previous_hash: what was approved before, or None). The approved
    definition is kept in tool_versions (a crawl keeps it there too), so a later change can be diffed.
    `expect`: id -> the hash of the definition its approver saw; any other (or a tool gone) raises
    ChangedSinceShown inside the transaction, before anything is written. `expect_texts`: server ->
    the text_hash of its title and instructions as shown (approved with its tools), the same way."""
    with db.transaction() as conn:
        rows, versions = [], []
        for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
            found = conn.execute(
                f"SELECT t.id, t.definition, a.hash FROM tools t LEFT JOIN approvals a "
                f"ON a.tool_id = t.id WHERE t.id IN ({marks})",
                chunk,
            ).fetchall()
            mine = [(stored_hash(d), d) for _, d, _ in found]
            versions += mine
            rows += [(tid, h, prev) for (tid, _, prev), (h, _) in zip(found, mine)]
        now = {tid: h for tid, h, _ in rows}
        for tid, shown in (expect or {}).items():
            if now.get(tid) != shown:
                raise ChangedSinceShown(tid, shown, now.get(tid))
        conn.executemany("INSERT INTO tool_versions(hash, definition) VALUES (?, ?) ON CONFLICT DO NOTHING", versions)
        conn.executemany(
            "INSERT INTO approvals(tool_id, hash, approved_by, approved_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(tool_id) DO UPDATE SET hash = excluded.hash, "
            "approved_by = excluded.approved_by, approved_at = excluded.approved_at",
            [(tid, h, by, at) for tid, h, _ in rows],
        )
        texts = server_texts(db, sorted({tid.partition("/")[0] for tid, _, _ in rows}))
        for server, shown in (expect_texts or {}).items():
            t = texts.get(server)
            now_text = text_hash(t["title"], t["instructions"]) if t else None
            if now_text != shown:
                raise ChangedSinceShown(f"server {server}", shown, now_text)
        conn.executemany(
            "INSERT INTO server_approvals(server, hash, title, instructions, approved_by, approved_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (server) DO UPDATE SET hash = excluded.hash, "
            "title = excluded.title, instructions = excluded.instructions, "
            "approved_by = excluded.approved_by, approved_at = excluded.approved_at",
            [
                (s, text_hash(t["title"], t["instructions"]), t["title"], t["instructions"], by, at)
                for s, t in texts.items()
            ],
        )
    return [{"id": tid, "hash": h, "previous_hash": prev} for tid, h, prev in sorted(rows)]


def revoke(db: Reader, ids: list[str]) -> list[str]:
    """Remove the approvals of `ids`; returns the ids that had one."""
    with db.transaction() as conn:
        had: list[str] = []
        for marks, chunk in in_chunks(list(dict.fromkeys(ids))):
            had += [
                r[0]
                for r in conn.execute(f"SELECT tool_id FROM approvals WHERE tool_id IN ({marks})", chunk).fetchall()
            ]
            conn.execute(f"DELETE FROM approvals WHERE tool_id IN ({marks})", chunk)
        # a server none of whose tools is approved any more has nothing approved
        conn.execute(
            "DELETE FROM server_approvals WHERE NOT EXISTS (SELECT 1 FROM approvals a WHERE "
            "substr(a.tool_id, 1, length(server_approvals.server) + 1) = server_approvals.server || '/')"
        )
    return sorted(had)
