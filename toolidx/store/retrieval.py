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


def _filter_sql(filters: Filters | None) -> tuple[str, list]:
    if filters is None or filters.is_empty():
        return "", []
    where, params = filter_sql(filters, "t")
    return f" AND f.rowid IN (SELECT t.rowid FROM tools t WHERE {where})", params


def fts_candidates(
    db: Database, match: str, limit: int, filters: Filters | None = None, weights: tuple[float, ...] = FTS_WEIGHTS
) -> list[tuple[int, float]]:
    """(rowid, BM25 score >= 0, higher is better) of the best `limit` tools for an FTS5 query."""
    if not match:
        return []
    fsql, fparams = _filter_sql(filters)
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
            f"destructive, stale FROM tools WHERE rowid IN ({marks})",
            chunk,
        ):
            out[int(r.pop("_rowid"))] = r
    return out


def filtered_count(db: Database, filters: Filters | None) -> int:
    if filters is None or filters.is_empty():
        return int(db.scalar("SELECT count(*) FROM tools"))
    where, params = filter_sql(filters, "t")
    return int(db.scalar(f"SELECT count(*) FROM tools t WHERE {where}", params))


# --- the fast keyword path (toolidx.search.bm25) and the in-memory vector matrix (toolidx.search.vecmatrix) ----
FTS_VOCAB = "tools_fts_vinst"  # a temp fts5vocab table: one row per word occurrence


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
    return getattr(db, "dialect", "sqlite") == "postgres"


def _pg_filter(filters: Filters | None, column: str) -> tuple[str, list]:
    if filters is None or filters.is_empty():
        return "", []
    where, params = filter_sql(filters, "t")
    return f" AND {column} IN (SELECT t.rowid FROM tools t WHERE {where})", params


def _keyword_totals(db: Database) -> tuple[int, float]:
    """(tools, mean tokens a tool) of the keyword index, once per catalog version."""

    def build() -> tuple[int, float]:
        n, avg = db.query("SELECT count(*) AS n, avg(len) AS avg FROM tool_docsize")[0].values()
        return int(n or 0), float(avg or 1.0)

    return db.cache.get("keyword_totals", build)


def keyword_candidates(
    db: Database,
    tokens: list[tuple[str, float]],
    limit: int,
    filters: Filters | None,
    weights: tuple[float, ...] = FTS_WEIGHTS,
    idf_power: float = 1.0,
) -> list[tuple[int, float]]:
    """(rowid, score) of the best `limit` tools for tokens (as FTS5's tokenizer cut the query's
    words) with their multipliers: FTS5's bm25() with column weights, each token's term weighed
    by idf**idf_power * multiplier (search.bm25.candidates on a file), computed by PostgreSQL."""
    if not tokens:
        return []
    nrow, avgdl = _keyword_totals(db)
    fsql, fparams = _pg_filter(filters, "s.rowid")
    sql = (
        "WITH q AS (SELECT * FROM unnest(?::text[], ?::float8[]) AS q(term, mult)), "
        "w AS (SELECT (o - 1)::smallint AS col, x AS weight FROM unnest(?::float8[]) WITH ORDINALITY AS u(x, o)), "
        "tf AS (SELECT tt.term, tt.rowid, sum(tt.n * w.weight) AS f FROM tool_terms tt JOIN w ON w.col = tt.col "
        "WHERE tt.term = ANY(?::text[]) GROUP BY tt.term, tt.rowid), "
        "df AS (SELECT term, count(*) AS df FROM tf GROUP BY term), "
        "s AS (SELECT tf.rowid, "
        "sum(q.mult * power(greatest(ln((?::float8 - df.df + 0.5) / (df.df + 0.5)), 1e-6), ?::float8) "
        f"* (tf.f * {K1 + 1.0}) / (tf.f + {K1 * (1 - B)} + {K1 * B}::float8 * ds.len / ?::float8)) AS score "
        "FROM tf JOIN df ON df.term = tf.term JOIN q ON q.term = tf.term JOIN tool_docsize ds ON ds.rowid = tf.rowid "
        "GROUP BY tf.rowid) "
        f"SELECT s.rowid, s.score FROM s WHERE TRUE{fsql} ORDER BY s.score DESC, s.rowid LIMIT ?"
    )
    terms = [t for t, _ in tokens]
    params = [
        terms,
        [m for _, m in tokens],
        list(weights),
        list(dict.fromkeys(terms)),
        float(nrow),
        float(idf_power),
        avgdl,
        *fparams,
        limit,
    ]
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


def vector_knn(db: Database, query: bytes, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
    """(rowid, cosine similarity) of the k nearest tools that pass the filters: pgvector's HNSW
    index, or an exact scan of real[] vectors without pgvector."""
    if not vectors.has_table(db):
        return []
    cast, value = vectors.pg_value(db, query)
    fsql, fparams = _pg_filter(filters, "v.rowid")
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
    """Cosine of a real[] column with the parameter, in SQL (no pgvector)."""
    return (
        f"(SELECT sum(a * b) / nullif(sqrt(sum(a * a)) * sqrt(sum(b * b)), 0) "
        f"FROM unnest({column}, ?::real[]) AS x(a, b))"
    )


def vector_cosines(db: Database, query: bytes, rowids: list[int]) -> dict[int, float]:
    """Cosine similarity of the query to each given tool that has a vector."""
    if not rowids or not vectors.has_table(db):
        return {}
    cast, value = vectors.pg_value(db, query)
    expr = f"1 - (v.embedding <=> ?{cast})" if cast == "::vector" else _array_cosine("v.embedding")
    rows = db.execute(
        f"SELECT v.rowid, {expr} FROM {vectors.TABLE} v WHERE v.rowid = ANY(?::bigint[])", (value, list(rowids))
    ).fetchall()
    return {int(r): float(s) for r, s in rows if s is not None}
