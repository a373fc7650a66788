"""The vectors a file's semantic and hybrid searches score (SqliteRetrieval.knn, .cosines): every
stored vector, normalised, in rowid order, with one sign code per vector.

Up to EXACT_MAX vectors, every cosine is computed (each row summed alone, `_dot`: ~0.8 ms at 10k
once the model's run has evicted the matrix from the cache), and the matrix is held in memory.
Above, two things change, because at 100k tools that product read 150 MB and took ~15 ms a query,
and the matrix was most of a replica's memory:

- **Shortlist by sign code, rank by exact cosine.** Each vector's code is one bit per dimension,
  the sign of (vector - the catalog's mean vector); the query's code is made the same way. The
  SHORTLIST vectors whose codes differ from the query's in the fewest bits (every vector tied with
  the last one too) get their exact float32 cosine, the very number every row's product gives, and
  the k best of those are the answer. Codes are 48 bytes a tool (384 dimensions), so the scan
  reads 4.8 MB at 100k tools. What a shortlist could miss is a vector whose signs disagree with
  the query's more than those of SHORTLIST others yet whose cosine is in the top k; measured on
  the 10k and 100k catalogs of benchmarks/search_speed.py: see docs/research/search.md.
- **Memory-mapped** (mapped.py). The unit vectors, codes and rowids are written once per index
  content to a cache file, named by a hash of the model and of every tool's rowid and embed_hash
  (which crawl and embed set with each vector), and mapped read-only: a second replica, or a
  restart, opens it in milliseconds instead of reading and normalising every vector. A file that
  is missing, unwritable or does not match is no error: the matrix is then built in memory.

Ties are ordered by rowid on both paths: every vector tied with the k-th is ranked, not an
arbitrary one of them. Only semantic and hybrid search use this, and those have numpy already
(the model needs it).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import vectors
from . import mapped

if TYPE_CHECKING:
    from .database import Database

EXACT_MAX = 16_384  # vectors scored exactly, held in memory (the full product: ~1 ms at most)
SHORTLIST = 2000  # vectors whose exact cosine is computed above EXACT_MAX (~0.3 ms)


# --- reading the vectors from the file ----------------------------------------------------------
def all_vectors(db: Database) -> list[tuple[int, bytes]]:
    """(rowid, float32 blob) of every stored embedding."""
    if not vectors.has_table(db):
        return []
    return db.execute(f"SELECT rowid, embedding FROM {vectors.TABLE}").fetchall()


def vec_chunks(db: Database) -> tuple[int, list[tuple[int, bytes, bytes, bytes]]] | None:
    """(how many vectors are stored, and each sqlite-vec chunk's slots, validity bitmap, rowids
    and vectors), read from vec0's own tables: ~10 blobs per 10k tools, where a row by row read
    takes ~1.4 s at 100k. None where the table is missing or not laid out as sqlite-vec 0.1's."""
    t = vectors.TABLE
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE name LIKE ?", (f"{t}_%",))}
    if not {f"{t}_chunks", f"{t}_rowids", f"{t}_vector_chunks00"} <= names or f"{t}_vector_chunks01" in names:
        return None
    count = int(db.scalar(f'SELECT count(*) FROM "{t}_rowids"'))
    chunks = db.execute(
        f'SELECT c.size, c.validity, c.rowids, v.vectors FROM "{t}_chunks" c '
        f'JOIN "{t}_vector_chunks00" v ON v.rowid = c.chunk_id ORDER BY c.chunk_id'
    ).fetchall()
    return count, chunks


def embedded_count(db: Database) -> int:
    """How many tools have a vector (crawl and embed set embed_hash with each one)."""
    return int(db.scalar("SELECT count(*) FROM tools WHERE embed_hash IS NOT NULL"))


def content_key(db: Database) -> tuple[str, list[int]]:
    """(a hash naming the vectors' content, the rowids that should have one): the model, its
    file's hash and dimension, and every tool's rowid and embed_hash (sha256 of model + text,
    set with each stored vector)."""
    h = hashlib.sha256()
    for key in ("embed_model", "embed_model_sha256", "embed_dim"):
        h.update(f"{key}={db.get_meta(key) or ''}\n".encode())
    ids = []
    for r, e in db.execute("SELECT rowid, embed_hash FROM tools WHERE embed_hash IS NOT NULL ORDER BY rowid"):
        ids.append(int(r))
        h.update(b"%d %s\n" % (r, str(e).encode()))
    return h.hexdigest()[:32], ids


