"""What `toolidx doctor` asks of SQLite and of an index file: the engine's abilities, and an
index's version, integrity and gaps, and the keyed digest a sealed cache file is checked against.
Read-only."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from ..core.embedding import text_hash
from . import vectors
from .index import Reader, own
from .sqlite.database import load_vec
from .sqlite.file import sqlite_module
from .sqlite.migrations import MIGRATIONS


def engine() -> dict[str, Any]:
    """{"driver", "sqlite_version", "fts5", "vec", "vec_version", "vec_error"}: this Python's SQLite
    as toolidx opens it (store.sqlite.database), tried on an in-memory database."""
    mod = sqlite_module()
    conn = mod.connect(":memory:")
    try:
        version = conn.execute("SELECT sqlite_version()").fetchone()[0]
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
            fts5 = True
        except mod.Error:
            fts5 = False
        vec_ok, vec_error = load_vec(conn)
        vec_version = conn.execute("SELECT vec_version()").fetchone()[0] if vec_ok else None
    finally:
        conn.close()
    try:
        driver = (
            f"{mod.__name__.split('.')[0]} {importlib.metadata.version('sqlean-py')}"
            if mod.__name__.startswith("sqlean")
            else mod.__name__
        )
    except importlib.metadata.PackageNotFoundError:
        driver = mod.__name__
    return {
        "driver": driver,
        "sqlite_version": version,
        "fts5": fts5,
        "vec": vec_ok,
        "vec_version": vec_version,
        "vec_error": vec_error,
    }


def file_problems(db: Reader) -> list[str]:
    """SQLite's quick_check of an index file, its first 5 problems (["ok"]: none; []: it could not
    run at all)."""
    db = own(db)
    try:
        return [r[0] for r in db.execute("PRAGMA quick_check(5)").fetchall()]
    except Exception:  # the check itself met the damage
        return []


def damaged_file_fix(path: str, source: list[str] | None = None) -> str:
    """The fix for an index file whose pages are damaged: a copy restored, or the exact crawl into
    a new file moved over it. `source`: what to crawl (`--config FILE`, `--from CLIENTS`)."""
    from .sqlite.database import recrawl_fix

    return recrawl_fix(path, source, doctor=False)


def index_facts(db: Reader) -> dict[str, Any]:
    """The index's schema version against this toolidx's, SQLite's quick integrity check, what
    was crawled and what is missing: servers that failed their last crawl, tools without a vector."""
    db = own(db)
    with db.snapshot():
        user_version, is_toolidx, problems = db.writer.integrity()
        tools = int(db.scalar("SELECT count(*) FROM tools"))
        # stale_tools per server: a failed server's own kept tools, not every server's
        # a read-only file from before migration 4 has no servers.owner (a reader need not migrate)
        owner = "owner" if user_version >= 4 else "NULL AS owner"
        servers = db.query(
            f"SELECT name, status, error, stderr_tail, tool_count, last_ok_at, {owner}, "
            "(SELECT count(*) FROM tools t WHERE t.server = servers.name AND t.stale = 1) AS stale_tools "
            "FROM servers ORDER BY name"
        )
        stale = int(db.scalar("SELECT count(*) FROM tools WHERE stale = 1"))
        has_vectors = db.vec_available and db.writer.has_vectors()
        with_vectors = int(db.scalar(f"SELECT count(*) FROM {vectors.TABLE}")) if has_vectors else 0
        meta = {
            k: db.get_meta(k) for k in ("embed_model", "embed_dim", "embed_model_path", "config_path", "last_crawl_id")
        }
        model = meta["embed_model"]
        # a vector made from a text the tool no longer has (embed_hash is of model + text)
        outdated = (
            sum(
                r["embed_hash"] != text_hash(model, r["embed_text"])
                for r in db.query("SELECT embed_text, embed_hash FROM tools WHERE embed_hash IS NOT NULL")
            )
            if has_vectors and model
            else 0
        )
    return {
        "engine": engine_facts(db),
        "schema_version": user_version,
        "schema_expected": len(MIGRATIONS),
        "is_toolidx": is_toolidx,
        "integrity": problems,
        "tools": tools,
        "stale_tools": stale,
        "servers": servers,
        "vectors": with_vectors if has_vectors else None,
        "outdated_vectors": outdated,
        **meta,
    }


def engine_facts(db: Reader) -> dict[str, Any]:
    """Which engine holds the index and how it searches vectors: {"engine": "sqlite" | "postgres",
    "version", "vector": "sqlite-vec" | "pgvector" | "real[]" | None, "vector_version",
    "pgvector_available": the version the server could install (PostgreSQL; None: not there)}."""
    db = own(db)
    return db.writer.engine_facts()


def content_digest(db: Reader, key: bytes, skip_meta: list[str]) -> str:
    """A keyed digest of everything the index file holds but the meta rows `skip_meta` (a sealed
    cache file: integrations/catalog.py). Only a file has one (NotImplementedError otherwise)."""
    return own(db).writer.content_digest(key, skip_meta)
