"""Retrieval on a SQLite file: keyword candidates scored in Python from cached per-word BM25 terms
(FTS5's own scores, faster), and nearest vectors from the vector matrix (matrix.py).

Keywords. FTS5 computes bm25() for every row that matches any query word, and a request's common
words match half of a large catalog: at 10k tools a query cost ~10 ms in FTS5. bm25 is a sum over
the query's words of idf(word) * f(weighted tf, doc length), so each word's term for each tool is
computed once and cached per process and index version (16 bytes a tool: rowids and values in
two arrays). A query is then sums over cached arrays, with the rare/common split of
store.retrieval. An exact variant (MaxScore: prove that no unseen tool can enter the top 50, else
run the full query) had to fall back on most queries and was no faster.

A word not cached yet is scored by FTS5 itself (a one-word query: its bm25() is exactly that
word's term). `warm` caches every word at once from the fts5vocab table with the same formula and
constants as fts5_aux.c (a long-lived process: `toolidx serve`, benchmarks), after which a keyword
query runs no SQL but the shown hits' rows. The preload reads each chunk of words' occurrences as
two strings and scores them with numpy (~6M occurrences at 100k tools: 1.8 s, Python's loop took
7 s). A process that has numpy (serve, hybrid search, a preload) also sums a query's postings with
it (`_keyword_numpy`: the same floats as the Python loop, which a cold keyword search keeps so as
not to import numpy). An index of more than PRELOAD_INLINE word occurrences preloads in a thread
of its own, after `warm` returns, and the words a search needs meanwhile come from FTS5 one by
one. Such a large index's postings, once loaded, are written to a cache file named by a hash of
the indexed text (mapped.py) and read from it; the next process that opens the same content maps
every word at once (a replica of 100k tools: ~0.4 s to hash the text, no preload, and the 54 MB of
postings are the page cache's, shared, instead of each replica's own).

Stemming: query words are cut by the index's own tokenizer (an empty copy of tools_fts in an
in-memory database), so "files" shares the cached terms of "file" exactly as FTS5 would. A word
the tokenizer cuts in several tokens is an FTS5 phrase ("e-mail"): such queries go to FTS5.

Vectors. sqlite-vec's KNN reads and scores every stored vector on each query (brute force), and
its `rowid IN (...)` lookup for exact cosines scans too: together ~15-35 ms a hybrid query at 10k
tools on this project's CI box. store/sqlite/matrix.py answers both from the same vectors,
normalised, read once per process and index version from sqlite-vec's chunk blobs: every cosine
of a small catalog, a shortlist by sign code of a large one, memory-mapped from a cache file.
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import sys
import threading
import time
from array import array
from bisect import bisect_left
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ...core.filters import Filters
from ...core.tokens import fts_query
from ..base import in_chunks
from ..retrieval import (
    FTS_COLUMNS,
    FTS_WEIGHTS,
    K1,
    B,
    QueryTokenizer,
    Retrieval,
    fetch_size,
    idf,
    lock,
    locked,
    split_common,
)
from ..tools import filtered_rowids
from ..tools import where as filter_sql
from . import mapped, matrix

if TYPE_CHECKING:
    from .database import Database

PRELOAD_CHUNK = 100_000  # word occurrences read per preload step (~0.03 s of work between searches)
# word occurrences `warm` preloads before it returns (~0.5 s); a larger index's load in a thread of
# their own meanwhile, so that a replica of 100k tools (~6M occurrences, ~2 s) is ready in time
PRELOAD_INLINE = 2_000_000
MAX_CACHED = 4_000_000  # cached (word, tool) terms per process (16 bytes each: 64 MB at most)
FTS_VOCAB = "tools_fts_vinst"  # a temp fts5vocab table: one row per word occurrence
FTS_ROWS = "tools_fts_vrow"  # another: one row per word, with how many tools have it


# --- FTS5's SQL ---------------------------------------------------------------------------------
def _bm25(weights: tuple[float, ...]) -> str:
    """-bm25(...) with the column weights: the score, higher is better."""
    return f"-bm25(tools_fts, {', '.join(repr(float(x)) for x in weights)})"


def _filter_sql(db: Database, filters: Filters | None) -> tuple[str, list]:
    if filters is None or filters.is_empty():
        return "", []
    where, params = filter_sql(db, filters, "t")
    return f" AND f.rowid IN (SELECT t.rowid FROM tools t WHERE {where})", params


def fts_candidates(
    db: Database, match: str, limit: int, filters: Filters | None = None, weights: tuple[float, ...] = FTS_WEIGHTS
) -> list[tuple[int, float]]:
    """(rowid, BM25 score >= 0, higher is better) of the best `limit` tools for an FTS5 query."""
    if not match:
        return []
    fsql, fparams = _filter_sql(db, filters)
    rows = db.execute(
        f"SELECT f.rowid, {_bm25(weights)} AS s FROM tools_fts f "
        f"WHERE tools_fts MATCH ?{fsql} ORDER BY s DESC, f.rowid LIMIT ?",
        [match, *fparams, limit],
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def fts_matched_terms(db: Database, terms: list[str], rowids: list[int]) -> dict[int, list[str]]:
    """Which query terms each tool matches in the keyword index (FTS5 stemming included)."""
    out: dict[int, list[str]] = {r: [] for r in rowids}
    if not terms or not rowids:
        return out
    marks = ", ".join("?" * len(rowids))
    sql = " UNION ALL ".join(
        f"SELECT {i}, rowid FROM tools_fts WHERE tools_fts MATCH ? AND rowid IN ({marks})" for i in range(len(terms))
    )
    params: list = []
    for t in terms:
        params += [fts_query([t]), *rowids]
    for i, rowid in db.execute(sql, params):
        out[int(rowid)].append(terms[int(i)])
    return out


def fts_schema(db: Database) -> str | None:
    """The CREATE statement of tools_fts: the tokenizer query words must be stemmed with."""
    return db.scalar("SELECT sql FROM sqlite_master WHERE name = 'tools_fts'")


def ensure_fts_vocab(db: Database) -> None:
    # a temp table: nothing is written to the index (which may be read-only), nothing to migrate
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{FTS_VOCAB} USING fts5vocab(main, tools_fts, instance)")


def fts_content_key(db: Database, weights: tuple[float, ...]) -> str:
    """A hash of what the postings are made from: tools_fts's schema (its tokenizer), the column
    weights and every tool's indexed text (~0.4 s at 100k tools)."""
    h = hashlib.sha256(f"{fts_schema(db)}\n{weights!r}\n".encode())
    for row in db.execute("SELECT * FROM tools_fts_content ORDER BY id"):
        h.update(repr(row).encode())
    return h.hexdigest()[:32]


