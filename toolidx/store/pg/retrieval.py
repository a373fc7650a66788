"""Retrieval on PostgreSQL: candidates from SQL over `tool_terms` (the postings of FTS5's own
tokens, store/keywords.py) and pgvector, nothing held per replica but counts per catalog version.
BM25 is FTS5's formula (fts5_aux.c) with the file's column weights and rare/common split, so both
engines rank alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.filters import Filters
from .. import keywords, vectors
from ..retrieval import FTS_WEIGHTS, K1, B, Retrieval, fetch_size, idf, split_common
from ..tools import where as filter_sql
from .writer import pg_value

if TYPE_CHECKING:
    from .database import PgDatabase as Database  # the catalog's index


def _filter(db: Database, filters: Filters | None, column: str) -> tuple[str, list]:
    if filters is None or filters.is_empty():
        return "", []
    where, params = filter_sql(db, filters, "t")
    return f" AND {column} IN (SELECT t.rowid FROM tools t WHERE {where})", params


def keyword_totals(db: Database) -> tuple[int, float]:
    """(tools, mean tokens a tool) of the keyword index, once per catalog version."""

    def build() -> tuple[int, float]:
        n, avg = db.query("SELECT count(*) AS n, avg(len) AS avg FROM tool_docsize")[0].values()
        return int(n or 0), float(avg or 1.0)

    return db.cache.get("keyword_totals", build)


def _bm25_sql(tf: str, q: str) -> str:
    """The BM25 term of a (term, rowid, weighted frequency f, tool length len) row of `tf`, with
    its query factor k (idf**idf_power * multiplier) from `q`: FTS5's tf normalisation (fts5_aux.c)."""
    return f"{q}.k * ({tf}.f * {K1 + 1.0}) / ({tf}.f + {K1 * (1 - B)} + {K1 * B}::float8 * {tf}.len / ?::float8)"


def keyword_candidates(
    db: Database,
    tokens: list[tuple[str, float]],
    limit: int,
    filters: Filters | None,
    weights: tuple[float, ...] = FTS_WEIGHTS,
    common: list[tuple[str, float]] | None = None,
    fetch: int = 0,
) -> list[tuple[int, float]]:
    """(rowid, score) of the best `limit` tools, computed by PostgreSQL: the sum over `tokens` (as
    FTS5's tokenizer cut the query's words, each with its factor: idf**idf_power * multiplier) of
    FTS5's bm25 term with column weights, over every tool holding one. `common` tokens, when given,
    are only added to the best `fetch` tools by that sum (store.retrieval's rare/common split: a
    common word's postings are read for those tools alone)."""
    if not tokens:
        return []
    _, avgdl = keyword_totals(db)
    fsql, fparams = _filter(db, filters, "s.rowid")

    def factors(pairs: list[tuple[str, float]]) -> tuple[list[str], list[float]]:
        merged: dict[str, float] = {}
        for t, k in pairs:  # a token twice in the query counts twice, as on the file
            merged[t] = merged.get(t, 0.0) + k
        return list(merged), list(merged.values())

    terms, ks = factors(tokens)
    sql = (
        "WITH q AS (SELECT * FROM unnest(?::text[], ?::float8[]) AS q(term, k)), "
        "w AS (SELECT (o - 1)::smallint AS col, x AS weight FROM unnest(?::float8[]) WITH ORDINALITY AS u(x, o)), "
        "tf AS (SELECT tt.term, tt.rowid, sum(tt.n * w.weight) AS f, min(tt.len) AS len FROM tool_terms tt "
        "JOIN w ON w.col = tt.col WHERE tt.term = ANY(?::text[]) GROUP BY tt.term, tt.rowid), "
        f"s AS (SELECT tf.rowid, sum({_bm25_sql('tf', 'q')}) AS score FROM tf JOIN q ON q.term = tf.term "
        "GROUP BY tf.rowid)"
    )
    params: list = [terms, ks, list(weights), terms, avgdl]
    if not common:
        sql += f" SELECT s.rowid, s.score FROM s WHERE TRUE{fsql} ORDER BY s.score DESC, s.rowid LIMIT ?"
        params += [*fparams, limit]
    else:
        cterms, cks = factors(common)
        sql += (
            f", top AS (SELECT s.rowid, s.score FROM s WHERE TRUE{fsql} ORDER BY s.score DESC, s.rowid LIMIT ?), "
            "c AS (SELECT * FROM unnest(?::text[], ?::float8[]) AS c(term, k)), "
            "ctf AS (SELECT tt.term, tt.rowid, sum(tt.n * w.weight) AS f, min(tt.len) AS len FROM tool_terms tt "
            "JOIN w ON w.col = tt.col WHERE tt.term = ANY(?::text[]) AND tt.rowid IN (SELECT rowid FROM top) "
            "GROUP BY tt.term, tt.rowid), "
            f"more AS (SELECT ctf.rowid, sum({_bm25_sql('ctf', 'c')}) AS score FROM ctf JOIN c ON c.term = ctf.term "
            "GROUP BY ctf.rowid) "
            "SELECT top.rowid, top.score + coalesce(more.score, 0) AS score FROM top "
            "LEFT JOIN more ON more.rowid = top.rowid ORDER BY score DESC, top.rowid LIMIT ?"
        )
        params += [*fparams, max(fetch, limit), cterms, cks, cterms, avgdl, limit]
    return [(int(r), float(v)) for r, v in db.execute(sql, params).fetchall()]


