"""How serve finds the way to start a backend (no servers needed): secrets from the environment at
run time, the index's own record when the config file is gone."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from conftest import crawl, raw, write_config

from toolidx.serve.backends import BackendUnavailable, SpecSource, spec_from_index
from toolidx.serve.discovery import Discovery, api_names


def test_spec_from_the_index_takes_secrets_from_the_environment():
    row = {
        "transport": "stdio",
        "connect": {"transport": "stdio", "command": "srv", "args": ["--x"], "env_keys": ["TOKEN"], "timeout": 12.0},
    }
    spec = spec_from_index("s", row, {"TOKEN": "s3cret"})
    assert (spec.command, spec.args, spec.env, spec.timeout, spec.problem) == (
        "srv",
        ["--x"],
        {"TOKEN": "s3cret"},
        12.0,
        None,
    )
    missing = spec_from_index("s", row, {})
    assert "TOKEN" in missing.problem
    http = spec_from_index(
        "h",
        {
            "transport": "http",
            "connect": {"transport": "http", "url": "https://x/mcp", "header_keys": ["Authorization"]},
        },
        {"Authorization": "Bearer t"},
    )
    assert http.transport == "http" and http.headers == {"Authorization": "Bearer t"}


def test_spec_source_prefers_config_then_index(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"mcpServers": {"a": {"command": "from-config", "env": {"K": "${K}"}, "cwd": "."}}}))
    rows = {
        "a": {"transport": "stdio", "connect": {"transport": "stdio", "command": "from-index", "cwd": str(tmp_path)}},
        "b": {"transport": "stdio", "connect": {"transport": "stdio", "command": "only-indexed", "cwd": str(tmp_path)}},
    }
    src = SpecSource(server_row=rows.get, index_config_path=lambda: str(cfg), environ={"K": "v"}, trust_index=True)
    spec, where = src.spec("a")
    assert spec.command == "from-config" and spec.env == {"K": "v"} and where == str(cfg)
    assert src.spec("b")[0].command == "only-indexed"  # not in the config: the index's record
    cfg.unlink()
    assert src.spec("a") == (spec_from_index("a", rows["a"], {"K": "v"}), "index")
    with pytest.raises(BackendUnavailable, match="not in the index"):
        src.spec("zzz")
    explicit = SpecSource(server_row=rows.get, config_path=str(cfg))
    with pytest.raises(BackendUnavailable, match="config file not found"):
        explicit.spec("a")  # --config names a file: it must exist


def test_exposed_names_fit_client_rules():
    names = api_names(
        [
            "time/get_current_time",
            "my.server/tool:x",
            "s/" + "a" * 80,
            "brave-search/web-search",
            "a__b/c",
            "a/b__c",
            "s/",
        ]
    )
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in names.values()) and len(set(names.values())) == 7
    assert names["time/get_current_time"] == "time__get_current_time"
    assert names["brave-search/web-search"] == "brave-search__web-search"  # `-` is allowed: kept
    assert names["my.server/tool:x"] == "my_server__tool_x_" + hashlib.sha256(b"my.server/tool:x").hexdigest()[:6]
    assert len(names["s/" + "a" * 80]) == 64 and names["s/" + "a" * 80].startswith("s__aaa")
    # the first `__` ends the server part: a tool `b__c` of server `a` is not tool `c` of `a__b`
    assert names["a/b__c"] == "a__b__c" and names["a__b/c"] == "a_b__c"


def _exposed(tmp_path, tools: list[str]) -> dict[str, str]:
    """serve --expose-tools' {exposed name: id} over a fresh index of server `s` holding these tools."""
    d = tmp_path / str(len(list(tmp_path.iterdir())))
    d.mkdir()
    (d / "tools.json").write_text(
        json.dumps({"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in tools]})
    )
    assert crawl(write_config(d / "c.json", {"s": {"tools_file": str(d / "tools.json")}}), d / "t.db").code == 0
    disc = Discovery(str(d / "t.db"), expose_tools=True, pins=[f"s/{tools[0]}"])  # pinned and listed: one name
    assert all(disc.resolve(n)["id"] == i for n, i in disc.exposed().items())
    return disc.exposed()


def test_a_look_alike_added_later_never_takes_an_exposed_name(tmp_path):
    """serve's exposed names (and the integrations', the same function) depend on the tool's own
    id: `del.ete` arriving beside `del_ete` (or before it) never changes a name agents call."""
    everything = ["del_ete", "del-ete", "del.ete", "del ete", "DEL_ETE", "del_ete_" + "0" * 6]
    after = _exposed(tmp_path, everything)
    assert len(after) == len(everything) and after["s__del_ete"] == "s/del_ete"
    for before in [
        ["del_ete"],
        ["del.ete"],
        ["del ete"],
        ["del_ete", "del.ete"],
        ["del.ete", "del ete"],
        ["DEL_ETE", "del-ete"],
    ]:
        names = _exposed(tmp_path, before)
        assert {n: after.get(n) for n in names} == names, before


def test_launch_lines_only_the_index_vouches_for_are_not_run(tmp_path):
    """A config the index names and the index's own record are used only when a crawl on this
    machine wrote them (or with trust_index); --config is always the user's own choice."""
    from toolidx.core.servers import launch_hash
    from toolidx.store import trust

    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"mcpServers": {"a": {"command": "from-config", "cwd": "."}}}))
    rows = {
        "a": {"transport": "stdio", "connect": {"transport": "stdio", "command": "from-index", "cwd": "/"}},
        "b": {"transport": "stdio", "connect": {"transport": "stdio", "command": "evil", "args": ["-x"], "cwd": "/"}},
    }
    src = SpecSource(server_row=rows.get, index_config_path=lambda: str(cfg), db_path="shared.db")
    for name, shown in (("a", "from-index"), ("b", "evil")):
        with pytest.raises(BackendUnavailable) as e:
            src.spec(name)
        msg = str(e.value)
        assert "\n" not in msg and repr(shown) in msg and "--config" in msg and "--trust-index" in msg
    trust.record([("b", launch_hash(rows["b"]["connect"]))], str(cfg))  # what a crawl here records
    assert src.spec("a")[0].command == "from-config"  # the config a crawl here read
    assert src.spec("b")[0].command == "evil"  # the launch line a crawl here wrote
    rows["b"]["connect"]["args"] = ["-y"]  # one argument changed: another launch line
    with pytest.raises(BackendUnavailable, match="no crawl on this machine wrote it"):
        src.spec("b")
    explicit = SpecSource(server_row=rows.get, config_path=str(cfg))
    assert explicit.spec("a")[0].command == "from-config"


