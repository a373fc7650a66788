"""`toolidx crawl --from CLIENTS` (#36 item 4): the servers Claude Desktop, Claude Code, Cursor and
VS Code already use, found in their usual files under a fake HOME (the files as those clients
write them: Claude Code's ~/.claude.json state file, VS Code's settings.json with comments),
crawled once each, and every file read named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from toolidx.core.errors import UsageError
from toolidx.crawl.client_configs import candidate_files, from_clients


def _tools(path: Path, *names: str) -> str:
    path.write_text(json.dumps({"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}))
    return str(path)


@pytest.fixture
def machine(tmp_path, monkeypatch) -> tuple[Path, Path]:
    home, proj, lists = tmp_path / "home", tmp_path / "proj", tmp_path / "lists"
    for d in (home / ".config" / "Claude", home / ".cursor", home / ".config" / "Code" / "User", proj / ".vscode"):
        d.mkdir(parents=True)
    lists.mkdir()
    files = _tools(lists / "files.json", "read_file", "write_file")
    clock = _tools(lists / "clock.json", "get_current_time")
    notes = _tools(lists / "notes.json", "add_note")
    _tools(proj / "other-clock.json", "what_time")
    weather = _tools(lists / "weather.json", "forecast")
    (home / ".config" / "Claude" / "claude_desktop_config.json").write_text(
        json.dumps({"mcpServers": {"files": {"tools_file": files}, "clock": {"tools_file": clock}}})
    )
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "numStartups": 12,
                "mcpServers": {"files": {"tools_file": files}},
                "projects": {str(proj.resolve()): {"mcpServers": {"notes": {"tools_file": notes}}}, "/elsewhere": {}},
            }
        )
    )
    # a different server under a name Claude Desktop uses already; its path relative to its file
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"clock": {"tools_file": "other-clock.json"}}}))
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"my-files": {"tools_file": files}}}))
    (home / ".config" / "Code" / "User" / "settings.json").write_text(
        '{\n  // my editor\n  "editor.fontSize": 14,\n  "mcp": {"servers": {"weather": {"tools_file": "'
        + weather
        + '"},},},\n}\n'
    )
    (proj / ".vscode" / "mcp.json").write_text(
        '{"servers": {/* the same as Cursor\'s */ "fs": {"tools_file": "' + files + '"}}}'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(proj)
    return home, proj


def test_crawl_from_every_client_reads_each_file_and_crawls_each_server_once(machine, tmp_path):
    home, proj = machine
    db = tmp_path / "t.db"
    # the folder's own files only when named for this run (tests/crawl/test_folder_configs.py)
    r = run_cli(
        "crawl", "--from", "claude-desktop,claude-code,cursor,vscode", "--db", db, "--model", "none",
        "--trust-folder-config", ".mcp.json", "--trust-folder-config", proj / ".vscode" / "mcp.json",
    )  # fmt: skip
    assert r.code == 0, r.stderr
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    for path, client, n in [
        (desktop, "claude-desktop", "2 servers"),
        (home / ".claude.json", "claude-code", "2 servers"),
        (proj / ".mcp.json", "claude-code", "1 server"),
        (home / ".cursor" / "mcp.json", "cursor", "1 server"),
        (home / ".config" / "Code" / "User" / "settings.json", "vscode", "1 server"),
        (proj.resolve() / ".vscode" / "mcp.json", "vscode", "1 server"),
    ]:
        assert f"read {path} ({client}): {n}" in r.stderr, r.stderr
    assert (
        "files: also listed as claude-code: files, cursor: my-files, vscode: fs (same launch line): crawled once"
        in r.stderr
    )
    assert "claude-code: clock: another server has that name: crawled as clock-claude-code" in r.stderr
    listed = run_cli("list", "--db", db, "--json").json
    ids = {t["id"] for t in listed["items"]}
    assert ids == {
        "files/read_file",
        "files/write_file",
        "clock/get_current_time",
        "notes/add_note",
        "clock-claude-code/what_time",
        "weather/forecast",
    }


def test_one_client_and_nothing_found(machine, tmp_path):
    r = run_cli("crawl", "--from", "cursor", "--db", tmp_path / "c.db", "--model", "none")
    assert r.code == 0 and "read " in r.stderr and "claude" not in r.stderr
    with pytest.raises(UsageError) as e:
        from_clients(["cursor"], home=tmp_path / "empty", cwd=tmp_path / "empty")
    assert "no MCP servers found" in str(e.value) and ".cursor/mcp.json" in (e.value.fix or "")
    bad = run_cli("crawl", "--from", "cursor,zed", "--db", tmp_path / "c.db")
    assert bad.code == 2 and "unknown client 'zed'" in bad.stderr
    both = run_cli("crawl", "--from", "all", "--config", "x.json", "--db", tmp_path / "c.db")
    assert both.code == 2 and "give one of them" in both.stderr


def test_usual_paths_per_os(tmp_path):
    home, cwd = Path("/Users/ann"), Path("/work/p")
    mac = [str(p) for p, _ in candidate_files("claude-desktop", home, cwd, {}, "darwin")]
    assert mac == ["/Users/ann/Library/Application Support/Claude/claude_desktop_config.json"]
    win = [
        str(p)
        for p, _ in candidate_files("claude-desktop", home, cwd, {"APPDATA": "C:/Users/ann/AppData/Roaming"}, "win32")
    ]
    assert win == [str(Path("C:/Users/ann/AppData/Roaming") / "Claude" / "claude_desktop_config.json")]
    code = [str(p) for p, _ in candidate_files("vscode", home, cwd, {}, "darwin")]
    assert code == [
        "/Users/ann/Library/Application Support/Code/User/mcp.json",
        "/Users/ann/Library/Application Support/Code/User/settings.json",
        "/work/p/.vscode/mcp.json",
    ]
    linux = [str(p) for p, _ in candidate_files("cursor", home, cwd, {}, "linux")]
    assert linux == ["/Users/ann/.cursor/mcp.json", "/work/p/.cursor/mcp.json"]


def test_run_from_home_a_file_that_is_both_user_and_project_is_read_once(machine, monkeypatch):
    home, _ = machine
    monkeypatch.chdir(home)
    found = from_clients(["cursor"])
    assert [f.path for f in found.files] == [str(home / ".cursor" / "mcp.json")] and not found.duplicates


def test_after_from_print_config_passes_the_variables_the_servers_need(machine, tmp_path, monkeypatch):
    """#45 item 2: after --config the entry carried "GITHUB_TOKEN": "<value of GITHUB_TOKEN>"; after
    --from (no config file recorded) it carried nothing, and execute_tool failed with "try again"."""
    from conftest import raw

    from toolidx.serve.backends import spec_from_index
    from toolidx.store.db import open_db
    from toolidx.store.tools import get_server

    home, _ = machine
    gh = raw("ok", env={"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LOG": "${LOG_LEVEL:-info}"})
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"github": gh}}))
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-s3cret-token")
    db = tmp_path / "gh.db"
    assert run_cli("crawl", "--from", "cursor", "--db", db, "--model", "none").code == 0
    r = run_cli("serve", "--db", db, "--print-config", "--json")
    assert r.code == 0, r.stderr
    env = r.json["config"]["mcpServers"]["toolidx"]["env"]
    assert env["GITHUB_TOKEN"] == "<value of GITHUB_TOKEN>" and env["LOG_LEVEL"] == "<value of LOG_LEVEL>"
    assert "ghp-s3cret-token" not in r.stdout
    d = open_db(db)
    try:
        row = get_server(d, "github")
    finally:
        d.close()
    problem = spec_from_index("github", row, {}).problem or ""
    assert "GITHUB_TOKEN" in problem and "`env` of toolidx's entry" in problem and "--print-config" in problem


def test_looked_in_names_each_file_once_from_the_home_folder(tmp_path):
    """#45 item 9: run from the home folder, ~/.cursor/mcp.json is the user's file and the project's."""
    home = tmp_path / "h"
    home.mkdir()
    with pytest.raises(UsageError) as e:
        from_clients(["cursor"], home=home, cwd=home)
    fix = e.value.fix or ""
    assert fix.count(str(home / ".cursor" / "mcp.json")) == 1, fix
