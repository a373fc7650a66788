"""What search asks of an index, whatever engine holds it: `Retrieval`, implemented once per
engine (`sqlite.retrieval`: FTS5 postings and a vector matrix held in memory; `pg.retrieval`: SQL
over `tool_terms` and pgvector, nothing held per replica) and picked once per open index
(`db.retrieval`). search/ fuses, calibrates and gates what these methods answer and never asks
which engine it is on. Filters are applied inside each query, so a filter narrows the candidates
instead of emptying the top k."""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.filters import Filters
from .base import in_chunks
from .tools import where as filter_sql

if TYPE_CHECKING:
    from .index import Index as Database  # either engine's; each engine's Retrieval narrows `db`

# BM25 column weights, in tools_fts column order: name, title, description, server, tags, params.
# Name and title weigh above the description (a name is a dense summary); the server words weigh
# like the name so "On Semgrep, ..." reaches Semgrep's tools; parameter text weighs least
# (long, repetitive) but still helps when a request names an argument. Tuned on the bench sets
# (docs/research/search.md, benchmarks/quality.py).
FTS_WEIGHTS = (3.0, 2.0, 1.0, 2.5, 1.0, 0.6)
FTS_COLUMNS = ("name", "title", "description", "server", "tags", "params")
K1, B = 1.2, 0.75  # FTS5's bm25() constants (fts5_aux.c), on both engines

# The rare/common split of a keyword query (both engines): BM25 is a sum over the query's words,
# and a request's common words ("file", "list", "data") match half of a large catalog. Rare words
# (in up to COMMON_SHARE of the tools) are summed over all their tools; the best RARE_FETCH tools
# by that rare part are the candidates, and each common word's term is added to those alone. A
# tool that matches only common words, or whose rare part is outside the fetched rows, is not a
# candidate; ETOM and LiveMCP quality are unchanged by it (docs/research/search.md). A query with
# no rare word, or no common one, is scored exactly (every matching tool).
COMMON_SHARE = 0.03
COMMON_MIN_DF = 200  # below this a word's postings are short: sum them all
RARE_FETCH = 200
MAX_DF_CACHED = 100_000  # terms whose document frequency a process remembers per index version

T = TypeVar("T")

lock = threading.Lock()  # guards the per-version tokenizer and the file's postings LRU (sqlite.retrieval)


@contextmanager
def locked(db: Database) -> Iterator[None]:
    """The database's lock, then `lock`: the order every taker follows (a search holds the first
    for its snapshot, as a background preload does for each chunk), so none waits in a circle."""
    with db.lock, lock:
        yield


def idf(nrow: int, df: int) -> float:
    """FTS5's idf of a word `df` of the `nrow` tools hold (at least 1e-6, as FTS5), on both engines."""
    v = math.log((nrow - df + 0.5) / (df + 0.5))
    return v if v > 0 else 1e-6


def split_common(words: list[tuple[T, int]], nrow: int) -> tuple[list[T], list[T]]:
    """(rare, common) of (word, document frequency) pairs, words no tool has left out; every
    word rare when either part would be empty (the exact sum)."""
    cut = max(COMMON_MIN_DF, COMMON_SHARE * nrow)
    rare = [w for w, df in words if 0 < df <= cut]
    common = [w for w, df in words if df > cut]
    if not rare or not common:
        return rare + common, []
    return rare, common


def fetch_size(limit: int) -> int:
    """How many tools the rare part of a split query fetches for the common words to rescore."""
    return max(RARE_FETCH, 4 * limit)