def test_spec_from_the_index_uses_the_env_the_config_wrote(tmp_path):
    """`connect.env` holds what the config wrote where it cannot be a secret; a value held by name
    only (env_secret) cannot be rebuilt, and the spec says to pass --config."""
    from toolidx.crawl.config import build_config

    entry = {
        "command": "srv",
        "env": {"HOME": str(tmp_path), "TOKEN": "${TOKEN}", "FLAG": "1", "API_KEY": "sk-literal-123456"},
    }
    spec = build_config({"mcpServers": {"s": entry}}, "c.json", environ={"TOKEN": "t0k3n-xyz"}).servers[0]
    connect = spec.public()
    assert connect["env"] == {"HOME": str(tmp_path), "TOKEN": "${TOKEN}", "FLAG": "1"}
    assert connect["env_secret"] == ["API_KEY"] and "sk-literal" not in json.dumps(connect)
    rebuilt = spec_from_index("s", {"connect": connect}, {"TOKEN": "t0k3n-xyz", "HOME": "/home/me"})
    assert rebuilt.env == {"HOME": str(tmp_path), "TOKEN": "t0k3n-xyz", "FLAG": "1"}
    assert "API_KEY" in rebuilt.problem and "--config" in rebuilt.problem
    del connect["env_secret"], entry["env"]["API_KEY"]
    assert spec_from_index("s", {"connect": connect}, {"TOKEN": "t0k3n-xyz"}).problem is None


