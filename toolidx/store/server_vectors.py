"""Each server's text embedded (`server_vectors`, migration 5; search/server_match.py reads it as
evidence for the server's tools): one row per server, its vector and the hash of the model and text
it came from, so a crawl embeds only the servers whose text changed. The same SQL on both engines
(a BLOB in a file, BYTEA in PostgreSQL). An index opened read-only before the migration reads as
"no server vectors"."""

from __future__ import annotations

from .base import in_chunks
from .index import Reader, own

TABLE = "server_vectors"


def has_table(db: Reader) -> bool:
    return own(db).writer.table_exists(TABLE)


def sources(db: Reader) -> list[dict]:
    """Every server with what its text is made of: name, server_name, server_title, instructions,
    and its tools' names in rowid order (`tools`, a list)."""
    db = own(db)
    rows = db.query("SELECT name, server_name, server_title, instructions FROM servers ORDER BY name")
    names: dict[str, list[str]] = {}
    for server, name in db.rows("SELECT server, name FROM tools ORDER BY rowid"):
        names.setdefault(server, []).append(name)
    for r in rows:
        r["tools"] = names.get(r["name"], [])
    return rows


def hashes(db: Reader) -> dict[str, str]:
    """server -> the embed_hash of its stored vector."""
    if not has_table(db):
        return {}
    return {s: h for s, h in own(db).rows(f"SELECT server, embed_hash FROM {TABLE}")}


def put(db: Reader, rows: list[tuple[str, str, bytes]]) -> None:
    """Store (server, embed_hash, vector) rows, in the caller's transaction."""
    db = own(db)
    for server, h, blob in rows:
        db.execute(
            f"INSERT INTO {TABLE}(server, embed_hash, vector) VALUES (?, ?, ?) "
            "ON CONFLICT(server) DO UPDATE SET embed_hash = excluded.embed_hash, vector = excluded.vector",
            (server, h, blob),
        )


def stored(db: Reader, servers: list[str]) -> list[tuple[str, str, bytes]]:
    """(server, embed_hash, vector) of the given servers that have one (a merge carries them)."""
    if not servers or not has_table(db):
        return []
    db = own(db)
    return [
        (s, h, bytes(v))
        for marks, chunk in in_chunks(servers)
        for s, h, v in db.rows(f"SELECT server, embed_hash, vector FROM {TABLE} WHERE server IN ({marks})", chunk)
    ]


def write(db: Reader, rows: list[tuple[str, str, bytes]], keep: set[str]) -> None:
    """Store (server, embed_hash, vector) rows, and drop the vectors of servers not in `keep`."""
    db = own(db)
    if not has_table(db):
        return
    with db.transaction():
        put(db, rows)
        for (server,) in db.rows(f"SELECT server FROM {TABLE}"):
            if server not in keep:
                db.execute(f"DELETE FROM {TABLE} WHERE server = ?", (server,))


def clear(db: Reader) -> None:
    """Drop every server vector (the model changed: they are all redone)."""
    if has_table(db):
        own(db).execute(f"DELETE FROM {TABLE}")


def read(db: Reader) -> list[tuple[str, bytes]]:
    """(server, vector) of every server that has one, by name."""
    if not has_table(db):
        return []
    return [(s, bytes(v)) for s, v in own(db).rows(f"SELECT server, vector FROM {TABLE} ORDER BY server")]


def tool_servers(db: Reader) -> list[tuple[int, str]]:
    """(rowid, server) of every tool."""
    return [(int(r), s) for r, s in own(db).rows("SELECT rowid, server FROM tools ORDER BY rowid")]