class QueryTokenizer:
    """Query words cut and stemmed exactly as the keyword index was (both engines index FTS5's
    tokens): an empty copy of tools_fts with the index's own tokenizer in an in-memory SQLite,
    and the word -> tokens cache."""

    def __init__(self, db: Database, fts_sql: str):
        self.conn = db.module.connect(":memory:", isolation_level=None, check_same_thread=False)
        body = fts_sql[fts_sql.index("(") :]
        self.conn.execute(f"CREATE VIRTUAL TABLE words USING fts5{body}")
        self.conn.execute("CREATE VIRTUAL TABLE words_inst USING fts5vocab(words, instance)")
        self.tokens: dict[str, tuple[str, ...]] = {}

    def _tokens(self, words: list[str]) -> list[tuple[int, str]]:
        """(index in words, token) in token order: how the index's tokenizer cuts each word."""
        # written and read in one transaction, then rolled back: nothing to delete next time, and
        # FTS5 writes no segment (a query's new words: 0.06 ms, 0.21 ms with a DELETE and commits)
        self.conn.execute("BEGIN")
        try:
            self.conn.executemany("INSERT INTO words(rowid, name) VALUES (?, ?)", list(enumerate(words)))
            return self.conn.execute("SELECT doc, term FROM words_inst ORDER BY doc, offset").fetchall()
        finally:
            self.conn.execute("ROLLBACK")

    def cut(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        todo = [w for w in words if w not in self.tokens]
        if todo:
            if len(self.tokens) > 50_000:
                self.tokens.clear()
            got: dict[int, list[str]] = {}
            for i, t in self._tokens(todo):
                got.setdefault(int(i), []).append(t)
            for i, w in enumerate(todo):
                self.tokens[w] = tuple(got.get(i, ()))
        return {w: self.tokens[w] for w in words}


class Retrieval(ABC):
    """Candidates and evidence for one open index. Rowids name tools; scores are higher-better.
    Per-version state (postings, vectors, counts) lives in `db.cache`."""

    def __init__(self, db: Database):
        self.db = db

    # --- keywords ---------------------------------------------------------------------------------
    @abstractmethod
    def keyword(
        self,
        terms: list[str],
        limit: int,
        filters: Filters | None = None,
        weights: tuple[float, ...] = FTS_WEIGHTS,
        idf_power: float = 1.0,
        term_weights: dict[str, float] | None = None,
    ) -> list[tuple[int, float]]:
        """(rowid, BM25 with column `weights`) of the best `limit` tools for the query words, ties
        by rowid, with the rare/common split above. `idf_power` < 1 weighs each word by
        idf**idf_power instead of idf; `term_weights` multiplies some words (quoted values)."""

    @abstractmethod
    def matched_terms(self, terms: list[str], rowids: list[int], *, many: bool = False) -> dict[int, list[str]]:
        """Which query words each tool has, as the keyword index stems them (a word cut in several
        tokens: all of them). many=True: a caller with numpy loaded and ~100 tools to check."""

    @abstractmethod
    def _tokenizer_sql(self) -> str | None:
        """The CREATE statement of tools_fts, whose tokenizer cut the indexed words (None: the
        index has no keyword table)."""

    def tokenizer(self) -> QueryTokenizer | None:
        """This index version's query tokenizer. The caller holds `locked(db)`."""

        def build() -> QueryTokenizer | None:
            sql = self._tokenizer_sql()
            return QueryTokenizer(self.db, sql) if sql else None

        return self.db.cache.get("bm25_tokenizer", build)

    def stems(self, words: list[str]) -> dict[str, tuple[str, ...]] | None:
        """Each word as the index's tokenizer cuts and stems it (None: no keyword table)."""
        with locked(self.db):
            tok = self.tokenizer()
            return None if tok is None else tok.cut(words)

    @abstractmethod
    def _count_docs(self, tokens: list[str]) -> dict[str, int]:
        """How many tools hold each token (absent: none), read from the index."""

    def document_counts(self, tokens: list[str]) -> dict[str, int]:
        """How many tools hold each token (a token as the tokenizer cut it; 0: none), counted once
        per index version: a common word's count reads every one of its postings."""
        known: dict[str, int] = self.db.cache.get("keyword_df", dict, size=len)
        out = {t: known[t] for t in tokens if t in known}  # before a clear below, or in another thread
        todo = [t for t in dict.fromkeys(tokens) if t not in out]
        if todo:
            if len(known) + len(todo) > MAX_DF_CACHED:
                known.clear()
            got = self._count_docs(todo)
            for t in todo:
                out[t] = known[t] = int(got.get(t, 0))
        return {t: out[t] for t in tokens}

    def document_frequency(self, words: list[str]) -> dict[str, int]:
        """How many tools have each word, as the index stems it (a word cut in several tokens: its
        rarest token); 0 for a word no tool has, and for every word without a keyword table."""
        cut = self.stems(words)
        if cut is None:
            return dict.fromkeys(words, 0)
        df = self.document_counts(sorted({t for ts in cut.values() for t in ts}))
        return {w: min((df[t] for t in cut[w]), default=0) for w in words}

    # --- vectors ----------------------------------------------------------------------------------
    @abstractmethod
    def knn(self, query: bytes, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the k nearest tools that pass the filters, ties by rowid."""

    @abstractmethod
    def cosines(self, query: bytes, rowids: list[int]) -> dict[int, float]:
        """Cosine similarity of the query to each given tool that has a vector."""

    # --- warm-up ----------------------------------------------------------------------------------
    @abstractmethod
    def warm(self, *, embeddings: bool) -> bool:
        """Load now what the first searches would (a long-lived process); whether anything is
        held in memory (False: the engine answers from the database)."""

    # --- rows and names (the same SQL on both engines) --------------------------------------------
    def tool_names(self) -> list[tuple[int, str]]:
        """(rowid, name) of every tool, for fuzzy name matching."""
        return [(int(r[0]), r[1]) for r in self.db.execute("SELECT rowid, name FROM tools ORDER BY rowid")]

    def names_for(self, rowids: list[int]) -> list[tuple[int, str]]:
        """(rowid, name) of the given tools."""
        return [
            (int(r), n)
            for marks, chunk in in_chunks(rowids)
            for r, n in self.db.execute(f"SELECT rowid, name FROM tools WHERE rowid IN ({marks}) ORDER BY rowid", chunk)
        ]

    def hit_rows(self, rowids: list[int]) -> dict[int, dict[str, Any]]:
        """The columns a search hit shows."""
        out: dict[int, dict] = {}
        for marks, chunk in in_chunks(rowids):
            for r in self.db.query(
                f"SELECT rowid AS _rowid, id, server, name, title, description, read_only, "
                f"destructive, stale, stale_reason FROM tools WHERE rowid IN ({marks})",
                chunk,
            ):
                out[int(r.pop("_rowid"))] = r
        return out

    def tool_count(self) -> int:
        """How many tools the index holds, counted once per index version (every search asks)."""
        return self.db.cache.get("tool_count", lambda: int(self.db.scalar("SELECT count(*) FROM tools")))

    def filtered_count(self, filters: Filters | None) -> int:
        """How many tools pass the filters."""
        if filters is None or filters.is_empty():
            return self.tool_count()
        where, params = filter_sql(self.db, filters, "t")
        return int(self.db.scalar(f"SELECT count(*) FROM tools t WHERE {where}", params))
