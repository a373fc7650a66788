"""Usage metrics and usage examples (issue 11), with real components: a real `toolidx serve` in
process (the SDK's client over its in-memory transport) against real MCP servers, real usage
files, real re-crawls, the real CLI."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import run_cli

from toolidx.core.filters import Filters
from toolidx.core.redact import REDACTED, redact
from toolidx.store.usage import open_usage, usage_path

pytestmark = [pytest.mark.servers, pytest.mark.slow]


def build(db, **kw):
    from toolidx.serve.server import build_server

    return build_server(db, load_model=False, **kw)


def session(srv, body):
    import anyio
    from mcp import Client

    async def main():
        async with Client(srv, mode="legacy") as c:
            return await body(c)

    out = anyio.run(main)
    assert srv.discovery.usage.flush(10)
    return out


async def call(c, name, args):
    r = await c.call_tool(name, args)
    return r, r.structured_content, r.content[0].text if r.content else ""


@pytest.fixture
def index(serve_index, tmp_path):
    """A private copy of serve's index (its usage file starts empty, beside it)."""
    d = tmp_path / "idx"
    d.mkdir()
    shutil.copy(serve_index, d / "serve.db")
    shutil.copy(serve_index.parent / "servers.json", d / "servers.json")
    return d / "serve.db"


async def _every_outcome(c):
    return [
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "hi"}}),  # ok
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "again"}}),  # ok
        await call(
            c, "execute_tool", {"tool_name": "filesystem/read_text_file", "arguments": {"path": "/etc/no-such-file"}}
        ),  # tool_error
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": ""}}),  # invalid
        await call(
            c, "execute_tool", {"tool_name": "crashy/sleep", "arguments": {"seconds": 1.5}, "timeout_ms": 200}
        ),  # timeout
        await call(c, "execute_tool", {"tool_name": "crashy/crash", "arguments": {"code": 3}}),  # backend failed
        await call(c, "execute_tool", {"tool_name": "no_such_tool_anywhere"}),  # refused
    ]


def test_every_execute_is_recorded_with_its_outcome_and_survives_a_recrawl(index):
    srv = build(index)
    results = session(srv, _every_outcome)
    assert [r.is_error for r, _, _ in results] == [False, False, True, True, True, True, True]
    assert srv.discovery.usage.path == index.with_name("serve.db.usage.db")
    store = open_usage(srv.discovery.usage.path, create=False)
    m = store.tool_metrics()
    assert m["crashy/echo"]["outcomes"] == {"ok": 2, "invalid_arguments": 1}
    assert m["crashy/echo"]["calls"] == 3 and m["crashy/echo"]["success_rate"] == pytest.approx(0.667)
    assert m["filesystem/read_text_file"]["outcomes"] == {"tool_error": 1}
    assert m["crashy/sleep"]["outcomes"] == {"timeout": 1}
    assert 150 <= m["crashy/sleep"]["p50_ms"] < 1400
    assert m["crashy/crash"]["outcomes"] == {"backend_failed": 1}
    assert "no_such_tool_anywhere" not in m and store.unresolved_calls() == 1  # no tool's call
    assert m["crashy/echo"]["last_used"].endswith("Z")
    servers = store.server_metrics()
    assert servers["crashy"]["calls"] == 5 and "" not in servers
    rows = store.rows("SELECT scope FROM calls")
    assert {r[0] for r in rows} == {""}  # no scope: everything
    store.close()

    # a re-crawl rewrites the index; the usage file is not touched
    r = run_cli(
        "crawl", "--config", index.parent / "servers.json", "--db", index, "--server", "crashy", "--model", "none"
    )
    assert r.code == 0, r.stderr
    r = run_cli("describe", "crashy/echo", "--db", index, "--metrics", "--json")
    assert r.code == 0, r.stderr
    assert r.json["metrics"]["calls"] == 3 and r.json["metrics"]["ok"] == 2

    # ... and a new serve session (a scoped one) goes on counting, its scope on each row
    srv2 = build(index, scope=Filters(servers=["crashy"]))

    async def body(c):
        return [
            await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "x"}}),
            await call(c, "describe_tool", {"tool_name": "crashy/echo", "include_metrics": True}),
        ]

    (ok, _, _), (d, dsc, dtext) = session(srv2, body)
    assert not ok.is_error and not d.is_error
    # the describe ran after the execute was answered; the write is queued, so it may or may not
    # be in; after the flush it is
    assert dsc["metrics"]["calls"] in (3, 4) and "Usage:" in dtext
    store = open_usage(srv2.discovery.usage.path, create=False)
    assert store.tool_metrics()["crashy/echo"]["calls"] == 4
    assert ("servers=crashy",) in store.rows("SELECT scope FROM calls")
    store.close()


