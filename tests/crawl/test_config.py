"""Config files as users have them (Claude Desktop, Cursor, VS Code, toolidx YAML), `${VAR}`
expansion, and every bad config: exit 2, one line naming file/server/key, the index untouched."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from toolidx.core.errors import ConfigError
from toolidx.crawl.config import build_config, expand, load_config

RAW = Path(__file__).parents[1] / "servers" / "rawmcp.py"
ENV = {"HOME": "/home/u", "TOKEN": "t0k3n-abc", "PORT": "8123", "EMPTY": ""}


def test_claude_desktop_config_as_is(tmp_path):
    p = tmp_path / "claude_desktop_config.json"
    p.write_text(
        json.dumps(
            {
                "globalShortcut": "Ctrl+Space",  # other keys of the app's file are ignored
                "mcpServers": {
                    "filesystem": {
                        "command": "npx",
                        "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/Desktop"],
                    },
                    "github": {
                        "command": "docker",
                        "args": ["run", "-i", "ghcr.io/github/github-mcp-server"],
                        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${TOKEN}"},
                    },
                },
            }
        )
    )
    cfg = load_config(p, environ=ENV)
    fs, gh = cfg.servers
    assert (fs.name, fs.transport, fs.command) == ("filesystem", "stdio", "npx")
    assert fs.args[-1] == "/home/u/Desktop"
    assert gh.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "t0k3n-abc"}
    assert gh.public()["env_keys"] == ["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert "t0k3n" not in json.dumps(gh.public())


def test_cursor_config_with_remote_servers(tmp_path):
    p = tmp_path / "mcp.json"
    p.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "remote": {
                        "url": "https://api.example.com:${PORT}/mcp",
                        "headers": {"Authorization": "Bearer ${TOKEN}"},
                    },
                    "legacy": {"url": "https://old.example.com/sse"},
                    "local": {"command": "python", "args": ["server.py"], "cwd": "srv"},
                }
            }
        )
    )
    remote, legacy, local = load_config(p, environ=ENV).servers
    assert remote.transport == "http" and remote.url == "https://api.example.com:8123/mcp"
    assert remote.headers == {"Authorization": "Bearer t0k3n-abc"}
    assert remote.public() == {
        "transport": "http",
        "url": "https://api.example.com:${PORT}/mcp",
        "header_keys": ["Authorization"],
        "timeout": 30.0,
    }
    assert legacy.transport == "sse"  # a URL ending in /sse
    assert local.cwd == str(tmp_path / "srv")


def test_vscode_config_with_servers_and_type(tmp_path):
    vs = tmp_path / ".vscode"
    vs.mkdir()
    (vs / "dev.env").write_text("# comment\nFROM_FILE=yes\nexport QUOTED=\"a b\"\nOVERRIDDEN=file\n")
    p = vs / "mcp.json"
    p.write_text(
        json.dumps(
            {
                "inputs": [{"type": "promptString", "id": "api-key", "password": True}],
                "servers": {
                    "py": {
                        "type": "stdio",
                        "command": "python",
                        "args": ["${workspaceFolder}/server.py"],
                        "env": {"KEY": "${env:TOKEN}", "OVERRIDDEN": "env"},
                        "envFile": "dev.env",
                    },
                    "web": {"type": "http", "url": "http://localhost:${PORT}/mcp"},
                    "events": {"type": "sse", "url": "http://localhost:9000/events"},
                    "asks": {"type": "stdio", "command": "x", "env": {"K": "${input:api-key}"}},
                },
            }
        )
    )
    py, web, events, asks = load_config(p, environ=ENV).servers
    assert py.args == [f"{tmp_path}/server.py"]
    assert py.env == {"FROM_FILE": "yes", "QUOTED": "a b", "OVERRIDDEN": "env", "KEY": "t0k3n-abc"}
    assert (web.transport, web.url) == ("http", "http://localhost:8123/mcp")
    assert events.transport == "sse"
    assert asks.problem and "${input:api-key}" in asks.problem  # reported at crawl, not a crash


def test_toolidx_yaml_keys(tmp_path):
    p = tmp_path / "toolidx.yaml"
    p.write_text("""