def matched_tokens(db: Database, tokens: list[str], rowids: list[int]) -> dict[int, set[str]]:
    """rowid -> which of `tokens` (as the tokenizer cut them) each tool has."""
    out: dict[int, set[str]] = {r: set() for r in rowids}
    if not tokens or not rowids:
        return out
    for r, t in db.execute(
        "SELECT DISTINCT rowid, term FROM tool_terms WHERE term = ANY(?::text[]) AND rowid = ANY(?::bigint[])",
        (list(set(tokens)), list(rowids)),
    ).fetchall():
        out[int(r)].add(t)
    return out


def _has_vectors(db: Database) -> bool:
    """Whether the catalog has its vector table, asked once per catalog version (not per query)."""
    return db.cache.get("has_vectors", lambda: vectors.has_table(db))


def vector_knn(db: Database, query: bytes, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
    """(rowid, cosine similarity) of the k nearest tools that pass the filters: pgvector's HNSW
    index, or an exact scan of real[] vectors without pgvector."""
    if not _has_vectors(db):
        return []
    cast, value = pg_value(db, query)
    fsql, fparams = _filter(db, filters, "v.rowid")
    if cast == "::vector":
        sql = (
            f"SELECT v.rowid, 1 - (v.embedding <=> ?{cast}) AS s FROM {vectors.TABLE} v WHERE TRUE{fsql} "
            f"ORDER BY v.embedding <=> ?{cast}, v.rowid LIMIT ?"
        )
        params = [value, *fparams, value, k]
    else:
        sql = (
            f"SELECT v.rowid, {_array_cosine('v.embedding')} AS s FROM {vectors.TABLE} v WHERE TRUE{fsql} "
            "ORDER BY s DESC, v.rowid LIMIT ?"
        )
        params = [value, *fparams, k]
    return [(int(r), float(s)) for r, s in db.execute(sql, params).fetchall()]


def _array_cosine(column: str) -> str:
    """Cosine of a real[] column with the parameter, in SQL (no pgvector). In double precision: a
    product of two small reals underflows real, which PostgreSQL raises as an error (every
    semantic search failed on a catalog without pgvector)."""
    return (
        f"(SELECT sum(a * b) / nullif(sqrt(sum(a * a)) * sqrt(sum(b * b)), 0) "
        f"FROM unnest({column}::float8[], ?::float8[]) AS x(a, b))"
    )


def vector_cosines(db: Database, query: bytes, rowids: list[int]) -> dict[int, float]:
    """Cosine similarity of the query to each given tool that has a vector."""
    if not rowids or not _has_vectors(db):
        return {}
    cast, value = pg_value(db, query)
    expr = f"1 - (v.embedding <=> ?{cast})" if cast == "::vector" else _array_cosine("v.embedding")
    rows = db.execute(
        f"SELECT v.rowid, {expr} FROM {vectors.TABLE} v WHERE v.rowid = ANY(?::bigint[])", (value, list(rowids))
    ).fetchall()
    return {int(r): float(s) for r, s in rows if s is not None}


class PgRetrieval(Retrieval):
    """A catalog in PostgreSQL: BM25 summed in SQL, KNN by pgvector (or an exact scan)."""

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
        """A word the tokenizer cuts in several tokens counts as those tokens (no phrase); a
        token's document frequency is counted once per catalog version."""
        if not terms:
            return []
        toks = self.stems(terms) or {}
        tw = term_weights or {}
        pairs = [(t, tw.get(w, 1.0)) for w in terms for t in toks.get(w, ())]
        if not pairs:
            return []
        nrow, _ = keyword_totals(self.db)
        df = self.document_counts([t for t, _ in pairs])

        rare, common = split_common([((t, idf(nrow, df[t]) ** idf_power * m), df[t]) for t, m in pairs], nrow)
        return keyword_candidates(self.db, rare, limit, filters, weights, common, fetch_size(limit))

    def _tokenizer_sql(self) -> str | None:
        return keywords.fts_create_sql()  # tool_terms holds the tokens of that tokenizer

    def _count_docs(self, tokens: list[str]) -> dict[str, int]:
        sql = "SELECT term, count(DISTINCT rowid) FROM tool_terms WHERE term = ANY(?::text[]) GROUP BY term"
        return dict(self.db.execute(sql, (tokens,)).fetchall())

    def matched_terms(self, terms: list[str], rowids: list[int], *, many: bool = False) -> dict[int, list[str]]:
        """A word matches when the tool has all its tokens (FTS5's phrase, unordered)."""
        if not terms or not rowids:
            return {r: [] for r in rowids}
        toks = self.stems(terms) or {}
        found = matched_tokens(self.db, [t for w in terms for t in toks.get(w, ())], rowids)
        return {r: [w for w in terms if toks.get(w) and found[r].issuperset(toks[w])] for r in rowids}

    def knn(self, query: bytes, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
        return vector_knn(self.db, query, k, filters)

    def cosines(self, query: bytes, rowids: list[int]) -> dict[int, float]:
        return vector_cosines(self.db, query, rowids)

    def warm(self, *, embeddings: bool) -> bool:
        return False  # a replica holds no catalog (store/pg/database.py)