def test_stats_usage_per_tool_and_per_server_add_up(index):
    """A refused call that named no tool in scope was counted per tool, not per server, so the two
    tables disagreed; now it is in neither, said once in a note."""
    session(build(index), _every_outcome)
    srv = build(index, scope=Filters(servers=["crashy"]))
    session(
        srv, lambda c: call(c, "execute_tool", {"tool_name": "filesystem/read_text_file", "arguments": {"path": "/x"}})
    )  # out of scope
    r = run_cli("stats", "--db", index, "--usage", "--json")
    assert r.code == 0, r.stderr
    u = r.json["usage"]
    assert sum(t["calls"] for t in u["tools"]) == sum(s["calls"] for s in u["servers"]) == u["calls"] == 6
    assert u["unresolved"] == 2 and any("2 refused calls named no tool in scope" in n for n in u["notes"])
    text = run_cli("stats", "--db", index, "--usage")
    assert "6 calls recorded in" in text.stderr and "2 refused calls" in text.stderr


def test_stats_usage_with_no_calls_says_so_in_one_line(index, tmp_path):
    for extra in ([], ["--usage-db", str(tmp_path / "none.db")]):
        r = run_cli("stats", "--db", index, "--usage", *extra)
        assert r.code == 0, r.stderr
        assert "usage per tool" not in r.stdout + r.stderr and "calls\tsuccess" not in r.stdout
        said = [ln for ln in r.stderr.splitlines() if "calls recorded" in ln]
        assert len(said) == 1 and said[0].startswith("no calls recorded"), r.stderr
    # an existing usage file, no call in it yet
    build(index).discovery.usage.close()
    r = run_cli("stats", "--db", index, "--usage")
    assert [ln for ln in r.stderr.splitlines() if "calls recorded" in ln] == [
        f"no calls recorded in {index.with_name('serve.db.usage.db')}"
    ], r.stderr


def test_one_call_is_one_call(index):
    session(build(index), lambda c: call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "hi"}}))
    r = run_cli("stats", "--db", index, "--usage")
    assert "1 call recorded in" in r.stderr and "1 calls" not in r.stderr