toolidx:
  timeout: 12
  concurrency: 2
mcpServers:
  a:
    command: a-server
    tags: [prod, "db"]
    category: databases
  b:
    url: http://x/mcp
    timeout: 5
    tags: "one, two"
  off:
    command: nope
    enabled: false
  also-off:
    command: nope
    disabled: true
  catalog:
    tools_file: catalog.jsonl
""")
    cfg = load_config(p)
    a, b, off, also_off, catalog = cfg.servers
    assert (a.tags, a.category, a.timeout) == (["prod", "db"], "databases", 12.0)
    assert (b.tags, b.timeout) == (["one", "two"], 5.0)
    assert not off.enabled and not also_off.enabled
    assert [s.name for s in cfg.enabled_servers()] == ["a", "b", "catalog"]
    assert catalog.transport == "tools_file" and catalog.tools_file == str(tmp_path / "catalog.jsonl")
    assert cfg.settings["concurrency"] == 2


@pytest.mark.parametrize(
    "text, out, missing",
    [
        ("${TOKEN}", "t0k3n-abc", []),
        ("x-${NOPE:-dflt}-y", "x-dflt-y", []),
        ("${EMPTY:-used}", "used", []),  # :- also covers set-but-empty, as in the shell
        ("${EMPTY}", "", []),
        ("${env:HOME}/a", "/home/u/a", []),
        ("${NOPE}", "", ["NOPE"]),
        ("$HOME and ${HOME", "$HOME and ${HOME", []),  # only ${...} is a reference
    ],
)
def test_expand(text, out, missing):
    assert expand(text, ENV) == (out, missing)


def test_expansion_reaches_a_real_server(tmp_path, monkeypatch):
    """${VAR} in args and env, and ${VAR:-default}, as the started server sees them."""
    monkeypatch.setenv("RAW_VERSION", "7.7.7")
    monkeypatch.setenv("GREETING", "hi")
    p = tmp_path / "c.yaml"
    p.write_text(f"""
mcpServers:
  s:
    command: {sys.executable}
    args: ["{RAW}", "--version", "${{RAW_VERSION}}", "--say-env", "G", "--say-env", "D",
           "--prefix", "${{PREFIX_UNSET:-p_}}"]
    env: {{G: "${{GREETING}}!", D: "${{D_UNSET:-fb}}"}}  # short: longer env values are masked
