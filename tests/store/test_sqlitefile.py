"""The SQLite-file layer every toolidx file opens through: identity, migrations, read-only opens,
transactions; and the index as `store.index.Index`."""

from __future__ import annotations

import sqlite3

import pytest

from toolidx.core.errors import DatabaseError
from toolidx.store import trust
from toolidx.store.db import open_db
from toolidx.store.index import Index
from toolidx.store.sqlite.file import FileKind, SqliteFile, open_file

KIND = FileKind(
    application_id=0x54455354,
    migrations=["CREATE TABLE a (x);", "CREATE TABLE b (y);"],
    additive=frozenset({2}),
    foreign_id="foreign {app_id:#x}",
    foreign_tables="foreign: {tables}",
    newer="newer v{found} > v{ours}",
    corrupt="corrupt ({e})",
)


def test_a_new_file_is_marked_and_migrated_once(tmp_path):
    p = tmp_path / "f.db"
    mod, conn = open_file(KIND, p)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == KIND.application_id
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute("INSERT INTO a VALUES (1)")
    conn.close()
    _, conn = open_file(KIND, p)  # again: nothing re-run (a second CREATE TABLE a would fail)
    assert conn.execute("SELECT x FROM a").fetchall() == [(1,)]
    conn.close()


def test_foreign_newer_and_stale_files_are_refused_untouched(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (z)").connection.close()
    before = other.read_bytes()
    with pytest.raises(DatabaseError, match="foreign: t"):
        open_file(KIND, other)
    assert other.read_bytes() == before

    p = tmp_path / "f.db"
    open_file(KIND, p)[1].close()
    con = sqlite3.connect(p)
    con.execute("PRAGMA user_version = 3")
    con.close()
    for readonly in (False, True):
        with pytest.raises(DatabaseError, match=r"newer v3 > v2"):
            open_file(KIND, p, readonly=readonly)

    # read-only, a file short of an additive migration is read as it is; one short of any other is
    # refused when the kind says so (readonly_stale), read as it is when not
    con = sqlite3.connect(p)
    con.execute("PRAGMA user_version = 1")
    con.close()
    open_file(KIND, p, readonly=True)[1].close()
    con = sqlite3.connect(p)
    con.execute("PRAGMA user_version = 0")
    con.close()
    open_file(KIND, p, readonly=True)[1].close()
    from dataclasses import replace

    with pytest.raises(DatabaseError, match="stale v0"):
        open_file(replace(KIND, readonly_stale="stale v{found}"), p, readonly=True)


def test_a_transaction_is_all_or_nothing(tmp_path):
    mod, conn = open_file(KIND, tmp_path / "f.db")
    f = SqliteFile(conn, mod)
    with pytest.raises(RuntimeError), f.transaction() as c:
        c.execute("INSERT INTO a VALUES (1)")
        raise RuntimeError("midway")
    assert f.scalar("SELECT count(*) FROM a") == 0
    with f.transaction() as c:
        c.execute("INSERT INTO a VALUES (2)")
    assert f.rows("SELECT x FROM a") == [(2,)]
    f.close()


def test_the_index_is_an_index(tmp_path):
    db = open_db(tmp_path / "t.db", create=True)
    assert isinstance(db, Index)
    assert not isinstance(SqliteFile(db.conn, db.module), Index)  # no meta, no cache: not an index
    db.close()


def test_a_trust_file_from_before_the_layer_is_still_read_and_written(tmp_path, monkeypatch):
    """trusted.db as earlier toolidx wrote it: tables made by a script, user_version 0, no
    application id. It keeps vouching, and a crawl writes to it again."""
    monkeypatch.setenv(trust.STATE_ENV, str(tmp_path))
    con = sqlite3.connect(tmp_path / trust.FILE)
    con.executescript(
        "CREATE TABLE launch_lines (hash TEXT PRIMARY KEY, server TEXT NOT NULL, at TEXT NOT NULL);"
        "CREATE TABLE configs (path TEXT PRIMARY KEY, at TEXT NOT NULL);"
        "INSERT INTO launch_lines VALUES ('old', 's', '2026-01-01T00:00:00Z');"
    )
    con.close()
    assert trust.trusted_launch("old") and not trust.trusted_launch("new")
    trust.record([("s", "new")], str(tmp_path / "c.json"))
    assert trust.trusted_launch("old") and trust.trusted_launch("new")
    assert trust.trusted_config(tmp_path / "c.json")
    con = sqlite3.connect(tmp_path / trust.FILE)
    assert con.execute("PRAGMA application_id").fetchone()[0] == 0
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    con.close()