def _from_chunks(np: Any, db: Database) -> tuple[Any, Any] | None:
    """(rowids, vectors) in rowid order from sqlite-vec's chunks; None where they do not add up
    to the stored vectors (another layout: read row by row instead)."""
    got = vec_chunks(db) if vectors.has_table(db) else None
    if got is None:
        return None
    count, chunks = got
    ids, used = [], []
    for size, validity, rowids, blob in chunks:
        if not size or len(rowids) != 8 * size or len(blob) % (4 * size) or len(validity) * 8 < size:
            return None
        used.append(np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool))
        ids.append(np.frombuffer(rowids, dtype=np.int64)[used[-1]])
    dims = {len(blob) // 4 // size for size, _, _, blob in chunks}
    if sum(len(i) for i in ids) != count or len(dims) > 1:
        return None
    if not count:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    m, at = np.empty((count, dims.pop()), dtype=np.float32), 0
    for (size, _, _, blob), u in zip(chunks, used):
        v = np.frombuffer(blob, dtype=np.float32).reshape(size, -1)
        n = int(u.sum())
        m[at : at + n] = v if n == size else v[u]
        at += n
    all_ids = np.concatenate(ids)
    if len(all_ids) > 1 and not (all_ids[1:] > all_ids[:-1]).all():
        order = np.argsort(all_ids, kind="stable")  # the rowid order a scan of the table gives
        all_ids, m = all_ids[order], m[order]
    return all_ids, m


def read_unit(db: Database) -> tuple[Any, Any]:
    """(rowids, unit float32 vectors) of every stored vector, in rowid order."""
    import numpy as np

    got = _from_chunks(np, db)
    if got is None and (rows := all_vectors(db)):
        got = (
            np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows)),
            np.frombuffer(b"".join(b for _, b in rows), dtype=np.float32).reshape(len(rows), -1),
        )
    if got is None or not len(got[0]):
        got = np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    ids, m = got
    if not m.flags.writeable:
        m = m.copy()
    for i in range(0, len(ids), 4096):  # unit rows, a block at a time in place (each row's floats
        block = m[i : i + 4096]  # are the whole matrix's: a row's norm reads that row alone)
        norms = np.linalg.norm(block, axis=1)
        norms[norms == 0] = 1.0
        block /= norms[:, None]
    return ids, m


# --- the matrix ---------------------------------------------------------------------------------
def _popcount(np: Any, x: Any) -> Any:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
    return table[x.view(np.uint8)].reshape(*x.shape, -1).sum(axis=-1, dtype=np.uint8)


def hamming(np: Any, codes: Any, qcode: Any) -> Any:
    """Bits in which each code (column of `codes`: one row per 64-bit word, so each word's XOR
    and count runs over one contiguous array) differs from `qcode`."""
    dist = np.zeros(codes.shape[1], dtype=np.uint16)
    buf = np.empty(codes.shape[1], dtype=np.uint64)
    for word, q in zip(codes, qcode):
        np.bitwise_xor(word, q, out=buf)
        dist += _popcount(np, buf)
    return dist