""")
    r = run_cli("crawl", "--config", p, "--db", tmp_path / "c.db", "--model", "none", "--json")
    assert r.code == 0, r.stderr
    from toolidx.store.db import open_db

    db = open_db(tmp_path / "c.db")
    row = db.one("SELECT server_version, instructions FROM servers WHERE name = 's'")
    assert row["server_version"] == "7.7.7"
    assert "G=hi!" in row["instructions"] and "D=fb" in row["instructions"]
    assert db.scalar("SELECT count(*) FROM tools WHERE name LIKE 'p\\_%' ESCAPE '\\'") == 3
    db.close()


BAD = {
    "syntax.yaml": ("mcpServers:\n  a:\n    command: x\n   args: [1]\n", ["invalid YAML", ":4:"]),
    "syntax.json": ('{"mcpServers": {"a": {"command": "x",}}}', ["invalid JSON", ":1:"]),
    "transport.yaml": (
        "mcpServers:\n  a:\n    type: websocket\n    url: ws://x\n",
        ["server 'a'", "key 'type'", "unknown transport 'websocket'"],
    ),
    "nocommand.yaml": ("mcpServers:\n  a:\n    args: [x]\n", ["server 'a'", "key 'command'", "no `command`, `url`"]),
    "stdio-url.json": ('{"servers": {"a": {"type": "stdio", "url": "http://x"}}}', ["server 'a'", "key 'command'"]),
    "http-nourl.yaml": ("mcpServers:\n  a:\n    type: http\n", ["server 'a'", "key 'url'"]),
    "dup.yaml": ("mcpServers:\n  a:\n    command: x\n  a:\n    command: y\n", ["server 'a' is defined twice", ":4"]),
    "dup.json": ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', ["server 'a' is defined twice"]),
    "timeout.yaml": ("mcpServers:\n  a:\n    command: x\n    timeout: soon\n", ["server 'a'", "key 'timeout'"]),
    "env.yaml": ("mcpServers:\n  a:\n    command: x\n    env: [A=1]\n", ["server 'a'", "key 'env'"]),
    "envval.yaml": ("mcpServers:\n  a:\n    command: x\n    env: {A: [1]}\n", ["server 'a'", "key 'env.A'"]),
    "args.yaml": ("mcpServers:\n  a:\n    command: x\n    args: --flag\n", ["server 'a'", "key 'args'"]),
    "url.yaml": ("mcpServers:\n  a:\n    url: ftp://x\n", ["server 'a'", "key 'url'"]),
    "headers.yaml": ("mcpServers:\n  a:\n    url: http://x\n    headers: nope\n", ["server 'a'", "key 'headers'"]),
    "enabled.yaml": ("mcpServers:\n  a:\n    command: x\n    enabled: maybe\n", ["server 'a'", "key 'enabled'"]),
    "tags.yaml": ("mcpServers:\n  a:\n    command: x\n    tags: {a: 1}\n", ["server 'a'", "key 'tags'"]),
    "noblock.yaml": ("hello: 1\n", ["no `mcpServers`"]),
    "list.json": ("[1, 2]", ["must be a mapping"]),
    "entry.yaml": ("mcpServers:\n  a: just-a-string\n", ["server 'a'", "must be a mapping"]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_config_is_one_line_exit_2_and_no_index(tmp_path, name):
    text, expected = BAD[name]
    p = tmp_path / name
    p.write_text(text)
    db = tmp_path / "never.db"
    r = run_cli("crawl", "--config", p, "--db", db)
    assert r.code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolidx: error: ") and "Traceback" not in r.stderr
    assert str(p) in lines[0]
    for part in expected:
        assert part in lines[0], (part, lines[0])
    assert not db.exists() and not Path(str(db) + "-wal").exists()


def test_bad_config_leaves_an_existing_index_byte_for_byte(tmp_path, example_db):
    before = {q.name: q.read_bytes() for q in example_db.parent.glob(example_db.name + "*")}
    p = tmp_path / "bad.yaml"
    p.write_text("mcpServers:\n  a:\n    type: carrier-pigeon\n")
    r = run_cli("crawl", "--config", p, "--db", example_db, "--json")
    assert r.code == 2 and r.json["error"] == "ConfigError"
    after = {q.name: q.read_bytes() for q in example_db.parent.glob(example_db.name + "*")}
    assert after == before


def test_missing_config_file(tmp_path):
    r = run_cli("crawl", "--config", tmp_path / "nope.yaml", "--db", tmp_path / "x.db")
    assert r.code == 2 and "config file not found" in r.stderr and str(tmp_path / "nope.yaml") in r.stderr


def test_build_config_errors_are_config_errors():
    with pytest.raises(ConfigError, match="server 'x', key 'type'"):
        build_config({"mcpServers": {"x": {"type": "grpc", "command": "a"}}}, "f.yaml")


def test_bundled_example_crawls(tmp_path):
    r = run_cli(
        "crawl", "--config", REPO / "examples" / "servers.yaml", "--db", tmp_path / "e.db", "--model", "none", "--json"
    )
    assert r.code == 0 and r.json["servers_ok"] >= 2 and r.json["tools"] > 0


def _python_without_mcp(tmp_path, monkeypatch) -> None:
    """The system Python of a fresh machine, first on PATH: it has no `mcp` package."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("python3", "python"):
        (fake / name).write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'mcp'\" >&2\nexit 1\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ.get('PATH', '')}")
    monkeypatch.delenv("PYTHON", raising=False)
    monkeypatch.delenv("TOOLIDX_PYTHON", raising=False)


