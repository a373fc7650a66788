"""What an agent reads from search_tools and a client from /v1/search when a query goes wrong
(#36 items 6-7): a too-long query is told its length and the limit first; "No good match" is said
once."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import discovery_over

from toolidx.core.tokens import MAX_QUERY_CHARS
from toolidx.serve.answers import answer

TOOLS = {
    "tools": [
        {
            "name": "get_current_time",
            "description": "Get the current time in a timezone.",
            "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
        }
    ]
}


@pytest.fixture
def discovery(tmp_path: Path):
    return discovery_over(tmp_path, TOOLS)


def test_a_too_long_query_is_told_its_length_and_the_limit(discovery):
    query = "I need to find out which tool can tell me the time " * 100  # 5,100 characters
    a = answer(discovery, "search_tools", {"query": query})
    assert a.is_error
    line = a.payload["errors"][0]
    assert line.startswith(f"query: {len(query):,} characters, the limit is {MAX_QUERY_CHARS:,} ('I need to find out")
    assert len(line) < 140 and line in a.text  # a short prefix of the query, not all of it


def test_a_value_quoted_in_another_error_is_cut_short(discovery):
    a = answer(discovery, "search_tools", {"query": "time", "search_type": "x" * 500})
    line = a.payload["errors"][0]
    assert line.startswith("search_type: 'xxxx") and "…" in line and "is not one of" in line


def test_arguments_sent_as_json_text_are_told_to_be_an_object(discovery):
    """execute_tool's `arguments` as a JSON string was refused with the validator's "is not of
    type 'object'" alone (round 16, found driving serve as an agent would)."""
    a = answer(discovery, "execute_tool", {"tool_name": "t/x", "arguments": '{"timezone": "UTC"}'})
    assert a.is_error
    line = a.payload["errors"][0]
    assert line.startswith("arguments: a string (") and line.endswith("pass the object itself, not its JSON text")
    assert line in a.text


def test_no_good_match_is_said_once(discovery):
    a = answer(discovery, "search_tools", {"query": "time", "filters": {"min_score": 1.0}})
    assert a.payload["no_match"] and a.text.count("No good match") == 1, a.text


def test_v1_search_says_the_length_and_the_limit(discovery):
    from starlette.datastructures import QueryParams

    from toolidx.core.errors import UsageError
    from toolidx.serve.answers import search_payload

    q = "x" * (MAX_QUERY_CHARS + 1)
    with pytest.raises(UsageError) as e:
        search_payload(discovery, QueryParams({"q": q}))
    assert e.value.what == f"q: {len(q):,} characters, the limit is {MAX_QUERY_CHARS:,}"
