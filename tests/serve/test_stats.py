"""`toolidx stats` and `toolidx serve --print-config`: real index files, the real CLI entry point."""

from __future__ import annotations

import json
import os

import pytest
from conftest import STATE_ENV

from toolidx.core.budget import estimate_tokens
from toolidx.serve.metatools import meta_tools
from toolidx.store.db import open_db


def test_stats_counts_every_definition_against_the_meta_tools(example_db, cli):
    r = cli("stats", "--db", example_db, "--json")
    assert r.code == 0, r.stderr
    s = r.json
    assert s["command"] == "stats"
    db = open_db(example_db)
    rows = db.query("SELECT server, definition FROM tools")
    expected: dict[str, int] = {}
    for row in rows:
        expected[row["server"]] = expected.get(row["server"], 0) + estimate_tokens(json.loads(row["definition"]))
    assert {x["server"]: x["tokens"] for x in s["servers"]} == expected
    assert {x["server"]: x["tools"] for x in s["servers"]} == {
        srv: sum(1 for row in rows if row["server"] == srv) for srv in expected
    }
    assert s["tools"] == len(rows) and s["tool_tokens"] == sum(expected.values())
    # the meta-tools as serve sends them: search_tools' description names this catalog
    cats = [
        r["category"]
        for r in db.query("SELECT category, count(*) AS n FROM tools GROUP BY category ORDER BY n DESC, category")
    ]
    catalog = (len(rows), [(srv, sum(1 for row in rows if row["server"] == srv)) for srv in expected], cats)
    assert s["meta_tools"] == 6 and s["meta_tokens"] == sum(estimate_tokens(t) for t in meta_tools(catalog=catalog))
    assert s["saved_tokens"] == s["tool_tokens"] - s["meta_tokens"]
    assert s["ratio"] == round(s["tool_tokens"] / s["meta_tokens"], 1)
    assert "/ 4" in s["tokenizer"]
    one = cli("stats", "--db", example_db, "--server", "weather", "--json").json
    assert [x["server"] for x in one["servers"]] == ["weather"]


def test_stats_table_and_summary_line(example_db, cli):
    r = cli("stats", "--db", example_db)
    assert r.code == 0 and r.stdout.splitlines()[0].split("\t")[:3] == ["server", "status", "tools"]
    assert "meta-tools" in r.stderr and "tokens" in r.stderr
    # the example's 10 tools cost fewer tokens than the meta-tools: said so, not as a negative saving
    s = cli("stats", "--db", example_db, "--json").json
    assert s["saved_tokens"] < 0
    per_tool = s["tool_tokens"] / s["tools"]
    assert f"costs ~{-s['saved_tokens']:,} tokens more" in r.stderr and "Saved" not in r.stderr
    assert f"from about {-(-s['meta_tokens'] // per_tool):.0f} tools" in r.stderr


@pytest.mark.servers
@pytest.mark.slow
def test_serving_the_real_servers_saves_context(serve_index, cli):
    s = cli("stats", "--db", serve_index, "--json").json
    assert s["tools"] == 42 and s["tool_tokens"] > 3 * s["meta_tokens"]
    assert 0 < s["saving_pct"] < 100


def test_stats_without_an_index_is_a_one_line_error(tmp_path, cli):
    r = cli("stats", "--db", tmp_path / "none.db")
    assert r.code == 2 and "no index here" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("client,key", [("claude", "mcpServers"), ("cursor", "mcpServers"), ("vscode", "servers")])
def test_print_config_gives_a_working_entry_for_each_client(example_db, cli, client, key, monkeypatch, tmp_path):
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", str(tmp_path))
    r = cli(
        "serve",
        "--db",
        example_db,
        "--print-config",
        "--client",
        client,
        "--tag",
        "example",
        "--read-only",
        "--pin",
        "weather/get_forecast",
    )
    assert r.code == 0, r.stderr
    entry = json.loads(r.stdout)[key]["toolidx"]
    assert os.access(entry["command"], os.X_OK)
    args = entry["args"]
    assert args[args.index("--db") + 1] == str(example_db.resolve())
    pairs = list(zip(args, args[1:]))
    assert ("--tag", "example") in pairs and ("--pin", "weather/get_forecast") in pairs
    assert "--read-only" in args and args[0] in ("serve", "-m")
    assert entry["env"] == {"TOOLIDX_MODEL_PATH": str(tmp_path), **STATE_ENV}
    assert (entry.get("type") == "stdio") == (client == "vscode")
    assert "Merge this into" in r.stderr


def test_print_config_names_the_variables_the_servers_need(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("TOOLIDX_MODEL_PATH", raising=False)
    cfg = tmp_path / "c.json"
    tools = tmp_path / "t.json"
    tools.write_text(json.dumps({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}))
    cfg.write_text(json.dumps({"mcpServers": {"gh": {"tools_file": str(tools), "env": {"TOKEN": "${GITHUB_TOKEN}"}}}}))
    db = tmp_path / "i.db"
    assert cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 0
    r = cli("serve", "--db", db, "--print-config", "--json")
    res = r.json
    assert res["env_needed"] == ["GITHUB_TOKEN"]
    assert res["config"]["mcpServers"]["toolidx"]["env"] == {"GITHUB_TOKEN": "<value of GITHUB_TOKEN>", **STATE_ENV}
    bad = cli("serve", "--db", db, "--print-config", "--client", "emacs")
    assert bad.code == 2 and "unknown client" in bad.stderr


@pytest.mark.slow  # crawls all 16 real servers (keyword-only): 10-30 s
def test_the_docs_token_figures_are_what_stats_measures(servers_dir, cli, tmp_path):
    """docs/serve.md and the README quote `toolidx stats` on the 16 real test servers: the figures
    they print are the ones stats gives today (they once kept a meta-tools count from before the
    _meta hints and the catalog sentence)."""
    from conftest import REPO

    db = tmp_path / "real.db"
    r = cli("crawl", "--config", servers_dir / "servers.json", "--db", db, "--model", "none")
    assert r.code == 0, r.stderr
    s = cli("stats", "--db", db, "--json").json
    assert s["tools"] == 330
    serve_md = (REPO / "docs" / "serve.md").read_text()
    readme = (REPO / "README.md").read_text()
    for text in (serve_md, readme):
        assert f"{s['tool_tokens']:,}" in text and f"{s['meta_tokens']:,}" in text, (s["tool_tokens"], s["meta_tokens"])
    assert f"**{s['saving_pct']}% saved, {s['ratio']}x smaller**" in serve_md
    assert f"{s['saving_pct']} % saved" in readme
    largest = sorted(s["servers"], key=lambda x: -x["tokens"])[:3]
    assert ", ".join(f"{x['server']} {x['tokens']:,}" for x in largest) in " ".join(serve_md.split())
