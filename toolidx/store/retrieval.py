"""The SQL behind search: FTS5 BM25 candidates, vector KNN candidates, exact cosine for a given
set of tools, per-term match checks, and the name list for fuzzy matching. Filters are applied
inside each query, so a filter narrows the candidates instead of emptying the top k."""

from __future__ import annotations

from ..core.filters import Filters
from ..core.tokens import fts_query
from . import keywords, vectors
from .db import Database, in_chunks
from .tools import where as filter_sql

# BM25 column weights, in tools_fts column order: name, title, description, server, tags, params.
# Name and title weigh above the description (a name is a dense summary); the server words weigh
# like the name so "On Semgrep, ..." reaches Semgrep's tools; parameter text weighs least
# (long, repetitive) but still helps when a request names an argument. Tuned on the bench sets
# (docs/search-research.md, benchmarks/quality.py).
FTS_WEIGHTS = (3.0, 2.0, 1.0, 2.5, 1.0, 0.6)
FTS_COLUMNS = ("name", "title", "description", "server", "tags", "params")


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


def matched_terms(db: Database, terms: list[str], rowids: list[int]) -> dict[int, list[str]]:
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


def tool_names(db: Database) -> list[tuple[int, str]]:
    """(rowid, name) of every tool, for fuzzy name matching."""
    return [(int(r[0]), r[1]) for r in db.execute("SELECT rowid, name FROM tools ORDER BY rowid")]


def names_for(db: Database, rowids: list[int]) -> list[tuple[int, str]]:
    """(rowid, name) of the given tools."""
    return [
        (int(r), n)
        for marks, chunk in in_chunks(rowids)
        for r, n in db.execute(f"SELECT rowid, name FROM tools WHERE rowid IN ({marks}) ORDER BY rowid", chunk)
    ]


def hit_rows(db: Database, rowids: list[int]) -> dict[int, dict]:
    """The columns a search hit shows."""
    out: dict[int, dict] = {}
    for marks, chunk in in_chunks(rowids):
        for r in db.query(
            f"SELECT rowid AS _rowid, id, server, name, title, description, read_only, "
            f"destructive, stale, stale_reason FROM tools WHERE rowid IN ({marks})",
            chunk,
        ):
            out[int(r.pop("_rowid"))] = r
    return out


def filtered_count(db: Database, filters: Filters | None) -> int:
    if filters is None or filters.is_empty():
        if in_database(db):  # a count is a scan in PostgreSQL: once per catalog version
            return db.cache.get("tool_count", lambda: int(db.scalar("SELECT count(*) FROM tools")))
        return int(db.scalar("SELECT count(*) FROM tools"))
    where, params = filter_sql(db, filters, "t")
    return int(db.scalar(f"SELECT count(*) FROM tools t WHERE {where}", params))


# --- the fast keyword path (toolidx.search.bm25) and the in-memory vector matrix (toolidx.search.vecmatrix) ----
FTS_VOCAB = "tools_fts_vinst"  # a temp fts5vocab table: one row per word occurrence
FTS_ROWS = "tools_fts_vrow"  # another: one row per word, with how many tools have it


def fts_schema(db: Database) -> str | None:
    """The CREATE statement of tools_fts: the tokenizer query words must be stemmed with."""
    if in_database(db):  # PostgreSQL's postings are cut by that tokenizer (store/keywords.py)
        return keywords.fts_create_sql()
    return db.scalar("SELECT sql FROM sqlite_master WHERE name = 'tools_fts'")


def ensure_fts_vocab(db: Database) -> None:
    # a temp table: nothing is written to the index (which may be read-only), nothing to migrate
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{FTS_VOCAB} USING fts5vocab(main, tools_fts, instance)")


def fts_totals(db: Database) -> bytes | None:
    """FTS5's averages record (varints: row count, then tokens per column), which bm25() reads."""
    if in_database(db):
        return None
    return db.scalar("SELECT block FROM tools_fts_data WHERE id = 1")


def fts_word_scores(db: Database, word: str, weights: tuple[float, ...]) -> list[tuple[int, float]]:
    """(rowid, BM25 score) of every tool containing one query word, by rowid: the word's term
    in the BM25 score of any query that has it."""
    return db.execute(
        f"SELECT rowid, {_bm25(weights)} FROM tools_fts WHERE tools_fts MATCH ? ORDER BY rowid", (fts_query([word]),)
    ).fetchall()


