"""`doctor` after `crawl --from` (#45 item 3): each failed server's kept tools are its own, and the
fix line is a command that works; a plain `crawl` re-crawls what `--from` read. Both engines."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import run_cli


def _tools(path: Path, *names: str) -> str:
    path.write_text(json.dumps([{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in names]))
    return str(path)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    (h / ".cursor").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    return h


def test_doctor_after_from_counts_each_servers_own_stale_tools_and_its_fix_runs(home, tmp_path, db_target):
    github = _tools(tmp_path / "github.json", "create_issue", "list_prs", "merge_pr")
    notion = str(tmp_path / "notion.json")  # not there: notion fails from its first crawl, 0 tools
    (home / ".cursor" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"github": {"tools_file": github}, "notion": {"tools_file": notion}}})
    )
    assert run_cli("crawl", "--from", "cursor", "--db", db_target, "--model", "none").code == 1
    Path(github).unlink()  # github fails now too: its 3 tools are kept, stale
    assert run_cli("crawl", "--db", db_target, "--model", "none").code == 1  # a plain crawl: --from again
    report = run_cli("doctor", "--db", db_target, "--model", "none", "--json").json
    checks = {c["name"]: c for c in report["checks"] if c["area"] == "index"}
    assert "3 stale tools kept" in checks["server github"]["detail"]
    assert "stale" not in checks["server notion"]["detail"], checks["server notion"]
    fix = checks["server notion"]["fix"]
    assert "toolidx crawl --from cursor --server notion --db" in fix, fix
    _tools(Path(notion), "search_pages")  # fixed: the fix line, run as printed, crawls it
    ran = run_cli(*shlex.split(fix[fix.index("toolidx ") :])[1:], "--model", "none")
    assert ran.code == 0, ran.stderr
    listed = run_cli("list", "--db", db_target, "--server", "notion", "--json").json
    assert [t["id"] for t in listed["items"]] == ["notion/search_pages"]
    plain = run_cli("crawl", "--db", db_target, "--model", "none", "--server", "notion")
    assert plain.code == 0 and "--from cursor" in plain.stderr, plain.stderr
