"""What a person sees on an 80-column terminal (#36 item 7), under a real pseudo-terminal: tool ids
and server names are never broken across lines (they are copied), remarks wrap between words,
and serve's first line reads as a sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli, run_pty

PLAYWRIGHT = {
    "tools": [
        {
            "name": "browser_take_screenshot",
            "description": "Take a screenshot of the current page. You can't perform actions based on the "
            "screenshot, use browser_snapshot for actions.",
            "inputSchema": {"type": "object", "properties": {"filename": {"type": "string"}}},
        },
        {
            "name": "browser_snapshot",
            "description": "Capture accessibility snapshot of the current page, this is better than screenshot",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ]
}
LONG_SERVER = "playwright-browser-automation-with-a-long-name"


@pytest.fixture
def index(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "pw.json").write_text(json.dumps(PLAYWRIGHT))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"mcpServers:\n  playwright:\n    tools_file: pw.json\n  {LONG_SERVER}:\n    tools_file: pw.json\n")
    db = tmp_path / "t.db"
    assert run_cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 0
    return cfg, db


def _words_whole(screen: str, text: str) -> None:
    """Every line fits 80 columns, and each word of `text` is on the screen unbroken."""
    assert all(len(line) <= 80 for line in screen.splitlines()), screen
    shown = screen.split()
    for word in text.split():
        assert word in shown, f"{word!r} broken across lines:\n{screen}"


def test_search_table_keeps_tool_ids_whole_at_80_columns(index):
    _, db = index
    r = run_pty("search", "take a screenshot of the page", "--db", db, "--min-score", "0")
    assert r.code == 0, r.screen
    lines = r.screen.splitlines()
    for tool_id in ("playwright/browser_take_screenshot", f"{LONG_SERVER}/browser_snapshot"):
        assert any(tool_id in line for line in lines), r.screen
    _words_whole(r.screen, "the index has no embeddings: search is keyword-only (run `toolidx embed` with a model")


def test_crawl_summary_keeps_server_names_whole_and_wraps_its_line_between_words(index):
    cfg, db = index
    r = run_pty("crawl", "--config", cfg, "--db", db, "--model", "none")
    assert r.code == 0, r.screen
    table = r.screen.split("┏", 1)[1]  # the summary, after the live display
    assert LONG_SERVER in table
    _words_whole(table, "crawl 2: 2 ok, 0 failed; 2 tools (0 added, 0 changed, 0 removed); 0 embedded")


def test_serve_says_loopback_only_as_a_sentence(index):
    _, db = index
    r = run_pty("serve", "--db", db, "--http", "127.0.0.1:0", interrupt_after="Ctrl-C to stop")
    assert "(loopback only, no token)" in r.screen and "(no token (" not in r.screen, r.screen


def test_doctor_fix_lines_wrap_between_words(tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"mcpServers:\n  {LONG_SERVER}:\n    tools_file: broken.json\n")
    db = tmp_path / "d.db"
    assert run_cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 1
    r = run_pty("doctor", "--db", db, "--config", cfg)
    fixes = r.screen.split("└", 1)[1]  # the lines under the table
    assert all(len(line) <= 80 for line in r.screen.splitlines()), r.screen
    assert f"server {LONG_SERVER}:" in fixes and "toolidx crawl" in fixes
    assert LONG_SERVER in fixes.split()[fixes.split().index("--server") + 1], fixes  # the name after --server, whole


def test_print_config_says_where_claude_desktop_keeps_its_config_on_linux_too(index):
    """#45 item 9: the hint named macOS's and Windows' files only; a Linux user was left to guess."""
    _, db = index
    r = run_pty("serve", "--db", db, "--print-config")
    assert r.code == 0, r.screen
    said = " ".join(r.screen.split())  # the note wraps between words at 80 columns
    assert "Linux: ~/.config/Claude/claude_desktop_config.json" in said, r.screen
    assert "macOS: ~/Library/Application Support/Claude/claude_desktop_config.json" in said, r.screen


def test_a_query_over_the_limit_is_refused_in_one_line_as_serve_refuses_it(index):
    """#45 item 7: the CLI searched the first 4,000 characters of a 10,000-character query and
    said nothing; serve refuses it with its length and the limit."""
    from toolidx.core.tokens import MAX_QUERY_CHARS

    _, db = index
    query = "take a screenshot of the current page " * 264  # 10,032 characters
    r = run_pty("search", query.strip(), "--db", db)
    assert r.code == 2, r.screen
    said = " ".join(r.screen.split())
    assert said == (
        f"toolidx: error: QUERY: {len(query.strip()):,} characters, the limit is {MAX_QUERY_CHARS:,} "
        "— ask in fewer words"
    ), r.screen
    j = run_cli("search", query, "--db", db, "--json")
    assert j.code == 2 and j.json["message"].startswith("QUERY: ") and j.json["fix"] == "ask in fewer words"
    # at the limit: searched
    assert run_cli("search", query[:MAX_QUERY_CHARS], "--db", db, "--min-score", "0").code == 0


