"""Crawl the real MCP servers (installed by ../shared/servers/setup.sh) over real stdio, and
server-everything over Streamable HTTP and SSE; assert on the rows in the index."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import SHARED, crawl_peak, run_cli

from toolidx.crawl.config import DEFAULT_CONCURRENCY
from toolidx.store.db import open_db

pytestmark = [pytest.mark.servers]

# Tool counts of the pinned server versions setup.sh installs.
EXPECTED_TOOLS = {
    "time": 2,
    "fetch": 1,
    "git": 12,
    "sqlite": 6,
    "everything": 13,
    "filesystem": 14,
    "memory": 9,
    "sequential-thinking": 1,
    "github": 26,
}


@pytest.fixture(scope="session")
def real_crawl(servers_dir, tmp_path_factory):
    """One crawl of every real server (keyword-only: embedding is tested elsewhere, faster)."""
    db = tmp_path_factory.mktemp("real") / "real.db"
    r = run_cli("crawl", "--config", servers_dir / "servers.json", "--db", db, "--model", "none", "--json")
    return r, db


@pytest.fixture(scope="session")
def real_db(real_crawl):
    r, db = real_crawl
    assert r.code == 0, r.stderr
    d = open_db(db)
    yield d
    d.close()


@pytest.mark.slow
def test_every_real_server_is_indexed(real_crawl, real_db, servers_config):
    r, _ = real_crawl
    summary = r.json
    names = set(servers_config["mcpServers"])
    assert summary["command"] == "crawl" and summary["servers_failed"] == 0
    assert {s["server"] for s in summary["servers"]} == names
    rows = {row["name"]: row for row in real_db.query("SELECT * FROM servers")}
    assert set(rows) == names
    for name, row in rows.items():
        assert row["status"] == "ok", (name, row["error"])
        assert row["transport"] == "stdio"
        assert row["server_name"] and row["server_version"], name
        assert row["protocol_version"] in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"), name
        assert "tools" in json.loads(row["capabilities"]), name
        assert row["duration_ms"] > 0 and row["crawled_at"] and row["last_ok_at"]
        count = real_db.scalar("SELECT count(*) FROM tools WHERE server = ?", (name,))
        assert count == row["tool_count"] > 0, name
    for name, n in EXPECTED_TOOLS.items():
        assert rows[name]["tool_count"] == n, name
    assert rows["time"]["server_name"] == "mcp-time"
    assert rows["github"]["protocol_version"] == "2024-11-05"  # an older server, still read
    total = real_db.scalar("SELECT count(*) FROM tools")
    assert summary["tools"] == total
    # the snapshot of this crawl holds every tool, and FTS has a row per tool
    assert real_db.scalar("SELECT count(*) FROM crawl_tools WHERE crawl_id = ?", (summary["crawl_id"],)) == total
    assert real_db.scalar("SELECT count(*) FROM tools_fts") == total


@pytest.mark.slow
def test_colliding_names_are_keyed_by_server(real_db):
    rows = real_db.query("SELECT id, server, definition FROM tools WHERE name = 'git_status' ORDER BY id")
    assert [r["id"] for r in rows] == ["cyanheads-git/git_status", "git/git_status"]
    # two different tools, not one overwritten by the other
    assert json.loads(rows[0]["definition"]) != json.loads(rows[1]["definition"])
    assert real_db.scalar("SELECT count(*) FROM tools WHERE name = 'add_table'") == 2


@pytest.mark.slow
def test_tools_are_stored_as_sent(real_db):
    row = real_db.one("SELECT * FROM tools WHERE id = 'time/get_current_time'")
    d = json.loads(row["definition"])
    assert d["name"] == "get_current_time" and d["inputSchema"]["type"] == "object"  # camelCase wire keys
    assert json.loads(row["input_schema"]) == d["inputSchema"]
    assert "timezone" in json.loads(row["param_names"])
    # annotations arrive as sent and become tags
    ro = real_db.one("SELECT annotations, tags, read_only FROM tools WHERE id = 'filesystem/read_text_file'")
    assert json.loads(ro["annotations"])["readOnlyHint"] is True
    assert ro["read_only"] == 1 and "read-only" in json.loads(ro["tags"])
    # split names are searchable
    hits = real_db.query(
        "SELECT t.id FROM tools_fts f JOIN tools t ON t.rowid = f.rowid "
        "WHERE tools_fts MATCH 'name:current AND name:time'"
    )
    assert "time/get_current_time" in [h["id"] for h in hits]


@pytest.mark.slow
def test_noisy_server_and_stderr_tail(real_db):
    word = real_db.one("SELECT status, tool_count FROM servers WHERE name = 'word'")
    assert word == {"status": "ok", "tool_count": 54}  # prints to stdout before speaking JSON-RPC
    tail = real_db.scalar("SELECT stderr_tail FROM servers WHERE name = 'cyanheads-git'")
    assert tail and "running" in tail and len(tail) <= 4096


@pytest.mark.slow
def test_concurrent_crawl_beats_sequential_order_of_magnitude(real_db):
    # all 16 servers, 4 at a time (the default), not one after another: seen in the recorded
    # start and duration of each, not in a stopwatch (millisecond stamps: the peak can read one over)
    assert crawl_peak(real_db) >= DEFAULT_CONCURRENCY


# --- HTTP transports ----------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(servers_dir, request):
    mode = request.param
    script = SHARED / "servers" / "start-http.sh"
    port = _free_port()
    out = subprocess.run(
        ["bash", str(script), str(servers_dir), str(port), mode], capture_output=True, text=True, timeout=30, check=True
    ).stdout.split()
    url, pid = out[0], int(out[1])
    try:
        yield url, port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        log = Path(servers_dir) / f"http-{port}.log"
        log.unlink(missing_ok=True)


@pytest.mark.parametrize(
    "http_server, transport", [("streamableHttp", "http"), ("sse", "sse")], indirect=["http_server"]
)
def test_crawl_over_http(http_server, transport, tmp_path, monkeypatch):
    url, port = http_server
    monkeypatch.setenv("EVERYTHING_PORT", str(port))
    cfg = tmp_path / "remote.json"
    path = "/sse" if transport == "sse" else "/mcp"
    cfg.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "everything": {
                        "type": "sse" if transport == "sse" else "http",
                        "url": "http://127.0.0.1:${EVERYTHING_PORT}" + path,
                        "headers": {"X-Trace": "toolidx-test"},
                    }
                }
            }
        )
    )
    db = tmp_path / "h.db"
    r = run_cli("crawl", "--config", cfg, "--db", db, "--model", "none", "--json")
    assert r.code == 0, r.stderr
    d = open_db(db)
    row = d.one("SELECT * FROM servers WHERE name = 'everything'")
    assert row["status"] == "ok" and row["transport"] == transport
    assert row["server_name"] == "mcp-servers/everything" and row["tool_count"] == 13
    connect = json.loads(row["connect"])
    assert connect["url"] == "http://127.0.0.1:${EVERYTHING_PORT}" + path  # stored unexpanded
    assert connect["header_keys"] == ["X-Trace"] and "toolidx-test" not in row["connect"]
    assert d.scalar("SELECT count(*) FROM tools WHERE server = 'everything'") == 13
    d.close()


def test_unreachable_http_server_fails_cleanly(tmp_path):
    cfg = tmp_path / "remote.yaml"
    cfg.write_text(f"mcpServers:\n  gone:\n    url: http://127.0.0.1:{_free_port()}/mcp\n    timeout: 5\n")
    r = run_cli("crawl", "--config", cfg, "--db", tmp_path / "g.db", "--model", "none", "--json")
    assert r.code == 1
    (s,) = r.json["servers"]
    assert s["status"] == "failed" and s["error"]
    assert "Traceback" not in r.stderr
