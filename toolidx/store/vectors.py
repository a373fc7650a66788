"""The sqlite-vec table of tool embeddings (rowid = tools.rowid), created once the model's
dimension is known. Cosine distance; vectors are float32 blobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .db import Database

if TYPE_CHECKING:
    from ..core.embedding import Embedder

TABLE = "tool_vectors"


def has_table(db: Database) -> bool:
    return db.scalar("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)) is not None


def remember_model(db: Database, embedder: Embedder) -> None:
    """Where the model came from (a local folder), so searches on this machine find it unasked, and
    the hash of its file where known, so a changed file under the same name is a new model."""
    path = getattr(embedder, "path", None)
    if path:
        db.set_meta("embed_model_path", path)
    db.set_meta("embed_model_sha256", embedder.sha256 or "")


def model_changed(db: Database, model: str, sha256: str | None) -> bool:
    """Whether the index's vectors come from another model than (model, sha256): another name, or
    the same name with another file where both hashes are known."""
    stored = db.get_meta("embed_model_sha256")
    return db.get_meta("embed_model") != model or bool(sha256 and stored and stored != sha256)


def ensure_table(db: Database, model: str, dim: int, sha256: str | None = None) -> bool:
    """Make the table fit (model, dim). Returns True when existing vectors were dropped (a new
    model or dimension), so every tool must be embedded again. Call inside a transaction."""
    same = not model_changed(db, model, sha256) and db.get_meta("embed_dim") == str(dim)
    exists = has_table(db)
    if exists and same:
        return False
    if exists:
        db.execute(f"DROP TABLE {TABLE}")
        db.execute("UPDATE tools SET embed_hash = NULL")
    db.execute(f"CREATE VIRTUAL TABLE {TABLE} USING vec0(embedding float[{dim}] distance_metric=cosine)")
    db.set_meta("embed_model", model)
    db.set_meta("embed_dim", str(dim))
    return exists


def put(db: Database, rowid: int, blob: bytes) -> None:
    # vec0 has no UPSERT
    db.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (rowid,))
    db.execute(f"INSERT INTO {TABLE}(rowid, embedding) VALUES (?, ?)", (rowid, blob))


def delete(db: Database, rowids: list[int]) -> None:
    if rowids and has_table(db):
        for r in rowids:
            db.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (r,))


def knn(db: Database, query: bytes, k: int) -> list[tuple[int, float]]:
    """(rowid, cosine distance) of the k nearest tools."""
    if not has_table(db):
        return []
    rows = db.execute(f"SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ? "
                      "ORDER BY distance", (query, k)).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def get(db: Database, rowid: int) -> Any:
    if not has_table(db):
        return None
    return db.scalar(f"SELECT embedding FROM {TABLE} WHERE rowid = ?", (rowid,))
