"""Several configs crawled into one index (#31 item 4): each server belongs to the config that
crawled it last (servers.owner), and a crawl removes only its own config's servers. A re-crawl
without --config uses the config the index recorded (#36 item 3). Both engines."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO, crawl, run_cli, write_config

from toolidx.store.db import open_db

WEATHER = str(REPO / "examples" / "weather-tools.json")  # 3 tools, no process to start


def tools_file_config(path: Path, *names: str, **settings) -> Path:
    return write_config(path, {n: {"tools_file": WEATHER} for n in names}, **settings)


def server_names(db: str) -> list[str]:
    d = open_db(db)
    try:
        return [r["name"] for r in d.query("SELECT name FROM servers ORDER BY name")]
    finally:
        d.close()


def test_a_crawl_removes_only_its_own_configs_servers(tmp_path, db_target):
    team_a = tools_file_config(tmp_path / "team-a.json", "a1", "a2")
    team_b = tools_file_config(tmp_path / "team-b.json", "b1")
    assert crawl(team_a, db_target).code == 0
    b = crawl(team_b, db_target)
    assert b.code == 0, b.stderr
    # on 1bf4733: removed 6, a1 and a2 gone
    assert (b.json["removed"], b.json["removed_servers"], b.json["other_configs_servers"]) == (0, [], 2)
    assert server_names(db_target) == ["a1", "a2", "b1"] and b.json["tools"] == 9
    text = run_cli("crawl", "--config", team_b, "--db", db_target, "--model", "none")
    assert "kept 2 servers that other configs crawled into this index" in text.stderr

    # team A drops a2: A's next crawl removes it, and nothing of B's
    tools_file_config(team_a, "a1")
    a = crawl(team_a, db_target)
    assert a.code == 0, a.stderr
    assert a.json["removed"] == 3 and [(r["server"], r["other_config"]) for r in a.json["removed_servers"]] == [
        ("a2", False)
    ]
    assert server_names(db_target) == ["a1", "b1"]

    # removing someone else's servers is asked for by name, and says what it removed
    pruned = run_cli("crawl", "--config", team_b, "--db", db_target, "--model", "none", "--prune-other-configs")
    assert pruned.code == 0, pruned.stderr
    assert "removed server a1 (3 tools): another config crawled it (" in pruned.stderr
    assert str(team_a.resolve()) in pruned.stderr
    assert server_names(db_target) == ["b1"]


def test_a_named_owner_is_one_config_wherever_its_file_is(tmp_path, db_target):
    """`toolidx: {owner: NAME}`: the same config from two checkouts (CI runners) is one owner."""
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    first = tools_file_config(tmp_path / "run1" / "servers.json", "a1", "a2", owner="team-a")
    second = tools_file_config(tmp_path / "run2" / "servers.json", "a1", owner="team-a")
    assert crawl(first, db_target).code == 0
    r = crawl(second, db_target)
    assert r.code == 0 and [x["server"] for x in r.json["removed_servers"]] == ["a2"]


def test_prune_other_configs_needs_a_full_crawl(tmp_path):
    cfg = tools_file_config(tmp_path / "a.json", "a1")
    r = run_cli("crawl", "--config", cfg, "--db", tmp_path / "x.db", "--server", "a1", "--prune-other-configs")
    assert r.code == 2 and "needs a full crawl" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


def test_servers_crawled_before_the_migration_belong_to_the_config_their_crawl_recorded(tmp_path, db_target):
    team_a = tools_file_config(tmp_path / "team-a.json", "a1", "a2")
    team_b = tools_file_config(tmp_path / "team-b.json", "b1")
    assert crawl(team_a, db_target).code == 0
    assert crawl(team_b, db_target).code == 0
    _back_to_schema_3(db_target)  # an index as toolidx 1bf4733 left it: no servers.owner
    looked = run_cli("doctor", "--db", db_target, "--model", "none", "--json")  # read-only: read as it is
    assert looked.code == 0 and _by_name(looked.json)["index/open"]["status"] == "ok", looked.stdout
    d = open_db(db_target)  # migration 4 runs here
    try:
        owners = {r["name"]: r["owner"] for r in d.query("SELECT name, owner FROM servers")}
    finally:
        d.close()
    assert owners == {"a1": str(team_a.resolve()), "a2": str(team_a.resolve()), "b1": str(team_b.resolve())}
    r = crawl(team_b, db_target)
    assert r.json["removed"] == 0 and server_names(db_target) == ["a1", "a2", "b1"]


def _by_name(report: dict) -> dict[str, dict]:
    return {f"{c['area']}/{c['name']}": c for c in report["checks"]}


def _back_to_schema_3(target: str) -> None:
    if target.startswith("postgresql://"):
        import psycopg

        from toolidx.store.pg.database import _split_schema

        url, schema = _split_schema(target)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"ALTER TABLE {schema}.servers DROP COLUMN owner")
            conn.execute(f"DROP TABLE {schema}.server_vectors")  # migration 5's
            conn.execute(f"UPDATE {schema}.meta SET value = '3' WHERE key = 'schema_version'")
        return
    from toolidx.store.sqlite.file import sqlite_module

    conn = sqlite_module().connect(target)
    conn.execute("ALTER TABLE servers DROP COLUMN owner")
    conn.execute("DROP TABLE server_vectors")  # migration 5's
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()


# --- #36 item 3: a re-crawl without --config ----------------------------------------------------
def test_a_recrawl_without_config_uses_the_one_the_index_recorded(tmp_path, db_target):
    cfg = tools_file_config(tmp_path / "servers.json", "a1", "a2")
    assert crawl(cfg, db_target).code == 0
    r = run_cli("crawl", "--db", db_target, "--model", "none", "--json")
    assert r.code == 0, r.stderr
    assert f"crawling {cfg.resolve()}, the config this index was crawled from" in r.stderr
    assert r.json["config"] == str(cfg.resolve()) and r.json["servers_ok"] == 2
    one = run_cli("crawl", "--db", db_target, "--model", "none", "--json", "--server", "a2")
    assert one.code == 0 and [s["server"] for s in one.json["servers"]] == ["a2"]


def test_a_recrawl_without_config_names_what_it_cannot_choose(tmp_path):
    db = tmp_path / "x.db"
    team_a = tools_file_config(tmp_path / "team-a.json", "a1")
    team_b = tools_file_config(tmp_path / "team-b.json", "b1")
    assert crawl(team_a, db).code == 0 and crawl(team_b, db).code == 0
    several = run_cli("crawl", "--db", db, "--model", "none")
    assert several.code == 2 and len(several.stderr.strip().splitlines()) == 1
    assert "crawled from 2 configs" in several.stderr
    assert str(team_a.resolve()) in several.stderr and str(team_b.resolve()) in several.stderr
    # --server picks the config that crawled that server
    one = run_cli("crawl", "--db", db, "--model", "none", "--server", "a1", "--json")
    assert one.code == 0 and one.json["config"] == str(team_a.resolve())
    team_b.unlink()
    gone = run_cli("crawl", "--db", db, "--model", "none", "--server", "b1")
    assert gone.code == 2 and "is gone: " + str(team_b.resolve()) in gone.stderr
    empty = tmp_path / "empty.db"
    open_db(empty, create=True).close()
    none = run_cli("crawl", "--db", empty, "--model", "none")
    assert none.code == 2 and "records no config" in none.stderr and "--config FILE" in none.stderr


def test_a_recrawl_never_runs_a_config_named_by_an_index_from_elsewhere(tmp_path, monkeypatch):
    """An index crawled on another machine names a config path; crawling it unasked would start
    whatever that file says. Only a config a crawl on this machine read is re-used."""
    cfg = tools_file_config(tmp_path / "servers.json", "a1")
    db = tmp_path / "x.db"
    assert crawl(cfg, db).code == 0
    monkeypatch.setenv("TOOLIDX_STATE_DIR", str(tmp_path / "other-machine"))
    r = run_cli("crawl", "--db", db, "--model", "none")
    assert r.code == 2 and "no crawl on this machine read the config" in r.stderr
    assert f"--config {cfg.resolve()}" in r.stderr


def test_a_merged_index_keeps_each_servers_config(tmp_path, db_target):
    """Shards crawled apart and merged (into a file or a catalog): a later crawl of one shard's
    config removes only that shard's servers."""
    shard1 = tools_file_config(tmp_path / "shard1.json", "a1", "a2")
    shard2 = tools_file_config(tmp_path / "shard2.json", "b1")
    assert crawl(shard1, tmp_path / "s1.db").code == 0 and crawl(shard2, tmp_path / "s2.db").code == 0
    _back_to_schema_3(str(tmp_path / "s2.db"))  # one input from before owners were recorded
    m = run_cli("merge", tmp_path / "s1.db", tmp_path / "s2.db", "-o", db_target)
    assert m.code == 0, m.stderr
    tools_file_config(shard1, "a1")
    r = crawl(shard1, db_target)
    assert [x["server"] for x in r.json["removed_servers"]] == ["a2"] and r.json["other_configs_servers"] == 1
    assert server_names(db_target) == ["a1", "b1"]
