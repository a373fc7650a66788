"""#36 item 5: the tools of a server that failed its last crawl are kept (stale) and still ranked,
and every front-end says so beside each such hit: the library's Hit, search --json and its table,
serve's search_tools (payload and text), on both engines."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli, run_pty

from toolidx.search.hybrid import search
from toolidx.search.request import SearchRequest
from toolidx.serve.answers import answer
from toolidx.store.db import open_db

CLOCK = {
    "tools": [
        {
            "name": "get_current_time",
            "description": "Get the current time in a timezone.",
            "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
        }
    ]
}
FILES = {
    "tools": [
        {
            "name": "read_file",
            "description": "Read the contents of a file at a given time.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
}


def _crawl_then_break_one(tmp_path: Path, db: str) -> None:
    (tmp_path / "clock.json").write_text(json.dumps(CLOCK))
    (tmp_path / "files.json").write_text(json.dumps(FILES))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("mcpServers:\n  time:\n    tools_file: clock.json\n  files:\n    tools_file: files.json\n")
    assert run_cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 0
    (tmp_path / "clock.json").write_text("{not json")  # the server's next listing fails
    again = run_cli("crawl", "--config", cfg, "--db", db, "--model", "none", "--json")
    assert again.code == 1 and again.json["servers_failed"] == 1


def test_a_failed_servers_tools_are_flagged_in_every_search_front_end(tmp_path, db_target):
    _crawl_then_break_one(tmp_path, db_target)
    db = open_db(db_target)
    try:
        hits = {h.id: h for h in search(db, SearchRequest("current time", mode="keyword", min_score=0)).hits}
    finally:
        db.close()
    stale, fresh = hits["time/get_current_time"], hits["files/read_file"]
    assert stale.stale and stale.note.startswith("stale: its server failed its last crawl (")
    assert not fresh.stale and fresh.note == ""

    cli = run_cli("search", "current time", "--db", db_target, "--mode", "keyword", "--min-score", "0", "--json")
    by_id = {h["id"]: h for h in cli.json["hits"]}
    assert by_id["time/get_current_time"]["stale"] is True and by_id["time/get_current_time"]["note"] == stale.note
    assert by_id["files/read_file"]["note"] == ""

    from toolidx.serve.server import build_server

    d = build_server(db_target, load_model=False).discovery
    a = answer(d, "search_tools", {"query": "current time", "search_type": "keyword", "filters": {"min_score": 0}})
    served = {h["id"]: h for h in a.payload["hits"]}
    assert served["time/get_current_time"]["note"] == stale.note and "note" not in served["files/read_file"]
    assert "1. time/get_current_time" in a.text and f"   {stale.note}" in a.text


def test_the_search_table_shows_the_stale_note(tmp_path):
    db = str(tmp_path / "t.db")
    _crawl_then_break_one(tmp_path, db)
    r = run_pty("search", "current time", "--db", db, "--mode", "keyword", "--min-score", "0", columns=120)
    assert r.code == 0, r.screen
    assert "stale: its server failed its" in r.screen