def fts_postings_from(db: Database, start: str, limit: int) -> list[tuple[str, int, str]]:
    """(term, rowid, column) of indexed word occurrences, in term order from `start` on."""
    return db.execute(f"SELECT term, doc, col FROM temp.{FTS_VOCAB} WHERE term >= ? LIMIT ?", (start, limit)).fetchall()


def fts_docsizes(db: Database) -> list[tuple[int, bytes]]:
    """(rowid, docsize record: tokens per column) of every tool."""
    return db.execute("SELECT id, sz FROM tools_fts_docsize").fetchall()


def all_vectors(db: Database) -> list[tuple[int, bytes]]:
    """(rowid, float32 blob) of every stored embedding."""
    if not vectors.has_table(db):
        return []
    return db.execute(f"SELECT rowid, embedding FROM {vectors.TABLE}").fetchall()


# The scratch database (in memory, one per process) holds an empty copy of tools_fts with the
# index's own tokenizer, to stem query words exactly as FTS5 does.


def scratch_create(conn, fts_sql: str) -> None:
    body = fts_sql[fts_sql.index("(") :]
    conn.execute(f"CREATE VIRTUAL TABLE words USING fts5{body}")
    conn.execute("CREATE VIRTUAL TABLE words_inst USING fts5vocab(words, instance)")


def scratch_tokens(conn, words: list[str]) -> list[tuple[int, str]]:
    """(index in words, token) in token order: how the index's tokenizer cuts each word."""
    conn.execute("DELETE FROM words")
    conn.executemany("INSERT INTO words(rowid, name) VALUES (?, ?)", list(enumerate(words)))
    return conn.execute("SELECT doc, term FROM words_inst ORDER BY doc, offset").fetchall()


# --- search in the database (PostgreSQL): candidates from SQL, nothing held per replica --------------
K1, B = 1.2, 0.75  # FTS5's bm25() constants (fts5_aux.c), as search.bm25 uses them


def in_database(db: Database) -> bool:
    """Whether search asks the database for candidates (PostgreSQL) instead of scoring from
    postings and a vector matrix held in memory (a SQLite file: search.bm25, search.vecmatrix)."""
    return db.postgres


def _pg_filter(db: Database, filters: Filters | None, column: str) -> tuple[str, list]:
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


MAX_DF_CACHED = 100_000  # terms whose document frequency a replica remembers per catalog version


def keyword_df(db: Database, terms: list[str]) -> dict[str, int]:
    """How many tools hold each term (a token as the index's tokenizer cut it; 0: none), counted
    once per catalog version: a common word's count reads every one of its postings, which a
    query need not do again."""
    known: dict[str, int] = db.cache.get("keyword_df", dict, size=len)
    out = {t: known[t] for t in terms if t in known}  # before a clear below, or in another thread
    todo = [t for t in dict.fromkeys(terms) if t not in out]
    if todo:
        if len(known) + len(todo) > MAX_DF_CACHED:
            known.clear()
        if in_database(db):
            sql = "SELECT term, count(DISTINCT rowid) FROM tool_terms WHERE term = ANY(?::text[]) GROUP BY term"
            got = dict(db.execute(sql, (todo,)).fetchall())
        else:  # FTS5's own count, from a temp vocabulary table (the index may be read-only)
            db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{FTS_ROWS} USING fts5vocab(main, tools_fts, row)")
            got = {}
            for marks, chunk in in_chunks(todo):
                sql = f"SELECT term, doc FROM temp.{FTS_ROWS} WHERE term IN ({marks})"
                got |= dict(db.execute(sql, chunk).fetchall())
        for t in todo:
            out[t] = known[t] = int(got.get(t, 0))
    return {t: out[t] for t in terms}


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
    are only added to the best `fetch` tools by that sum (search.bm25's rare/common split: a
    common word's postings are read for those tools alone)."""
    if not tokens:
        return []
    _, avgdl = keyword_totals(db)
    fsql, fparams = _pg_filter(db, filters, "s.rowid")

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
    cast, value = vectors.pg_value(db, query)
    fsql, fparams = _pg_filter(db, filters, "v.rowid")
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
    cast, value = vectors.pg_value(db, query)
    expr = f"1 - (v.embedding <=> ?{cast})" if cast == "::vector" else _array_cosine("v.embedding")
    rows = db.execute(
        f"SELECT v.rowid, {expr} FROM {vectors.TABLE} v WHERE v.rowid = ANY(?::bigint[])", (value, list(rowids))
    ).fetchall()
    return {int(r): float(s) for r, s in rows if s is not None}
