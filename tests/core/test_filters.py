"""Filters as JSON: the one serialiser every answer, report and generated module uses."""

from __future__ import annotations

import pytest

from toolidx.core.errors import UsageError
from toolidx.core.filters import Filters


def test_to_json_says_what_is_set_and_always_whether_stale_tools_count():
    assert Filters().to_json() == {"include_stale": True}
    f = Filters(servers=["a"], read_only=True, include_stale=False, has_examples=True, example_ids=["a/x"])
    # example_ids are derived from has_examples by whoever reads: never shown
    assert f.to_json() == {"servers": ["a"], "read_only": True, "include_stale": False, "has_examples": True}
    assert list(Filters(tags=["t"], servers=["s"]).to_json()) == ["servers", "tags", "include_stale"]


def test_complete_json_gives_the_same_filters_back():
    assert Filters().to_json(complete=True) == {}
    for f in (
        Filters(),
        Filters(servers=["a"], exclude_tags=["x"], name_pattern="^git", include_stale=False),
        Filters(has_examples=True, example_ids=["a/x", "b/y"], approved_only=True, description_contains=""),
    ):
        assert Filters(**f.to_json(complete=True)) == f
    assert "include_stale" not in Filters(servers=["a"]).to_json(complete=True)


def test_a_bad_pattern_is_refused_when_the_filters_are_made():
    with pytest.raises(UsageError, match="invalid --name-pattern regex"):
        Filters(name_pattern="(?=x)")


def test_no_destructive_follows_mcps_defaults(db_target):
    """MCP: destructiveHint defaults to true, and means nothing when readOnlyHint is true. So
    no_destructive keeps a read-only tool and one that says destructiveHint: false, and drops the
    rest: a tool that is not read-only, or unannotated, is destructive unless it says otherwise
    (issue 42 item 10; before, both of those were kept). On a file and on PostgreSQL."""
    from toolidx.store import catalog
    from toolidx.store.db import open_db
    from toolidx.store.tools import filtered_rowids

    db = open_db(db_target, create=True)
    hints = (1, 0, None)  # readOnlyHint / destructiveHint: true, false, not said
    rows = [(ro, de) for ro in hints for de in hints]
    with db.transaction() as c:
        c.execute("INSERT INTO servers(name, transport, status, crawled_at) VALUES ('s', 'stdio', 'ok', 'x')")
        for rowid, (ro, de) in enumerate(rows, 1):
            c.execute(
                "INSERT INTO tools(rowid, id, server, name, description, tags, category, read_only, "
                "destructive, stale, definition, hash, embed_text, first_seen, updated_at) "
                "VALUES (?, ?, 's', ?, '', '[]', 'dev', ?, ?, 0, '{}', 'h', '', 'x', 'x')",
                (rowid, f"s/t{rowid}", f"t{rowid}", ro, de),
            )
    kept = {r for r, (ro, de) in enumerate(rows, 1) if ro == 1 or de == 0}
    assert {rows[r - 1] for r in kept} == {(1, 1), (1, 0), (1, None), (0, 0), (None, 0)}
    f = Filters(no_destructive=True)
    assert filtered_rowids(db, f) == kept
    assert catalog.count_tools(db, f) == len(kept)
    # a scope that says no_destructive keeps it, whatever the request asks
    assert filtered_rowids(db, Filters().narrowed_by(f)) == kept
    db.close()
