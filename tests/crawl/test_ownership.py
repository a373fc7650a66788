"""Who owns a server in a shared index (#42 item 14), on both engines: a crawl that takes another
config's server of the same name says so, naming both owners; `--from` names one owner whatever
the order of its clients; an owner holding NUL prunes its own servers on PostgreSQL too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, crawl, run_cli, write_config

from toolidx.store.db import open_db

WEATHER = str(REPO / "examples" / "weather-tools.json")  # 3 tools, no process to start


def _servers(db: str) -> dict[str, str]:
    d = open_db(db)
    try:
        return {r["name"]: r["owner"] for r in d.query("SELECT name, owner FROM servers ORDER BY name")}
    finally:
        d.close()


def test_a_crawl_that_takes_another_configs_server_says_so(tmp_path, db_target):
    team_a = write_config(tmp_path / "team-a.json", {"github": {"tools_file": WEATHER}})
    team_b = write_config(tmp_path / "team-b.json", {"github": {"tools_file": WEATHER}, "b": {"tools_file": WEATHER}})
    assert crawl(team_a, db_target).code == 0
    r = run_cli("crawl", "--config", team_b, "--db", db_target, "--model", "none")
    assert r.code == 0, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if "server github was crawled by another config" in ln]
    assert str(team_a.resolve()) in line and str(team_b.resolve()) in line
    again = crawl(team_b, db_target)  # its own server now: nothing to say
    assert [s.get("replaced_owner") for s in again.json["servers"]] == [None, None]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    for d in (h / ".cursor", h / ".config" / "Code" / "User"):
        d.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    return h


def test_from_names_one_owner_whatever_the_order(home, db_target):
    lists = {}
    for name in ("c1", "c2", "v1"):  # one file each: the same launch line is crawled once
        lists[name] = str(home / f"{name}.json")
        Path(lists[name]).write_text(Path(WEATHER).read_text())
    cursor = home / ".cursor" / "mcp.json"
    cursor.write_text(json.dumps({"mcpServers": {n: {"tools_file": lists[n]} for n in ("c1", "c2")}}))
    code = home / ".config" / "Code" / "User" / "mcp.json"
    code.write_text(json.dumps({"servers": {"v1": {"tools_file": lists["v1"]}}}))
    r = run_cli("crawl", "--from", "cursor,vscode", "--db", db_target, "--model", "none", "--json")
    assert r.code == 0, r.stderr
    cursor.write_text(json.dumps({"mcpServers": {"c1": {"tools_file": lists["c1"]}}}))
    r = run_cli("crawl", "--from", "vscode,cursor", "--db", db_target, "--model", "none", "--json")
    assert r.code == 0, r.stderr
    assert [s["server"] for s in r.json["removed_servers"]] == ["c2"]  # its own: pruned
    assert not [s for s in r.json["servers"] if s.get("replaced_owner")]
    assert set(_servers(db_target).values()) == {"--from cursor,vscode"}


def test_an_owner_holding_nul_prunes_its_own_servers(tmp_path, db_target):
    cfg = write_config(
        tmp_path / "c.json", {"a1": {"tools_file": WEATHER}, "a2": {"tools_file": WEATHER}}, owner="team\x00a"
    )
    assert crawl(cfg, db_target).code == 0
    write_config(cfg, {"a1": {"tools_file": WEATHER}}, owner="team\x00a")
    r = crawl(cfg, db_target)
    assert r.code == 0, r.stderr
    assert [s["server"] for s in r.json["removed_servers"]] == ["a2"]
    assert not [s for s in r.json["servers"] if s.get("replaced_owner")]
    assert list(_servers(db_target)) == ["a1"]
