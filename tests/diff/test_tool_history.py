"""diff.history.tool_history: the crawls that added, changed and removed one tool (the console's
tool page), on a file and on PostgreSQL (db_target)."""

from __future__ import annotations

import json

from conftest import crawl, write_config


def _tool(name: str, desc: str) -> dict:
    return {"name": name, "description": desc, "inputSchema": {"type": "object", "properties": {}}}


def test_tool_history_names_the_crawls_that_changed_a_tool(db_target, tmp_path):
    from toolidx.diff.history import tool_history
    from toolidx.store.db import open_db

    tools = tmp_path / "tools.json"
    cfg = write_config(tmp_path / "servers.json", {"s": {"tools_file": str(tools)}})
    versions = [
        [_tool("a", "Reads a file.")],
        [_tool("a", "Reads a file."), _tool("b", "Writes a file.")],
        [_tool("a", "Reads a file, or a folder."), _tool("b", "Writes a file.")],
        [_tool("b", "Writes a file.")],
    ]
    for v in versions:
        tools.write_text(json.dumps({"tools": v}))
        r = crawl(cfg, db_target)
        assert r.code == 0, r.stderr
    db = open_db(db_target)
    try:
        got = [(h["crawl_id"], h["previous"], h["change"]) for h in tool_history(db, "s/a")]
        assert got == [(4, 3, "removed"), (3, 2, "changed"), (1, None, "added")]
        assert [(h["crawl_id"], h["change"]) for h in tool_history(db, "s/b")] == [(2, "added")]
        # the last 2 crawls only: crawl 2 is their baseline, not an addition
        assert [h["change"] for h in tool_history(db, "s/a", limit=2)] == ["removed", "changed"]
        assert tool_history(db, "s/b", limit=2) == [] and tool_history(db, "s/nope") == []
    finally:
        db.close()
