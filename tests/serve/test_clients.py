"""toolidx under clients that search for tools themselves (issue 16, part 1): the meta-tools are
marked always-loaded for Claude Code, every description and the instructions fit Claude Code's
2 KB, `--print-config` entries for Claude Code (JSON) and Codex (TOML) parse back, and
`--expose-tools` works as a plain aggregator (annotations and `_meta` passed through, long
descriptions cut with a visible marker, scope applied, list_changed on a re-crawl).

Real index files crawled by the real CLI from tools_file servers (no network, no model)."""

from __future__ import annotations

import hashlib
import json
import shutil

import anyio
import pytest
from conftest import REPO, STATE_ENV, list_changed_recorder, run_cli

from toolidx.core.filters import Filters
from toolidx.serve.discovery import api_names
from toolidx.serve.metatools import ALWAYS_LOAD_KEY, CUT_MARKER, DESCRIPTION_MAX_BYTES, META_TOOLS

LONG = "Reads one record by id and returns it with every field. " + "More detail. " * 400


@pytest.fixture
def agg_index(tmp_path):
    """Two tools_file servers: `big` with a 5 KB description, annotations and `_meta`; the
    bundled weather example."""
    tools = [
        {
            "name": "read_record",
            "title": "Read a record",
            "description": LONG,
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
            "_meta": {"vendor.example/owner": "team-a"},
        },
        {
            "name": "delete.record",
            "description": "Delete one record by id.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            "annotations": {"destructiveHint": True},
        },
    ]
    (tmp_path / "big.json").write_text(json.dumps({"tools": tools}))
    cfg = {
        "mcpServers": {
            "big": {"tools_file": str(tmp_path / "big.json"), "category": "records"},
            "weather": {"tools_file": str(REPO / "examples" / "weather-tools.json"), "category": "data"},
        }
    }
    (tmp_path / "servers.json").write_text(json.dumps(cfg))
    db = tmp_path / "agg.db"
    r = run_cli("crawl", "--config", tmp_path / "servers.json", "--db", db, "--model", "none")
    assert r.code == 0, r.stderr
    return db


def build(db, **kw):
    from toolidx.serve.server import build_server

    return build_server(db, load_model=False, **kw)


def session(srv, body, **client_kw):
    from mcp import Client

    async def main():
        async with Client(srv, mode="legacy", **client_kw) as c:
            return await body(c)

    return anyio.run(main)


async def listing(c):
    return [
        t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in (await c.list_tools()).tools
    ], c.instructions


def test_core_meta_tools_are_always_loaded_unless_turned_off(agg_index):
    tools, _ = session(build(agg_index), listing)
    marked = {t["name"] for t in tools if (t.get("_meta") or {}).get(ALWAYS_LOAD_KEY) is True}
    assert marked == {"search_tools", "describe_tool", "execute_tool"}
    assert all(t["_meta"]["anthropic/searchHint"] for t in tools)  # Claude Code's search reads it
    tools, _ = session(build(agg_index, always_load=False), listing)
    assert not any(ALWAYS_LOAD_KEY in (t.get("_meta") or {}) for t in tools)
    assert all(t["_meta"]["anthropic/searchHint"] for t in tools)
    # the CLI flag reaches the server and the printed client entries
    r = run_cli("serve", "--db", agg_index, "--no-always-load", "--print-config", "--client", "claude-code", "--json")
    entry = r.json["config"]["mcpServers"]["toolidx"]
    assert "--no-always-load" in entry["args"] and "alwaysLoad" not in entry


def test_descriptions_and_instructions_fit_2kb_and_say_what_is_here(agg_index):
    tools, instructions = session(build(agg_index, expose_tools=True), listing)
    for t in tools:
        assert len(t["description"].encode()) <= DESCRIPTION_MAX_BYTES, t["name"]
    for t in META_TOOLS:
        assert len(t["description"].encode()) <= DESCRIPTION_MAX_BYTES
    assert len(instructions.encode()) <= DESCRIPTION_MAX_BYTES
    assert "tools of 2 MCP servers" in instructions
    assert "big (2)" in instructions and "weather (" in instructions and "records" in instructions
    order = [instructions.index(w) for w in ("search_tools", "describe_tool", "execute_tool")]
    assert order == sorted(order)  # the workflow, in order


