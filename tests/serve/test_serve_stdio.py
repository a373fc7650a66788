"""`toolidx serve` end to end, as Claude Desktop runs it: the command from `--print-config`,
spawned as a subprocess, spoken to over stdio with the mcp client SDK, against an index of real
servers (tests/conftest.py `serve_index`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import pytest
from conftest import alive, run_cli

pytestmark = [pytest.mark.servers, pytest.mark.slow]

TOOLIDX = [sys.executable, "-m", "toolidx"]


def client_entry(db, *flags) -> dict:
    """The entry `toolidx serve --print-config` prints for Claude Desktop."""
    r = run_cli("serve", "--db", db, *flags, "--print-config", "--json")
    assert r.code == 0, r.stderr
    entry = r.json["config"]["mcpServers"]["toolidx"]
    assert os.path.isabs(entry["command"]) and str(db) in entry["args"]
    return entry


def scenario(entry, body, errlog_path):
    """Spawn the entry's command over stdio and run `await body(client, events)`."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    events: list = []

    async def on_message(m):
        events.append(m)

    async def main():
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env") or {})
        with open(errlog_path, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", message_handler=on_message) as c:
                return await body(c, events)

    return anyio.run(main)


async def call(c, name, args):
    r = await c.call_tool(name, args)
    return r, r.structured_content, r.content[0].text if r.content else ""


def test_serve_over_stdio_end_to_end(serve_index, model_path, tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    db = tmp_path / "e2e.db"
    shutil.copy(serve_index, db)
    entry = client_entry(db, "--server", "time", "--server", "crashy", "--server", "everything")
    # clients start servers with a bare env; the entry holds the absolute, resolved path
    assert Path(entry["env"]["TOOLIDX_MODEL_PATH"]) == Path(model_path).resolve()
    assert entry["args"][-6:] == ["--server", "time", "--server", "crashy", "--server", "everything"]

    async def body(c, events):
        out: dict = {"caps": c.server_capabilities, "instructions": c.instructions}
        out["search"] = await call(
            c, "search_tools", {"query": "current time in a timezone", "filters": {"servers": ["time"]}}
        )
        out["tools"] = [t.name for t in (await c.list_tools()).tools]
        out["describe"] = await call(c, "describe_tool", {"tool_name": "time/get_current_time"})
        out["run"] = await call(
            c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {"timezone": "America/New_York"}}
        )
        out["invalid"] = await call(
            c, "execute_tool", {"tool_name": "time/convert_time", "arguments": {"source_timezone": "UTC"}}
        )
        out["outside"] = await call(c, "execute_tool", {"tool_name": "filesystem/list_allowed_directories"})
        out["pid1"] = await call(c, "execute_tool", {"tool_name": "crashy/pid"})
        out["crash"] = await call(c, "execute_tool", {"tool_name": "crashy/crash"})
        out["pid2"] = await call(c, "execute_tool", {"tool_name": "crashy/pid"})
        out["echo"] = await call(
            c, "execute_tool", {"tool_name": "everything/echo", "arguments": {"message": "via toolidx"}}
        )
        out["junk"] = [e for e in events if isinstance(e, Exception)]
        return out

    out = scenario(entry, body, tmp_path / "stderr.txt")
    assert out["caps"].tools.list_changed is True and "search_tools" in out["instructions"]
    assert out["tools"] == [
        "search_tools",
        "list_tools",
        "describe_tool",
        "execute_tool",
        "get_tool_categories",
        "get_similar_tools",
    ]
    r, sc, _ = out["search"]
    assert not r.is_error and "time/get_current_time" in [h["id"] for h in sc["hits"]]
    _, d, _ = out["describe"]
    assert d["input_schema"]["required"] == ["timezone"]
    r, sc, text = out["run"]
    assert not r.is_error and sc["timezone"] == "America/New_York"
    assert datetime.fromisoformat(sc["datetime"]).utcoffset() in (timedelta(hours=-5), timedelta(hours=-4))
    assert json.loads(text) == sc
    r, sc, _ = out["invalid"]
    assert r.is_error and sc["error"] == "invalid_arguments"
    assert {e["message"] for e in sc["errors"]} == {
        "'time' is a required property",
        "'target_timezone' is a required property",
    }
    r, sc, _ = out["outside"]
    assert r.is_error and sc["error"] == "out_of_scope"
    (_, _, pid1), (rc, crash, crash_text), (r2, _, pid2) = out["pid1"], out["crash"], out["pid2"]
    assert rc.is_error and crash["error"] == "backend_unavailable" and "exit code 7" in crash_text
    assert not r2.is_error and pid1 != pid2
    deadline = time.time() + 10  # backends are closed with the session, not left behind
    while alive(int(pid2)) and time.time() < deadline:
        time.sleep(0.1)
    assert not alive(int(pid2))
    r, _, text = out["echo"]
    assert not r.is_error and "via toolidx" in text
    assert out["junk"] == []  # nothing but protocol on stdout
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "restarted" in stderr  # logs go to stderr


def test_the_first_search_by_meaning_over_stdio_is_semantic(serve_index, model_path, tmp_path, monkeypatch):
    """serve loads the model at start-up; the first request after the handshake, a semantic search
    for words the index has, waits for it (before: keywords answered at once, the model still loading)."""
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    entry = client_entry(serve_index)

    async def body(c, events):
        return await call(c, "search_tools", {"query": "current time in a timezone", "search_type": "semantic"})

    r, sc, _ = scenario(entry, body, tmp_path / "stderr.txt")
    assert not r.is_error and sc["mode_used"] == "semantic", sc
    assert sc["hits"][0]["id"].startswith("time/")
    assert not any("loading" in n for n in sc.get("notes", []))


def test_the_first_search_by_keyword_over_stdio_is_answered_while_the_model_loads(
    serve_index, model_path, tmp_path, monkeypatch
):
    """A keyword search does not wait for the model: the first one of a session ran while the
    model's thread imported numpy, and was handed a half-imported module ("partially initialized
    module 'numpy' has no attribute 'matrix'", internal_error), in every session an agent tried
    (round 16). Three sessions: each first search is answered."""
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    entry = client_entry(serve_index)

    async def body(c, events):
        return await call(c, "search_tools", {"query": "current time in a timezone", "search_type": "keyword"})

    for i in range(3):
        r, sc, text = scenario(entry, body, tmp_path / f"stderr{i}.txt")
        assert not r.is_error, text
        assert sc["mode_used"] == "keyword" and sc["hits"][0]["id"].startswith("time/"), sc


def test_a_recrawl_triggers_list_changed_over_stdio(serve_index, model_path, tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    db = tmp_path / "reload.db"
    shutil.copy(serve_index, db)
    entry = client_entry(db, "--expose-tools")
    entry["args"] += ["--poll", "0.2"]

    async def body(c, events):
        before = [t.name for t in (await c.list_tools()).tools]
        r = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [
                    *TOOLIDX,
                    "crawl",
                    "--config",
                    str(serve_index.parent / "servers.json"),
                    "--db",
                    str(db),
                    "--server",
                    "weather",
                    "--model-path",
                    model_path,
                ],
                capture_output=True,
                text=True,
            )
        )
        assert r.returncode == 0, r.stderr
        with anyio.fail_after(15):
            while not any(getattr(e, "method", None) == "notifications/tools/list_changed" for e in events):
                await anyio.sleep(0.05)
        after = [t.name for t in (await c.list_tools()).tools]
        found = await call(
            c, "search_tools", {"query": "weather forecast for a city", "filters": {"servers": ["weather"]}}
        )
        return before, after, found

    before, after, (r, sc, _) = scenario(entry, body, tmp_path / "stderr.txt")
    assert "time__get_current_time" in before and "weather__get_forecast" not in before
    new = set(after) - set(before)
    assert "weather__get_forecast" in new and all(n.startswith("weather__") for n in new)
    assert set(before) <= set(after)
    assert not r.is_error and "weather/get_forecast" in [h["id"] for h in sc["hits"]]