def test_a_crawl_stores_its_launch_lines_pinned_and_serve_refuses_relative_ones(tmp_path, monkeypatch):
    """What a crawl stores runs the same from any folder: cwd absolute (the crawl's own folder when
    the config names none), a relative command with a folder part absolute, `${PWD}` and
    `${workspaceFolder}` substituted, envFile absolute; `${VAR}`s that may hold secrets stay
    templates. A stored line that still depends on the folder is refused, --trust-index or not."""
    from toolidx.serve.backends import launch_relative

    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    (project / "bin" / "srv").write_text("")
    (project / ".env").write_text("A=1\n")
    cfg = write_config(
        project / "c.json",
        {
            "rel": {"command": "python", "args": ["server.py"]},
            "dot": {"command": "./bin/srv", "cwd": ".", "envFile": ".env", "args": ["${workspaceFolder}/x"]},
            "tpl": {"command": "python", "cwd": "${SECRET_DIR}", "args": ["--t", "${SECRET_TOKEN}"]},
            "ok": raw("ok"),  # one that starts, so the crawl writes the index
        },
    )
    monkeypatch.setenv("SECRET_DIR", str(tmp_path / "s3cret-dir"))
    monkeypatch.setenv("SECRET_TOKEN", "s3cret-token")
    monkeypatch.chdir(tmp_path)
    assert crawl(cfg, tmp_path / "i.db").code == 1
    from toolidx.store.db import open_db

    db = open_db(tmp_path / "i.db")
    stored = {n: json.loads(c) for n, c in db.conn.execute("SELECT name, connect FROM servers")}
    db.close()
    assert stored["rel"]["cwd"] == str(tmp_path)  # where the crawl ran it
    assert stored["dot"]["cwd"] == str(project) and stored["dot"]["command"] == str(project / "bin" / "srv")
    assert stored["dot"]["args"] == [f"{project}/x"] and stored["dot"]["env_file"] == str(project / ".env")
    assert stored["tpl"]["cwd"] == "${SECRET_DIR}" and stored["tpl"]["args"] == ["--t", "${SECRET_TOKEN}"]
    env = {"SECRET_DIR": "/abs"}
    assert [launch_relative(c, env) for c in stored.values()] == [None] * 4
    line = {"transport": "stdio", "command": "python", "args": ["s.py"], "cwd": "/p"}
    for change, shown in (
        ({"cwd": None}, "no working folder"),
        ({"cwd": "."}, "working folder '.'"),
        ({"cwd": "${NOPE:-.}"}, "working folder"),
        ({"command": "./srv"}, "command './srv'"),
        ({"args": ["${PWD}/s.py"]}, "${PWD}"),
        ({"env_file": ".env"}, "envFile '.env'"),
    ):
        relative = launch_relative({**line, **change}, env)
        assert relative is not None and shown in relative, (change, relative)
        rows = {"s": {"transport": "stdio", "connect": {**line, **change}}}
        with pytest.raises(BackendUnavailable, match="never resolved against this folder"):
            SpecSource(server_row=rows.get, trust_index=True).spec("s")
    # a config that names no cwd, read through the index: the server runs where the crawl ran it
    from toolidx.core.servers import launch_hash
    from toolidx.store import trust

    rows = {"rel": {"transport": "stdio", "connect": stored["rel"]}}
    src = SpecSource(server_row=rows.get, index_config_path=lambda: str(cfg))
    trust.record([], str(cfg))
    assert trust.trusted_launch(launch_hash(stored["rel"]))  # the crawl above recorded it
    spec, where = src.spec("rel")
    assert where == str(cfg) and spec.cwd == str(tmp_path) and spec.args == ["server.py"]
    rows["rel"]["connect"] = {**stored["rel"], "cwd": "."}  # an index from before: no folder to use
    with pytest.raises(BackendUnavailable, match="names no cwd"):
        src.spec("rel")
