"""The usage file on its own (store/usage.py): where it lives, what it refuses, what it computes.
Real SQLite files; no servers (serve's recording is in tests/serve/test_usage.py; usage in a
PostgreSQL catalog is in tests/store/test_pg.py)."""

from __future__ import annotations

import pytest

from toolidx.core.clock import now_iso
from toolidx.core.errors import DatabaseError, UsageError
from toolidx.store.db import open_db
from toolidx.store.usage import MAX_EXAMPLES_PER_TOOL, open_usage, shown, usage_path


def test_where_the_usage_file_lives(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("TOOLIDX_USAGE_DB", raising=False)
    index = tmp_path / "pub" / "tools.db"
    index.parent.mkdir()
    index.write_bytes(b"")
    assert usage_path(index) == tmp_path / "pub" / "tools.db.usage.db"
    assert usage_path(index, tmp_path / "mine.db") == tmp_path / "mine.db"
    monkeypatch.setenv("TOOLIDX_USAGE_DB", str(tmp_path / "env.db"))
    assert usage_path(index) == tmp_path / "env.db"
    assert usage_path(index, tmp_path / "mine.db") == tmp_path / "mine.db"  # the option wins
    monkeypatch.delenv("TOOLIDX_USAGE_DB")
    index.parent.chmod(0o555)  # a published index's folder (a mode without write bits, even for root)
    try:
        fallback = usage_path(index)
        assert fallback.parent == tmp_path / "state" / "toolidx" / "usage" and len(fallback.stem) == 16
        assert usage_path(index) == fallback  # stable: the CLI finds what serve wrote
    finally:
        index.parent.chmod(0o755)


def test_a_postgresql_catalog_keeps_usage_in_its_own_tables_unless_a_file_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLIDX_USAGE_DB", raising=False)
    url = "postgresql://app:s3cret@db.example/tools?schema=t"
    assert usage_path(url) == url  # the catalog's own tables: one place for every replica
    assert usage_path(url, tmp_path / "mine.db") == tmp_path / "mine.db"  # a file named is a local file
    monkeypatch.setenv("TOOLIDX_USAGE_DB", str(tmp_path / "env.db"))
    assert usage_path(url) == tmp_path / "env.db"
    with pytest.raises(UsageError, match="names a usage file, not a database URL") as e:
        usage_path(url, "postgresql://app:s3cret@elsewhere/x")
    assert "s3cret" not in str(e.value)
    assert shown(url) == "postgresql://app:***@db.example/tools?schema=t"


def test_figures_and_examples(tmp_path):
    u = open_usage(tmp_path / "u.db")
    for d in (10, 20, 30, 40, 1000):
        u.record_calls([("s/t", "s", "ok", d, "", now_iso())])
    u.record_calls([("s/t", "s", "tool_error", 50, "", now_iso())])
    u.record_calls([("s/t", "s", "invalid_arguments", 0.1, "", now_iso())])  # no server time: not in the durations
    u.record_calls([("other", "", "refused", 0.1, "", now_iso())])
    m = u.tool_metrics()["s/t"]
    assert m["calls"] == 7 and m["ok"] == 5 and m["success_rate"] == pytest.approx(5 / 7, abs=1e-3)
    assert m["p50_ms"] == 30 and m["p95_ms"] == 1000
    assert m["outcomes"] == {"ok": 5, "tool_error": 1, "invalid_arguments": 1}
    assert set(u.server_metrics()) == {"s"}  # an unresolved refusal has no server
    with pytest.raises(ValueError):
        u.record_calls([("s/t", "s", "fine", 1, "", now_iso())])
    for n in range(MAX_EXAMPLES_PER_TOOL + 3):
        u.add_example("s/t", {"n": n})
    u.add_example("s/t", {"n": 0})  # a repeat is not a new example
    kept = [e["arguments"]["n"] for e in u.examples("s/t")]
    assert len(kept) == MAX_EXAMPLES_PER_TOOL and len(set(kept)) == len(kept)
    assert u.tools_with_examples() == {"s/t"}
    u.close()


def test_files_that_are_not_usage_files_are_refused_untouched(tmp_path):
    assert open_usage(tmp_path / "absent.db", create=False) is None  # nothing recorded yet
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(DatabaseError, match="not a SQLite database"):
        open_usage(text)
    index = tmp_path / "tools.db"
    open_db(index, create=True).close()
    before = index.read_bytes()
    with pytest.raises(DatabaseError, match="not a toolidx usage file"):
        open_usage(index)  # an index given as the usage file
    assert index.read_bytes() == before


def test_examples_are_kept_per_scope_and_old_ones_belong_to_no_serve_scope(tmp_path):
    """Examples recorded before scopes were kept (schema v1) ran in an unknown scope: after the
    migration no serve scope sees them, the file's owner (scope None, the CLI) still does."""
    from toolidx.store.base import statements
    from toolidx.store.sqlite.file import sqlite_module
    from toolidx.store.usage import OLD_SCOPE, USAGE_APP_ID, USAGE_MIGRATIONS

    p = tmp_path / "v1.db"
    conn = sqlite_module().connect(str(p), isolation_level=None)
    for stmt in statements(USAGE_MIGRATIONS[0]):
        conn.execute(stmt)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(f"PRAGMA application_id = {USAGE_APP_ID}")
    conn.execute("INSERT INTO examples VALUES ('s/t', '{\"q\":\"old\"}', 'h', '2026-01-01T00:00:00Z')")
    conn.close()
    u = open_usage(p)
    assert [e["scope"] for e in u.examples("s/t")] == [OLD_SCOPE]
    assert u.examples("s/t", "") == [] and u.tools_with_examples("") == set()
    u.add_example("s/t", {"q": "all"}, "")
    u.add_example("s/t", {"q": "team"}, "servers=s")
    for n in range(MAX_EXAMPLES_PER_TOOL + 2):  # one scope's calls never evict another's examples
        u.add_example("s/t", {"n": n}, "servers=s")
    assert [e["arguments"] for e in u.examples("s/t", "")] == [{"q": "all"}]
    assert len(u.examples("s/t", "servers=s")) == MAX_EXAMPLES_PER_TOOL
    assert u.tools_with_examples("servers=s") == {"s/t"} and u.tools_with_examples("servers=x") == set()
    assert len(u.examples("s/t")) == MAX_EXAMPLES_PER_TOOL + 2
    u.close()
