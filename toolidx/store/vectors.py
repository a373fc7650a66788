"""The table of tool embeddings (rowid = tools.rowid), created once the model's dimension is
known: sqlite-vec's vec0 in a file; in PostgreSQL pgvector's vector(dim) with an HNSW index, or
real[] where pgvector is missing (store/pg/database.py). Cosine distance; vectors are float32 blobs here."""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any, cast

from .index import Index

if TYPE_CHECKING:
    from ..core.embedding import Embedder
    from .pg.database import PgDatabase

TABLE = "tool_vectors"


def has_table(db: Index) -> bool:
    from .pg.database import table_exists

    return table_exists(db, TABLE)


def pg_value(db: Index, blob: bytes) -> tuple[str, Any]:
    """(the SQL cast, the parameter) of a float32 blob in PostgreSQL: pgvector's text form, or a
    real[] where pgvector is missing."""
    values = array("f", blob).tolist()
    if getattr(db, "vec_kind", None) == "vector":
        return "::vector", "[" + ",".join(map(repr, values)) + "]"
    return "::real[]", values


def remember_model(db: Index, embedder: Embedder) -> None:
    """Where the model came from (a local folder), so searches on this machine find it unasked, and
    the hash of its file where known, so a changed file under the same name is a new model."""
    path = getattr(embedder, "path", None)
    if path:
        db.set_meta("embed_model_path", path)
    db.set_meta("embed_model_sha256", embedder.sha256 or "")


def model_changed(db: Index, model: str, sha256: str | None) -> bool:
    """Whether the index's vectors come from another model than (model, sha256): another name, or
    the same name with another file where both hashes are known."""
    stored = db.get_meta("embed_model_sha256")
    return db.get_meta("embed_model") != model or bool(sha256 and stored and stored != sha256)


def ensure_table(db: Index, model: str, dim: int, sha256: str | None = None) -> bool:
    """Make the table fit (model, dim). Returns True when existing vectors were dropped (a new
    model or dimension), so every tool must be embedded again. Call inside a transaction."""
    same = not model_changed(db, model, sha256) and db.get_meta("embed_dim") == str(dim)
    exists = has_table(db)
    if exists and same:
        return False
    if exists:
        db.execute(f"DROP TABLE {TABLE}")
        db.execute("UPDATE tools SET embed_hash = NULL")
    if not db.postgres:
        db.execute(f"CREATE VIRTUAL TABLE {TABLE} USING vec0(embedding float[{dim}] distance_metric=cosine)")
    elif getattr(db, "vec_kind", None) == "vector":
        db.execute(
            f"CREATE TABLE {TABLE} (rowid BIGINT PRIMARY KEY REFERENCES tools(rowid) ON DELETE CASCADE, "
            f"embedding vector({int(dim)}) NOT NULL)"
        )
        db.execute(f"CREATE INDEX {TABLE}_hnsw ON {TABLE} USING hnsw (embedding vector_cosine_ops)")
    else:
        db.execute(
            f"CREATE TABLE {TABLE} (rowid BIGINT PRIMARY KEY REFERENCES tools(rowid) ON DELETE CASCADE, "
            "embedding real[] NOT NULL)"
        )
    db.set_meta("embed_model", model)
    db.set_meta("embed_dim", str(dim))
    return exists


def put(db: Index, rowid: int, blob: bytes) -> None:
    if db.postgres:
        cast, value = pg_value(db, blob)
        db.execute(
            f"INSERT INTO {TABLE}(rowid, embedding) VALUES (?, ?{cast}) "
            "ON CONFLICT (rowid) DO UPDATE SET embedding = excluded.embedding",
            (rowid, value),
        )
        return
    # vec0 has no UPSERT
    db.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (rowid,))
    db.execute(f"INSERT INTO {TABLE}(rowid, embedding) VALUES (?, ?)", (rowid, blob))


def delete(db: Index, rowids: list[int]) -> None:
    if rowids and has_table(db):
        for r in rowids:
            db.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (r,))


def knn(db: Index, query: bytes, k: int) -> list[tuple[int, float]]:
    """(rowid, cosine distance) of the k nearest tools."""
    if not has_table(db):
        return []
    if db.postgres:
        from .pg.retrieval import vector_knn

        return [(r, 1.0 - s) for r, s in vector_knn(cast("PgDatabase", db), query, k)]
    rows = db.execute(
        f"SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ? ORDER BY distance", (query, k)
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def get(db: Index, rowid: int) -> Any:
    if not has_table(db):
        return None
    if db.postgres:
        values = db.scalar(f"SELECT embedding::real[] FROM {TABLE} WHERE rowid = ?", (rowid,))
        return None if values is None else array("f", values).tobytes()
    return db.scalar(f"SELECT embedding FROM {TABLE} WHERE rowid = ?", (rowid,))
