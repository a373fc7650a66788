"""What both engines' open stores share (store/sqlite/, store/pg/), so that neither engine's folder
builds on the other's classes: statements run on the engine's connection under one lock
(`Statements`: every SQLite file and the catalog), an index's meta values (`IndexBase`: the file's
`Database` and the catalog's `PgDatabase`, and their data_version pinned in a read snapshot), and
how a migration script is split (`statements`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .dialect import Dialect


def in_chunks(values: list) -> Iterator[tuple[str, list]]:
    """(`?, ?, ...`, values) 500 at a time, for `... IN (?, ...)`: SQLite bounds the variables of
    one statement."""
    for i in range(0, len(values), 500):
        chunk = values[i : i + 500]
        yield ", ".join("?" * len(chunk)), chunk


def statements(script: str) -> list[str]:
    """Split a migration on `;` at line ends (executescript would commit on its own)."""
    out, buf = [], []
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buf.append(line)
        if line.rstrip().endswith(";"):
            stmt = "\n".join(buf).strip()
            if stmt.strip(";").strip():
                out.append(stmt)
            buf = []
    tail = "\n".join(buf).strip()
    if tail:
        out.append(tail)
    return out


class Statements:
    """The SQL calls on one open store: each runs on `conn` under `lock`, which serve's worker
    threads share. The engine's class sets the connection and the lock."""

    # the engine: store modules ask `sql` (store/dialect.py) where both spell one thing
    # differently, and an index's `writer` (store/writer.py) where one has what the other lacks
    # (FTS5, sqlite-vec, PRAGMA)
    dialect: str  # "sqlite" | "postgres"
    sql: Dialect
    conn: Any
    lock: Any  # a threading.RLock

    def execute(self, sql: str, params: Any = ()) -> Any:
        with self.lock:
            return self.conn.execute(sql, params)

    def query(self, sql: str, params: Any = ()) -> list[dict]:
        with self.lock:
            cur = self.conn.execute(sql, params)
            cols = [d[0] for d in cur.description or ()]
            return [dict(zip(cols, row)) for row in cur.fetchall()]

    def one(self, sql: str, params: Any = ()) -> dict | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = ()) -> Any:
        with self.lock:
            row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None

    def rows(self, sql: str, params: Any = ()) -> list[tuple]:
        with self.lock:
            return list(self.conn.execute(sql, params).fetchall())

    def close(self) -> None:
        with self.lock:
            self.conn.close()


class IndexBase(Statements):
    """What an open index of either engine has beyond its statements (store.index.Index is the
    whole interface, store.index.Reader the part the layers above use): the meta values, and the
    SQLite module whose FTS5 tokenizer cuts a query's words (store/retrieval.py's QueryTokenizer;
    the catalog's is an in-memory SQLite)."""

    module: Any
    _pinned: tuple[int, int] | None = None  # (thread, data_version) inside a read snapshot

    def data_version(self) -> int:
        raise NotImplementedError  # the engine's: PRAGMA data_version, or the catalog's meta row

    @contextmanager
    def _pinned_version(self) -> Iterator[None]:
        """Inside a read snapshot (entered once its transaction has really started) the index
        cannot change: its data_version is read once, not at every cache lookup (19 to 25 in a
        hybrid search: a PRAGMA on a file, a round trip to PostgreSQL)."""
        self._pinned = (threading.get_ident(), self.data_version())
        try:
            yield
        finally:
            self._pinned = None

    def _version(self) -> int:
        """data_version, as pinned for this thread's snapshot if it is in one."""
        pinned = self._pinned
        return pinned[1] if pinned is not None and pinned[0] == threading.get_ident() else self.data_version()

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        v = self.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return default if v is None else v

    def set_meta(self, key: str, value: str | None) -> None:
        self.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