def test_ctrl_c_in_a_first_crawl_leaves_no_index_and_an_old_one_untouched(tmp_path, index):
    """#45 item 7: Ctrl-C during the first crawl into a new file left an empty 118 KB index, which
    later commands read as a real, empty one. Now that file is removed; an index that was there
    before is left as it was, byte for byte."""
    import hashlib

    from conftest import raw, write_config

    cfg = write_config(tmp_path / "slow.json", {"slow": raw("slow-list")})  # tools/list takes 60 s
    new = tmp_path / "sub" / "new.db"
    r = run_pty("crawl", "--config", cfg, "--db", new, "--model", "none", interrupt_after="connecting")
    assert r.code == 130, r.screen
    assert "interrupted: nothing written, no index made" in " ".join(r.screen.split()), r.screen
    assert sorted(p.name for p in new.parent.iterdir()) == [], r.screen  # no -wal, -shm, journal either

    _, old = index
    before = hashlib.sha256(old.read_bytes()).hexdigest()
    r = run_pty("crawl", "--config", cfg, "--db", old, "--model", "none", interrupt_after="connecting")
    assert r.code == 130 and "the index is as before" in " ".join(r.screen.split()), r.screen
    assert hashlib.sha256(old.read_bytes()).hexdigest() == before
    assert run_cli("list", "--db", old, "--json").json["total"] == 4


def test_crawl_summary_says_where_the_index_was_written(tmp_path, monkeypatch):
    """#45 item 7: the summary never said where the index went (the default file is in
    ~/.local/share/toolidx, where nobody looks)."""
    (tmp_path / "pw.json").write_text(json.dumps(PLAYWRIGHT))
    (tmp_path / "c.yaml").write_text("mcpServers:\n  playwright:\n    tools_file: pw.json\n")
    home = tmp_path / "data"
    r = run_pty(  # wide: pytest's folder makes the path longer than a line, and a long word is folded
        "crawl", "--config", tmp_path / "c.yaml", "--model", "none", env={"XDG_DATA_HOME": str(home)}, columns=200
    )
    assert r.code == 0, r.screen
    assert r.screen.split()[-2:] == ["index:", str(home / "toolidx" / "tools.db")], r.screen
    monkeypatch.chdir(tmp_path)
    j = run_cli("crawl", "--config", "c.yaml", "--db", "rel.db", "--model", "none", "--json")
    assert j.code == 0 and j.json["index"] == str(tmp_path / "rel.db")  # absolute, whatever --db said


def test_fastmcp_example_says_what_it_does_before_the_model_loads(tmp_path):
    """#45 item 5: `examples/fastmcp_server.py --demo` printed nothing for ~30 s on a slow
    machine. Its model here is a FIFO nobody writes: the load blocks for good, so what reaches
    the terminal came before the model loaded; then a line every 10 s says it is still at it."""
    import os
    import pty
    import select
    import signal
    import subprocess
    import sys
    import time

    from conftest import REPO

    pytest.importorskip("fastmcp")
    model = tmp_path / "model"
    model.mkdir()
    os.mkfifo(model / "model.onnx")
    master, slave = pty.openpty()
    env = {**os.environ, "HOME": str(tmp_path), "TOOLIDX_MODEL_PATH": str(model)}
    cmd = [sys.executable, str(REPO / "examples" / "fastmcp_server.py"), "--size", "20", "--demo", "invoices"]
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 120  # a hang guard: the lines come at once and at 10 s
        while b"still loading" not in seen and time.monotonic() < deadline and proc.poll() is None:
            if select.select([master], [], [], 0.5)[0]:
                seen += os.read(master, 4096)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        os.close(master)
    lines = seen.decode(errors="replace").splitlines()
    assert lines and lines[0].startswith("example: loading the model and embedding 20 tools (usually 5-30 s"), lines
    assert any(line.startswith("example: ... still loading the model and embedding (1") for line in lines), lines
    assert not any("tools/list" in line for line in lines)  # the model never loaded: all of it came before


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["search", "x", "-n", "0"], "Invalid value for '--limit'"),
        (["search", "x", "--limt", "3"], "No such option: --limt"),
        (["search"], "Missing argument 'QUERY'"),
        (["serch", "x"], "No such command 'serch'"),
    ],
)
def test_arguments_that_do_not_parse_answer_json_with_json(index, args, said):
    """Found trying toolidx as a new user (round 16): with --json, an option out of range, a
    misspelt option or command, or a missing argument printed click's usage text on stderr and
    nothing on stdout, while toolidx's own usage errors (an empty query, a missing index) answer
    the error object a script reads. Before: stdout empty."""
    _, db = index
    r = run_cli(*args, "--db", db, "--json")
    assert r.code == 2, r
    assert r.json["command"] == "error" and r.json["code"] == "usage_error", r.stdout
    assert said in r.json["message"] and r.json["fix"].startswith("see toolidx"), r.json
    assert said in r.stderr  # and the usage text a person reads is still there
    plain = run_cli(*args, "--db", db)
    assert plain.code == 2 and plain.stdout == "", plain
