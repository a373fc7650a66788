"""Writing a crawl into the index (one transaction), filling in vectors, and reading crawl history.

A crawl is a full snapshot: `crawl_tools` lists every tool the index held after that crawl
(a failed server's previous tools are carried over, marked stale), so any two crawls compare.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import __version__
from ..core.clock import now_iso
from ..core.embedding import Embedder, text_hash
from ..core.servers import ServerResult, stderr_lines
from ..core.tooldoc import ToolDoc, canonical_json, fix_strings
from . import keywords, vectors
from .base import in_chunks
from .index import Index, Reader, own


@dataclass
class CrawlSummary:
    """What a crawl returns (`to_json()`: the `crawl --json` document's body); `servers` holds one
    row per server: status, tools, invalid tools, time, error, stderr (superseded_by when a later
    crawl of it was already stored)."""

    crawl_id: int
    servers_ok: int = 0
    servers_failed: int = 0
    tools: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    semantic: bool = False
    servers: list[dict] = field(default_factory=list)
    # servers this crawl removed: [{server, tools, owner, other_config}] (owner: the config that had
    # crawled it; other_config: not this one, removed by --prune-other-configs)
    removed_servers: list[dict] = field(default_factory=list)
    # servers of other configs in the index, left as they are (a full crawl prunes only its own)
    other_configs_servers: int = 0
    config: str | None = None  # the config crawled (its path)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _j(v: Any) -> str | None:
    return None if v is None else canonical_json(v)


def _bool(v: bool | None) -> int | None:
    return None if v is None else int(v)


def embed_hashes(db: Reader) -> dict[str, str | None]:
    """Each tool's id and the hash of the text its vector was computed from (None: no vector)."""
    db = own(db)
    return {row["id"]: row["embed_hash"] for row in db.query("SELECT id, embed_hash FROM tools")}


def write_crawl(
    db: Reader,
    results: list[ServerResult],
    docs: dict[str, list[ToolDoc]],
    *,
    vecs: dict[str, bytes],
    embedder: Embedder | None,
    config_path: str | None,
    prune: bool,
    started_at: str | None = None,
    owner: str | None = None,
    prune_other_configs: bool = False,
) -> CrawlSummary:
    """Store one crawl in one transaction: `docs` (per server that answered, its tools), `vecs` (by
    tool id, computed by `embedder` before the transaction, so readers are never blocked and see
    one whole crawl). What to embed is the crawl's decision (crawl/write.py). `prune` (a full crawl
    of a config): servers of this config (`owner`, by default `config_path`) that were not crawled
    are removed; servers other configs crawled into the same index stay, unless
    `prune_other_configs`. Without `prune` every server not crawled is kept. Kept servers are
    carried into this crawl's snapshot. Each server written belongs to `owner` from now on
    (servers.owner)."""
    db = own(db)
    for r in results:
        r.mask_secrets()  # idempotent; crawl has done it already, other writers may not have
    summary = CrawlSummary(crawl_id=0, config=config_path)
    ts = now_iso()
    # compared as stored: PostgreSQL stores text cleaned (no NUL), so a raw owner never matched its own
    owner = fix_strings(owner or config_path)
    with db.transaction():
        # another crawler may have written these servers since `existing` was read (writers take
        # turns, readers do not wait): what is in the index now decides what this crawl changes
        names = {r.spec.name for r in results}
        existing: dict[str, dict] = {}
        for marks, chunk in in_chunks(sorted(names)):
            existing.update(
                {
                    row["id"]: row
                    for row in db.query(
                        f"SELECT rowid, id, server, hash, embed_hash FROM tools WHERE server IN ({marks})", chunk
                    )
                }
            )
        crawl_id = summary.crawl_id = int(
            db.scalar(
                "INSERT INTO crawls(started_at, config_path, toolidx_version) VALUES (?, ?, ?) RETURNING id",
                (started_at or ts, config_path, __version__),
            )
        )
        if embedder is not None:
            if vectors.ensure_table(db, embedder.model, embedder.dim, embedder.sha256):
                db.execute("UPDATE tools SET embed_hash = NULL")
            vectors.remember_model(db, embedder)
        crawled = set()
        for r in results:
            crawled.add(r.spec.name)
            newer = _newer_crawl(db, r, ts)
            if newer is not None:  # the latest crawl of a server wins, whichever commits last
                summary.servers.append(
                    {
                        "server": r.spec.name,
                        "status": r.status,
                        "error": r.error,
                        "stderr": [],
                        "tools": len(r.tools) if r.ok else None,
                        "invalid_tools": r.invalid_tools,
                        "duration_ms": r.duration_ms,
                        "superseded_by": newer,
                    }
                )
                continue
            held_by = db.scalar("SELECT owner FROM servers WHERE name = ?", (r.spec.name,))
            _write_server(db, r, crawl_id, ts, owner)
            if r.ok:
                _write_tools(db, r.spec.name, docs[r.spec.name], existing, vecs, embedder, ts, summary)
                summary.servers_ok += 1
            else:
                db.execute(
                    "UPDATE tools SET stale = 1, stale_reason = ? WHERE server = ?",
                    (r.error or "crawl failed", r.spec.name),
                )
                summary.servers_failed += 1
            summary.servers.append(
                {
                    "server": r.spec.name,
                    "status": r.status,
                    "error": r.error,
                    # why it failed is often only in what it printed
                    "stderr": [] if r.ok else stderr_lines(r.stderr_tail, r.spec.mask),
                    "tools": len(r.tools) if r.ok else None,
                    "invalid_tools": r.invalid_tools,
                    "duration_ms": r.duration_ms,
                    # another config's server of the same name, now this one's: said, never silent
                    "replaced_owner": held_by if held_by is not None and held_by != owner else None,
                    "owner": owner,
                }
            )
        if prune:
            for row in db.query("SELECT name, owner FROM servers ORDER BY name"):
                if row["name"] in crawled:
                    continue
                mine = row["owner"] == owner
                if not mine and not prune_other_configs:
                    summary.other_configs_servers += 1
                    continue
                tools = _delete_server(db, row["name"])
                summary.removed += tools
                summary.removed_servers.append(
                    {"server": row["name"], "tools": tools, "owner": row["owner"], "other_config": not mine}
                )
        # snapshot of the whole index after this crawl
        db.execute(
            "INSERT INTO tool_versions(hash, definition) SELECT hash, definition FROM tools WHERE TRUE "
            "ON CONFLICT DO NOTHING"
        )
        db.execute(
            "INSERT INTO crawl_tools(crawl_id, tool_id, server, name, hash, stale) "
            "SELECT ?, id, server, name, hash, stale FROM tools",
            (crawl_id,),
        )
        summary.tools = int(db.scalar("SELECT count(*) FROM tools"))
        summary.semantic = db.vec_available and vectors.has_table(db)
        db.execute(
            "UPDATE crawls SET finished_at = ?, servers_ok = ?, servers_failed = ?, "
            "tool_count = ?, embedded = ? WHERE id = ?",
            (now_iso(), summary.servers_ok, summary.servers_failed, summary.tools, summary.embedded, crawl_id),
        )
        db.set_meta("last_crawl_id", str(crawl_id))
        if config_path:
            db.set_meta("config_path", config_path)
    return summary


def _newer_crawl(db: Index, r: ServerResult, ts: str) -> str | None:
    """When the index holds a crawl of `r`'s server that started after `r` did (a crawler that
    ran at the same time and committed first), that crawl's time; else None."""
    at = db.scalar("SELECT crawled_at FROM servers WHERE name = ?", (r.spec.name,))
    return at if at is not None and at > (r.started_at or ts) else None


def _write_server(db: Index, r: ServerResult, crawl_id: int, ts: str, owner: str | None) -> None:
    s = r.spec
    db.execute(
        "INSERT INTO crawl_servers(crawl_id, server, status, error, server_name, server_version, "
        "protocol_version, tool_count, duration_ms) VALUES (?,?,?,?,?,?,?,?,?)",
        (
            crawl_id,
            s.name,
            r.status,
            r.error,
            r.server_name,
            r.server_version,
            r.protocol_version,
            len(r.tools) if r.ok else 0,
            r.duration_ms,
        ),
    )
    common = dict(
        name=s.name,
        transport=s.transport,
        connect=canonical_json(s.public()),
        category=s.category,
        tags=json.dumps(s.tags),
        status=r.status,
        error=r.error,
        stderr_tail=r.stderr_tail,
        crawled_at=r.started_at or ts,
        duration_ms=r.duration_ms,
        last_crawl_id=crawl_id,
        owner=owner,
    )
    if r.ok:
        common.update(
            server_name=r.server_name,
            server_title=r.server_title,
            server_version=r.server_version,
            protocol_version=r.protocol_version,
            instructions=r.instructions,
            capabilities=_j(r.capabilities),
            tool_count=len(r.tools),
            invalid_tools=json.dumps(r.invalid_tools),
            last_ok_at=r.started_at or ts,
        )
    cols = list(common)
    # a failed attempt keeps what the last good crawl learned about the server
    db.execute(
        f"INSERT INTO servers({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
        f"ON CONFLICT(name) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in cols if c != "name"),
        [common[c] for c in cols],
    )


def _write_tools(
    db: Index,
    server: str,
    docs: list[ToolDoc],
    existing: dict[str, dict],
    vecs: dict[str, bytes],
    embedder: Embedder | None,
    ts: str,
    summary: CrawlSummary,
) -> None:
    keep = {d.id for d in docs}
    gone = [row for row in db.query("SELECT rowid, id FROM tools WHERE server = ?", (server,)) if row["id"] not in keep]
    for row in gone:
        _delete_tool(db, row["rowid"])
    summary.removed += len(gone)
    fts_rows: list[tuple[int, dict[str, str]]] = []
    for d in docs:
        old = existing.get(d.id)
        values = dict(
            server=d.server,
            name=d.name,
            title=d.title,
            description=d.description,
            input_schema=_j(d.definition.get("inputSchema")),
            output_schema=_j(d.definition.get("outputSchema")),
            annotations=_j(d.definition.get("annotations")),
            icons=_j(d.definition.get("icons")),
            meta=_j(d.definition.get("_meta")),
            definition=canonical_json(d.definition),
            tags=json.dumps(d.tags),
            category=d.category,
            param_names=json.dumps(d.param_names),
            read_only=_bool(d.read_only),
            destructive=_bool(d.destructive),
            hash=d.hash,
            embed_text=d.embed_text,
            stale=0,
            stale_reason=None,
            updated_at=ts,
        )
        if old is None:
            values.update(id=d.id, first_seen=ts)
            cols = list(values)
            rowid = int(
                db.scalar(
                    f"INSERT INTO tools({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING rowid",
                    [values[c] for c in cols],
                )
            )
            summary.added += 1
        else:
            rowid = int(old["rowid"])
            if old["hash"] == d.hash:
                summary.unchanged += 1
                values.pop("updated_at")
            else:
                summary.changed += 1
            db.execute(
                f"UPDATE tools SET {', '.join(f'{c} = ?' for c in values)} WHERE rowid = ?", [*values.values(), rowid]
            )
        fts_rows.append((rowid, d.fts_row()))
        if embedder is not None and d.id in vecs:
            vectors.put(db, rowid, vecs[d.id])
            db.execute(
                "UPDATE tools SET embed_hash = ? WHERE rowid = ?", (text_hash(embedder.model, d.embed_text), rowid)
            )
            summary.embedded += 1
    keywords.put_many(db, fts_rows)


def _delete_tool(db: Index, rowid: int) -> None:
    keywords.delete(db, [rowid])
    vectors.delete(db, [rowid])
    db.execute("DELETE FROM tools WHERE rowid = ?", (rowid,))


def _delete_server(db: Index, name: str) -> int:
    rows = db.query("SELECT rowid FROM tools WHERE server = ?", (name,))
    for row in rows:
        _delete_tool(db, row["rowid"])
    db.execute("DELETE FROM servers WHERE name = ?", (name,))
    return len(rows)


def embed_rows(db: Reader) -> list[dict]:
    """Every tool's rowid, embedded text and the hash its vector was computed from (`toolidx embed`)."""
    db = own(db)
    return db.query("SELECT rowid, id, embed_text, embed_hash FROM tools")


def write_vectors(db: Reader, embedder: Embedder, rows: list[dict], blobs: list[bytes]) -> None:
    """Store `blobs`, the vectors `embedder` computed for `rows` (from `embed_rows`), in one transaction."""
    db = own(db)
    with db.transaction():
        vectors.ensure_table(db, embedder.model, embedder.dim, embedder.sha256)
        vectors.remember_model(db, embedder)
        for r, blob in zip(rows, blobs):
            vectors.put(db, r["rowid"], blob)
            db.execute(
                "UPDATE tools SET embed_hash = ? WHERE rowid = ?",
                (text_hash(embedder.model, r["embed_text"]), r["rowid"]),
            )


def recorded_owners(db: Reader, servers: list[str] | None = None) -> list[str]:
    """The owners (servers.owner) of the index's servers (those named, else all)."""
    db = own(db)
    where, params = "", []
    if servers:
        where, params = f" AND name IN ({', '.join('?' * len(servers))})", list(servers)
    rows = db.query(f"SELECT DISTINCT owner FROM servers WHERE owner IS NOT NULL{where} ORDER BY 1", params)
    return [r["owner"] for r in rows]


def recorded_configs(db: Reader, servers: list[str] | None = None, fallback: bool = True) -> list[str]:
    """The config files the index's servers (those named, else all) were last crawled from, as the
    crawls recorded them; an index without servers: the config its last crawl recorded (not
    without `fallback`)."""
    db = own(db)
    where, params = "", []
    if servers:
        where, params = f" AND s.name IN ({', '.join('?' * len(servers))})", list(servers)
    rows = db.query(
        "SELECT DISTINCT c.config_path AS path FROM servers s JOIN crawls c ON c.id = s.last_crawl_id "
        f"WHERE c.config_path IS NOT NULL{where} ORDER BY 1",
        params,
    )
    if rows or not fallback:
        return [r["path"] for r in rows]
    if servers:  # servers the index does not hold yet: whichever configs crawled the others
        return recorded_configs(db)
    last = db.get_meta("config_path")
    return [last] if last else []
