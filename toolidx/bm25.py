"""Keyword candidates without paying for common words: the same FTS5 BM25 scores, faster.

FTS5 computes bm25() for every row that matches any query word, and a request's common words
("file", "list", "data") match half of a large catalog: at 10k tools that was ~10 ms a query.
bm25 is a sum over the query's phrases of idf(word) * f(weighted tf, doc length), so it splits:

- rare words (document frequency below COMMON_SHARE of the catalog) go to FTS5, whose top rows
  come back with their partial BM25;
- each common word's contribution to every tool is computed once per process from the fts5vocab
  table (same formula, same constants as FTS5's bm25) and cached per index version;
- the candidates are the best RARE_FETCH tools by their rare part; each one's score is its rare
  part plus its common parts, which is exactly FTS5's bm25 of the whole query. What can change:
  a tool that matches only common words, or whose rare part is outside the fetched rows, is not
  a candidate. An exact variant (MaxScore: prove that no unseen tool can enter the top 50, else
  run the full query) had to fall back on most queries and was no faster; this one keeps ETOM
  and LiveMCP quality unchanged (docs/search.md) at a fraction of the cost.
- a query with no rare word, or no common one, is the plain FTS5 query.

Stemming: query words are cut by the index's own tokenizer (a copy of tools_fts in an in-memory
database), so "files" finds the cached postings of "file" exactly as FTS5 would. The same scratch
database answers "which query words does each shown hit contain" for a handful of hits.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

from .store import retrieval
from .textsearch import fts_query

K1, B = 1.2, 0.75  # FTS5's bm25() constants (fts5_aux.c)
COMMON_SHARE = 0.03  # a word in more than this share of the tools is handled outside FTS5
COMMON_MIN_DF = 200  # below this the FTS5 doclist is short anyway
RARE_FETCH = 200  # tools taken by their rare part, then rescored with the common words
MAX_CACHED = 1_000_000  # cached (word, tool) contributions per process, ~100 MB at most

_lock = threading.Lock()
_state: dict = {}


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


class _Index:
    """What one index version needs: row count, mean length, df and contributions per word."""

    def __init__(self, db):
        tot = _varints(retrieval.fts_totals(db) or b"")
        self.nrow = tot[0] if tot else 0
        self.avgdl = (sum(tot[1:]) / self.nrow) if self.nrow else 1.0
        self.df: dict[str, int] = {}
        self.contrib: OrderedDict[str, tuple[dict[int, float], float]] = OrderedDict()
        self.cached = 0
        self.doclen: dict[int, int] = {}  # tokens per tool, from FTS5's docsize records
        retrieval.ensure_fts_vocab(db)

    def doc_freq(self, db, token: str) -> int:
        if token not in self.df:
            self.df[token] = retrieval.fts_doc_freq(db, token)
        return self.df[token]

    def idf(self, df: int) -> float:
        v = math.log((self.nrow - df + 0.5) / (df + 0.5))
        return v if v > 0 else 1e-6  # as FTS5

    def contributions(self, db, token: str, weights) -> tuple[dict[int, float], float]:
        """tool rowid -> this word's bm25 term, and the largest one."""
        hit = self.contrib.get(token)
        if hit is not None:
            self.contrib.move_to_end(token)
            return hit
        freq: dict[int, float] = {}
        size: dict[int, bytes] = {}
        wcol = dict(zip(retrieval.FTS_COLUMNS, weights))
        for doc, col, sz in retrieval.fts_postings(db, token):
            freq[doc] = freq.get(doc, 0.0) + wcol.get(col, 1.0)
            size[doc] = sz
        idf = self.idf(self.doc_freq(db, token))
        norm = K1 * B / self.avgdl
        dl = self.doclen
        for d, sz in size.items():
            if d not in dl:
                dl[d] = sum(_varints(sz))
        out = {d: idf * (f * (K1 + 1.0)) / (f + K1 * (1 - B) + norm * dl[d]) for d, f in freq.items()}
        hit = (out, max(out.values(), default=0.0))
        self.contrib[token] = hit
        self.cached += len(out)
        while self.cached > MAX_CACHED and len(self.contrib) > 1:
            _, (old, _) = self.contrib.popitem(last=False)
            self.cached -= len(old)
        return hit


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


def _get(db) -> tuple["_Index", "_Scratch"] | None:
    key = (db.conn, db.data_version(), db.conn.total_changes)  # the object: ids are reused
    st = _state.get(id(db.conn))
    if st is not None and st[0] == key:
        return st[1], st[2]
    fts_sql = retrieval.fts_schema(db)
    if not fts_sql:
        return None
    scratch = st[2] if st is not None else _Scratch(db, fts_sql)
    if len(_state) > 8:
        _state.clear()
    _state[id(db.conn)] = (key, _Index(db), scratch)
    return _state[id(db.conn)][1], scratch


def candidates(db, terms: list[str], limit: int, filters=None,
               weights=retrieval.FTS_WEIGHTS) -> list[tuple[int, float]]:
    """The same (rowid, BM25) list as retrieval.fts_candidates(db, fts_query(terms), limit, ...)."""
    if not terms:
        return []
    with _lock:
        got = _get(db)
        if got is None:
            return retrieval.fts_candidates(db, fts_query(terms), limit, filters, weights)
        index, scratch = got
        cut = max(COMMON_MIN_DF, COMMON_SHARE * index.nrow)
        toks = scratch.cut(terms)
        rare, common = [], []
        for w in terms:
            t = toks[w]
            # a word the tokenizer cuts in several tokens is a phrase: FTS5 keeps it
            (common if len(t) == 1 and index.doc_freq(db, t[0]) > cut else rare).append(w)
        if not common or not rare:
            return retrieval.fts_candidates(db, fts_query(terms), limit, filters, weights)
        parts = [index.contributions(db, toks[w][0], weights) for w in common]
        order = sorted(range(len(common)), key=lambda i: parts[i][1])
        common, parts = [common[i] for i in order], [parts[i] for i in order]
    rows = retrieval.fts_candidates(db, fts_query(rare), max(RARE_FETCH, 4 * limit), filters, weights)
    scored = [(r, s + sum(p.get(r, 0.0) for p, _ in parts)) for r, s in rows]
    scored.sort(key=lambda x: (-x[1], x[0]))
    return scored[:limit]


def matched_terms(db, terms: list[str], rowids: list[int]) -> dict[int, list[str]]:
    """retrieval.matched_terms, answered from a scratch copy of just these tools' indexed text."""
    if not terms or not rowids:
        return {r: [] for r in rowids}
    with _lock:
        got = _get(db)
        if got is None:
            return retrieval.matched_terms(db, terms, rowids)
        scratch = got[1]
        retrieval.scratch_hits(scratch.conn, retrieval.fts_texts(db, rowids))
        toks = scratch.cut(terms)
        single = [w for w in terms if len(toks[w]) == 1]
        found: dict[int, set[str]] = {}
        for doc, tok in retrieval.scratch_hit_tokens(scratch.conn, sorted({toks[w][0] for w in single})):
            found.setdefault(int(doc), set()).add(tok)
        phrases = [w for w in terms if len(toks[w]) != 1]  # several tokens: FTS5 phrase rules
        pm = retrieval.matched_terms(scratch.conn, phrases, rowids, table="hits") if phrases else {}
        out = {}
        for r in rowids:
            got_r, f = set(pm.get(r, ())), found.get(r, ())
            out[r] = [w for w in terms if (toks[w][0] in f if len(toks[w]) == 1 else w in got_r)]
        return out
