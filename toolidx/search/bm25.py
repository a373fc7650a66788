"""Keyword candidates scored in Python from cached per-word BM25 terms: FTS5's own scores, faster.

FTS5 computes bm25() for every row that matches any query word, and a request's common words
("file", "list", "data") match half of a large catalog: at 10k tools a query cost ~10 ms in FTS5.
bm25 is a sum over the query's words of idf(word) * f(weighted tf, doc length), so each word's
term for each tool can be computed once and cached per process and index version (16 bytes a
tool: rowids and values in two arrays). A query is then sums over cached arrays:

- rare words (in up to COMMON_SHARE of the tools) are summed over all their tools; the best
  RARE_FETCH tools by that rare part are the candidates;
- each common word's term is added to those candidates. What this changes against FTS5's full
  OR query: a tool that matches only common words, or whose rare part is outside the fetched
  rows, is not a candidate. An exact variant (MaxScore: prove that no unseen tool can enter the
  top 50, else run the full query) had to fall back on most queries and was no faster; this one
  keeps ETOM and LiveMCP quality unchanged (docs/search-research.md);
- a query with no rare word, or no common one, is scored exactly (every matching tool).

A word not cached yet is scored by FTS5 itself (a one-word query: its bm25() is exactly that
word's term). `preload` caches every word at once from the fts5vocab table with the same formula
and constants as fts5_aux.c (a long-lived process: `toolidx serve`, benchmarks), after which a
keyword query runs no SQL but the shown hits' rows.

Stemming: query words are cut by the index's own tokenizer (an empty copy of tools_fts in an
in-memory database), so "files" shares the cached terms of "file" exactly as FTS5 would. A word
the tokenizer cuts in several tokens is an FTS5 phrase ("e-mail"): such queries go to FTS5.
"""

from __future__ import annotations

import heapq
import math
import threading
from array import array
from bisect import bisect_left
from collections import OrderedDict

from ..core.tokens import fts_query
from ..store import retrieval
from ..store.tools import filtered_rowids

K1, B = 1.2, 0.75  # FTS5's bm25() constants (fts5_aux.c)
COMMON_SHARE = 0.03  # a word in more than this share of the tools is only added to candidates
COMMON_MIN_DF = 200  # below this a word's postings are short: sum them all
RARE_FETCH = 200  # tools taken by their rare part, then rescored with the common words
PRELOAD_CHUNK = 50_000  # word occurrences read per preload step (~0.1 s of work between searches)
MAX_CACHED = 4_000_000  # cached (word, tool) terms per process (16 bytes each: 64 MB at most)