class Matrix:
    """The unit vectors (`unit`, rows in the order of the sorted `ids`) and, above EXACT_MAX, their
    sign codes against `center` (`codes`: words x vectors). Immutable once made: searches in
    several threads share it."""

    def __init__(self, ids: Any, unit: Any, center: Any = None, codes: Any = None, path: Path | None = None):
        self.ids, self.unit, self.center, self.codes, self.path = ids, unit, center, codes, path

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dim(self) -> int:
        return int(self.unit.shape[1]) if len(self.ids) else 0

    def query(self, blob: bytes) -> Any:
        """The query as a unit float32 vector; None when its dimension is not the index's."""
        import numpy as np

        q = np.frombuffer(blob, dtype=np.float32)
        if q.shape[0] != self.dim:
            return None
        n = float(np.linalg.norm(q))
        return q / n if n else q

    def _shortlist(self, np: Any, q: Any, rows: Any | None) -> Any | None:
        """Row numbers worth an exact cosine (None: every row): all of `rows` when few, else the
        SHORTLIST nearest by sign code and every row tied with the last of them."""
        n = len(self.ids) if rows is None else len(rows)
        if self.codes is None or n <= SHORTLIST:
            return rows
        qcode = codes_of(np, (q - self.center)[None, :])[0]
        dist = hamming(np, self.codes if rows is None else self.codes[:, rows], qcode)
        cut = int(np.searchsorted(np.cumsum(np.bincount(dist)), SHORTLIST))
        picked = np.flatnonzero(dist <= cut)
        return picked if rows is None else rows[picked]

    def knn(self, blob: bytes, k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        """(rowid, cosine) of the k nearest vectors among `allowed` rowids (None: all), ties by rowid."""
        import numpy as np

        q = self.query(blob) if len(self.ids) else None
        if q is None or k <= 0:
            return []
        rows = None
        if allowed is not None:
            rows = np.flatnonzero(np.isin(self.ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed))))
        picked = self._shortlist(np, q, rows)
        if picked is None:
            sims, ids = self._dot(np, None, q), self.ids
        elif not len(picked):
            return []
        else:
            sims, ids = self._dot(np, picked, q), self.ids[picked]
        if k < len(sims):  # every vector tied with the k-th, then the rowid decides
            edge = np.partition(-sims, k - 1)[k - 1]
            keep = np.flatnonzero(-sims <= edge)
            sims, ids = sims[keep], ids[keep]
        order = np.lexsort((ids, -sims))[:k]
        return [(int(i), float(s)) for i, s in zip(ids[order], sims[order])]

    def cosines(self, blob: bytes, rowids: list[int]) -> dict[int, float]:
        """Cosine of the query to each given tool that has a vector."""
        import numpy as np

        if not rowids or not len(self.ids):
            return {}
        q = self.query(blob)
        if q is None:
            return {}
        want = np.asarray(rowids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.ids, want), len(self.ids) - 1)
        has = self.ids[at] == want
        if not has.any():
            return {}
        sims = self._dot(np, at[has], q)
        return {int(r): float(s) for r, s in zip(want[has], sims)}

    def _dot(self, np: Any, rows: Any | None, q: Any) -> Any:
        """The cosines of some rows (None: every row), each computed alone (einsum's per-row sum):
        a tool's cosine is the same float whichever rows it is scored with and on either path (a
        BLAS product may round the last bit by a row's place, and exact copies of a tool would then
        rank by that bit). No BLAS either: numpy's OpenBLAS starts a spinning thread per core when
        a host imported numpy before toolidx (toolidx/__init__.py), and that made a hybrid search at
        10k ~1.8x slower; einsum was faster anyway once the model's run has evicted the matrix."""
        return np.einsum("ij,j->i", self.unit if rows is None else self.unit[rows], q)


def codes_of(np: Any, centered: Any) -> Any:
    """One bit per dimension (the sign), packed into uint64 words per row."""
    bits = np.packbits(centered > 0, axis=1, bitorder="little")
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return np.ascontiguousarray(bits).view(np.uint64)


def _coded(np: Any, ids: Any, unit: Any) -> Matrix:
    center = unit.mean(axis=0, dtype=np.float64).astype(np.float32)
    codes = np.concatenate([codes_of(np, unit[i : i + 8192] - center) for i in range(0, len(ids), 8192)])
    return Matrix(ids, unit, center, np.ascontiguousarray(codes.T))


# --- the cache file -----------------------------------------------------------------------------
def _mapped(np: Any, path: Path, want: list[int]) -> Matrix | None:
    """The matrix in its cache file, mapped; None unless that holds exactly the rowids `want`."""
    # a search reads ~2,000 scattered rows of `unit`: without the advice each one's page fault
    # reads ahead (~128 KB a row) on a cold page cache
    got = mapped.read(path, scattered=("unit",))
    if got is None or set(got) != {"ids", "center", "codes", "unit"}:
        return None
    ids, unit, center, codes = got["ids"], got["unit"], got["center"], got["codes"]
    n, dim = len(want), center.shape[0] if center.ndim == 1 else -1
    if ids.shape != (n,) or unit.shape != (n, dim) or codes.ndim != 2 or codes.shape[1] != n:
        return None
    if ids.dtype != np.int64 or unit.dtype != np.float32 or codes.dtype != np.uint64 or not np.array_equal(ids, want):
        return None
    return Matrix(ids, unit, center, codes, path)


def load(db: Database) -> Matrix:
    """The matrix of the index as it is now: in memory up to EXACT_MAX vectors, else mapped from
    its cache file (written first when missing)."""
    import numpy as np

    if not vectors.has_table(db) or embedded_count(db) <= EXACT_MAX:  # hashed only where a file is used
        return Matrix(*read_unit(db))
    name, want = content_key(db)
    path = mapped.path_for("vec", name)
    if (m := _mapped(np, path, want)) is not None:
        return m
    ids, unit = read_unit(db)
    built = _coded(np, ids, unit)
    if len(ids) <= EXACT_MAX or ids.tolist() != want:  # a vector without embed_hash, or the reverse
        return built
    try:
        mapped.write(path, {"ids": built.ids, "center": built.center, "codes": built.codes, "unit": built.unit})
    except OSError:
        return built
    return _mapped(np, path, want) or built
