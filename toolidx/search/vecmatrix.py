"""Nearest tools by embedding from a matrix held in memory, instead of sqlite-vec per query.

sqlite-vec's KNN reads and scores every stored vector on each query (brute force), and its
`rowid IN (...)` lookup for exact cosines scans too: together ~15-35 ms a hybrid query at 10k
tools on this project's CI box. The same vectors as one normalised float32 matrix (loaded once
per process and index version, 15 MB at 10k tools) answer both with one matrix-vector product
(< 1 ms). Only semantic/hybrid search uses it, and those have numpy already (the model needs it).
Scores equal sqlite-vec's cosine to float32 precision; ties are broken by rowid.
"""

from __future__ import annotations

from ..store import retrieval
from ..store.tools import filtered_rowids


def _build(db):
    import numpy as np

    rows = retrieval.all_vectors(db)
    if rows:
        ids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
        m = np.frombuffer(b"".join(b for _, b in rows), dtype=np.float32).reshape(len(rows), -1)
        norms = np.linalg.norm(m, axis=1)
        norms[norms == 0] = 1.0
        m = m / norms[:, None]
    else:
        ids, m = np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    pos = {int(r): i for i, r in enumerate(ids)}
    return ids, m, pos


def _matrix(db):
    """(rowids, unit vectors, rowid -> row) for the index as it is now, built once per version."""
    return db.cache.get("vectors", lambda: _build(db), size=lambda entry: len(entry[0]))


def preload(db) -> None:
    if not retrieval.in_database(db):  # PostgreSQL answers KNN itself (store/retrieval.py)
        _matrix(db)


def _query(blob: bytes, dim: int):
    import numpy as np

    q = np.frombuffer(blob, dtype=np.float32)
    if q.shape[0] != dim:
        return None
    n = float(np.linalg.norm(q))
    return q / n if n else q


def knn(db, query: bytes, k: int, filters=None) -> list[tuple[int, float]]:
    """(rowid, cosine similarity) of the k nearest tools that pass the filters."""
    if retrieval.in_database(db):
        return retrieval.vector_knn(db, query, k, filters)
    import numpy as np

    ids, m, _ = _matrix(db)
    if not len(ids):
        return []
    q = _query(query, m.shape[1])
    if q is None:
        return []
    sims = m @ q
    allowed = filtered_rowids(db, filters)
    if allowed is not None:
        idx = np.nonzero(np.isin(ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed))))[0]
        sims, ids = sims[idx], ids[idx]
    # one spare past k: a tie at the edge is ordered by rowid
    part = np.argpartition(-sims, k)[: k + 1] if k < len(sims) else np.arange(len(sims))
    order = sorted(part.tolist(), key=lambda i: (-float(sims[i]), int(ids[i])))[:k]
    return [(int(ids[i]), float(sims[i])) for i in order]


def cosine_for(db, query: bytes, rowids: list[int]) -> dict[int, float]:
    """Cosine similarity of the query to each given tool that has a vector."""
    if retrieval.in_database(db):
        return retrieval.vector_cosines(db, query, rowids)
    ids, m, pos = _matrix(db)
    if not rowids or not len(ids):
        return {}
    q = _query(query, m.shape[1])
    if q is None:
        return {}
    have = [r for r in rowids if r in pos]
    if not have:
        return {}
    sims = m[[pos[r] for r in have]] @ q
    return {r: float(s) for r, s in zip(have, sims)}