def test_list_tools_and_the_cli_sort_by_usage(index):
    srv = build(index)

    async def body(c):
        for _ in range(3):
            await call(c, "execute_tool", {"tool_name": "crashy/pid"})
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "a"}})
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": ""}})
        await call(c, "execute_tool", {"tool_name": "time/get_current_time", "arguments": {"timezone": "UTC"}})
        srv.discovery.usage.flush(10)
        return [
            await call(c, "list_tools", {"sort_by": "execution_count", "page_size": 4}),
            await call(c, "list_tools", {"sort_by": "success_rate", "page_size": 3}),
            await call(c, "list_tools", {"sort_by": "recent", "page_size": 1}),
            await call(c, "list_tools", {"sort_by": "execution_count", "sort_order": "asc", "page_size": 3}),
        ]

    (r1, by_calls, text), (_, by_rate, _), (_, recent, _), (_, asc, _) = session(srv, body)
    assert not r1.is_error
    ids = [t["id"] for t in by_calls["items"]]
    assert ids[:3] == ["crashy/pid", "crashy/echo", "time/get_current_time"]
    assert by_calls["items"][0]["usage"]["calls"] == 3 and by_calls["items"][3]["usage"]["calls"] == 0
    assert by_calls["total"] == 42 and "3 calls" in text
    assert [t["id"] for t in by_rate["items"]] == ["crashy/pid", "time/get_current_time", "crashy/echo"]
    assert recent["items"][0]["id"] == "time/get_current_time"
    assert [t["id"] for t in asc["items"]] == ["time/get_current_time", "crashy/echo", "crashy/pid"]

    r = run_cli("list", "--db", index, "--sort", "calls", "--page-size", "2", "--json")
    assert r.code == 0, r.stderr
    assert [t["id"] for t in r.json["items"]] == ["crashy/pid", "crashy/echo"]
    r = run_cli("list", "--db", index, "--sort", "success", "--page-size", "2")
    assert r.code == 0 and r.stdout.index("crashy/pid") < r.stdout.index("time/get_current_time")

    r = run_cli("stats", "--db", index, "--usage", "--json")
    assert r.code == 0, r.stderr
    u = r.json["usage"]
    assert u["calls"] == 6 and u["tools"][0]["id"] == "crashy/pid"
    crashy = next(s for s in u["servers"] if s["server"] == "crashy")
    assert crashy["calls"] == 5 and crashy["ok"] == 4 and crashy["p50_ms"] is not None
    assert crashy["p95_ms"] >= crashy["p50_ms"]
    r = run_cli("stats", "--db", index, "--usage")
    assert r.code == 0 and "crashy/pid" in r.stdout and "p95" in r.stdout


def test_a_read_only_index_records_into_the_state_folder(index, tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    folder = index.parent
    index.chmod(0o444)
    folder.chmod(0o555)
    try:
        srv = build(index)

        async def body(c):
            return await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "ro"}})

        r, sc, _ = session(srv, body)
        assert not r.is_error and sc == {"text": "ro"}
        where = srv.discovery.usage.path
        assert where.parent == state / "toolidx" / "usage" and where.exists()
        assert not [p for p in folder.iterdir() if "usage" in p.name]  # nothing written beside the index
        assert usage_path(index) == where  # the CLI finds the same file
        r = run_cli("describe", "crashy/echo", "--db", index, "--metrics", "--json")
        assert r.code == 0 and r.json["metrics"]["calls"] == 1
    finally:
        folder.chmod(0o755)
        index.chmod(0o644)


def test_usage_db_option_and_env_choose_the_file(index, tmp_path, monkeypatch):
    chosen = tmp_path / "elsewhere" / "u.db"
    srv = build(index, usage_db=str(chosen))

    async def body(c):
        return await call(c, "execute_tool", {"tool_name": "crashy/pid"})

    session(srv, body)
    assert chosen.exists() and not index.with_name("serve.db.usage.db").exists()
    monkeypatch.setenv("TOOLIDX_USAGE_DB", str(chosen))
    r = run_cli("describe", "crashy/pid", "--db", index, "--metrics", "--json")
    assert r.json["metrics"]["calls"] == 1
    monkeypatch.delenv("TOOLIDX_USAGE_DB")
    r = run_cli("describe", "crashy/pid", "--db", index, "--metrics", "--usage-db", chosen, "--json")
    assert r.json["metrics"]["calls"] == 1