_lock = threading.Lock()  # guards each cached _Index's LRU and each _Scratch


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
    """One word's bm25 term per tool, compact (16 bytes a tool): rowids ascending, values."""

    __slots__ = ("rows", "vals")

    def __init__(self, rows: array, vals: array):
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
        tot = _varints(retrieval.fts_totals(db) or b"")
        self.nrow = tot[0] if tot else 0
        self.avgdl = (sum(tot[1:]) / self.nrow) if self.nrow else 1.0
        self.weights = weights
        self.wcol = dict(zip(retrieval.FTS_COLUMNS, weights))
        self.cache: OrderedDict[str, _Postings] = OrderedDict()
        self.cached = 0
        self.doclen: dict[int, int] = {}  # tokens per tool (preload), from FTS5's docsize records
        self.complete = False  # every word of the index is cached: a miss means no tool has it
        self.evicted = False

    def idf(self, df: int) -> float:
        v = math.log((self.nrow - df + 0.5) / (df + 0.5))
        return v if v > 0 else 1e-6  # as FTS5

    def _score_and_put(self, token: str, freq: dict[int, float]) -> None:
        """FTS5's bm25 term from a word's weighted term frequencies, as fts5_aux.c computes it."""
        idf = self.idf(len(freq))
        norm, base, dl = K1 * B / self.avgdl, K1 * (1 - B), self.doclen
        rows = sorted(freq)
        self._put(
            token,
            _Postings(
                array("q", rows),
                array("d", (idf * (freq[d] * (K1 + 1.0)) / (freq[d] + base + norm * dl[d]) for d in rows)),
            ),
        )

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

    def postings(self, db, token: str, word: str) -> _Postings:
        """The bm25 term per tool of `word`, cut by the tokenizer into `token` (the cache key);
        empty when no tool has it. FTS5 scores a one-word query faster than Python can."""
        hit = self.cache.get(token)
        if hit is not None:
            self.cache.move_to_end(token)
            return hit
        if self.complete:
            return _EMPTY
        rows = retrieval.fts_word_scores(db, word, self.weights)
        if not rows:
            return _EMPTY
        return self._put(token, _Postings(array("q", (r for r, _ in rows)), array("d", (v for _, v in rows))))

    def preload_chunk(self, db, start: str) -> str | None:
        """Cache the words from `start` on, PRELOAD_CHUNK occurrences at a time (fts5vocab walks
        the index in term order); the next start, or None at the end."""
        if not self.doclen:
            retrieval.ensure_fts_vocab(db)
            for doc, sz in retrieval.fts_docsizes(db):
                self.doclen[doc] = sum(_varints(sz))
        limit = PRELOAD_CHUNK
        while True:
            rows = retrieval.fts_postings_from(db, start, limit)
            if len(rows) < limit:
                nxt = None
                break
            nxt = rows[-1][0]  # may be cut short: taken again by the next chunk
            if nxt != rows[0][0]:
                rows = [r for r in rows if r[0] != nxt]
                break
            limit *= 2  # one word in more places than a chunk holds
        wcol = self.wcol
        term = ""  # rows come grouped by term
        freq: dict[int, float] = {}  # the term's weighted frequency per tool
        for word, doc, col in rows:
            if word != term:
                if freq:
                    self._score_and_put(term, freq)
                term, freq = word, {}
            freq[doc] = freq.get(doc, 0.0) + wcol.get(col, 1.0)
        if freq:
            self._score_and_put(term, freq)
        return nxt


