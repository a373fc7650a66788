"""The keyword index: FTS5's tools_fts in a file; in PostgreSQL, postings of the words FTS5's own
tokenizer cuts (`Tokenizer`, run in an in-memory SQLite), so both engines rank by the same BM25.
Each engine writes its own (`db.writer`: store/sqlite/writer.py, store/pg/writer.py).

A PostgreSQL text search configuration stems otherwise (snowball, stop words, its own word
splitting), and the keyword half of hybrid search and its calibrated scores were fitted on
FTS5's words: the same tokens on both engines keep the bench sets' quality equal.
"""

from __future__ import annotations

import re
import threading

from .index import Reader, own
from .sqlite.migrations import MIGRATIONS

FTS_COLUMNS = ("name", "title", "description", "server", "tags", "params")  # tools_fts's, in order


def fts_create_sql() -> str:
    """tools_fts's CREATE statement as the migration wrote it (its tokenizer is the one to use)."""
    m = re.search(r"CREATE VIRTUAL TABLE tools_fts USING fts5\(.*?\);", MIGRATIONS[0], re.S)
    assert m is not None
    return m.group(0).rstrip(";")


class Tokenizer:
    """FTS5's tokenizer of tools_fts in an in-memory SQLite: per tool, (term, column, count) and
    its length in tokens. One per process, behind a lock."""

    def __init__(self) -> None:
        from .sqlite.file import sqlite_module

        self.lock = threading.Lock()
        self.conn = sqlite_module().connect(":memory:", isolation_level=None, check_same_thread=False)
        body = fts_create_sql()
        self.conn.execute("CREATE VIRTUAL TABLE docs USING fts5" + body[body.index("(") :])
        self.conn.execute("CREATE VIRTUAL TABLE docs_inst USING fts5vocab(docs, instance)")

    def postings(self, rows: list[tuple[int, dict[str, str]]]) -> tuple[list[tuple], list[tuple]]:
        """([(term, rowid, col, n)], [(rowid, tokens)]) for (rowid, fts_row) pairs."""
        with self.lock:
            self.conn.execute("DELETE FROM docs")
            self.conn.executemany(
                f"INSERT INTO docs(rowid, {', '.join(FTS_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(r, *(row.get(c, "") for c in FTS_COLUMNS)) for r, row in rows],
            )
            col_no = {c: i for i, c in enumerate(FTS_COLUMNS)}
            terms = [
                (t, d, col_no[c], n)
                for t, d, c, n in self.conn.execute(
                    "SELECT term, doc, col, count(*) FROM docs_inst GROUP BY term, doc, col"
                )
            ]
            sizes = dict.fromkeys((r for r, _ in rows), 0)
            for d, n in self.conn.execute("SELECT doc, count(*) FROM docs_inst GROUP BY doc"):
                sizes[d] = n
            self.conn.execute("DELETE FROM docs")
        return terms, list(sizes.items())


_tokenizer: Tokenizer | None = None
_lock = threading.Lock()


def tokenizer() -> Tokenizer:
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            _tokenizer = Tokenizer()
        return _tokenizer


def put_many(db: Reader, rows: list[tuple[int, dict[str, str]]]) -> None:
    """Index (rowid, fts_row) pairs, replacing what those tools had. Inside the crawl's transaction."""
    db = own(db)
    if rows:
        db.writer.put_keywords(rows)


def delete(db: Reader, rowids: list[int]) -> None:
    """Drop these tools from the keyword index."""
    db = own(db)
    if rowids:
        db.writer.delete_keywords(rowids)
