"""The SQL behind search: FTS5 BM25 candidates, vector KNN candidates, exact cosine for a given
set of tools, per-term match checks, and the name list for fuzzy matching. Filters are applied
inside each query, so a filter narrows the candidates instead of emptying the top k."""

from __future__ import annotations

from ..core.filters import Filters
from ..core.tokens import fts_query
from . import vectors
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


def fts_candidates(db: Database, match: str, limit: int, filters: Filters | None = None,
                   weights: tuple[float, ...] = FTS_WEIGHTS) -> list[tuple[int, float]]:
    """(rowid, BM25 score >= 0, higher is better) of the best `limit` tools for an FTS5 query."""
    if not match:
        return []
    fsql, fparams = _filter_sql(filters)
    rows = db.execute(f"SELECT f.rowid, {_bm25(weights)} AS s FROM tools_fts f "
                      f"WHERE tools_fts MATCH ?{fsql} ORDER BY s DESC, f.rowid LIMIT ?",
                      [match, *fparams, limit]).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def matched_terms(db: Database, terms: list[str], rowids: list[int]) -> dict[int, list[str]]:
    """Which query terms each tool matches in the keyword index (FTS5 stemming included)."""
    out: dict[int, list[str]] = {r: [] for r in rowids}
    if not terms or not rowids:
        return out
    marks = ", ".join("?" * len(rowids))
    sql = " UNION ALL ".join(f"SELECT {i}, rowid FROM tools_fts WHERE tools_fts MATCH ? "
                             f"AND rowid IN ({marks})" for i in range(len(terms)))
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
    return [(int(r), n) for marks, chunk in in_chunks(rowids)
            for r, n in db.execute(f"SELECT rowid, name FROM tools WHERE rowid IN ({marks}) ORDER BY rowid", chunk)]


def hit_rows(db: Database, rowids: list[int]) -> dict[int, dict]:
    """The columns a search hit shows."""
    out: dict[int, dict] = {}
    for marks, chunk in in_chunks(rowids):
        for r in db.query(f"SELECT rowid AS _rowid, id, server, name, title, description, read_only, "
                          f"destructive, stale FROM tools WHERE rowid IN ({marks})", chunk):
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
    return db.scalar("SELECT sql FROM sqlite_master WHERE name = 'tools_fts'")


def ensure_fts_vocab(db: Database) -> None:
    # a temp table: nothing is written to the index (which may be read-only), nothing to migrate
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{FTS_VOCAB} USING fts5vocab(main, tools_fts, instance)")


def fts_totals(db: Database) -> bytes | None:
    """FTS5's averages record (varints: row count, then tokens per column), which bm25() reads."""
    return db.scalar("SELECT block FROM tools_fts_data WHERE id = 1")


def fts_word_scores(db: Database, word: str, weights: tuple[float, ...]) -> list[tuple[int, float]]:
    """(rowid, BM25 score) of every tool containing one query word, by rowid: the word's term
    in the BM25 score of any query that has it."""
    return db.execute(f"SELECT rowid, {_bm25(weights)} FROM tools_fts WHERE tools_fts MATCH ? "
                      "ORDER BY rowid", (fts_query([word]),)).fetchall()


def fts_postings_from(db: Database, start: str, limit: int) -> list[tuple[str, int, str]]:
    """(term, rowid, column) of indexed word occurrences, in term order from `start` on."""
    return db.execute(f"SELECT term, doc, col FROM temp.{FTS_VOCAB} WHERE term >= ? LIMIT ?",
                      (start, limit)).fetchall()


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
    body = fts_sql[fts_sql.index("("):]
    conn.execute(f"CREATE VIRTUAL TABLE words USING fts5{body}")
    conn.execute("CREATE VIRTUAL TABLE words_inst USING fts5vocab(words, instance)")


def scratch_tokens(conn, words: list[str]) -> list[tuple[int, str]]:
    """(index in words, token) in token order: how the index's tokenizer cuts each word."""
    conn.execute("DELETE FROM words")
    conn.executemany("INSERT INTO words(rowid, name) VALUES (?, ?)", list(enumerate(words)))
    return conn.execute("SELECT doc, term FROM words_inst ORDER BY doc, offset").fetchall()
