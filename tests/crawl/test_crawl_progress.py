"""Progress output: live display on a terminal, plain lines in CI and pipes, nothing with --json."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from conftest import run_cli

from toolidx.cli.progress import LiveProgress, use_live
from toolidx.core.servers import ServerResult
from toolidx.crawl.config import build_config

RAW = Path(__file__).parents[1] / "servers" / "rawmcp.py"


def _config(tmp_path: Path) -> Path:
    p = tmp_path / "c.json"
    p.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "good": {"command": sys.executable, "args": [str(RAW)]},
                    "bad": {"command": sys.executable, "args": [str(RAW), "--mode", "crash-start"]},
                }
            }
        )
    )
    return p


def test_plain_lines_on_stderr_and_table_on_stdout(tmp_path):
    r = run_cli("crawl", "--config", _config(tmp_path), "--db", tmp_path / "p.db", "--model", "none")
    assert r.code == 1
    assert "crawl: good: ok, 3 tools in" in r.stderr
    assert "crawl: bad: FAILED in" in r.stderr and "exit code 3" in r.stderr
    assert "crawl:" not in r.stdout
    header, *rows = r.stdout.strip().splitlines()
    assert header.split("\t")[:3] == ["server", "status", "tools"]
    assert {row.split("\t")[0] for row in rows} == {"good", "bad"}


def test_json_mode_prints_only_the_document(tmp_path):
    r = run_cli("crawl", "--config", _config(tmp_path), "--db", tmp_path / "j.db", "--model", "none", "--json")
    assert json.loads(r.stdout)["servers_failed"] == 1  # stdout is exactly one JSON document
    assert "crawl:" not in r.stderr


def test_live_display_only_on_a_terminal_outside_ci(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert use_live(Tty()) and not use_live(io.StringIO())
    monkeypatch.setenv("CI", "true")
    assert not use_live(Tty())
    monkeypatch.delenv("CI")
    monkeypatch.setenv("TERM", "dumb")
    assert not use_live(Tty())


def test_live_display_renders_each_server():
    from rich.console import Console

    buf = io.StringIO()
    live = LiveProgress(Console(file=buf, force_terminal=True, width=120, color_system=None))
    specs = build_config(
        {"mcpServers": {"alpha": {"command": "a"}, "beta": {"url": "http://x/mcp"}, "gamma": {"command": "c"}}}, "t"
    ).servers
    live.begin(specs)
    live.server_started(specs[0])
    live.server_started(specs[1])
    live.server_finished(ServerResult(specs[0], "ok", "now", duration_ms=1200, tools=[{"name": "t"}] * 7))
    live.server_finished(ServerResult(specs[1], "failed", "now", duration_ms=300, error="timed out after 2 s"))
    live.step("embed", 3, 7)
    live.live.refresh()
    frame = Console(file=io.StringIO(), width=120, color_system=None)
    frame.print(live)
    text = frame.file.getvalue()
    live.close()
    assert "alpha" in text and "✓" in text and "7" in text and "1.2s" in text
    assert "beta" in text and "✗" in text and "timed out after 2 s" in text
    assert "gamma" in text and "waiting" in text
    assert "2/3 servers done, 1 failed; embedding 3/7 tools" in text


def _tool_rows(db: Path) -> tuple[int, list[tuple]]:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        crawls = con.execute("SELECT count(*) FROM crawls").fetchone()[0]
        return crawls, con.execute("SELECT id, hash, stale FROM tools ORDER BY id").fetchall()
    finally:
        con.close()


def test_ctrl_c_mid_crawl_says_nothing_was_written(tmp_path):
    """#36 item 2: Ctrl-C on a terminal while a server is still being listed: exit 130, the live
    table goes and one line says the index is as it was (it is)."""
    from conftest import run_pty

    db = tmp_path / "i.db"
    first = {"mcpServers": {"good": {"command": sys.executable, "args": [str(RAW), "--tools", "2"]}}}
    (tmp_path / "first.json").write_text(json.dumps(first))
    assert run_cli("crawl", "--config", tmp_path / "first.json", "--db", db, "--model", "none").code == 0
    before = _tool_rows(db)
    second = {
        "mcpServers": {
            "good": {"command": sys.executable, "args": [str(RAW), "--tools", "3"]},  # a change, never written
            "slow": {"command": sys.executable, "args": [str(RAW), "--mode", "slow-list"]},
        }
    }
    (tmp_path / "second.json").write_text(json.dumps(second))
    r = run_pty(
        "crawl", "--config", tmp_path / "second.json", "--db", db, "--model", "none", interrupt_after="1/2 servers done"
    )
    assert r.code == 130, r.screen
    assert "interrupted: nothing written, the index is as before" in r.screen
    assert _tool_rows(db) == before
