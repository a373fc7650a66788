"""toolidx merge: shards crawled apart search, list and diff exactly like one crawl of the whole
config; vectors are copied, not re-embedded; conflicts go to the newer crawl; a model mismatch or
an input as OUT is refused with nothing written."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import CATALOG_DATA, run_cli

from toolidx.store.db import open_db

QUERIES = [
    "commit my staged changes",
    "convert a pdf into markdown",
    "show the history of a repository",
    "count the words in a text",
    "push to the remote",
    "git status",
    "merge documents",
]
SHARDS = {"a": ["git", "gitplus"], "b": ["docs"]}


def _shard(tmp: Path, name: str, servers: list[str], **override) -> Path:
    """A config with some servers of tests/data/catalog/servers.yaml (tools files by absolute path)."""
    import yaml

    whole = yaml.safe_load((CATALOG_DATA / "servers.yaml").read_text())["mcpServers"]
    cfg = {}
    for s in servers:
        entry = dict(whole[s], tools_file=str(CATALOG_DATA / whole[s]["tools_file"]))
        cfg[s] = {**entry, **override.get(s, {})}
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump({"mcpServers": cfg}))
    return p


def _crawl(cfg: Path, db: Path, *model: str) -> None:
    r = run_cli("crawl", "--config", cfg, "--db", db, *model)
    assert r.code == 0, r.stderr


def _top5(db: Path, query: str, mode: str = "hybrid") -> list[tuple[str, float]]:
    r = run_cli("search", query, "--db", db, "--mode", mode, "--min-score", "0", "--json")
    assert r.code == 0, r.stderr
    return [(h["id"], h["score"]) for h in r.json["hits"][:5]]


def _listing(db: Path) -> list[dict]:
    r = run_cli("list", "--db", db, "--page-size", "1000", "--json")
    assert r.code == 0, r.stderr
    return r.json["items"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory, model_path):
    """Two shards and the whole config crawled with the real model, and the shards merged."""
    d = tmp_path_factory.mktemp("merge")
    for name, servers in SHARDS.items():
        _crawl(_shard(d, name, servers), d / f"{name}.db", "--model-path", model_path)
    _crawl(_shard(d, "whole", [s for ss in SHARDS.values() for s in ss]), d / "single.db", "--model-path", model_path)
    r = run_cli("merge", d / "a.db", d / "b.db", "-o", d / "merged.db", "--json")
    assert r.code == 0, r.stderr
    return d, r.json


def test_merged_index_searches_like_a_single_crawl(shards):
    d, _ = shards
    for q in QUERIES:
        for mode in ("hybrid", "keyword", "semantic"):
            single, merged = _top5(d / "single.db", q, mode), _top5(d / "merged.db", q, mode)
            assert [i for i, _ in merged] == [i for i, _ in single], (q, mode)
            assert [s for _, s in merged] == pytest.approx([s for _, s in single], abs=1e-6), (q, mode)


def test_merged_index_lists_and_counts_like_a_single_crawl(shards):
    d, res = shards
    assert _listing(d / "merged.db") == _listing(d / "single.db")
    cats = [run_cli("categories", "--db", d / f, "--json").json for f in ("single.db", "merged.db")]
    assert cats[0]["categories"] == cats[1]["categories"] and cats[0]["tags"] == cats[1]["tags"]
    assert res["servers"] == 3 and res["tools"] == 13 and res["crawls"] == 2 and res["conflicts"] == []
    assert res["vectors"] == 13 and res["missing_vectors"] == 0 and res["embed_dim"] == 384
    assert [i["tools"] for i in res["inputs"]] == [9, 4]


def test_diff_against_a_single_crawl_shows_no_tool_change(shards):
    d, _ = shards
    r = run_cli("diff", d / "single.db", d / "merged.db", "--json", "--fail-on", "any")
    assert r.code == 0, r.stdout
    s = r.json["summary"]
    assert s["tools"] == {"added": 0, "removed": 0, "renamed": 0, "changed": 0, "unknown": 0, "unchanged": 13}
    assert s["severity"] == {"breaking": 0, "risky": 0, "compatible": 0} and not r.json["gate_failed"]


def test_merged_rows_vectors_copied_history_whole(shards, tmp_path):
    d, _ = shards
    m, a = open_db(d / "merged.db"), open_db(d / "a.db", readonly=True)
    assert m.scalar("SELECT count(*) FROM tools") == 13
    assert m.scalar("SELECT count(*) FROM tools_fts") == 13
    assert m.scalar("SELECT count(*) FROM tool_vectors") == 13
    assert m.scalar("SELECT count(*) FROM tools WHERE embed_hash IS NULL") == 0
    assert m.get_meta("embed_model") == a.get_meta("embed_model") and m.get_meta("embed_dim") == "384"
    # vectors copied byte for byte (never re-embedded)
    for tid in ("git/git_commit", "gitplus/git_push"):
        va = a.scalar("SELECT v.embedding FROM tool_vectors v JOIN tools t ON t.rowid = v.rowid WHERE t.id = ?", (tid,))
        vm = m.scalar("SELECT v.embedding FROM tool_vectors v JOIN tools t ON t.rowid = v.rowid WHERE t.id = ?", (tid,))
        assert va == vm
    # the same tool rows as the shard, apart from the rowid
    cols = "id, server, name, definition, tags, category, hash, embed_text, embed_hash, first_seen, updated_at"
    assert m.query(f"SELECT {cols} FROM tools WHERE server != 'docs' ORDER BY id") == a.query(
        f"SELECT {cols} FROM tools ORDER BY id"
    )
    # history: one crawl per shard crawl in time order; each a whole snapshot of the merged index
    crawls = m.query("SELECT id, tool_count, servers_ok FROM crawls ORDER BY id")
    assert crawls == [{"id": 1, "tool_count": 9, "servers_ok": 2}, {"id": 2, "tool_count": 4 + 9, "servers_ok": 1}]
    assert m.scalar("SELECT count(*) FROM crawl_tools WHERE crawl_id = 2") == 13
    assert {r["server"]: r["crawl_id"] for r in m.query("SELECT server, crawl_id FROM crawl_servers")} == {
        "git": 1,
        "gitplus": 1,
        "docs": 2,
    }
    assert m.get_meta("last_crawl_id") == "2"
    assert {r["name"]: r["last_crawl_id"] for r in m.query("SELECT name, last_crawl_id FROM servers")} == {
        "git": 1,
        "gitplus": 1,
        "docs": 2,
    }
    assert m.scalar("SELECT count(*) FROM tool_versions") == 13
    assert m.scalar("PRAGMA integrity_check") == "ok"
    h = run_cli("history", "--db", d / "merged.db", "--json").json["crawls"]
    assert [(c["id"], c["tools"], c["added"], c["removed"]) for c in h[:1]] == [(2, 13, 4, 0)]
    assert [c["id"] for c in h] == [2, 1] and h[0]["config_path"].endswith("b.yaml")
    m.close()
    a.close()
    assert not list(d.glob(".*merging*"))  # no temporary file left behind


def test_text_output_and_replacing_an_existing_index(shards, tmp_path):
    d, _ = shards
    out = tmp_path / "out.db"
    shutil.copy(d / "single.db", out)  # an index already there is replaced whole
    r = run_cli("merge", d / "b.db", d / "a.db", "-o", out)
    assert r.code == 0, r.stderr
    assert "b.db" in r.stdout and "a.db" in r.stdout
    assert "merged 2 indexes" in r.stderr and "13 vectors copied" in r.stderr and "0 conflicts" in r.stderr
    db = open_db(out)
    assert db.scalar("SELECT count(*) FROM crawls") == 2 and db.scalar("SELECT count(*) FROM tools") == 13
    db.close()
    assert _listing(out) == _listing(d / "single.db")


def test_conflict_goes_to_the_newer_crawl_whatever_the_order(tmp_path, cli):
    # the same server in two shards: first crawled with docs' tools, later with git's under its name
    old = _shard(tmp_path, "old", ["git", "docs"])
    newer = _shard(tmp_path, "new", ["gitplus"], gitplus={"tools_file": str(CATALOG_DATA / "gitplus-tools.json")})
    _crawl(old, tmp_path / "old.db", "--model", "none")
    # rename docs -> the same key in the newer shard: 'docs' served from another tools file
    import yaml

    cfg = yaml.safe_load(newer.read_text())
    cfg["mcpServers"]["docs"] = {"tools_file": str(CATALOG_DATA / "git-tools.json"), "category": "documents"}
    newer.write_text(yaml.safe_dump(cfg))
    _crawl(newer, tmp_path / "new.db", "--model", "none")
    for order in ((tmp_path / "old.db", tmp_path / "new.db"), (tmp_path / "new.db", tmp_path / "old.db")):
        out = tmp_path / "m.db"
        r = cli("merge", *order, "-o", out, "--json")
        assert r.code == 0, r.stderr
        [c] = r.json["conflicts"]
        assert c["server"] == "docs" and c["kept"] == str(tmp_path / "new.db")
        assert [x["path"] for x in c["dropped"]] == [str(tmp_path / "old.db")]
        assert c["kept_crawled_at"] > c["dropped"][0]["crawled_at"]
        db = open_db(out)
        assert sorted(db.query("SELECT name FROM tools WHERE server = 'docs'"), key=str) == sorted(
            [{"name": n} for n in ("git_commit", "git_diff", "git_log", "git_reset", "git_status")], key=str
        )
        # the latest crawl's snapshot is the index as it is
        last = db.get_meta("last_crawl_id")
        assert (
            db.scalar("SELECT count(*) FROM crawl_tools WHERE crawl_id = ?", (last,))
            == db.scalar("SELECT count(*) FROM tools")
            == 5 + 5 + 4
        )
        assert db.scalar("SELECT count(*) FROM tools_fts") == 14
        db.close()
        text = cli("merge", *order, "-o", out)
        assert text.code == 0 and "conflict: server 'docs' kept from " + str(tmp_path / "new.db") in text.stderr
    # history of the merged file: crawl 2 replaced docs' tools
    r = cli("diff", "--db", tmp_path / "m.db", "--json")
    assert r.code == 0, r.stderr
    changes = {t["id"]: t["change"] for srv in r.json["servers"] for t in srv["tools"]}
    assert changes["docs/convert_pdf"] == "removed" and changes["docs/git_commit"] == "added"


def _files(d: Path) -> dict[str, bytes]:
    """The files in `d` (a reader's -wal/-shm companions aside: SQLite makes them to read a WAL index)."""
    return {
        p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def test_different_models_are_refused_and_nothing_is_written(shards, tmp_path, cli):
    d, _ = shards
    b = tmp_path / "b.db"
    shutil.copy(d / "b.db", b)
    db = open_db(b)
    db.set_meta("embed_model", "BAAI/bge-small-en-v1.5")  # vectors from another model
    db.close()
    out = tmp_path / "out.db"
    before = _files(tmp_path)
    r = cli("merge", d / "a.db", b, "-o", out, "--json")
    assert r.code == 2
    line = r.stderr.strip()
    assert "\n" not in line and "cannot merge vectors from different models" in line
    assert "BAAI/bge-small-en-v1.5" in line and "all-MiniLM-L6-v2" in line
    assert r.json["command"] == "error"
    assert _files(tmp_path) == before  # no OUT, no temporary file


def test_an_input_is_never_overwritten(shards, tmp_path, cli):
    d, _ = shards
    a = tmp_path / "a.db"
    shutil.copy(d / "a.db", a)
    before = a.read_bytes()
    for target in (a, tmp_path / "." / "a.db"):
        r = cli("merge", a, d / "b.db", "-o", target)
        assert r.code == 2 and "refusing to overwrite an input" in r.stderr
    assert a.read_bytes() == before
    r = cli("merge", a, a, "-o", tmp_path / "x.db")
    assert r.code == 2 and "given twice" in r.stderr and not (tmp_path / "x.db").exists()


def test_the_output_is_an_input_however_spelled(tmp_path, monkeypatch, cli):
    """#42 item 17: OUT that names an input another way (./X, ../dir/X, a symlink, a hard link, other
    letter case on a case-insensitive file system) is the same file: refused, the input unchanged."""
    d = tmp_path / "dir"
    d.mkdir()
    _crawl(_shard(tmp_path, "a", ["git"]), d / "a.db", "--model", "none")
    (tmp_path / "link.db").symlink_to(d / "a.db")
    (d / "hard.db").hardlink_to(d / "a.db")
    before = (d / "a.db").read_bytes()
    monkeypatch.chdir(d)
    spellings = ["./a.db", "../dir/a.db", str(tmp_path / "link.db"), "hard.db", f"{d}//a.db"]
    if Path("A.DB").exists():  # a case-insensitive file system (macOS, Windows)
        spellings.append("A.DB")
    for out in spellings:
        r = cli("merge", "a.db", "-o", out)
        assert r.code == 2 and "refusing to overwrite an input" in r.stderr, (out, r.stderr)
        r = cli("merge", "a.db", out, "-o", tmp_path / "m.db")
        assert r.code == 2 and "given twice" in r.stderr, (out, r.stderr)
    assert (d / "a.db").read_bytes() == before and not (tmp_path / "m.db").exists()


def test_a_killed_merges_temporary_files_are_removed_by_the_next(tmp_path, cli):
    """#42 item 17: a merge killed with SIGKILL leaves .OUT.PID.merging (and its -wal / -journal);
    no later merge removed them. The next merge into OUT removes those whose PID is dead, and keeps a
    live merge's."""
    import signal
    import subprocess

    _crawl(_shard(tmp_path, "a", ["git"]), tmp_path / "a.db", "--model", "none")
    # a real merge, killed while it writes its temporary file
    code = (
        "import os, sys, time\n"
        "from toolidx.store import merge as m\n"
        "real = m.write_merged\n"
        "def slow(out, *a, **k):\n"
        "    n = real(out, *a, **k)\n"
        "    out.execute('PRAGMA wal_checkpoint(PASSIVE)')\n"
        "    print('written', flush=True)\n"
        "    time.sleep(120)\n"
        "    return n\n"
        "m.write_merged = slow\n"
        "from toolidx.cli.main import main\n"
        "main(sys.argv[1:])\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, "merge", tmp_path / "a.db", "-o", tmp_path / "out.db"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "written"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    left = sorted(x.name for x in tmp_path.glob(".out.db.*merging*"))
    assert left and all(x.startswith(f".out.db.{p.pid}.merging") for x in left), left
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / f".out.db.{live.pid}.merging").write_bytes(b"another merge, under way")
        (tmp_path / ".out.db.notes.merging").write_text("not ours: no PID")
        r = cli("merge", tmp_path / "a.db", "-o", tmp_path / "out.db")
        assert r.code == 0, r.stderr
        after = sorted(x.name for x in tmp_path.glob(".out.db.*merging*"))
        assert set(after) == {".out.db.notes.merging", f".out.db.{live.pid}.merging"}, after
    finally:
        live.kill()
        live.wait(30)


def test_an_existing_file_that_is_not_an_index_is_left_alone(tmp_path, cli):
    _crawl(_shard(tmp_path, "a", ["git"]), tmp_path / "a.db", "--model", "none")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    r = cli("merge", tmp_path / "a.db", "-o", notes)
    assert r.code == 2 and "not a SQLite database" in r.stderr and notes.read_text() == "my notes"
    r = cli("merge", tmp_path / "missing.db", "-o", tmp_path / "o.db")
    assert r.code == 2 and "no index here" in r.stderr and not (tmp_path / "o.db").exists()


def test_keyword_only_shards_merge_and_search_alike(tmp_path, cli):
    for name, servers in SHARDS.items():
        _crawl(_shard(tmp_path, name, servers), tmp_path / f"{name}.db", "--model", "none")
    _crawl(_shard(tmp_path, "whole", ["git", "gitplus", "docs"]), tmp_path / "single.db", "--model", "none")
    r = cli("merge", tmp_path / "a.db", tmp_path / "b.db", "-o", tmp_path / "m.db", "--json")
    assert r.code == 0, r.stderr
    assert r.json["embed_model"] is None and r.json["vectors"] == 0 and r.json["tools"] == 13
    for q in QUERIES:
        assert _top5(tmp_path / "m.db", q, "keyword") == _top5(tmp_path / "single.db", q, "keyword")
    assert _listing(tmp_path / "m.db") == _listing(tmp_path / "single.db")
    diff = json.loads(cli("diff", tmp_path / "single.db", tmp_path / "m.db", "--json").stdout)
    assert diff["summary"]["tools"]["unchanged"] == 13 and diff["summary"]["tools"]["changed"] == 0


def test_a_shard_without_vectors_is_reported_for_embed(shards, tmp_path, cli):
    d, _ = shards
    _crawl(_shard(tmp_path, "b", ["docs"]), tmp_path / "b.db", "--model", "none")
    r = cli("merge", d / "a.db", tmp_path / "b.db", "-o", tmp_path / "m.db")
    assert r.code == 0, r.stderr
    assert "9 vectors copied" in r.stderr and "4 tools without one: run `toolidx embed --db" in r.stderr


def test_a_failed_merge_leaves_out_as_it_was(shards, tmp_path, monkeypatch, cli):
    """A merge that dies half-way (here: after the crawls and tools of the first input are written)
    leaves an existing OUT byte for byte and no temporary file."""
    from toolidx.store import merge as store_merge

    d, _ = shards
    out = tmp_path / "out.db"
    shutil.copy(d / "single.db", out)
    before = out.read_bytes()
    real = store_merge._copy_tools
    calls = []

    def dies_on_the_second_server(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(store_merge, "_copy_tools", dies_on_the_second_server)
    r = cli("merge", d / "a.db", d / "b.db", "-o", out)
    assert r.code == 130 and len(calls) == 2
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if "merging" in p.name] == []


def test_a_merged_index_starts_servers_with_the_environment_their_config_wrote(tmp_path):
    """#24: with no --config, a merged index starts each server with the env its crawl config
    wrote: literal paths (a sandbox HOME, MEMORY_FILE_PATH) and short flags are kept in the index,
    so the server neither fails on a variable it needs nor runs with the user's own HOME; a literal
    secret is kept by name only, and starting that server says to pass --config."""
    from conftest import RAW, raw, write_config

    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    seen = sandbox / "memory.jsonl"  # the server writes the HOME it got into its MEMORY_FILE_PATH
    memory = {
        "command": sys.executable,
        "args": [
            "-c",
            (
                "import os, pathlib, runpy, sys; "
                "pathlib.Path(os.environ['MEMORY_FILE_PATH']).write_text(os.environ['HOME'] + ' ' + os.environ['DNT']); "
                f"sys.argv = [{str(RAW)!r}, '--mode', 'ok']; runpy.run_path(sys.argv[0], run_name='__main__')"
            ),
        ],
        "env": {"HOME": str(sandbox), "MEMORY_FILE_PATH": str(seen), "DNT": "1"},
    }
    secret = "sk-live-0123456789abcdef"
    shards = {"a": {"memory": memory}, "b": {"keyed": raw("ok", "--prefix", "k_", env={"API_KEY": secret})}}
    for name, servers in shards.items():
        _crawl(write_config(tmp_path / f"{name}.json", servers), tmp_path / f"{name}.db", "--model", "none")
    seen.unlink()
    out = tmp_path / "merged.db"
    assert run_cli("merge", tmp_path / "a.db", tmp_path / "b.db", "-o", out).code == 0
    assert secret.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("merged.db*"))

    ok = run_cli("check", "--db", out, "--require", "memory/tool_0", "--json")
    assert ok.code == 0, ok.stdout + ok.stderr
    assert seen.read_text() == f"{sandbox} 1"  # the config's HOME, not the user's
    refused = run_cli("check", "--db", out, "--require", "keyed/k_tool_0", "--json")
    reason = refused.json["tools"][0]["reason"]
    assert refused.code == 1 and "API_KEY" in reason and "--config" in reason and secret not in reason


def test_a_malformed_row_is_refused_on_both_engines(db_target, tmp_path, monkeypatch):
    """A row written by hand whose JSON columns do not parse is found by the same rules, in the
    same words, on a file and on PostgreSQL (its JSON columns are text too); merging from it exits 2
    in one line with nothing written. The catalog's rows went unchecked before (#33)."""
    from toolidx.store import merge
    from toolidx.store.merge import malformed_row

    monkeypatch.setattr(merge, "_CHECK_CHUNK", 2)  # PostgreSQL's tools are read in chunks: 4 tools, 3 reads
    _crawl(_shard(tmp_path, "docs", ["docs"]), db_target, "--model", "none")
    db = open_db(db_target)
    tool = db.scalar("SELECT id FROM tools ORDER BY rowid DESC LIMIT 1")  # the last read
    cases = [  # table, column, value, what is said
        ("tools", "definition", "{not json", f"tool {tool!r}: its definition is not JSON"),
        ("tools", "definition", "[1]", f"tool {tool!r}: its definition is not a JSON object"),
        ("tools", "tags", "nope", f"tool {tool!r}: its tags are not JSON"),
        ("tools", "tags", '{"a": 1}', f"tool {tool!r}: its tags are not a JSON array"),
        ("tools", "tags", '["a", 1]', f"tool {tool!r}: its tags are not all strings"),
        ("tools", "param_names", "NaN", f"tool {tool!r}: its param_names are not JSON"),
        ("tools", "meta", '{"a":', f"tool {tool!r}: its _meta is not JSON"),
        ("servers", "tags", '"x"', "server 'docs': its tags are not a JSON array"),
        ("servers", "capabilities", "{", "server 'docs': its capabilities are not JSON"),
    ]
    assert malformed_row(db) is None
    for table, column, value, said in cases:
        key, name = ("id", tool) if table == "tools" else ("name", "docs")
        was = db.scalar(f"SELECT {column} FROM {table} WHERE {key} = ?", (name,))
        with db.transaction() as c:
            c.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (value, name))
        assert malformed_row(db) == said, (table, column, value)
        with db.transaction() as c:
            c.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (was, name))
    assert malformed_row(db) is None
    with db.transaction() as c:
        c.execute("UPDATE tools SET tags = 'nope' WHERE id = ?", (tool,))
    db.close()
    out = tmp_path / "out.db"
    r = run_cli("merge", db_target, "-o", out, "--json")
    assert r.code == 2 and "its tags are not JSON; nothing was merged" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not out.exists()
