"""The discovery server in-process (`Client(server)`, the SDK's in-memory transport), against an
index of real servers: meta-tool schemas and answers, scope, execute_tool on real backends,
a backend crash, budgets, reload. The same server over a real stdio subprocess is in
test_serve_stdio.py."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone

import anyio
import pytest
from conftest import list_changed_recorder, run_cli

from toolidx.core.budget import estimate_tokens
from toolidx.core.filters import Filters
from toolidx.serve.metatools import META_TOOLS

pytestmark = [pytest.mark.servers, pytest.mark.slow]

META = ["search_tools", "list_tools", "describe_tool", "execute_tool", "get_tool_categories", "get_similar_tools"]


def build(db, embedder=None, **kw):
    from toolidx.serve.server import build_server

    srv = build_server(db, load_model=False, **kw)
    if embedder is not None:
        srv.discovery.model.embedder, srv.discovery.model.state = embedder, "ready"
    return srv


def session(srv, body, **client_kw):
    """Run `await body(client)` against `srv` over the in-memory transport (legacy handshake, as
    Claude Desktop speaks it)."""
    from mcp import Client

    async def main():
        async with Client(srv, mode="legacy", **client_kw) as c:
            return await body(c)

    return anyio.run(main)


async def call(c, name, args):
    r = await c.call_tool(name, args)
    return r, r.structured_content, r.content[0].text if r.content else ""


def pool_status(srv) -> dict:
    return {k: v for p in srv.backend_pools for k, v in p.status().items()}


# --- the meta-tools as published -------------------------------------------------------------------
def test_lists_the_meta_tools_with_exact_schemas(serve_index):
    async def body(c):
        return (await c.list_tools()).tools

    tools = session(build(serve_index), body)
    assert [t.name for t in tools] == META  # underlying tools hidden by default
    for t in tools:
        wire = t.model_dump(by_alias=True, mode="json", exclude_none=True)
        mine = next(m for m in META_TOOLS if m["name"] == t.name)
        assert wire["inputSchema"] == mine["inputSchema"]  # published exactly as written
        assert wire["inputSchema"]["additionalProperties"] is False
        assert len(wire["description"]) > 150
    search = next(t for t in tools if t.name == "search_tools")
    props = search.input_schema["properties"]
    assert props["search_type"]["enum"] == ["hybrid", "semantic", "keyword"]
    assert set(props["filters"]["properties"]) == {
        "servers",
        "tags",
        "exclude_tags",
        "categories",
        "name_pattern",
        "description_contains",
        "read_only",
        "no_destructive",
        "has_examples",
        "min_score",
    }


def test_meta_tool_arguments_are_validated(serve_index):
    async def body(c):
        return [
            await call(c, "search_tools", {"query": "x", "limit": 0}),
            await call(c, "list_tools", {"sort_by": "colour"}),
            await call(c, "describe_tool", {}),
            await call(c, "search_tools", {"query": "time", "filters": {"name_pattern": "("}}),
        ]

    results = session(build(serve_index), body)
    for r, sc, text in results:
        assert r.is_error and sc["error"] in ("invalid_arguments", "UsageError"), text
    assert "limit" in results[0][2] and "colour" in results[1][2] and "tool_name" in results[2][2]
    assert "invalid filters.name_pattern regex" in results[3][2] and "--" not in results[3][2]  # as the agent wrote it


# --- search / list / describe / categories / similar -----------------------------------------------
def test_search_finds_a_real_tool_and_says_when_nothing_fits(serve_index, embedder):
    async def body(c):
        return [
            await call(c, "search_tools", {"query": "what time is it in Tokyo", "limit": 5}),
            await call(c, "search_tools", {"query": "current time", "filters": {"servers": ["filesystem"]}}),
            await call(c, "search_tools", {"query": "current time", "filters": {"min_score": 1.0}}),
            await call(
                c, "search_tools", {"query": "read file", "include_schemas": True, "limit": 2, "search_type": "keyword"}
            ),
        ]

    (r, sc, text), (_, scoped, _), (_, none, none_text), (_, kw, _) = session(build(serve_index, embedder), body)
    assert not r.is_error and sc["mode_used"] == "hybrid" and not sc["no_match"]
    ids = [h["id"] for h in sc["hits"]]
    assert "time/get_current_time" in ids
    assert all(0 <= h["score"] <= 1 for h in sc["hits"])
    assert "time/get_current_time" in text and "describe_tool" in text  # the readable block
    assert all(h["id"].startswith("filesystem/") for h in scoped["hits"])
    assert none["no_match"] is True and none["hits"] == [] and "No good match" in none_text
    assert kw["mode_used"] == "keyword" and len(kw["hits"]) <= 2
    assert all(h["input_schema"]["type"] == "object" for h in kw["hits"])


def test_a_model_that_loads_too_long_gives_keyword_results_with_a_notice(serve_index):
    async def body(c):
        return await call(c, "search_tools", {"query": "current time"})

    srv = build(serve_index)
    srv.discovery.model.state, srv.discovery.model.wait_s = "loading", 0.5  # it never finishes
    r, sc, _ = session(srv, body)
    # it waited for the model (bounded: the notice names the wait), then fell back
    assert not r.is_error and sc["mode_used"] == "keyword"
    assert any("still loading after 0.5 s: keyword results" in n for n in sc["notes"])
    assert any(h["id"].startswith("time/") for h in sc["hits"])


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_search_by_meaning_waits_for_the_loading_model(serve_index, embedder, mode):
    """Before: a search during start-up answered by keywords, whatever it asked for, unless
    keywords found nothing."""
    import threading

    srv = build(serve_index)
    model = srv.discovery.model
    model.state = "loading"

    def finish_loading():
        model.embedder, model.state = embedder, "ready"
        model.done.set()

    async def body(c):
        threading.Timer(0.3, finish_loading).start()
        # keywords alone find these tools too: the answer still waits for the ranking asked for
        return [
            await call(c, "search_tools", {"query": "current time", "search_type": mode}),
            await call(c, "search_tools", {"query": "what o'clock is it over in Nippon", "search_type": mode}),
        ]

    for r, sc, _ in session(srv, body):
        assert not r.is_error and not sc["no_match"] and sc["mode_used"] == mode
        assert sc["hits"][0]["id"].startswith("time/")
        assert not any("loading" in n for n in sc.get("notes", []))


def test_the_first_search_of_a_fresh_server_is_semantic(serve_index, model_path, monkeypatch):
    """serve loads the real model at start-up (in the background) and a semantic search, the
    first request after the handshake, waits for it."""
    from toolidx.serve.server import build_server

    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    srv = build_server(serve_index)  # load_model: the default

    async def body(c):
        # words the index has: before, keywords answered it at once (model still loading)
        return await call(c, "search_tools", {"query": "current time in a timezone", "search_type": "semantic"})

    r, sc, _ = session(srv, body)
    assert srv.discovery.model.state == "ready"
    assert not r.is_error and sc["mode_used"] == "semantic" and sc["hits"][0]["id"].startswith("time/")
    assert not any("loading" in n for n in sc.get("notes", []))


def test_search_hints_name_the_meta_tools_own_parameters(serve_index, embedder):
    """Before: "(--min-score 0 shows it anyway)", a CLI flag an agent cannot pass."""

    async def body(c):
        return await call(c, "search_tools", {"query": "bake a chocolate cake"})

    r, sc, text = session(build(serve_index, embedder), body)
    assert sc["no_match"] and any("(filters.min_score: 0 shows it anyway)" in n for n in sc["notes"])
    assert "--" not in json.dumps(sc) + text


def test_a_search_whose_filters_keep_every_tool_out_says_so_not_that_nothing_does_it(serve_index):
    """filters.servers ["GitHub"] (the server is `github`) answered "tell the user that no
    available tool does this" (round 16, found driving serve as an agent would): the filters kept
    every tool out, not the request. The answer says to check them, names the server meant, and
    sends to the meta-tool that lists the servers, not to a CLI command."""

    async def body(c):
        return await call(c, "search_tools", {"query": "current time in Tokyo", "filters": {"servers": ["TIME"]}})

    r, sc, text = session(build(serve_index), body)
    assert sc["no_match"] and "passes these filters" in sc["message"] and "get_tool_categories" in sc["message"]
    assert "no server 'TIME' (did you mean time?) in the index" in sc["notes"], sc
    assert "tell the user" not in text and "toolidx " not in text


def test_a_hit_an_agent_should_not_use_as_asked_says_why_in_search_tools(serve_index, embedder):
    """search_tools' hits carried no `why` (to save the agent's tokens), so a tool its server
    retired, or one that only reads what the request would change, looked like any match (round
    16, found driving serve as an agent would). Each hit now carries its cautions, in the JSON and
    in the text an agent reads; a tool that does what was asked carries none."""

    async def body(c):
        return [
            await call(c, "search_tools", {"query": q, "limit": 5, "filters": {"min_score": 0}})
            for q in ("read a file", "rename notes.txt to todo.txt")
        ]

    (_, read, text), (_, renamed, _) = session(build(serve_index, embedder), body)
    by_id = {h["id"]: h for h in read["hits"]}
    assert read["hits"][0]["id"] == "filesystem/read_text_file" and "cautions" not in read["hits"][0], read
    assert by_id["filesystem/read_file"]["cautions"][0] == "deprecated: its server says use read_text_file instead"
    assert "   caution: deprecated: its server says use read_text_file instead" in text
    first = renamed["hits"][0]
    assert first["id"] == "filesystem/move_file" and "cautions" not in first, renamed
    assert any("it only reads; the request changes something" in h.get("cautions", []) for h in renamed["hits"]), (
        renamed
    )


def test_list_tools_pages_through_everything_once(serve_index):
    async def body(c):
        pages, page = [], 1
        while page:
            _, sc, _ = await call(c, "list_tools", {"page": page, "page_size": 7})
            pages.append(sc)
            page = sc["next_page"]
        return pages, await call(c, "list_tools", {"filters": {"servers": ["time"]}, "include_schemas": True})

    pages, (_, time_page, text) = session(build(serve_index), body)
    ids = [t["id"] for p in pages for t in p["items"]]
    total = pages[0]["total"]
    assert total == 42 and len(ids) == total == len(set(ids)) and len(pages) == pages[0]["pages"] == 6
    assert pages[-1]["next_page"] is None
    assert [t["id"] for t in time_page["items"]] == ["time/convert_time", "time/get_current_time"]
    assert all(t["input_schema"]["type"] == "object" for t in time_page["items"])
    assert "Tools 1-2 of 2" in text


def test_describe_tool_gives_schema_example_and_closest_names(serve_index):
    async def body(c):
        return [
            await call(c, "describe_tool", {"tool_name": "time/get_current_time"}),
            await call(c, "describe_tool", {"tool_name": "get_current_time", "detail": "summary"}),
            await call(c, "describe_tool", {"tool_name": "time/get_currnt_time"}),
            await call(c, "describe_tool", {"tool_name": "echo"}),
        ]

    (r, sc, text), (_, summary, _), (bad, unknown, _), (_, ambiguous, _) = session(build(serve_index), body)
    assert not r.is_error and sc["id"] == "time/get_current_time"
    assert sc["input_schema"]["required"] == ["timezone"]
    assert set(sc["example_arguments"]) == {"timezone"}
    assert sc["annotations"]["readOnlyHint"] is True
    assert any(p["name"] == "timezone" and p["required"] for p in sc["parameters"])
    assert "timezone" in text and "Example arguments" in text
    assert summary["id"] == "time/get_current_time" and "input_schema" not in summary  # bare name
    assert bad.is_error and unknown["error"] == "unknown_tool"
    assert unknown["suggestions"][0] == "time/get_current_time"
    assert ambiguous["error"] == "ambiguous_tool"
    assert set(ambiguous["suggestions"]) == {"crashy/echo", "everything/echo"}


def test_an_unknown_tool_is_not_offered_its_opposite(serve_index):
    """execute_tool on a tool that does not exist got the closest names, the opposite operation
    first (`github/delete_repository` -> `create_repository`; round 16, found driving serve as an
    agent would): an agent may run what it is offered. Names that do the opposite are left out;
    others stay."""

    async def body(c):
        return [
            await call(c, "execute_tool", {"tool_name": "filesystem/delete_directory", "arguments": {}}),
            await call(c, "describe_tool", {"tool_name": "filesystem/create_directry"}),
        ]

    (r, sc, text), (_, typo, _) = session(build(serve_index), body)
    assert r.is_error and sc["error"] == "unknown_tool", sc
    assert "filesystem/create_directory" not in sc.get("suggestions", []) and "create_directory" not in text, sc
    assert typo["suggestions"][0] == "filesystem/create_directory"  # a slip of its name is still offered


def test_describe_tool_example_gives_two_ends_two_values(serve_index):
    """describe_tool's example reads the tool's text as the CLI's does: convert_time's source and
    target are two different time zones (it converted Europe/Paris to Europe/Paris)."""

    async def body(c):
        return await call(c, "describe_tool", {"tool_name": "time/convert_time"})

    r, sc, _ = session(build(serve_index), body)
    ex = sc["example_arguments"]
    assert not r.is_error and ex["source_timezone"] != ex["target_timezone"]


def test_categories_and_similar(serve_index, embedder):
    async def body(c):
        return [
            await call(c, "get_tool_categories", {}),
            await call(c, "get_tool_categories", {"include_tags": False, "include_servers": False}),
            await call(c, "get_similar_tools", {"tool_name": "filesystem/read_file", "limit": 3}),
        ]

    (_, cats, text), (_, bare, _), (_, sim, sim_text) = session(build(serve_index, embedder), body)
    assert cats["total_tools"] == 42
    assert {s["name"]: s["count"] for s in cats["servers"]} == {
        "crashy": 4,
        "everything": 13,
        "filesystem": 14,
        "memory": 9,
        "time": 2,
    }
    assert any(t["name"] == "read-only" for t in cats["tags"]) and "Servers:" in text
    # the taxonomy's categories across servers, each with its definition
    by_name = {c["name"]: c for c in cats["categories"]}
    assert by_name["files"]["count"] >= 14 and by_name["knowledge"]["count"] >= 9 and by_name["time"]["count"] >= 2
    assert by_name["files"]["definition"].startswith("Local files and folders")
    assert set(bare) == {"categories", "total_tools"}
    assert sim["tool"] == "filesystem/read_file" and sim["method"] == "semantic"
    assert 1 <= len(sim["similar"]) <= 3
    assert sim["similar"][0]["id"] == "filesystem/read_text_file" and "read_text_file" in sim_text


# --- execute_tool ------------------------------------------------------------------------------------
def test_execute_runs_the_real_tool_and_returns_its_result_unchanged(serve_index):
    async def body(c):
        r, sc, text = await call(
            c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
        )
        direct = await _direct_time_call(serve_index)
        return r, sc, text, direct

    srv = build(serve_index)
    r, sc, text, direct = session(srv, body)
    assert r.is_error is False
    assert sc["timezone"] == "Asia/Tokyo"
    t = datetime.fromisoformat(sc["datetime"])
    assert t.utcoffset() == timedelta(hours=9)
    assert abs((t - datetime.now(timezone.utc)).total_seconds()) < 120
    assert json.loads(text) == sc  # mcp-server-time's own text block, passed through
    # the same shape as calling the server directly
    assert set(direct["structuredContent"]) == set(sc) and direct["content"][0]["type"] == "text"


async def _direct_time_call(index) -> dict:
    from toolidx.crawl.config import load_config
    from toolidx.crawl.connect import open_session

    cfg = load_config(index.parent / "servers.json")  # the config serve_index was crawled from
    spec = next(s for s in cfg.servers if s.name == "time")
    async with open_session(spec) as conn:
        return await conn.call_tool("get_current_time", {"timezone": "Asia/Tokyo"}, 30)


def test_invalid_arguments_are_refused_without_calling_the_server(serve_index):
    async def body(c):
        return [
            await call(c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {}}),
            await call(c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {"timezone": 9}}),
            await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "", "x": 1}}),
            pool_status(srv),
        ]

    srv = build(serve_index)
    (r, sc, text), (_, typed, _), (_, echo, _), backends = session(srv, body)
    assert r.is_error and sc["error"] == "invalid_arguments" and sc["tool"] == "time/get_current_time"
    assert sc["errors"] == [{"path": "(root)", "message": "'timezone' is a required property"}]
    assert sc["input_schema"]["required"] == ["timezone"] and "timezone" in sc["example_arguments"]
    assert "Not run" in text and "'timezone' is a required property" in text
    assert typed["errors"][0]["path"] == "timezone" and "string" in typed["errors"][0]["message"]
    assert {e["path"] for e in echo["errors"]} == {"(root)", "text"}  # every problem at once
    assert backends == {}  # no backend was started


def test_scope_refuses_tools_outside_it_even_when_guessed(serve_index):
    async def body(c):
        return [
            await call(c, "execute_tool", {"tool_name": "filesystem/list_allowed_directories"}),
            await call(c, "execute_tool", {"tool_name": "filesystem/no_such_tool"}),
            await call(c, "describe_tool", {"tool_name": "filesystem/read_file"}),
            await call(c, "search_tools", {"query": "list directory files", "filters": {"min_score": 0}}),
            await call(c, "list_tools", {"filters": {"servers": ["filesystem"]}}),
            await call(c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {"timezone": "UTC"}}),
            pool_status(srv),
        ]

    srv = build(serve_index, scope=Filters(servers=["time"]))
    (r, sc, _), (_, unknown, _), (_, desc, _), (_, search, _), (_, listed, _), (ok, _, _), backends = session(srv, body)
    assert r.is_error and sc["error"] == "out_of_scope"
    assert unknown["error"] == "unknown_tool"
    assert desc["error"] == "out_of_scope"
    assert all(h["id"].startswith("time/") for h in search["hits"])
    assert listed["total"] == 0  # asking for more than the scope gets nothing, not everything
    assert not ok.is_error
    assert set(backends) == {"time"} and backends["time"]["alive"]  # only the in-scope call ran


def test_read_only_scope_refuses_tools_not_annotated_read_only(serve_index):
    async def body(c):
        return [
            await call(c, "execute_tool", {"tool_name": "crashy/crash"}),
            await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "hi"}}),
        ]

    (r, sc, _), (ok, echo, _) = session(build(serve_index, scope=Filters(read_only=True)), body)
    assert r.is_error and sc["error"] == "out_of_scope"
    assert not ok.is_error and echo == {"text": "hi"}


def test_a_backend_that_crashes_mid_session_is_reported_then_restarted(serve_index):
    async def body(c):
        first = await call(c, "execute_tool", {"tool_name": "crashy/pid"})
        crash = await call(c, "execute_tool", {"tool_name": "crashy/crash", "arguments": {"code": 7}})
        again = await call(c, "execute_tool", {"tool_name": "crashy/pid"})
        return first, crash, again

    srv = build(serve_index)
    (r1, _, pid1), (rc, crash, crash_text), (r2, _, pid2) = session(srv, body)
    assert not r1.is_error and not r2.is_error
    assert int(pid1) != int(pid2)  # a new process
    assert rc.is_error and crash["error"] == "backend_unavailable"
    assert "exit code 7" in crash_text and "crashing on request" in crash_text  # exit code + stderr


def test_a_servers_error_answer_does_not_say_a_retry_is_pointless(serve_index):
    """A live server's JSON-RPC error ("fetch failed: ... ENOTFOUND") came with "a retry gets the
    same answer" (round 16, found driving serve as an agent would): an error of the network or of
    the service behind the server may pass. The fix says to retry later only for that; the backend
    is kept (the next call is answered by the same process)."""

    async def body(c):
        refused = await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "refuse"}})
        after = await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "hi"}})
        return refused, after

    (r, sc, text), (ok, echo, _) = session(build(serve_index), body)
    assert r.is_error and sc["error"] == "backend_unavailable" and "ENOTFOUND" in sc["message"], sc
    assert "retry later only for that" in sc["fix"] and "gets the same answer" not in text, sc
    assert not ok.is_error and echo == {"text": "hi"}


def test_a_backend_that_does_not_start_says_why_in_its_own_words(tmp_path):
    """ "did not start (server closed the connection)" said nothing a user could act on; the
    server's last stderr lines come with it, in execute_tool's answer and in `toolidx check`."""
    from conftest import crawl, raw, write_config

    cfg = write_config(tmp_path / "r.json", {"s": raw("ok")})
    assert crawl(cfg, tmp_path / "r.db").code == 0
    write_config(cfg, {"s": raw("crash-start")})  # writes its reason to stderr, exits 3

    async def body(c):
        return await call(c, "execute_tool", {"tool_name": "s/tool_0", "arguments": {"path": "x"}})

    r, answer, text = session(build(tmp_path / "r.db", config_path=str(cfg)), body)
    said = "last stderr: fatal: cannot open configuration /nonexistent/config.toml"
    assert r.is_error and "did not start" in answer["message"] and said in answer["message"], text
    assert "\n" not in answer["message"]  # still one line
    checked = run_cli("check", "-r", "s/tool_0", "--db", tmp_path / "r.db", "--config", cfg, "--json")
    assert checked.code != 0 and said in json.dumps(checked.json), checked.stdout


def test_execute_tools_fix_matches_what_happened(tmp_path):
    """A live server's JSON-RPC error is not cured by a restart, and the answer no longer says it
    is (before: every failure said "a dead server is restarted on the next call")."""
    from conftest import crawl, raw, write_config

    cfg = write_config(tmp_path / "r.json", {"s": raw("ok")})
    assert crawl(cfg, tmp_path / "r.db").code == 0

    async def body(c):
        args = {"path": "x"}
        return [
            await call(
                c,
                "execute_tool",
                {"tool_name": "s/tool_0", "arguments": {**args, "rpc_error": -32603, "message": "internal"}},
            ),
            await call(c, "execute_tool", {"tool_name": "s/tool_0", "arguments": {**args, "die": True}}),
            await call(
                c, "execute_tool", {"tool_name": "s/tool_0", "arguments": {**args, "sleep": 5}, "timeout_ms": 300}
            ),
        ]

    (r1, refused, _), (r2, died, _), (r3, slow, _) = session(build(tmp_path / "r.db"), body)
    assert r1.is_error and "server error -32603: internal" in refused["message"]
    assert "restart" not in refused["fix"] and "answered this call with an error" in refused["fix"]
    assert r2.is_error and "started afresh on the next call" in died["fix"]
    assert r3.is_error and "longer timeout" in slow["fix"]
    for sc in (refused, died, slow):
        assert sc["fix"].endswith("or use get_similar_tools for an alternative")


def test_a_backend_that_cannot_start_gives_a_clear_error(serve_index, tmp_path):
    cfg = tmp_path / "broken.json"
    cfg.write_text(json.dumps({"mcpServers": {"time": {"command": str(tmp_path / "missing-binary")}}}))

    async def body(c):
        return await call(c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {"timezone": "UTC"}})

    r, sc, text = session(build(serve_index, config_path=str(cfg)), body)
    assert r.is_error and sc["error"] == "backend_unavailable"
    assert "command not found" in text and "missing-binary" in text


def test_backend_spec_is_rebuilt_from_the_index_when_the_config_is_gone(serve_index, tmp_path):
    from toolidx.store.db import open_db

    db = tmp_path / "moved.db"
    shutil.copy(serve_index, db)
    d = open_db(db)
    d.set_meta("config_path", str(tmp_path / "deleted.json"))
    d.close()

    async def body(c):
        return await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "still here"}})

    r, sc, _ = session(build(db), body)
    assert not r.is_error and sc == {"text": "still here"}


# --- exposed and pinned tools ------------------------------------------------------------------------
def test_expose_tools_and_pins_list_proxied_tools_with_their_real_schemas(serve_index):
    async def body(c):
        tools = (await c.list_tools()).tools
        r = await c.call_tool("time__get_current_time", {"timezone": "Europe/Lisbon"})
        bad = await c.call_tool("time__get_current_time", {})
        return tools, r, bad

    tools, r, bad = session(build(serve_index, scope=Filters(servers=["time"]), expose_tools=True), body)
    names = [t.name for t in tools]
    assert names == META + ["time__convert_time", "time__get_current_time"]
    t = next(t for t in tools if t.name == "time__get_current_time")
    assert t.input_schema["required"] == ["timezone"] and t.meta["toolidx/id"] == "time/get_current_time"
    assert not r.is_error and r.structured_content["timezone"] == "Europe/Lisbon"
    assert bad.is_error and bad.structured_content["error"] == "invalid_arguments"

    async def pinned(c):
        return [t.name for t in (await c.list_tools()).tools]

    assert session(build(serve_index, pins=["crashy/echo"]), pinned) == META + ["crashy__echo"]


def test_a_pin_that_does_not_exist_fails_at_start(serve_index):
    from toolidx.core.errors import UsageError

    with pytest.raises(UsageError, match="time/get_curent_time"):
        build(serve_index, pins=["time/get_curent_time"])
    with pytest.raises(UsageError, match="not in the index"):
        build(serve_index, scope=Filters(servers=["nope"]))


# --- budget ------------------------------------------------------------------------------------------
def test_every_answer_respects_the_token_budget(serve_index):
    async def body(c):
        return [
            await call(c, "list_tools", {"page_size": 100, "include_schemas": True}),
            await call(c, "describe_tool", {"tool_name": "filesystem/edit_file", "detail": "full"}),
            await call(
                c, "search_tools", {"query": "file", "limit": 50, "include_schemas": True, "filters": {"min_score": 0}}
            ),
        ]

    listed, *rest = session(build(serve_index, max_tokens=400), body)
    for r, sc, text in rest:
        assert not r.is_error
        assert "truncated" in sc, sc
        assert estimate_tokens(sc) <= 400 or sc["truncated"]["items_kept"] <= 1
        assert "Shortened to fit 400 tokens" in text
    # a list page the budget would cut is a shorter page instead (the next test)
    r, sc, text = listed
    assert not r.is_error and sc["page_size_asked"] == 100 and sc["page_size"] == len(sc["items"]) < 100, sc
    assert estimate_tokens(sc) <= 400 or "truncated" in sc
    assert f"next_page: 2 with page_size {sc['page_size']}" in text


def test_list_tools_under_a_budget_reaches_every_tool_by_next_page(serve_index):
    """An agent asked page_size 100 and got tools 1-77 with next_page 2, which started at 101: the
    tools the budget cut from a page were never listed (round 16, found driving serve as an agent
    would). A page the budget would cut is a page as long as what fits, aligned so that page
    numbers go on from it; following next_page with the page_size each answer gives lists every
    tool once, whatever page the agent starts on."""

    async def body(c):
        seen, page, size, answers = [], 1, 10, 0
        while page:
            _, sc, _ = await call(c, "list_tools", {"page": page, "page_size": size})
            seen += [t["id"] for t in sc["items"]]
            page, size, answers = sc["next_page"], sc["page_size"], answers + 1
        _, later, _ = await call(c, "list_tools", {"page": 3, "page_size": 10})  # starts at tool 21
        return seen, answers, later

    seen, answers, later = session(build(serve_index, max_tokens=250), body)
    assert len(seen) == len(set(seen)) == 42 and answers > 5, (len(seen), answers)
    first = (later["page"] - 1) * later["page_size"]
    assert first == 20 and later["page_size"] < 10, later  # the same tool 21 starts it


# --- reload ------------------------------------------------------------------------------------------
def test_a_new_crawl_is_picked_up_and_announced(serve_index, tmp_path):
    db = tmp_path / "live.db"
    shutil.copy(serve_index, db)
    seen, on_message = list_changed_recorder()

    async def body(c):
        before = await call(c, "describe_tool", {"tool_name": "weather/get_forecast"})
        await c.list_tools()
        r = await anyio.to_thread.run_sync(
            lambda: run_cli(
                "crawl",
                "--config",
                serve_index.parent / "servers.json",
                "--db",
                db,
                "--server",
                "weather",
                "--model",
                "none",
            )
        )
        assert r.code == 0, r.stderr
        with anyio.fail_after(10):
            while not seen:
                await anyio.sleep(0.05)
        after = await call(c, "describe_tool", {"tool_name": "weather/get_forecast"})
        return before, after

    (b, bsc, _), (a, asc, _) = session(build(db, poll_interval=0.1), body, message_handler=on_message)
    assert b.is_error and bsc["error"] == "unknown_tool"
    assert len(seen) == 1
    assert not a.is_error and asc["id"] == "weather/get_forecast"


def test_a_call_that_times_out_is_reported_and_the_backend_stays_usable(serve_index):
    async def body(c):
        slow = await call(
            c, "execute_tool", {"tool_name": "crashy/sleep", "arguments": {"seconds": 1.5}, "timeout_ms": 300}
        )
        after = await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "later"}})
        return slow, after, pool_status(srv)

    srv = build(serve_index)
    (r, sc, text), (ok, echo, _), backends = session(srv, body)
    # cut at its own timeout (the message names it), not answered after the 1.5 s sleep
    assert r.is_error and sc["error"] == "backend_unavailable" and "timed out after 0.3 s" in text
    assert not ok.is_error and echo == {"text": "later"}
    assert backends["crashy"]["starts"] == 1  # the same process answered: a timeout is not a death


def test_clients_of_the_2026_protocol_are_served_too(serve_index):
    from mcp import Client

    async def main():
        async with Client(build(serve_index)) as c:  # mode "auto": the 2026-07-28 per-request era
            tools = [t.name for t in (await c.list_tools()).tools]
            r = await c.call_tool("execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "new era"}})
            return c.protocol_version, tools, r

    version, tools, r = anyio.run(main)
    assert version == "2026-07-28" and tools == META
    assert not r.is_error and r.structured_content == {"text": "new era"}


@pytest.mark.parametrize("mode", ["streamableHttp", "sse"])
def test_execute_reaches_servers_over_http_and_sse(servers_dir, tmp_path, mode):
    import os
    import signal
    import socket
    import subprocess

    from conftest import SHARED

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = subprocess.run(
        ["bash", str(SHARED / "servers" / "start-http.sh"), str(servers_dir), str(port), mode],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.split()
    url, pid = out[0], int(out[1])
    try:
        cfg = tmp_path / "remote.json"
        cfg.write_text(
            json.dumps({"mcpServers": {"remote": {"url": url, **({"type": "sse"} if mode == "sse" else {})}}})
        )
        db = tmp_path / "remote.db"
        assert run_cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 0

        async def body(c):
            return await call(c, "execute_tool", {"tool_name": "remote/echo", "arguments": {"message": mode}})

        r, _, text = session(build(db), body)
        assert not r.is_error and text == f"Echo: {mode}"
    finally:
        os.kill(pid, signal.SIGTERM)