def fts_totals(db: Database) -> bytes | None:
    """FTS5's averages record (varints: row count, then tokens per column), which bm25() reads."""
    return db.scalar("SELECT block FROM tools_fts_data WHERE id = 1")


def fts_word_scores(db: Database, word: str, weights: tuple[float, ...]) -> list[tuple[int, float]]:
    """(rowid, BM25 score) of every tool containing one query word, by rowid: the word's term
    in the BM25 score of any query that has it."""
    return db.execute(
        f"SELECT rowid, {_bm25(weights)} FROM tools_fts WHERE tools_fts MATCH ? ORDER BY rowid", (fts_query([word]),)
    ).fetchall()


# a column as one digit, its place in FTS_COLUMNS (9: a column this code does not know)
_COLUMN_DIGIT = "CASE col " + " ".join(f"WHEN '{c}' THEN '{i}'" for i, c in enumerate(FTS_COLUMNS)) + " ELSE '9' END"


def fts_occurrences(db: Database, first: str, last: str) -> tuple[str, str]:
    """Every occurrence of the indexed words first..last, in (word, tool, column, offset) order:
    the tools' rowids ("3,3,7,...") and their columns as digits ("0021..."). Two strings, not a
    row per occurrence: numpy parses them ~20x faster than Python unpacks rows."""
    row = db.execute(
        f"SELECT group_concat(doc), group_concat({_COLUMN_DIGIT}, '') FROM temp.{FTS_VOCAB} "
        "WHERE term >= ? AND term <= ?",
        (first, last),
    ).fetchone()
    return (row[0] or "", row[1] or "") if row else ("", "")


def fts_word_counts(db: Database) -> list[tuple[str, int]]:
    """(word, its occurrences in the index) of every indexed word, in term order."""
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{FTS_ROWS} USING fts5vocab(main, tools_fts, row)")
    return db.execute(f"SELECT term, cnt FROM temp.{FTS_ROWS}").fetchall()


