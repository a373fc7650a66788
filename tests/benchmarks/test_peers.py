"""benchmarks/peers.py: the reproductions of Codex's tool_search BM25 and Claude Code's keyword
tool search behave as their sources describe (fields, tokenizer, query forms).

peers.py is imported, never skipped: it needs only the standard library, so an import that fails
(a renamed helper in benchmarks/) is a failure here, in CI and locally alike."""

from __future__ import annotations

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))  # a benchmark imports its neighbours (_common) by name
import peers

TOOLS = [
    {
        "id": "github/create_pull_request",
        "server": "github",
        "name": "create_pull_request",
        "description": "Open a new pull request from a branch.",
        "input_schema": {"properties": {"base": {}, "head": {}}},
    },
    {
        "id": "github/list_issues",
        "server": "github",
        "name": "list_issues",
        "description": "List the issues of a repository.",
        "input_schema": {"properties": {"repo": {}}},
    },
    {
        "id": "slack/send_message",
        "server": "slack",
        "name": "send_message",
        "description": "Send a message to a channel.",
        "input_schema": {"properties": {"channel": {}}},
    },
    {
        "id": "time/get_current_time",
        "server": "time",
        "name": "get_current_time",
        "description": "The current time in a time zone.",
        "input_schema": {"properties": {"timezone": {}}},
    },
]


def test_codex_tokenizer_keeps_snake_case_names_whole_and_stems_words():
    assert peers.codex_tokens("Get the current time: get_current_time") == ["get", "current", "time", "get_current_tim"]
    doc = peers.codex_document(TOOLS[0])
    assert doc.startswith("mcp__github__create_pull_request create_pull_request github Open")
    assert doc.endswith("base head")  # input-schema property names


def test_codex_bm25_ranks_by_shared_tokens_only():
    c = peers.CodexBM25(TOOLS)
    assert c.rank("open a pull request", 8)[0] == "github/create_pull_request"
    assert c.rank("send a message to the team channel", 8)[0] == "slack/send_message"
    assert c.rank("zzz qqq", 8) == []  # nothing shares a token: nothing returned
    assert c.rank("timezone", 8) == ["time/get_current_time"]  # property names are indexed


def test_claude_code_keyword_query_forms():
    k = peers.ClaudeCodeKeyword(TOOLS)
    assert k.rank("select:mcp__slack__send_message,mcp__time__get_current_time") == [
        "slack/send_message",
        "time/get_current_time",
    ]
    assert k.rank("mcp__github__list_issues") == ["github/list_issues"]  # exact name
    assert k.rank("mcp__github") == ["github/create_pull_request", "github/list_issues"]  # prefix
    assert k.rank("+slack message") == ["slack/send_message"]  # required term in the name
    assert k.rank("pull request")[0] == "github/create_pull_request"  # name parts first
    assert k.rank("repository")[0] == "github/list_issues"  # then the description


def test_fastmcp_bm25_is_fastmcps_own_transform():
    """The FastMCP peer runs BM25SearchTransform itself (the `fastmcp` extra), parameters indexed."""
    import pytest

    pytest.importorskip("fastmcp")
    assert "fastmcp-bm25" in peers.PEERS and "fastmcp-bm25" in peers.FAITHFUL
    f = peers.FastMCPBM25(TOOLS)
    assert f.rank("open a pull request", 5)[0] == "github/create_pull_request"
    assert f.rank("timezone", 5) == ["time/get_current_time"]
    assert f.rank("zzz qqq", 5) == []