class _Scratch:
    """The in-memory copy of tools_fts (same tokenizer) and the word -> tokens cache."""

    def __init__(self, db, fts_sql: str):
        self.conn = db.module.connect(":memory:", isolation_level=None, check_same_thread=False)
        retrieval.scratch_create(self.conn, fts_sql)
        self.tokens: dict[str, tuple[str, ...]] = {}

    def cut(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        todo = [w for w in words if w not in self.tokens]
        if todo:
            if len(self.tokens) > 50_000:
                self.tokens.clear()
            got: dict[int, list[str]] = {}
            for i, t in retrieval.scratch_tokens(self.conn, todo):
                got.setdefault(int(i), []).append(t)
            for i, w in enumerate(todo):
                self.tokens[w] = tuple(got.get(i, ()))
        return {w: self.tokens[w] for w in words}


def _scratch(db) -> _Scratch | None:
    fts_sql = retrieval.fts_schema(db)
    return _Scratch(db, fts_sql) if fts_sql else None


def _get(db, weights=retrieval.FTS_WEIGHTS) -> tuple[_Index, _Scratch] | None:
    """This index version's postings (per field weights) and tokenizer, from the index's cache;
    None when the index has no keyword table. The caller holds _lock."""
    scratch = db.cache.get("bm25_tokenizer", lambda: _scratch(db))
    if scratch is None:
        return None
    index = db.cache.get(f"bm25_postings{tuple(weights)}", lambda: _Index(db, weights), size=lambda entry: entry.cached)
    return index, scratch


def preload(db) -> bool:
    """Cache every word's postings now (a long-lived process, before its first queries). Chunk by
    chunk, each in its own read snapshot, so searches in other threads go on meanwhile; a crawl
    committing in between starts a new index version, and this one is dropped."""
    if retrieval.in_database(db):  # PostgreSQL scores in SQL: nothing to hold
        return False
    start: str | None = ""
    index: _Index | None = None
    while start is not None:
        with db.snapshot(), _lock:  # the order search takes them in
            got = _get(db)
            if got is None or (index is not None and got[0] is not index):
                return False
            index = got[0]
            if index.complete:
                return True
            start = index.preload_chunk(db, start)
    if index is not None:
        with _lock:
            index.complete = not index.evicted
    return True


def _top(acc: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The k best (rowid, score), ties by rowid as FTS5's ORDER BY s DESC, rowid."""
    if len(acc) > k:
        edge = heapq.nlargest(k, acc.values())[-1]
        items = [(r, s) for r, s in acc.items() if s >= edge]
    else:
        items = list(acc.items())
    items.sort(key=lambda x: (-x[1], x[0]))
    return items[:k]


def candidates(
    db,
    terms: list[str],
    limit: int,
    filters=None,
    weights=retrieval.FTS_WEIGHTS,
    idf_power: float = 1.0,
    term_weights: dict[str, float] | None = None,
) -> list[tuple[int, float]]:
    """The same (rowid, BM25) list as retrieval.fts_candidates(db, fts_query(terms), limit, ...),
    except for the common-word shortcut above. Hybrid search reweighs words: `idf_power` < 1 weighs
    each by idf**idf_power instead of idf (calibration.IDF_POWER), `term_weights` multiplies some
    (quoted values: toolidx.search.quoted); a query with a phrase (FTS5 path) keeps plain BM25."""
    if not terms:
        return []
    if retrieval.in_database(db):
        return _in_database(db, terms, limit, filters, weights, idf_power, term_weights)
    with _lock:
        got = _get(db, weights)
        if got is None:
            return retrieval.fts_candidates(db, fts_query(terms), limit, filters, weights)
        index, scratch = got
        toks = scratch.cut(terms)
        if any(len(toks[w]) != 1 for w in terms):  # a phrase: FTS5's phrase rules apply
            return retrieval.fts_candidates(db, fts_query(terms), limit, filters, weights)
        cut = max(COMMON_MIN_DF, COMMON_SHARE * index.nrow)
        rare: list[tuple[_Postings, float]] = []
        common: list[tuple[_Postings, float]] = []
        for w in terms:
            p = index.postings(db, toks[w][0], w)
            if p:  # len(p) is the word's document frequency
                s = index.idf(len(p)) ** (idf_power - 1.0) if idf_power != 1.0 else 1.0
                if term_weights:
                    s *= term_weights.get(w, 1.0)
                (common if len(p) > cut else rare).append((p, s))
    allowed = filtered_rowids(db, filters)
    if not rare or not common:  # exact: every tool that matches a word
        rare, common = rare + common, []
    acc: dict[int, float] = {}
    get = acc.get
    for p, s in rare:
        for d, v in p.items():
            acc[d] = get(d, 0.0) + v * s
    if allowed is not None:
        acc = {d: v for d, v in acc.items() if d in allowed}
    if not common:
        return _top(acc, limit)
    top = sorted(_top(acc, max(RARE_FETCH, 4 * limit)))  # by rowid: one forward walk per word
    cand = [r for r, _ in top]
    add = [s for _, s in top]
    for p, s in common:
        rows, vals, n, lo = p.rows, p.vals, len(p.rows), 0
        for j, r in enumerate(cand):
            lo = bisect_left(rows, r, lo)
            if lo < n and rows[lo] == r:
                add[j] += vals[lo] * s
    scored = sorted(zip(cand, add), key=lambda x: (-x[1], x[0]))
    return scored[:limit]


def _in_database(db, terms, limit, filters, weights, idf_power, term_weights) -> list[tuple[int, float]]:
    """candidates() on PostgreSQL: the same split of the query's words into rare ones (summed over
    every tool that has one) and common ones (added to the best RARE_FETCH tools by the rare part),
    scored by PostgreSQL; a word's document frequency counted once per catalog version. A word the
    tokenizer cuts in several tokens counts as those tokens (no phrase)."""
    toks = stems(db, terms) or {}
    tw = term_weights or {}
    pairs = [(t, tw.get(w, 1.0)) for w in terms for t in toks.get(w, ())]
    if not pairs:
        return []
    nrow, _ = retrieval.keyword_totals(db)
    df = retrieval.keyword_df(db, [t for t, _ in pairs])

    def idf(n: int) -> float:
        v = math.log((nrow - n + 0.5) / (n + 0.5))
        return v if v > 0 else 1e-6  # as FTS5

    cut = max(COMMON_MIN_DF, COMMON_SHARE * nrow)
    rare = [(t, idf(df[t]) ** idf_power * m) for t, m in pairs if 0 < df[t] <= cut]
    common = [(t, idf(df[t]) ** idf_power * m) for t, m in pairs if df[t] > cut]
    if not rare or not common:  # exact: every tool that has a word
        rare, common = rare + common, []
    return retrieval.keyword_candidates(db, rare, limit, filters, weights, common, max(RARE_FETCH, 4 * limit))


def document_frequency(db, words: list[str]) -> dict[str, int]:
    """How many tools have each word, as the index stems it (a word cut in several tokens: its
    rarest token); 0 for a word no tool has, and for every word when there is no keyword table."""
    cut = stems(db, words)
    if cut is None:
        return dict.fromkeys(words, 0)
    df = retrieval.keyword_df(db, sorted({t for ts in cut.values() for t in ts}))
    return {w: min((df[t] for t in cut[w]), default=0) for w in words}


def stems(db, words: list[str]) -> dict[str, tuple[str, ...]] | None:
    """Each word as the index's tokenizer cuts and stems it (None: the index has no keyword table)."""
    with _lock:
        got = _get(db)
        return None if got is None else got[1].cut(words)


def matched_terms(db, terms: list[str], rowids: list[int], *, many: bool = False) -> dict[int, list[str]]:
    """retrieval.matched_terms (FTS5 stemming included), answered from the cached postings.
    many=True: for a caller that has numpy loaded already (hybrid's ~100 candidates x ~15 words),
    one vectorised search per word instead of a bisect per tool and word (~1 ms a query at 10k)."""
    if not terms or not rowids:
        return {r: [] for r in rowids}
    if retrieval.in_database(db):  # a word matches when the tool has all its tokens (FTS5's phrase, unordered)
        toks = stems(db, terms) or {}
        found = retrieval.matched_tokens(db, [t for w in terms for t in toks.get(w, ())], rowids)
        return {r: [w for w in terms if toks.get(w) and found[r].issuperset(toks[w])] for r in rowids}
    with _lock:
        got = _get(db)
        if got is None:
            return retrieval.matched_terms(db, terms, rowids)
        index, scratch = got
        toks = scratch.cut(terms)
        phrases = [w for w in terms if len(toks[w]) != 1]
        pm = retrieval.matched_terms(db, phrases, rowids) if phrases else {}
        posts = {w: index.postings(db, toks[w][0], w) for w in terms if len(toks[w]) == 1}
    if not many:  # keyword mode: the shown hits only, and no numpy import on its cold start
        return {r: [w for w in terms if (r in posts[w] if w in posts else w in pm.get(r, ()))] for r in rowids}
    import numpy as np

    cand = np.asarray(rowids, dtype=np.int64)
    has: dict[str, list[bool]] = {}
    for w, p in posts.items():
        rows = np.frombuffer(p.rows, dtype=np.int64)
        if not len(rows):
            continue
        i = np.minimum(np.searchsorted(rows, cand), len(rows) - 1)
        has[w] = (rows[i] == cand).tolist()
    return {
        r: [w for w in terms if (has[w][j] if w in has else w not in posts and w in pm.get(r, ()))]
        for j, r in enumerate(rowids)
    }
