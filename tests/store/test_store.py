"""The index file as a contract: migrations, identity checks, atomic crawls, no secrets."""

from __future__ import annotations

import sqlite3

import pytest

from toolidx.core.errors import DatabaseError
from toolidx.store.db import open_db
from toolidx.store.sqlite.migrations import MIGRATIONS


def test_new_index_has_schema_and_identity(tmp_path):
    db = open_db(tmp_path / "t.db", create=True)
    assert db.scalar("PRAGMA user_version") == len(MIGRATIONS)
    assert db.scalar("PRAGMA journal_mode") == "wal"
    names = {r["name"] for r in db.query("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"meta", "servers", "tools", "tools_fts", "crawls", "crawl_tools", "tool_versions"} <= names
    assert db.vec_available, db.vec_error


def test_missing_index_is_not_created_by_readers(tmp_path):
    with pytest.raises(DatabaseError, match="no index"):
        open_db(tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path):
    p = tmp_path / "other.db"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.commit()
    con.close()
    before = p.read_bytes()
    with pytest.raises(DatabaseError, match="not a toolidx index"):
        open_db(p, create=True)
    assert p.read_bytes() == before


@pytest.mark.parametrize("content", [b"hello, I am a text file\n" * 10, b"SQLite format 3\x00" + b"\xff" * 5000])
def test_non_sqlite_or_corrupt_file_is_refused_and_untouched(tmp_path, content):
    p = tmp_path / "junk.db"
    p.write_bytes(content)
    with pytest.raises(DatabaseError):
        open_db(p, create=True)
    assert p.read_bytes() == content


def test_newer_schema_is_refused(tmp_path):
    p = tmp_path / "t.db"
    open_db(p, create=True).close()
    con = sqlite3.connect(p)
    con.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    con.commit()
    con.close()
    with pytest.raises(DatabaseError, match="newer"):
        open_db(p)


def test_readonly_open_of_a_readonly_file_writes_nothing(tmp_path):
    p = tmp_path / "base.db"
    db = open_db(p, create=True)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    for extra in ("-wal", "-shm"):
        (tmp_path / f"base.db{extra}").unlink(missing_ok=True)
    before = p.read_bytes()
    p.chmod(0o444)  # (CI runs as root, so this alone would not stop a write: the ro mode must)
    ro = open_db(p, readonly=True)
    assert ro.scalar("SELECT count(*) FROM tools") == 0
    with pytest.raises(Exception, match="readonly"):
        ro.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
    ro.close()
    assert p.read_bytes() == before


def test_readonly_open_refuses_an_index_that_needs_migrating(tmp_path):
    p = tmp_path / "old.db"
    open_db(p, create=True).close()
    con = sqlite3.connect(p)
    con.execute("PRAGMA user_version = 0")
    con.commit()
    con.close()
    with pytest.raises(DatabaseError, match="read-only"):
        open_db(p, readonly=True)


def test_index_cache_is_per_version_and_bounded_by_names(db_target):
    """One cache per opened index: an entry is built once per version of the index, dropped when
    another connection commits, and its size shows in stats (a file or PostgreSQL: db_target)."""
    path = db_target
    db = open_db(path, create=True)
    builds = []

    def build():
        builds.append(1)
        return [1, 2, 3]

    assert db.cache.get("x", build, size=len) == [1, 2, 3]
    assert db.cache.get("x", build, size=len) == [1, 2, 3] and len(builds) == 1
    assert db.cache.stats()["entries"] == {"x": 3}
    other = open_db(path)
    with other.transaction():
        other.set_meta("touched", "yes")
    assert db.cache.peek("x") is None  # another connection committed: the entry is gone
    db.cache.get("x", build, size=len)
    assert len(builds) == 2 and db.cache.stats()["resets"] == 1
    assert other.cache.peek("x") is None  # each opened index has its own


def test_filter_sql_keeps_what_each_filter_says(db_target):
    """store.tools.where: every Filters field as SQL over real rows, name_pattern (RE2: SQLite's
    REGEXP, the names it finds on PostgreSQL) included, on a file and on PostgreSQL (db_target)."""
    from toolidx.core.filters import Filters
    from toolidx.store import catalog
    from toolidx.store.tools import filtered_rowids

    db = open_db(db_target, create=True)
    with db.transaction() as c:
        for s in ("git", "docs"):
            c.execute("INSERT INTO servers(name, transport, status, crawled_at) VALUES (?, 'stdio', 'ok', 'x')", (s,))
        rows = [  # rowid, server, name, description, tags, category, read_only, destructive, stale
            (1, "git", "git_log", "Show the commit log", '["vcs"]', "dev", 1, 0, 0),
            (2, "git", "git_push", "Push commits", '["vcs", "write"]', "dev", 0, 1, 0),
            (3, "docs", "read_pdf", "Read a PDF file", '["files"]', "docs", 1, None, 1),
        ]
        for rowid, server, name, desc, tags, cat, ro, de, stale in rows:
            c.execute(
                "INSERT INTO tools(rowid, id, server, name, description, tags, category, read_only, "
                "destructive, stale, definition, hash, embed_text, first_seen, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', 'h', '', 'x', 'x')",
                (rowid, f"{server}/{name}", server, name, desc, tags, cat, ro, de, stale),
            )
        c.execute("INSERT INTO approvals VALUES ('docs/read_pdf', 'h', 'me', 'x')")
    cases = [
        (Filters(), None),
        (Filters(servers=["docs"]), {3}),
        (Filters(tags=["write", "files"]), {2, 3}),
        (Filters(exclude_tags=["write"]), {1, 3}),
        (Filters(categories=["dev"]), {1, 2}),
        (Filters(name_pattern="^GIT_"), {1, 2}),  # case-insensitive
        (Filters(description_contains="pdf"), {3}),
        (Filters(read_only=True), {1, 3}),
        (Filters(no_destructive=True), {1, 3}),
        (Filters(include_stale=False), {1, 2}),
        (Filters(approved_only=True), {3}),
        (Filters(has_examples=True, example_ids=["git/git_push"]), {2}),
        (Filters(has_examples=True), set()),
        (Filters(servers=["git"], read_only=True, approved_only=True), set()),
        # name_pattern is RE2 on both engines (PostgreSQL's ~* read \\b as a backspace, and
        # failed on \\z, (?P<n>), \\pL, \\Q..\\E and counts over 255: #31 item 5)
        (Filters(name_pattern=r"\bread"), {3}),
        (Filters(name_pattern=r"push\z"), {2}),
        (Filters(name_pattern=r"(?P<verb>read)_"), {3}),
        (Filters(name_pattern=r"^\pL+_pdf"), {3}),
        (Filters(name_pattern=r"\Qgit_\E"), {1, 2}),
        (Filters(name_pattern=r"^g{1,300}it"), {1, 2}),
        # what PostgreSQL refuses (NUL) matches nothing, as on the file (#31 item 7)
        (Filters(servers=["git\x00"]), set()),
        (Filters(tags=["vcs\x00"], categories=["dev\x00"]), set()),
        (Filters(description_contains="pdf\x00"), set()),
        (Filters(name_pattern="git\x00"), set()),
        # a request outside a fixed scope: nothing, never the whole scope
        (Filters(servers=["docs"]).narrowed_by(Filters(servers=["git"])), set()),
        (Filters(categories=["docs"]).narrowed_by(Filters(servers=["git"], categories=["dev"])), set()),
    ]
    for f, want in cases:
        assert filtered_rowids(db, f) == want, f
        assert catalog.count_tools(db, f) == (3 if want is None else len(want)), f
    db.close()


def test_every_row_and_ties_by_code_point_on_both_engines(db_target):
    """store.catalog's two engine spellings, asked of the dialect (db.sql): a page of "every row"
    (SQLite's LIMIT -1, PostgreSQL's LIMIT NULL) and servers with equal counts in code-point order,
    as Python orders names ("B" before "a"), on a file and on PostgreSQL (db_target)."""
    from toolidx.store import catalog

    db = open_db(db_target, create=True)
    with db.transaction() as c:
        for s in ("a", "B", "c"):
            c.execute("INSERT INTO servers(name, transport, status, crawled_at) VALUES (?, 'stdio', 'ok', 'x')", (s,))
        for rowid, (server, name) in enumerate([("a", "t1"), ("B", "t2"), ("c", "t3"), ("c", "t4")], 1):
            c.execute(
                "INSERT INTO tools(rowid, id, server, name, description, tags, definition, hash, embed_text, "
                "first_seen, updated_at) VALUES (?, ?, ?, ?, '', '[]', '{}', 'h', '', 'x', 'x')",
                (rowid, f"{server}/{name}", server, name),
            )

    def ids(limit: int, offset: int) -> list[str]:
        return [r["id"] for r in catalog.page_tools(db, sort="name", descending=False, limit=limit, offset=offset)]

    assert ids(-1, 0) == ["a/t1", "B/t2", "c/t3", "c/t4"]
    assert ids(-1, 1) == ["B/t2", "c/t3", "c/t4"]
    assert ids(2, 1) == ["B/t2", "c/t3"]
    # the test PostgreSQL's own collation (C.UTF-8) orders by code point too, and this build has no
    # other (no ICU, no libc locales): there the order alone cannot tell, so the statement is watched
    # asking the dialect for code-point order, whose PostgreSQL spelling is COLLATE "C"
    asked: list[str] = []
    dialect = db.sql

    class Watched:
        def __getattr__(self, name: str):
            return getattr(dialect, name)

        def by_code(self, expr: str) -> str:
            asked.append(dialect.by_code(expr))
            return asked[-1]

    db.sql = Watched()  # type: ignore[assignment]
    with db.snapshot():
        tools, servers, rows = catalog.server_summary(db, None, first=0, largest=2, named=[])
    assert (tools, servers) == (4, 3)
    assert rows == [{"name": "B", "count": 1}, {"name": "c", "count": 2}]  # of a and B's tie, B
    assert asked == (['name COLLATE "C"'] if db.dialect == "postgres" else ["name"])
    db.close()


_WRITER = """
import sys
from toolidx.store import approvals
from toolidx.store.db import open_db

for i, line in enumerate(sys.stdin):
    db = open_db(sys.argv[1])  # as `toolidx approve` or serve's approve: open, write, close
    ids = [r["id"] for r in db.query("SELECT id FROM tools ORDER BY id LIMIT 100")]
    approvals.record(db, ids[i : i + 1], "someone", "2026-01-01T00:00:00.000Z")
    with db.transaction():
        db.execute("UPDATE tools SET description = ? || substr(description, 3)", (f"{i % 10}:",))
    db.close()  # the last connection: SQLite folds the WAL into the file and removes -wal, -shm
    print("written", flush=True)
"""


def test_a_readonly_reader_sees_a_writers_commits_and_never_a_torn_file(tmp_path):
    """#42 item 20: "database disk image is malformed", seen once in serve after `diff --approved`.
    A read-only open was `immutable=1` whenever no -wal / -shm was beside the file: no locks, the
    file trusted never to change. Another process then opened it, wrote (approvals, a crawl) and
    closed, folding its WAL into the pages the reader was reading: a torn read, malformed or mixed.
    Two processes in lockstep, a bounded number of rounds: the reader is half-way through a query
    when the writer approves a tool, rewrites every description and closes; the reader reads on."""
    import json
    import subprocess
    import sys

    from conftest import run_cli

    from toolidx.store import approvals

    tools = [
        {"name": f"tool_{i}", "description": f"--{i} " + "lorem ipsum " * 40, "inputSchema": {"type": "object"}}
        for i in range(1500)
    ]
    (tmp_path / "t.json").write_text(json.dumps({"tools": tools}))
    (tmp_path / "c.json").write_text(json.dumps({"mcpServers": {"s": {"tools_file": str(tmp_path / "t.json")}}}))
    p = tmp_path / "i.db"
    assert run_cli("crawl", "--config", tmp_path / "c.json", "--db", p, "--model", "none").code == 0
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(p)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdin is not None and writer.stdout is not None
    seen, failed = [], []
    try:
        for _ in range(4):
            assert not any(tmp_path.glob("i.db-*")), list(tmp_path.iterdir())  # no writer holds it
            ro = open_db(p, readonly=True)
            try:
                cur = ro.conn.execute("SELECT description FROM tools ORDER BY rowid")
                first = cur.fetchmany(100)
                writer.stdin.write("go\n")
                writer.stdin.flush()
                assert writer.stdout.readline().strip() == "written"
                try:
                    during = {r[0][:2] for r in first + cur.fetchall()}  # one query: one snapshot
                    after = {r["description"][:2] for r in ro.query("SELECT description FROM tools")}
                    seen.append((during, len(approvals.approvals(ro)), after))
                except Exception as e:  # what a torn read raises, reported below
                    failed.append(f"{type(e).__name__}: {e}")
            finally:
                ro.close()
    finally:
        writer.stdin.close()
        writer.wait(30)
    assert failed == [], failed
    # each query reads one version whole; the next one the writer's commit
    assert seen == [({f"{i - 1}:" if i else "--"}, i + 1, {f"{i}:"}) for i in range(4)], seen
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.json", "i.db", "t.json"]  # no -wal, -shm left