def test_a_corrupt_usage_file_warns_once_and_serving_goes_on(index, caplog):
    bad = index.with_name("serve.db.usage.db")
    bad.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    before = index.read_bytes()
    with caplog.at_level("WARNING", logger="toolidx"):
        srv = build(index)

    async def body(c):
        return [
            await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "still"}}),
            await call(c, "describe_tool", {"tool_name": "crashy/echo", "include_metrics": True}),
            await call(c, "list_tools", {"sort_by": "execution_count", "page_size": 2}),
            await call(c, "search_tools", {"query": "echo text", "search_type": "keyword"}),
        ]

    (r, sc, _), (d, dsc, _), (lst, lsc, _), (s, ssc, _) = session(srv, body)
    warnings = [m for m in caplog.messages if "usage" in m]
    assert len(warnings) == 1 and "corrupt" in warnings[0] and "\n" not in warnings[0]
    assert not r.is_error and sc == {"text": "still"}
    assert not d.is_error and dsc["metrics"]["calls"] == 0 and "off" in dsc["metrics_note"]
    assert not lst.is_error and lsc["total"] == 42
    assert not s.is_error and s.structured_content["hits"]
    assert index.read_bytes() == before or index.exists()  # the index is untouched by the usage file
    assert bad.read_bytes()[:16] == b"SQLite format 3\x00"  # the corrupt file is left as it was
    r = run_cli("stats", "--db", index, "--usage")
    warned = [line for line in r.stderr.splitlines() if "warning" in line]
    assert r.code == 0 and len(warned) == 1 and "corrupt" in warned[0]


# --- examples ----------------------------------------------------------------------------------------
def test_redaction_of_secret_looking_values():
    planted = {
        "query": "weather in Lisbon",
        "api_key": "abc",
        "headers": {"Authorization": "Bearer xyz12345678"},
        "note": "use ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "path": "/home/me/reports/2024/q3.txt",
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc",
        "n": 3,
        "blob": "Zx8Qp2Lm9Tr4Wv7Ky1Hs6Dn3Bc5Fg0Aj",
        "aws": "AKIAIOSFODNN7EXAMPLE",
        "city": "Reykjavik",
    }
    clean, n = redact(planted)
    assert clean["query"] == "weather in Lisbon" and clean["path"] == "/home/me/reports/2024/q3.txt"
    assert clean["n"] == 3 and clean["city"] == "Reykjavik"
    for k in ("api_key", "note", "jwt", "blob", "aws"):
        assert clean[k] == REDACTED, k
    assert clean["headers"]["Authorization"] == REDACTED and n == 6


def test_recorded_examples_are_redacted_and_shown_and_filtered(index):
    srv = build(index, record_examples=True)
    token = "ghp_" + "Q9w8E7r6T5y4U3i2O1p0A9s8D7f6G5h4J3k2"

    async def body(c):
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": f"token {token}"}})
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "hello"}})
        await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": ""}})  # invalid: not kept
        srv.discovery.usage.flush(10)
        return [
            await call(c, "describe_tool", {"tool_name": "crashy/echo", "include_examples": True}),
            await call(c, "list_tools", {"filters": {"has_examples": True}, "page_size": 100}),
            await call(
                c,
                "search_tools",
                {"query": "echo", "search_type": "keyword", "filters": {"has_examples": True}, "limit": 50},
            ),
        ]

    (d, dsc, dtext), (_, lsc, _), (_, ssc, _) = session(srv, body)
    recorded = [e["arguments"] for e in dsc["examples"] if e["source"] == "recorded"]
    assert {"text": "hello"} in recorded and {"text": REDACTED} in recorded and len(recorded) == 2
    assert token not in json.dumps(dsc) and token not in dtext
    assert token not in index.with_name("serve.db.usage.db").read_bytes().decode("latin-1")
    assert any(e["source"] == "generated" and e["valid"] for e in dsc["examples"])
    listed = {t["id"] for t in lsc["items"]}
    assert "crashy/echo" in listed and "crashy/pid" not in listed
    assert {h["id"] for h in ssc["hits"]} <= listed and "crashy/echo" in {h["id"] for h in ssc["hits"]}


