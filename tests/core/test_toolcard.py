"""A tool as shown (core/toolcard.py): one base every view extends, the same keys first in every
view's JSON, and serve's compact item derived from the listed one."""

from __future__ import annotations

import dataclasses

import pytest

from toolidx.catalog.describe import Description
from toolidx.catalog.listing import ListedTool, ToolUsage
from toolidx.catalog.similar import SimilarTool
from toolidx.core.toolcard import ToolCard, ToolSummary, compact
from toolidx.core.tooldoc import first_line
from toolidx.search.hybrid import Hit

ROW = {
    "id": "git/git_push",
    "server": "git",
    "name": "git_push",
    "title": None,
    "description": "Push local commits to a remote.\n\nA long second paragraph " + "x" * 400,
    "tags": ["vcs"],
    "category": "dev",
    "param_names": ["path", "force"],
    "read_only": None,
    "destructive": True,
    "stale": 0,
}
CARD_KEYS = ["id", "server", "name", "title", "description"]


@pytest.mark.parametrize("view", [ListedTool, Description, Hit, SimilarTool])
def test_every_view_of_a_tool_extends_the_card(view):
    assert issubclass(view, ToolCard)
    names = [f.name for f in dataclasses.fields(view)]
    assert names[:5] == CARD_KEYS


def test_summary_from_a_row_and_its_json():
    s = ToolSummary.from_row(ROW)
    assert (
        s.description == first_line(ROW["description"]) != ROW["description"]
        and s.params == ["path", "force"]
        and s.stale is False
    )
    assert list(s.to_json()) == [*CARD_KEYS, "tags", "category", "params", "read_only", "destructive", "stale"]
    hit = Hit(**{k: getattr(s, k) for k in CARD_KEYS}, score=0.5)
    assert list(hit.to_json())[:5] == CARD_KEYS


def test_compact_item_leaves_out_empty_values_and_keeps_usage():
    t = ListedTool.from_row(ROW)
    assert compact(t.to_json()) == {
        "id": "git/git_push",
        "description": first_line(ROW["description"]),
        "params": ["path", "force"],
        "destructive": True,
    }
    t.usage = ToolUsage(calls=3, success_rate=1.0, last_used="2026-01-01T00:00:00Z")
    assert compact(t.to_json())["usage"] == {"calls": 3, "success_rate": 1.0, "last_used": "2026-01-01T00:00:00Z"}
