"""The table of tool embeddings (rowid = tools.rowid), created once the model's dimension is
known, by the index's engine (`db.writer`: sqlite-vec's vec0 in a file; in PostgreSQL pgvector's
vector(dim) with an HNSW index, or real[] where pgvector is missing). Cosine; vectors are float32
blobs here. Searching them is the engine's `db.retrieval.knn` / `.cosines`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import server_vectors
from .index import Reader, own
from .writer import VECTOR_TABLE as TABLE

if TYPE_CHECKING:
    from ..core.embedding import Embedder


def has_table(db: Reader) -> bool:
    db = own(db)
    return db.writer.has_vectors()


def remember_model(db: Reader, embedder: Embedder) -> None:
    """Where the model came from (a local folder), so searches on this machine find it unasked, and
    the hash of its file where known, so a changed file under the same name is a new model."""
    path = getattr(embedder, "path", None)
    if path:
        db.set_meta("embed_model_path", path)
    db.set_meta("embed_model_sha256", embedder.sha256 or "")


def model_changed(db: Reader, model: str, sha256: str | None) -> bool:
    """Whether the index's vectors come from another model than (model, sha256): another name, or
    the same name with another file where both hashes are known."""
    stored = db.get_meta("embed_model_sha256")
    return db.get_meta("embed_model") != model or bool(sha256 and stored and stored != sha256)


def ensure_table(db: Reader, model: str, dim: int, sha256: str | None = None) -> bool:
    """Make the table fit (model, dim). Returns True when existing vectors were dropped (a new
    model or dimension), so every tool must be embedded again. Call inside a transaction."""
    db = own(db)
    same = not model_changed(db, model, sha256) and db.get_meta("embed_dim") == str(dim)
    exists = has_table(db)
    if exists and same:
        return False
    if exists:
        db.execute(f"DROP TABLE {TABLE}")
        db.execute("UPDATE tools SET embed_hash = NULL")
        server_vectors.clear(db)
    db.writer.create_vector_table(dim)
    db.set_meta("embed_model", model)
    db.set_meta("embed_dim", str(dim))
    return exists


def put(db: Reader, rowid: int, blob: bytes) -> None:
    db = own(db)
    db.writer.put_vector(rowid, blob)


def delete(db: Reader, rowids: list[int]) -> None:
    db = own(db)
    if rowids and has_table(db):
        for r in rowids:
            db.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (r,))


def get(db: Reader, rowid: int) -> bytes | None:
    db = own(db)
    return db.writer.vector(rowid) if has_table(db) else None