def test_examples_from_the_schema_and_a_saved_tool_list(tmp_path):
    tools = {
        "tools": [
            {
                "name": "forecast",
                "description": "Weather forecast for a city.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "examples": ["Lisbon"]},
                        "days": {"type": "integer", "default": 3},
                    },
                    "required": ["city"],
                },
            },
            {
                "name": "alerts",
                "description": "Weather alerts for a region.",
                "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]},
                "examples": [{"arguments": {"region": "CA"}}],
            },
            {
                "name": "plain",
                "description": "A tool with nothing to show.",
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        ]
    }
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    (tmp_path / "servers.json").write_text(
        json.dumps({"mcpServers": {"wx": {"tools_file": str(tmp_path / "tools.json")}}})
    )
    db = tmp_path / "x.db"
    assert run_cli("crawl", "--config", tmp_path / "servers.json", "--db", db, "--model", "none").code == 0
    r = run_cli("describe", "wx/forecast", "--db", db, "--examples", "--json")
    assert r.code == 0, r.stderr
    assert {"arguments": {"city": "Lisbon", "days": 3}, "source": "schema", "valid": True} in r.json["examples"]
    r = run_cli("describe", "wx/alerts", "--db", db, "--detail", "full", "--json")
    assert {"arguments": {"region": "CA"}, "source": "tools_file", "valid": True} in r.json["examples"]
    r = run_cli("list", "--db", db, "--has-examples", "--json")
    assert sorted(t["id"] for t in r.json["items"]) == ["wx/alerts", "wx/forecast"]
    r = run_cli("search", "weather", "--db", db, "--has-examples", "--mode", "keyword", "--json")
    assert r.code == 0, r.stderr
    assert {h["id"] for h in r.json["hits"]} <= {"wx/alerts", "wx/forecast"}
    r = run_cli("categories", "--db", db, "--has-examples", "--json")
    assert r.code == 0 and r.json["total"] == 2 and r.json["filters"]["has_examples"] is True
    assert run_cli("categories", "--db", db, "--json").json["total"] == 3
    r = run_cli("describe", "wx/plain", "--db", db, "--examples")
    assert r.code == 0 and "generated" in r.stdout


@pytest.fixture
def read_only_mount(index, tmp_path):
    """The index's folder bind-mounted read-only (what a published index on read-only media is;
    chmod alone does not stop root). Skipped where mounting is not allowed."""
    import subprocess

    mnt = tmp_path / "ro"
    mnt.mkdir()
    ok = subprocess.run(["mount", "--bind", str(index.parent), str(mnt)], capture_output=True).returncode == 0
    if ok and subprocess.run(["mount", "-o", "remount,bind,ro", str(mnt)], capture_output=True).returncode:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        ok = False
    if not ok:
        pytest.skip("cannot bind-mount read-only here (needs CAP_SYS_ADMIN)")
    try:
        yield mnt / index.name
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mnt)], check=True)  # a file still open: detach lazily


def test_an_index_on_read_only_media_is_served_and_its_usage_kept_elsewhere(read_only_mount, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with pytest.raises(OSError):
        (read_only_mount.parent / "probe").write_text("x")  # really read-only, even for root
    srv = build(read_only_mount)

    async def body(c):
        return [
            await call(c, "execute_tool", {"tool_name": "crashy/echo", "arguments": {"text": "media"}}),
            await call(c, "search_tools", {"query": "echo text", "search_type": "keyword"}),
        ]

    (r, sc, _), (s, ssc, _) = session(srv, body)
    assert not r.is_error and sc == {"text": "media"}
    assert not s.is_error and "crashy/echo" in {h["id"] for h in ssc["hits"]}
    assert srv.discovery.usage.path.is_relative_to(tmp_path / "state" / "toolidx" / "usage")
    r = run_cli("list", "--db", read_only_mount, "--sort", "calls", "--page-size", "1", "--json")
    assert r.code == 0, r.stderr
    assert r.json["items"][0]["id"] == "crashy/echo" and r.json["items"][0]["usage"]["calls"] == 1
    srv.discovery.usage.close()
    srv.discovery.db.close()