def test_start_up_errors_are_one_line_on_stderr_and_nothing_on_stdout(serve_index, tmp_path):
    for args, expect in [
        (["--db", str(tmp_path / "missing.db")], "no index here"),
        (["--db", str(serve_index), "--pin", "time/nope"], "--pin time/nope"),
        (["--db", str(serve_index), "--server", "nope"], "not in the index"),
    ]:
        r = subprocess.run(
            [*TOOLIDX, "serve", *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
        assert r.returncode == 2, (args, r.stderr)
        assert r.stdout == ""
        assert expect in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_stdin_from_a_file_is_served_too(serve_index, tmp_path):
    """Not a pipe (a file here, a terminal by hand): the SDK's own stdio streams take over."""
    reqs = tmp_path / "requests.jsonl"
    reqs.write_text(
        "\n".join(
            json.dumps(m)
            for m in [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
            ]
        )
        + "\n"
    )  # (requests after it would be cancelled by the EOF that follows: the client is gone)
    with open(reqs) as stdin:
        r = subprocess.run(
            [*TOOLIDX, "serve", "--db", str(serve_index)], stdin=stdin, capture_output=True, text=True, timeout=60
        )
    answers = [json.loads(line) for line in r.stdout.splitlines()]  # every stdout line is protocol
    assert [a["id"] for a in answers] == [1] and r.returncode == 0
    assert answers[0]["result"]["serverInfo"]["name"] == "toolidx"
    assert answers[0]["result"]["capabilities"]["tools"]["listChanged"] is True
