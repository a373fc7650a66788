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