def test_instructions_stay_within_2kb_for_a_large_catalog():
    from toolidx.serve.metatools import instructions

    servers = [(f"server-number-{i}", i) for i in range(300)]
    text = instructions(5000, servers, [f"category-{i}" for i in range(200)])
    assert len(text.encode()) <= DESCRIPTION_MAX_BYTES
    assert "more" in text and "search_tools" in text and "execute_tool" in text


def test_expose_tools_is_a_plain_aggregator(agg_index):
    tools, _ = session(build(agg_index, expose_tools=True), listing)
    by_name = {t["name"]: t for t in tools}
    weather = json.loads((REPO / "examples" / "weather-tools.json").read_text())["tools"]
    delete = api_names(["big/delete.record"])["big/delete.record"]  # `.` is not API-safe: the id's hash
    assert delete == "big__delete_record_" + hashlib.sha256(b"big/delete.record").hexdigest()[:6]
    assert {n for n in by_name if "__" in n} == {delete, "big__read_record"} | {
        f"weather__{t['name']}" for t in weather
    }
    read = by_name["big__read_record"]
    assert read["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    assert read["_meta"]["vendor.example/owner"] == "team-a" and read["_meta"]["toolidx/id"] == "big/read_record"
    assert read["description"].endswith(CUT_MARKER) and read["description"].startswith("Reads one record")
    assert read["inputSchema"]["required"] == ["id"] and read["title"] == "Read a record"
    assert by_name[delete]["annotations"] == {"destructiveHint": True}
    assert by_name[delete]["_meta"]["toolidx/id"] == "big/delete.record"
    # stable: a second server over the same index publishes the same names
    again, _ = session(build(agg_index, expose_tools=True), listing)
    assert [t["name"] for t in again] == [t["name"] for t in tools]
    # scope applies
    scoped, _ = session(build(agg_index, expose_tools=True, scope=Filters(read_only=True)), listing)
    assert "big__read_record" in {t["name"] for t in scoped}
    assert delete not in {t["name"] for t in scoped}


def test_expose_tools_announces_a_recrawl(agg_index, tmp_path):
    db = tmp_path / "live.db"
    shutil.copy(agg_index, db)
    cfg = json.loads((agg_index.parent / "servers.json").read_text())
    seen, on_message = list_changed_recorder()

    async def body(c):
        before = {t.name for t in (await c.list_tools()).tools}
        tools = json.loads((agg_index.parent / "big.json").read_text())
        tools["tools"].append(
            {"name": "count_records", "description": "Count records.", "inputSchema": {"type": "object"}}
        )
        (agg_index.parent / "big.json").write_text(json.dumps(tools))
        r = await anyio.to_thread.run_sync(
            lambda: run_cli("crawl", "--config", agg_index.parent / "servers.json", "--db", db, "--model", "none")
        )
        assert r.code == 0, r.stderr
        with anyio.fail_after(10):
            while not seen:
                await anyio.sleep(0.05)
        return before, {t.name for t in (await c.list_tools()).tools}

    assert cfg["mcpServers"]["big"]
    before, after = session(build(db, expose_tools=True, poll_interval=0.1), body, message_handler=on_message)
    assert after - before == {"big__count_records"}


@pytest.mark.parametrize("client", ["claude", "claude-code", "codex", "cursor", "vscode"])
def test_each_printed_entry_parses_back_in_its_own_format(agg_index, client, monkeypatch, tmp_path):
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", str(tmp_path))
    r = run_cli("serve", "--db", agg_index, "--print-config", "--client", client, "--server", "big")
    assert r.code == 0, r.stderr
    if client == "codex":
        tomllib = pytest.importorskip("tomllib")
        entry = tomllib.loads(r.stdout)["mcp_servers"]["toolidx"]
    else:
        entry = json.loads(r.stdout)["servers" if client == "vscode" else "mcpServers"]["toolidx"]
    args = entry["args"]
    assert args[args.index("--db") + 1] == str(agg_index.resolve()) and ("--server", "big") in zip(args, args[1:])
    # the model folder, and where the launch lines this user's crawls vouch for are (conftest sets it)
    assert entry["command"] and entry["env"] == {"TOOLIDX_MODEL_PATH": str(tmp_path), **STATE_ENV}
    assert (entry.get("type") == "stdio") == (client in ("vscode", "claude-code"))
    assert (entry.get("alwaysLoad") is True) == (client == "claude-code")
    j = run_cli("serve", "--db", agg_index, "--print-config", "--client", client, "--server", "big", "--json").json
    assert j["command"] == "serve-config" and j["text"] == r.stdout
    assert j["format"] == ("toml" if client == "codex" else "json")


def test_claude_code_add_json_gets_the_entry_itself(agg_index):
    """`claude mcp add-json NAME JSON` takes the server entry, not the {"mcpServers": ...} object
    printed for .mcp.json: the hint is the whole command, with that entry, quoted for a shell."""
    import shlex

    for extra in ([], ["--http", "8765", "--token-env", "TEAM_TOKEN"]):
        res = run_cli("serve", "--db", agg_index, "--print-config", "--client", "claude-code", *extra, "--json").json
        line = next(w for w in res["where"] if "claude mcp add-json" in w)
        argv = shlex.split(line[line.index("claude mcp") :])
        assert argv[:4] == ["claude", "mcp", "add-json", "toolidx"] and argv[5:] == ["--scope", "user"]
        assert json.loads(argv[4]) == res["config"]["mcpServers"]["toolidx"], extra


@pytest.mark.parametrize("client", ["claude-code", "codex", "cursor", "vscode"])
def test_print_config_with_http_prints_the_url_and_the_token_header(agg_index, client):
    r = run_cli(
        "serve", "--db", agg_index, "--print-config", "--client", client, "--http", "8765", "--token-file", "tokens.txt"
    )
    assert r.code == 0, r.stderr
    if client == "codex":
        tomllib = pytest.importorskip("tomllib")
        entry = tomllib.loads(r.stdout)["mcp_servers"]["toolidx"]
        headers = entry["http_headers"]
    else:
        entry = json.loads(r.stdout)["servers" if client == "vscode" else "mcpServers"]["toolidx"]
        headers = entry["headers"]
        assert (entry.get("type") == "http") == (client in ("claude-code", "vscode"))
    assert entry["url"] == "http://127.0.0.1:8765/mcp" and "command" not in entry and "args" not in entry
    assert headers == {"Authorization": "Bearer <your token>"} and "Replace <your token>" in r.stderr
    # no token flag on loopback: no header; HTTPS with a certificate
    j = run_cli(
        "serve",
        "--db",
        agg_index,
        "--print-config",
        "--client",
        client,
        "--http",
        "[::1]:9000",
        "--tls-cert",
        "c.pem",
        "--tls-key",
        "k.pem",
        "--json",
    ).json
    entry = next(iter(j["config"].values()))["toolidx"]
    assert entry["url"] == "https://[::1]:9000/mcp" and "headers" not in entry and "http_headers" not in entry


def test_print_config_with_http_refuses_what_it_cannot_print(agg_index):
    for args, want in (
        (["--client", "claude", "--http", "8765"], "Claude Desktop's config file starts stdio"),
        (["--client", "cursor", "--http", "0"], "port 0"),
    ):
        r = run_cli("serve", "--db", agg_index, "--print-config", *args)
        assert r.code == 2 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
