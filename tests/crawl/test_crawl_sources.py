"""`tools_file` sources: saved tool lists indexed as if a server had returned them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from toolidx.store.db import open_db

TOOL = {
    "name": "get_forecast",
    "description": "Weather forecast for a city.",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def crawl_file(tmp_path: Path, name: str, content: str, **entry):
    f = tmp_path / name
    f.write_text(content)
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"mcpServers": {"saved": {"tools_file": name, **entry}}}))
    r = run_cli("crawl", "--config", cfg, "--db", tmp_path / "t.db", "--model", "none", "--json")
    return r, open_db(tmp_path / "t.db")


@pytest.mark.parametrize(
    "name, content",
    [
        ("list.json", json.dumps({"tools": [TOOL]})),
        ("rpc.json", json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [TOOL]}})),
        ("array.json", json.dumps([TOOL])),
        ("wire.jsonl", json.dumps(TOOL) + "\n"),
    ],
)
def test_tools_file_shapes(tmp_path, name, content):
    r, db = crawl_file(tmp_path, name, content, tags=["saved"], category="weather")
    assert r.code == 0, r.stderr
    row = db.one("SELECT * FROM tools")
    assert row["id"] == "saved/get_forecast" and row["category"] == "weather"
    assert json.loads(row["definition"]) == TOOL and json.loads(row["tags"]) == ["saved"]
    srv = db.one("SELECT transport, status, tool_count FROM servers WHERE name = 'saved'")
    assert srv == {"transport": "tools_file", "status": "ok", "tool_count": 1}
    db.close()


def test_bench_shaped_catalog_files_tools_under_their_servers(tmp_path):
    rows = [
        {
            "id": "wx/forecast",
            "server": "wx",
            "server_title": "Weather",
            "name": "forecast",
            "description": "Forecast.",
            "input_schema": {"type": "object", "properties": {}},
        },
        {
            "id": "git/log",
            "server": "git",
            "name": "log",
            "description": "Git log.",
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        },
        {"id": "git/bad", "server": "git", "name": "bad", "input_schema": {"type": "array"}},
    ]
    r, db = crawl_file(tmp_path, "catalog.jsonl", "\n".join(json.dumps(x) for x in rows))
    assert r.code == 0
    assert [x["id"] for x in db.query("SELECT id FROM tools ORDER BY id")] == ["git/log", "wx/forecast"]
    assert db.one("SELECT server_title FROM servers WHERE name = 'wx'")["server_title"] == "Weather"
    assert json.loads(db.scalar("SELECT invalid_tools FROM servers WHERE name = 'git'"))[0]["name"] == "bad"
    # bench keys become wire keys
    assert "inputSchema" in json.loads(db.scalar("SELECT definition FROM tools WHERE id = 'git/log'"))
    db.close()


@pytest.mark.parametrize(
    "name, content, reason",
    [
        ("missing.json", None, "tools_file not found"),
        ("broken.jsonl", '{"name": "a"}\n{oops\n', "line 2: invalid JSON"),
        ("notools.json", '{"items": []}', "no `tools` list"),
    ],
)
def test_unusable_tools_file_fails_that_server(tmp_path, name, content, reason):
    cfg = tmp_path / "c.json"
    if content is not None:
        (tmp_path / name).write_text(content)
    cfg.write_text(json.dumps({"mcpServers": {"saved": {"tools_file": name}, "ok": {"tools_file": "ok.json"}}}))
    (tmp_path / "ok.json").write_text(json.dumps({"tools": [TOOL]}))
    r = run_cli("crawl", "--config", cfg, "--db", tmp_path / "t.db", "--model", "none", "--json")
    assert r.code == 1
    by = {s["server"]: s for s in r.json["servers"]}
    assert by["ok"]["status"] == "ok" and reason in by["saved"]["error"]


def test_a_variable_in_the_tools_file_path_is_stored_as_written(tmp_path, monkeypatch):
    """`${VAR}` in a tools_file path is expanded to read the file, and kept unexpanded in the index
    (like command, args and url): the variable's value is this machine's, not the index's."""
    hidden = tmp_path / "private-mount-4471"
    hidden.mkdir()
    (hidden / "cat.json").write_text(json.dumps([TOOL]))
    monkeypatch.setenv("CATALOG_DIR", str(hidden))
    cfg = tmp_path / "c.json"
    cfg.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "saved": {"tools_file": "${CATALOG_DIR}/cat.json"},
                    "plain": {"tools_file": "private-mount-4471/cat.json"},
                }
            }
        )
    )
    r = run_cli("crawl", "--config", cfg, "--db", tmp_path / "t.db", "--model", "none", "--json")
    assert r.code == 0, r.stderr
    db = open_db(tmp_path / "t.db")
    ids = {row[0] for row in db.execute("SELECT id FROM tools")}
    connect = dict(db.execute("SELECT name, connect FROM servers").fetchall())
    saved_row = [list(r) for r in db.execute("SELECT * FROM servers WHERE name = 'saved'")]
    db.close()
    assert ids == {"saved/get_forecast", "plain/get_forecast"}
    assert json.loads(connect["saved"])["tools_file"] == "${CATALOG_DIR}/cat.json"
    assert json.loads(connect["plain"])["tools_file"] == str(hidden / "cat.json")  # no variable: resolved
    assert "private-mount-4471" not in json.dumps(saved_row, default=str)