def test_toolidx_python_is_the_interpreter_toolidx_runs_under(tmp_path):
    entry = {"mcpServers": {"s": {"command": "${TOOLIDX_PYTHON}", "args": ["${TOOLIDX_PYTHON}.py"]}}}
    spec = build_config(entry, "c.yaml", environ={}).servers[0]
    assert spec.command == sys.executable and spec.problem is None
    assert spec.mask(f"ran {sys.executable}") == f"ran {sys.executable}"  # a path, not a secret
    other = build_config(entry, "c.yaml", environ={"TOOLIDX_PYTHON": "/opt/py/bin/python"}).servers[0]
    assert other.command == "/opt/py/bin/python"
    assert other.public()["command"] == "${TOOLIDX_PYTHON}"  # stored as written


def test_live_example_with_a_real_stdio_server(tmp_path, monkeypatch):
    """examples/live.yaml starts its server with toolidx's own Python, so crawl and check work
    where the Python on PATH has no `mcp` (before: `${PYTHON:-python3}` was that Python)."""
    _python_without_mcp(tmp_path, monkeypatch)
    r = run_cli(
        "crawl", "--config", REPO / "examples" / "live.yaml", "--db", tmp_path / "l.db", "--model", "none", "--json"
    )
    assert r.code == 0, r.stderr
    from toolidx.store.db import open_db

    assert r.json["servers_ok"] == 3 and r.json["tools"] == 3 + 3 + 4  # notes, weather, files
    db = open_db(tmp_path / "l.db")
    assert db.one("SELECT server_name, tool_count FROM servers WHERE name = 'notes'") == {
        "server_name": "notes",
        "tool_count": 3,
    }
    assert db.scalar("SELECT destructive FROM tools WHERE id = 'notes/delete_note'") == 1
    db.close()
    # serve's way of starting it (what execute_tool does), from the index's record of the config
    c = run_cli("check", "--require", "notes/add_note", "--db", tmp_path / "l.db", "--json")
    assert c.code == 0, c.stdout + c.stderr


def test_a_misspelt_key_gets_did_you_mean(tmp_path):
    """#36 item 10: `comand` failed with "no `command`, `url` or `tools_file`" and no hint; a slip in
    another key (`agrs`) let the server start without its arguments, unsaid."""
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"mcpServers": {"a": {"comand": "npx", "args": ["x"]}}}))
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert "no `command`, `url` or `tools_file`" in str(e.value)
    assert e.value.fix == "unknown key `comand`: did you mean `command`?"

    (tmp_path / "tools.json").write_text(json.dumps({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}))
    entry = {"tools_file": "tools.json", "agrs": ["x"], "autoApprove": [], "evn": {}, "transportType": "stdio"}
    p.write_text(json.dumps({"mcpServers": {"b": entry}}))
    r = run_cli("crawl", "--config", p, "--db", tmp_path / "t.db", "--model", "none")
    assert r.code == 0 and "server 'b': unknown key `agrs`: did you mean `args`?" in r.stderr
    assert "did you mean `env`?" in r.stderr and "autoApprove" not in r.stderr and "transportType" not in r.stderr


@pytest.mark.parametrize("kind", ["device", "fifo", "huge"])
def test_an_env_file_that_is_no_file_of_lines_is_one_line_and_nothing_read_past_a_mebibyte(tmp_path, kind):
    """#42 item 13: envFile /dev/zero was read to a MemoryError, a FIFO hung the crawl."""
    import threading

    if kind == "device":
        env_file, shown = "/dev/zero", "is a character device, not a regular file"
    elif kind == "fifo":
        env_file, shown = str(tmp_path / "pipe"), "is a FIFO (named pipe), not a regular file"
        os.mkfifo(env_file)
    else:
        env_file, shown = str(tmp_path / "big.env"), "larger than 1024 KiB"
        Path(env_file).write_text("A=1\n" * 300_000)
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "envFile": env_file}}}))
    out: list = []

    def load() -> None:
        try:
            load_config(cfg)
        except (ConfigError, MemoryError) as e:
            out.append(e)

    t = threading.Thread(target=load, daemon=True)  # a hang fails the test rather than the run
    t.start()
    t.join(60)
    assert out and isinstance(out[0], ConfigError), out
    message = str(out[0])
    assert shown in message and "envFile" in message and "\n" not in message