def fts_docsizes(db: Database) -> list[tuple[int, bytes]]:
    """(rowid, docsize record: tokens per column) of every tool."""
    return db.execute("SELECT id, sz FROM tools_fts_docsize").fetchall()


def fts_row_counts(db: Database, tokens: list[str]) -> dict[str, int]:
    """How many tools hold each token: FTS5's own count, from a temp vocabulary table (the index
    may be read-only)."""
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{FTS_ROWS} USING fts5vocab(main, tools_fts, row)")
    got: dict[str, int] = {}
    for marks, chunk in in_chunks(tokens):
        got |= dict(db.execute(f"SELECT term, doc FROM temp.{FTS_ROWS} WHERE term IN ({marks})", chunk).fetchall())
    return got


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (FTS5's docsize and averages records)."""
    out, i, n = [], 0, len(blob)
    while i < n:
        v = 0
        for j in range(9):
            b = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | b
                break
            v = (v << 7) | (b & 0x7F)
            if not b & 0x80:
                break
        out.append(v)
    return out


class _Postings:
    """One word's bm25 term per tool, compact (16 bytes a tool): rowids ascending, values; int64
    and float64 arrays (array.array from a word fetched alone, numpy from a preload)."""

    __slots__ = ("rows", "vals")

    def __init__(self, rows: Any, vals: Any):
        self.rows, self.vals = rows, vals

    def __len__(self) -> int:
        return len(self.rows)

    def items(self):
        return zip(self.rows, self.vals)

    def __contains__(self, rowid: int) -> bool:
        i = bisect_left(self.rows, rowid)
        return i < len(self.rows) and self.rows[i] == rowid


_EMPTY = _Postings(array("q"), array("d"))


class _Index:
    """What one index version needs: row count, mean length, and each word's postings."""

    def __init__(self, db, weights):
        tot = _varints(fts_totals(db) or b"")
        self.nrow = tot[0] if tot else 0
        self.avgdl = (sum(tot[1:]) / self.nrow) if self.nrow else 1.0
        self.weights = weights
        # a column digit's weight (fts_occurrences); 1.0 for one this code does not know
        self.wdigit = [*weights, *[1.0] * (10 - len(weights))]
        self.cache: OrderedDict[str, _Postings] = OrderedDict()
        self.cached = 0
        self.doclen: Any = None  # tokens per tool by rowid (preload), from FTS5's docsize records
        self.complete = False  # every word of the index is cached: a miss means no tool has it
        self.evicted = False
        self.loader: threading.Thread | None = None  # the preload running in the background
        # every word's postings mapped from a cache file (mapped.py): token -> its number, and
        # each one's start in the rows and vals arrays (the end: the next one's start)
        self.table: tuple[dict[str, int], Any, Any, Any] | None = None
        self.key: str | None = None  # the hash of the content the postings come from (fts_content_key)

    def occurrences(self) -> float:
        """How many words the index holds, counting each time a tool has one."""
        return self.nrow * self.avgdl

    def idf(self, df: int) -> float:
        return idf(self.nrow, df)

    def _put(self, token: str, p: _Postings) -> _Postings:
        if token in self.cache:
            self.cached -= len(self.cache[token])
        self.cache[token] = p
        self.cached += len(p)
        while self.cached > MAX_CACHED and len(self.cache) > 1:
            _, old = self.cache.popitem(last=False)
            self.cached -= len(old)
            self.evicted = True
        return p

    def _mapped(self, token: str) -> _Postings:
        """The token's postings from the mapped table (empty: no tool has it)."""
        assert self.table is not None
        at, starts, rows, vals = self.table
        i = at.get(token)
        if i is None:
            return _EMPTY
        start, end = int(starts[i]), int(starts[i + 1])
        return _Postings(rows[start:end], vals[start:end])

    def held(self, token: str) -> _Postings | None:
        """The token's postings if this process holds them (cached, or mapped), else None."""
        return self.cache.get(token) if self.table is None else self._mapped(token)

    def postings(self, db, token: str, word: str) -> _Postings:
        """The bm25 term per tool of `word`, cut by the tokenizer into `token` (the cache key);
        empty when no tool has it. FTS5 scores a one-word query faster than Python can."""
        if self.table is not None:
            return self._mapped(token)
        hit = self.cache.get(token)
        if hit is not None:
            self.cache.move_to_end(token)
            return hit
        if self.complete:
            return _EMPTY
        rows = fts_word_scores(db, word, self.weights)
        if not rows:
            return _EMPTY
        return self._put(token, _Postings(array("q", (r for r, _ in rows)), array("d", (v for _, v in rows))))

    def preload_words(self, db, words: list[tuple[str, int]]) -> bool:
        """Cache the postings of `words` ((word, occurrences), in term order), scored with the
        same formula and constants as fts5_aux.c, vectorised: a preload of 100k tools reads ~6M
        occurrences. False when the index no longer holds what `words` counted."""
        import numpy as np

        if self.doclen is None:
            ensure_fts_vocab(db)
            sizes = fts_docsizes(db)
            dl = np.zeros(max((d for d, _ in sizes), default=0) + 1)
            for doc, sz in sizes:  # one byte a column below 128 tokens: the record's bytes are the sizes
                dl[doc] = sum(sz) if max(sz, default=0) < 0x80 else sum(_varints(sz))
            self.doclen = dl
        docs_s, cols_s = fts_occurrences(db, words[0][0], words[-1][0])
        counts = np.array([c for _, c in words], dtype=np.int64)
        docs = np.fromstring(docs_s, dtype=np.int64, sep=",") if docs_s else np.zeros(0, dtype=np.int64)
        cols = np.frombuffer(cols_s.encode("ascii"), dtype=np.uint8) - ord("0")
        if len(docs) != int(counts.sum()) or len(cols) != len(docs) or (len(docs) and docs.max() >= len(self.doclen)):
            return False
        word = np.repeat(np.arange(len(words)), counts)
        first = np.ones(len(docs), dtype=bool)  # the first occurrence of each (word, tool)
        first[1:] = (word[1:] != word[:-1]) | (docs[1:] != docs[:-1])
        # the weighted term frequency of each (word, tool): bincount adds in occurrence order from
        # 0.0, as fts5_aux.c's aFreq does
        freq = np.bincount(np.cumsum(first) - 1, weights=np.asarray(self.wdigit)[cols])
        rows, of = docs[first], word[first]
        df = np.bincount(of, minlength=len(words))
        idf = np.array([self.idf(int(n)) for n in df])  # math.log, as for a word fetched alone
        norm, base = K1 * B / self.avgdl, K1 * (1 - B)
        vals = idf[of] * (freq * (K1 + 1.0)) / (freq + base + norm * self.doclen[rows])
        ends = np.cumsum(df).tolist()
        start = 0
        for (w, _), end in zip(words, ends):
            if end > start:
                self._put(w, _Postings(rows[start:end], vals[start:end]))
            start = end
        return True


def _get(db, weights=FTS_WEIGHTS) -> tuple[_Index, QueryTokenizer] | None:
    """This index version's postings (per field weights) and tokenizer, from the index's cache;
    None when the index has no keyword table. The caller holds the lock."""
    scratch = db.retrieval.tokenizer()
    if scratch is None:
        return None
    index = db.cache.get(f"bm25_postings{tuple(weights)}", lambda: _Index(db, weights), size=lambda entry: entry.cached)
    return index, scratch


def _from_file(db) -> _Index | None:
    """This index version's postings (None: no keyword table). A large index's are mapped from the
    cache file of its content at the first call, where one is there (after it the content's key
    is known, and a missing file is not looked for again). The caller holds the snapshot and the lock."""
    got = _get(db)
    if got is None:
        return None
    index = got[0]
    if index.key is None and not index.complete and index.occurrences() > PRELOAD_INLINE:
        index.key = fts_content_key(db, index.weights)
        _map_postings(index)
    return index


def _map_postings(index: _Index) -> bool:
    """Every word's postings from the cache file named by `index.key`, if it is whole."""
    import numpy as np

    assert index.key is not None
    got = mapped.read(mapped.path_for("kw", index.key))
    if got is None or set(got) != {"tokens", "lens", "starts", "rows", "vals"}:
        return False
    lens, starts, rows, vals = got["lens"], got["starts"], got["rows"], got["vals"]
    if (lens.dtype, starts.dtype, rows.dtype, vals.dtype) != (np.int32, np.int64, np.int64, np.float64):
        return False
    if starts.shape != (len(lens) + 1,) or rows.shape != vals.shape:
        return False
    if (int(starts[0]), int(starts[-1])) != (0, len(rows)):
        return False
    blob = got["tokens"].tobytes()
    ends = np.cumsum(lens).tolist()
    if (ends[-1] if ends else 0) != len(blob) or bool((np.diff(starts) < 0).any()):
        return False
    try:  # tokens as UTF-8, `lens` bytes each
        at = {blob[e - n : e].decode(): i for i, (n, e) in enumerate(zip(lens.tolist(), ends))}
    except UnicodeDecodeError:
        return False
    index.table, index.cached, index.complete = (at, starts, rows, vals), len(rows), True
    index.cache.clear()
    return True


def _write_postings(index: _Index) -> None:
    """Every word's postings, just preloaded, to the cache file of this index content (its key
    read before the preload, in the same version), then read from it: the process's own copies
    are dropped. The caller holds the snapshot and the lock."""
    import numpy as np

    assert index.key is not None

    tokens = list(index.cache)
    parts = [_arrays(np, index.cache[t]) for t in tokens]
    counts = np.array([len(r) for r, _ in parts], dtype=np.int64)
    blobs = [t.encode() for t in tokens]
    arrays = {
        "tokens": np.frombuffer(b"".join(blobs), dtype=np.uint8),
        "lens": np.array([len(b) for b in blobs], dtype=np.int32),
        "starts": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        "rows": np.concatenate([r for r, _ in parts]).astype(np.int64) if parts else np.zeros(0, np.int64),
        "vals": np.concatenate([v for _, v in parts]).astype(np.float64) if parts else np.zeros(0),
    }
    try:
        mapped.write(mapped.path_for("kw", index.key), arrays)
    except OSError:  # no cache folder: the postings stay in this process
        return
    _map_postings(index)


def preload(db) -> bool:
    """Cache every word's postings now (a long-lived process, before its first queries). Chunk by
    chunk, each in its own read snapshot, so searches in other threads go on meanwhile; a crawl
    committing in between starts a new index version, and this one is dropped. An index of more
    than PRELOAD_INLINE occurrences maps them from its cache file instead where one was written
    (by the first process that preloaded this content), and writes it otherwise."""
    with db.snapshot(), lock:
        first = _from_file(db)
        if first is None or first.complete:
            return first is not None
        large = first.occurrences() > PRELOAD_INLINE
    words: list[tuple[str, int]] | None = None
    index: _Index | None = None
    at = 0
    while True:
        with db.snapshot(), lock:  # the order search takes them in
            got = _get(db)
            if got is None or (index is not None and got[0] is not index):
                return False
            index = got[0]
            if index.complete:
                return True
            if words is None:
                words = fts_word_counts(db)
            if at >= len(words):
                break
            end, n = at, 0
            while end < len(words) and (end == at or n + words[end][1] <= PRELOAD_CHUNK):
                n += words[end][1]
                end += 1
            if not index.preload_words(db, words[at:end]):
                return False
            at = end
        time.sleep(0)  # a search waiting for the locks takes them now, not after the whole preload
    with db.snapshot(), lock:
        got = _get(db)
        if got is None or got[0] is not index:
            return False
        index.complete = not index.evicted
        if large and index.complete:
            _write_postings(index)
    return True


def _preload_in_background(db) -> None:
    try:
        preload(db)
    except Exception as e:  # the index was closed meanwhile: nothing to warm any more
        logging.getLogger("toolidx").debug(f"keyword preload stopped: {e}")


def preloading(db) -> threading.Thread | None:
    """The background preload of the index as it is now, while it runs (join it to wait)."""
    index = db.cache.peek(f"bm25_postings{FTS_WEIGHTS}")
    loader = index.loader if index is not None else None
    return loader if loader is not None and loader.is_alive() else None


def _numpy() -> Any:
    """numpy if this process has imported it: a keyword search in a new process does not (~60 ms
    of a cold CLI search); serve, hybrid search and a preload have, and sum postings with it."""
    return sys.modules.get("numpy")


def _arrays(np: Any, p: _Postings) -> tuple[Any, Any]:
    """A word's (rowids, terms) as numpy arrays, without a copy."""
    if isinstance(p.rows, np.ndarray):
        return p.rows, p.vals
    return np.frombuffer(p.rows, dtype=np.int64), np.frombuffer(p.vals, dtype=np.float64)


def _sum(words: list[tuple[_Postings, float]]) -> dict[int, float]:
    """rowid -> the sum of each word's term times its factor, added in word order. The first
    word's terms and a factor of 1 are taken as they are (0 + x and x * 1 are x exactly: the
    same floats as the plain loop, with less of it in Python)."""
    if not words:
        return {}
    (p, s), rest = words[0], words[1:]
    acc = dict(zip(p.rows, p.vals)) if s == 1.0 else {d: v * s for d, v in zip(p.rows, p.vals)}
    get = acc.get
    for p, s in rest:
        if s == 1.0:
            for d, v in zip(p.rows, p.vals):
                acc[d] = get(d, 0.0) + v
        else:
            for d, v in zip(p.rows, p.vals):
                acc[d] = get(d, 0.0) + v * s
    return acc


def _top(acc: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The k best (rowid, score), ties by rowid as FTS5's ORDER BY s DESC, rowid."""
    if len(acc) > k:
        edge = heapq.nlargest(k, acc.values())[-1]
        items = [(r, s) for r, s in acc.items() if s >= edge]
    else:
        items = list(acc.items())
    items.sort(key=lambda x: (-x[1], x[0]))
    return items[:k]


def _rescore(top: list[tuple[int, float]], common: list[tuple[_Postings, float]]) -> list[tuple[int, float]]:
    """The fetched tools' scores with each common word's term added (times its factor)."""
    top = sorted(top)  # by rowid: one forward walk per word
    cand = [r for r, _ in top]
    add = [s for _, s in top]
    for p, s in common:
        rows, vals, n, lo = p.rows, p.vals, len(p.rows), 0
        for j, r in enumerate(cand):
            lo = bisect_left(rows, r, lo)
            if lo < n and rows[lo] == r:
                add[j] += vals[lo] * s
    return list(zip(cand, add))


def _keyword_numpy(
    np: Any,
    rare: list[tuple[_Postings, float]],
    common: list[tuple[_Postings, float]],
    allowed: set[int] | None,
    limit: int,
) -> list[tuple[int, float]]:
    """_sum, the filter, _top and _rescore on arrays: the same additions and multiplications in
    the same order, so the same floats (~10x faster on common words)."""
    if not rare:
        return []
    words = [(*_arrays(np, p), s) for p, s in rare]
    size = max(int(rows[-1]) for rows, _, _ in words) + 1
    acc, seen = np.zeros(size), np.zeros(size, dtype=bool)
    for rows, vals, s in words:  # a word's rowids are distinct: one += per tool
        acc[rows] += vals if s == 1.0 else vals * s
        seen[rows] = True
    cand = np.flatnonzero(seen)
    if allowed is not None:
        cand = cand[np.isin(cand, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))]
    score = acc[cand]
    k = fetch_size(limit) if common else limit
    if len(cand) > k:
        edge = np.partition(score, len(score) - k)[len(score) - k]
        keep = score >= edge
        cand, score = cand[keep], score[keep]
    if common:  # cand is in rowid order
        order = np.lexsort((cand, -score))[:k]
        cand, score = cand[np.sort(order)], score[np.sort(order)].copy()
        for p, s in common:
            rows, vals = _arrays(np, p)
            i = np.minimum(np.searchsorted(rows, cand), len(rows) - 1)
            has = rows[i] == cand
            score[has] += vals[i[has]] * s
    order = np.lexsort((cand, -score))[:limit]
    return list(zip(cand[order].tolist(), score[order].tolist()))


def _matrix(db) -> matrix.Matrix:
    """The vectors of the index as it is now (store/sqlite/matrix.py), loaded once per version."""
    return db.cache.get("vectors", lambda: matrix.load(db), size=len)


class SqliteRetrieval(Retrieval):
    """A SQLite file: BM25 summed from FTS5's postings cached per index version, phrases by FTS5
    itself, cosines from the vector matrix."""

    db: Database

    def keyword(
        self,
        terms: list[str],
        limit: int,
        filters: Filters | None = None,
        weights: tuple[float, ...] = FTS_WEIGHTS,
        idf_power: float = 1.0,
        term_weights: dict[str, float] | None = None,
    ) -> list[tuple[int, float]]:
        if not terms:
            return []
        db = self.db
        with locked(db):
            got = _get(db, weights)
            if got is None:
                return fts_candidates(db, fts_query(terms), limit, filters, weights)
            index, scratch = got
            toks = scratch.cut(terms)
            if any(len(toks[w]) != 1 for w in terms):  # a phrase: FTS5's phrase rules apply
                return fts_candidates(db, fts_query(terms), limit, filters, weights)
            words: list[tuple[tuple[_Postings, float], int]] = []
            for w in terms:
                p = index.postings(db, toks[w][0], w)
                if p:  # len(p) is the word's document frequency
                    s = index.idf(len(p)) ** (idf_power - 1.0) if idf_power != 1.0 else 1.0
                    if term_weights:
                        s *= term_weights.get(w, 1.0)
                    words.append(((p, s), len(p)))
            rare, common = split_common(words, index.nrow)
        allowed = filtered_rowids(db, filters)
        np = _numpy()
        if np is not None:
            return _keyword_numpy(np, rare, common, allowed, limit)
        acc = _sum(rare)
        if allowed is not None:
            acc = {d: v for d, v in acc.items() if d in allowed}
        if not common:
            return _top(acc, limit)
        scored = _rescore(_top(acc, fetch_size(limit)), common)
        return sorted(scored, key=lambda x: (-x[1], x[0]))[:limit]

    def _tokenizer_sql(self) -> str | None:
        return fts_schema(self.db)

    def _count_docs(self, tokens: list[str]) -> dict[str, int]:
        with locked(self.db):  # a cached word's postings are its tools; a preloaded index has every word
            got = _get(self.db)
            if got is None:
                return {}
            index = got[0]
            known = {t: len(p) for t in tokens if (p := index.held(t)) is not None}
            if index.complete:
                return known
        todo = [t for t in tokens if t not in known]
        return known | fts_row_counts(self.db, todo) if todo else known

    def matched_terms(self, terms: list[str], rowids: list[int], *, many: bool = False) -> dict[int, list[str]]:
        """Answered from the cached postings; many=True: one vectorised search per word instead
        of a bisect per tool and word (~1 ms a query at 10k)."""
        if not terms or not rowids:
            return {r: [] for r in rowids}
        db = self.db
        with locked(db):
            got = _get(db)
            if got is None:
                return fts_matched_terms(db, terms, rowids)
            index, scratch = got
            toks = scratch.cut(terms)
            phrases = [w for w in terms if len(toks[w]) != 1]
            pm = fts_matched_terms(db, phrases, rowids) if phrases else {}
            posts = {w: index.postings(db, toks[w][0], w) for w in terms if len(toks[w]) == 1}
        if _numpy() is None and not many:  # keyword mode's shown hits, and no numpy import on its cold start
            return {r: [w for w in terms if (r in posts[w] if w in posts else w in pm.get(r, ()))] for r in rowids}
        import numpy as np

        cand = np.asarray(rowids, dtype=np.int64)
        has: dict[str, list[bool]] = {}
        for w, p in posts.items():
            rows, _ = _arrays(np, p)
            if not len(rows):
                continue
            i = np.minimum(np.searchsorted(rows, cand), len(rows) - 1)
            has[w] = (rows[i] == cand).tolist()
        return {
            r: [w for w in terms if (has[w][j] if w in has else w not in posts and w in pm.get(r, ()))]
            for j, r in enumerate(rowids)
        }

    def knn(self, query: bytes, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
        return _matrix(self.db).knn(query, k, filtered_rowids(self.db, filters))

    def cosines(self, query: bytes, rowids: list[int]) -> dict[int, float]:
        return _matrix(self.db).cosines(query, rowids)

    def warm(self, *, embeddings: bool) -> bool:
        """The vectors, then every word's postings: at once up to PRELOAD_INLINE occurrences;
        above, mapped from this content's cache file where a process wrote one, else loaded in a
        background thread (searches meanwhile fetch the words they need one by one) that writes it."""
        if embeddings:
            _matrix(self.db)
        with self.db.snapshot(), lock:
            index = _from_file(self.db)  # a large index: every word at once, where its file is there
        if index is None or index.occurrences() <= PRELOAD_INLINE:
            preload(self.db)
        elif preloading(self.db) is None and not index.complete:
            index.loader = threading.Thread(
                target=_preload_in_background, args=(self.db,), name="toolidx-preload", daemon=True
            )
            index.loader.start()
        return True
