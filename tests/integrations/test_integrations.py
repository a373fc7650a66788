"""The model-API tool-search backends (issue 16, part 2) on real crawled indexes: the request
fragments and tool results have the documented shapes (Anthropic Messages API custom tool search:
deferred tools + `tool_reference` blocks; OpenAI Responses API client-executed `tool_search`:
`tool_search_output` with namespaces of < 10 full function definitions), the chosen tool runs
through toolidx's execute path (scope, validation, timeout) on a real server, `toolidx export`
writes both lists, and the two examples run a whole round offline."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO, run_cli

from toolidx.core.errors import UsageError
from toolidx.core.filters import Filters
from toolidx.integrations.anthropic import AnthropicToolSearch, tool_result
from toolidx.integrations.common import ToolCatalog
from toolidx.integrations.openai import MAX_PER_NAMESPACE, OpenAIToolSearch

API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# the documented keys (anthropic / openai SDK TypedDicts and the providers' guides)
ANTHROPIC_TOOL_KEYS = {"name", "description", "input_schema", "defer_loading"}
OPENAI_FUNCTION_KEYS = {"type", "name", "description", "defer_loading", "parameters"}


@pytest.fixture(scope="module")
def live_index(tmp_path_factory, model_path):
    """tests/servers/serve_crashy.py (a real stdio server), the weather tool list, and a 23-tool
    tools_file server with two categories (for namespace splitting), crawled with vectors."""
    tmp_path = tmp_path_factory.mktemp("live")
    big = [
        {
            "name": f"records_op_{n:02d}",
            "description": f"Record operation number {n}: " + ("read a record" if n % 2 else "archive a record") + ".",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
        }
        for n in range(23)
    ]
    (tmp_path / "big.json").write_text(json.dumps({"tools": big}))
    cfg = {
        "mcpServers": {
            "crashy": {
                "command": sys.executable,
                "args": [str(REPO / "tests" / "servers" / "serve_crashy.py")],
                "tags": ["test"],
            },
            "weather": {"tools_file": str(REPO / "examples" / "weather-tools.json"), "category": "data"},
            "records": {"tools_file": str(tmp_path / "big.json"), "category": "records"},
        }
    }
    (tmp_path / "servers.json").write_text(json.dumps(cfg))
    db = tmp_path / "live.db"
    r = run_cli("crawl", "--config", tmp_path / "servers.json", "--db", db, "--model-path", model_path)
    assert r.code == 0, r.stderr
    return db


@pytest.fixture
def catalog(live_index, embedder):
    return ToolCatalog(live_index, embedder=embedder)


# --- Anthropic ---------------------------------------------------------------------------------------
def test_anthropic_tools_array_defers_every_tool_in_scope_with_safe_names(catalog):
    a = AnthropicToolSearch(catalog)
    tools = a.tools()
    search, deferred = tools[0], tools[1:]
    assert search["name"] == "search_tools" and "defer_loading" not in search
    assert search["input_schema"]["required"] == ["query"]
    assert len(deferred) == len(catalog) == 4 + 3 + 23
    names = [t["name"] for t in deferred]
    assert len(set(names)) == len(names)
    for t in deferred:
        assert set(t) == ANTHROPIC_TOOL_KEYS and t["defer_loading"] is True
        assert API_NAME.match(t["name"]), t["name"]
        assert t["input_schema"]["type"] == "object" and t["description"]
        tid = catalog.resolve(t["name"])  # the stable map back
        assert t["input_schema"] == catalog.tool(tid)["input_schema"]
    assert catalog.resolve("weather__get_forecast") == "weather/get_forecast"
    again = AnthropicToolSearch(ToolCatalog(catalog.discovery.db_path, embedder=None)).tools()
    assert [t["name"] for t in again] == [t["name"] for t in tools]  # stable


def test_anthropic_search_answers_with_tool_references_the_api_accepts(catalog):
    a = AnthropicToolSearch(catalog)
    names = {t["name"] for t in a.tools()[1:]}
    block = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "search_tools",
        "input": {"query": "what will the weather be in Lisbon tomorrow", "limit": 2},
    }
    assert a.is_search(block)
    res = a.handle_search(block)
    assert res["type"] == "tool_result" and res["tool_use_id"] == "toolu_1"
    refs = res["content"]
    assert 1 <= len(refs) <= 2
    assert all(set(c) == {"type", "tool_name"} and c["type"] == "tool_reference" for c in refs)
    assert refs[0]["tool_name"] == "weather__get_forecast"
    # every referenced name is a deferred tool of the request: otherwise the API answers 400
    for q in ("echo some text back", "archive a record", "weather alerts", "sleep a while", "read record 7"):
        res = a.handle_search({"type": "tool_use", "id": "t", "name": "search_tools", "input": {"query": q}})
        got = [c["tool_name"] for c in res["content"] if c["type"] == "tool_reference"]
        assert got and set(got) <= names, q
        assert len(got) <= 5  # the default limit


def test_anthropic_search_says_so_when_nothing_fits(catalog):
    a = AnthropicToolSearch(catalog)
    res = a.handle_search(
        {
            "type": "tool_use",
            "id": "t9",
            "name": "search_tools",
            "input": {"query": "book a table for two at an Italian restaurant"},
        }
    )
    assert [c["type"] for c in res["content"]] == ["text"]
    assert "No good match" in res["content"][0]["text"]


def test_the_catalog_refuses_more_tools_than_the_apis_take(live_index):
    with pytest.raises(UsageError, match="at most 5"):
        ToolCatalog(live_index, embedder=None, max_tools=5)
    assert len(ToolCatalog(live_index, embedder=None, scope=Filters(servers=["weather"]), max_tools=5)) == 3


def test_anthropic_execute_runs_the_real_tool_with_validation_scope_and_timeout(live_index):
    a = AnthropicToolSearch(ToolCatalog(live_index, embedder=None))
    ok = a.execute_sync({"type": "tool_use", "id": "u1", "name": "crashy__echo", "input": {"text": "hi there"}})
    assert ok == {"type": "tool_result", "tool_use_id": "u1", "content": [{"type": "text", "text": "hi there"}]}
    bad = a.execute_sync({"type": "tool_use", "id": "u2", "name": "crashy__echo", "input": {"txt": 1}})
    assert bad["is_error"] is True and "Not run: the arguments do not fit" in bad["content"][0]["text"]
    slow = a.execute_sync(
        {"type": "tool_use", "id": "u3", "name": "crashy__sleep", "input": {"seconds": 5}}, timeout_s=0.5
    )
    assert slow["is_error"] is True
    # a catalog scoped to weather cannot run crashy's tools, even by id
    scoped = ToolCatalog(live_index, embedder=None, scope=Filters(servers=["weather"]))
    refused = scoped.call_sync("crashy/echo", {"text": "x"})
    assert refused["isError"] and refused["structuredContent"]["error"] == "out_of_scope"
    with pytest.raises(UsageError):
        AnthropicToolSearch(scoped).execute_sync(
            {"type": "tool_use", "id": "u4", "name": "crashy__echo", "input": {"text": "x"}}
        )


def test_calls_through_the_adapters_are_recorded_like_serve_s(live_index, tmp_path):
    from toolidx.store.sqlite.file import sqlite_module

    usage = tmp_path / "usage.db"
    a = AnthropicToolSearch(ToolCatalog(live_index, embedder=None, usage_db=str(usage)))
    a.execute_sync({"type": "tool_use", "id": "u1", "name": "crashy__echo", "input": {"text": "hi"}})
    a.execute_sync({"type": "tool_use", "id": "u2", "name": "crashy__echo", "input": {"txt": 1}})
    scoped = ToolCatalog(live_index, embedder=None, scope=Filters(servers=["weather"]), usage_db=str(usage))
    scoped.call_sync("crashy/echo", {"text": "x"})
    conn = sqlite_module().connect(str(usage))
    rows = conn.execute("SELECT tool_id, server, outcome, scope FROM calls ORDER BY id").fetchall()
    conn.close()
    # as serve records them: an out-of-scope name is refused before it is resolved (no server)
    assert rows == [
        ("crashy/echo", "crashy", "ok", ""),
        ("crashy/echo", "crashy", "invalid_arguments", ""),
        ("crashy/echo", "", "refused", "servers=weather"),
    ]
    off = tmp_path / "off.db"
    ToolCatalog(live_index, embedder=None, usage_db=str(off), record_usage=False).call_sync(
        "crashy/echo", {"text": "x"}
    )
    assert not off.exists()


def test_a_declared_result_that_never_came_is_a_tool_error():
    from toolidx.integrations.runtime import ToolError, unwrap

    text_only = {"content": [{"type": "text", "text": "saved"}]}
    assert unwrap("n/add", text_only) == "saved"  # no output schema: the text is the answer
    assert unwrap("n/add", {**text_only, "structuredContent": {"result": "saved"}}, True) == {"result": "saved"}
    with pytest.raises(ToolError, match="declares an output schema but sent no structuredContent"):
        unwrap("n/add", text_only, structured=True)


def test_tool_result_keeps_images_and_flags_errors():
    r = tool_result("u", {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}], "isError": True})
    assert r["content"][0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    assert r["is_error"] is True


# --- OpenAI ------------------------------------------------------------------------------------------
def test_openai_request_holds_a_client_executed_tool_search(catalog):
    (t,) = OpenAIToolSearch(catalog).tools()
    assert t["type"] == "tool_search" and t["execution"] == "client"
    assert t["parameters"]["type"] == "object" and t["parameters"]["required"] == ["query"]
    assert isinstance(t["description"], str) and t["description"]


def test_openai_namespaces_hold_fewer_than_10_full_functions(catalog):
    o = OpenAIToolSearch(catalog)
    spaces = o.namespaces()
    assert sum(len(ns["tools"]) for ns in spaces) == len(catalog)
    names = [ns["name"] for ns in spaces]
    assert len(set(names)) == len(names) and all(API_NAME.match(n) for n in names)
    assert {"crashy", "weather"} <= set(names)
    records = [ns for ns in spaces if ns["name"].startswith("records")]
    assert len(records) == 3 and all(len(ns["tools"]) <= MAX_PER_NAMESPACE for ns in records)
    for ns in spaces:
        assert set(ns) == {"type", "name", "description", "tools"} and ns["type"] == "namespace"
        assert 1 <= len(ns["tools"]) < 10 and ns["description"]
        for f in ns["tools"]:
            assert set(f) == OPENAI_FUNCTION_KEYS and f["type"] == "function" and f["defer_loading"] is True
            assert API_NAME.match(f["name"])
            tid = o.by_place[(ns["name"], f["name"])]
            assert f["parameters"] == catalog.tool(tid)["input_schema"]  # the full definition


def test_openai_search_answers_with_a_tool_search_output(catalog):
    o = OpenAIToolSearch(catalog)
    call = {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": "call_42",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "weather forecast for Porto", "limit": 3},
    }
    assert o.is_search(call)
    out = o.handle_search(call)
    assert {k: out[k] for k in ("type", "call_id", "execution", "status")} == {
        "type": "tool_search_output",
        "call_id": "call_42",
        "execution": "client",
        "status": "completed",
    }
    loaded = [(ns["name"], f["name"]) for ns in out["tools"] for f in ns["tools"]]
    assert 1 <= len(loaded) <= 3 and loaded[0] == ("weather", "get_forecast")
    # arguments as a JSON string (as some SDK versions hand them over) work the same
    assert o.handle_search({**call, "arguments": json.dumps(call["arguments"])}) == out
    none = o.handle_search({**call, "arguments": {"query": "book a table for two at an Italian restaurant"}})
    assert none["tools"] == [] and none["status"] == "completed"


def test_openai_execute_answers_the_function_call(live_index):
    o = OpenAIToolSearch(ToolCatalog(live_index, embedder=None))
    out = o.execute_sync(
        {
            "type": "function_call",
            "call_id": "c1",
            "namespace": "crashy",
            "name": "echo",
            "arguments": json.dumps({"text": "hello"}),
        }
    )
    assert out == {"type": "function_call_output", "call_id": "c1", "output": "hello"}
    bad = o.execute_sync(
        {"type": "function_call", "call_id": "c2", "namespace": "crashy", "name": "echo", "arguments": "{}"}
    )
    assert bad["call_id"] == "c2" and bad["output"].startswith("Error")


# --- export ------------------------------------------------------------------------------------------
def test_export_writes_both_formats_with_filters(live_index, tmp_path):
    r = run_cli("export", "--format", "anthropic", "--db", live_index, "--json")
    assert r.code == 0, r.stderr
    env = r.json
    assert env["toolidx"] == 1 and env["command"] == "export" and env["format"] == "anthropic"
    assert env["count"] == len(env["tools"]) == 30 and env["names"]["weather__get_forecast"] == "weather/get_forecast"
    assert all(t["defer_loading"] is True and set(t) == ANTHROPIC_TOOL_KEYS for t in env["tools"])
    r = run_cli("export", "-f", "openai", "--db", live_index, "--server", "weather", "-o", tmp_path / "o.json")
    assert r.code == 0 and r.stdout == "" and "wrote 3 tools" in r.stderr
    spaces = json.loads((tmp_path / "o.json").read_text())
    assert [ns["name"] for ns in spaces] == ["weather"] and len(spaces[0]["tools"]) == 3
    raw = run_cli("export", "-f", "anthropic", "--db", live_index, "--read-only")
    assert isinstance(json.loads(raw.stdout), list)
    bad = run_cli("export", "-f", "gemini", "--db", live_index)
    assert bad.code == 2 and "unknown export format" in bad.stderr and bad.stderr.count("\n") == 1


# --- the examples, offline ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "script,called", [("anthropic_tool_search.py", "notes__add_note"), ("openai_tool_search.py", "notes.add_note")]
)
def test_the_examples_run_a_whole_round_offline(script, called, model_path):
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["TOOLIDX_MODEL_PATH"] = model_path
    r = subprocess.run(
        [sys.executable, str(REPO / "examples" / script)], capture_output=True, text=True, env=env, timeout=180
    )
    assert r.returncode == 0, r.stderr
    assert "recorded model turns" in r.stdout
    assert f"{called}(" in r.stdout and "saved 'groceries'" in r.stdout
    assert "Done: the note 'groceries' is saved." in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script", ["anthropic_tool_search.py", "openai_tool_search.py"])
def test_an_example_never_claims_success_after_a_failed_call(script, tmp_path):
    """The notes server is gone when the example calls it: the replay stops with exit 1 instead of
    printing the recorded "Done" (before: exit 0 and "Done" after an error)."""
    import shutil

    examples = tmp_path / "examples"
    shutil.copytree(REPO / "examples", examples, ignore=shutil.ignore_patterns("__pycache__"))
    r = run_cli("crawl", "--config", examples / "live.yaml", "--db", tmp_path / "e.db", "--model", "none")
    assert r.code == 0, r.stderr
    (examples / "notes_server.py").unlink()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    r2 = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), "--db", str(tmp_path / "e.db")],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert r2.returncode == 1, r2.stdout + r2.stderr
    assert "Done" not in r2.stdout and "replay stopped" in r2.stderr
    assert "add_note(" in r2.stdout  # it got as far as the call
