"""Crawls of misbehaving servers (tests/servers/rawmcp.py over real stdio): isolation, timeouts,
pagination, invalid tools, stale marking, atomic writes, concurrency, secrets, exit codes."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import RAW, crawl, crawl_peak, raw, run_cli, write_config

from toolidx.store.db import open_db


@pytest.fixture(scope="module")
def bad_crawl(tmp_path_factory):
    """One crawl of every kind of misbehaviour, side by side with a healthy server."""
    d = tmp_path_factory.mktemp("bad")
    cfg = write_config(
        d / "bad.json",
        {
            "healthy": raw("ok"),
            "hangs": raw("hang", timeout=2),
            "crash-start": raw("crash-start"),
            "crash-mid-list": raw("crash-mid-list"),
            "invalid-tool": raw("invalid-tool"),
            "junk": raw("junk"),
            "many": raw("many"),
            "big": raw("big"),
            "slow-list": raw("slow-list", timeout=2),
            "no-such-exe": {"command": "/nonexistent/bin/mcp-server"},
        },
    )
    r = crawl(cfg, d / "bad.db")
    db = open_db(d / "bad.db")
    yield r, db
    db.close()


def _server(db, name):
    return db.one("SELECT * FROM servers WHERE name = ?", (name,))


@pytest.mark.slow
def test_failures_are_isolated_and_reported(bad_crawl):
    r, db = bad_crawl
    assert r.code == 1  # some failed, the rest indexed
    by = {s["server"]: s for s in r.json["servers"]}
    ok = {"healthy", "invalid-tool", "junk", "many", "big"}
    failed = {"hangs", "crash-start", "crash-mid-list", "slow-list", "no-such-exe"}
    assert {n for n, s in by.items() if s["status"] == "ok"} == ok
    assert {n for n, s in by.items() if s["status"] == "failed"} == failed
    assert r.json["servers_ok"] == 5 and r.json["servers_failed"] == 5
    assert db.scalar("SELECT count(*) FROM tools WHERE server = 'healthy'") == 3
    assert "Traceback" not in r.stderr
    # the 2 s timeouts ran in parallel with the rest, not one after another
    assert crawl_peak(db) >= 2


@pytest.mark.slow
def test_hang_times_out_with_the_phase(bad_crawl):
    _, db = bad_crawl
    row = _server(db, "hangs")
    assert row["status"] == "failed" and row["error"] == "timed out after 2 s during initialize"
    assert "rawmcp starting in mode hang" in row["stderr_tail"]
    assert _server(db, "slow-list")["error"] == "timed out after 2 s during tools/list"


@pytest.mark.slow
def test_crashes_report_exit_code_and_stderr(bad_crawl):
    _, db = bad_crawl
    start = _server(db, "crash-start")
    assert start["error"] == "server closed the connection during initialize (exit code 3)"
    assert "cannot open configuration" in start["stderr_tail"]
    mid = _server(db, "crash-mid-list")
    assert mid["error"] == "server closed the connection during tools/list page 2 (exit code 4)"
    assert "segfault while listing page 2" in mid["stderr_tail"]
    # a server that dies half-way through the list indexes nothing rather than half a server
    assert db.scalar("SELECT count(*) FROM tools WHERE server = 'crash-mid-list'") == 0
    assert _server(db, "no-such-exe")["error"] == "command not found: /nonexistent/bin/mcp-server"


@pytest.mark.slow
def test_invalid_tool_is_reported_and_valid_ones_kept(bad_crawl):
    _, db = bad_crawl
    names = [r["name"] for r in db.query("SELECT name FROM tools WHERE server = 'invalid-tool' ORDER BY name")]
    assert names == ["good_one", "good_two"]
    row = _server(db, "invalid-tool")
    assert row["status"] == "ok" and row["tool_count"] == 2
    assert json.loads(row["invalid_tools"]) == [{"name": "bad_schema", "reason": '`inputSchema.type` is not "object"'}]


@pytest.mark.slow
def test_junk_on_stdout_is_tolerated(bad_crawl):
    _, db = bad_crawl
    row = _server(db, "junk")
    assert row["status"] == "ok" and row["server_name"] == "rawmcp-junk" and row["tool_count"] == 1


@pytest.mark.slow
def test_5000_tools_in_pages_of_100(bad_crawl):
    _, db = bad_crawl
    assert _server(db, "many")["tool_count"] == 5000
    assert db.scalar("SELECT count(*) FROM tools WHERE server = 'many'") == 5000
    assert db.scalar("SELECT count(DISTINCT name) FROM tools WHERE server = 'many'") == 5000
    assert db.one("SELECT id FROM tools WHERE name = 'bulk_tool_4999'")["id"] == "many/bulk_tool_4999"


@pytest.mark.slow
def test_one_megabyte_description_is_kept_whole(bad_crawl):
    _, db = bad_crawl
    row = db.one("SELECT description, embed_text FROM tools WHERE id = 'big/huge_doc'")
    assert len(row["description"]) > 1024 * 1024
    assert len(row["embed_text"]) < 2000  # the embedded text is bounded
    hits = db.query("SELECT rowid FROM tools_fts WHERE tools_fts MATCH 'huge'")
    assert hits


@pytest.mark.slow
def test_server_metadata_is_recorded(bad_crawl):
    _, db = bad_crawl
    row = _server(db, "healthy")
    assert row["server_name"] == "rawmcp-ok" and row["server_title"] == "Raw MCP"
    assert row["server_version"] == "1.0.0" and row["protocol_version"] == "2025-06-18"
    assert row["instructions"] == "Test server in ok mode."
    assert json.loads(row["capabilities"]) == {"tools": {"listChanged": True}, "logging": {}}
    t = db.one("SELECT * FROM tools WHERE id = 'healthy/tool_0'")
    # `_meta.tags` ("alpha") is what the server claims: not a tag unless the config trusts it
    assert t["title"] == "First tool" and json.loads(t["tags"]) == ["read-only"]
    # no config category: derived from its words ("reads a file"), no longer the server's name
    assert t["category"] == "files" and json.loads(t["param_names"]) == ["path"]


# --- stale marking ------------------------------------------------------------------------------
def test_failed_server_keeps_its_tools_marked_stale(tmp_path):
    db_path = tmp_path / "s.db"
    good = write_config(tmp_path / "good.json", {"svc": raw("ok"), "other": raw("ok", "--prefix", "o_")})
    assert crawl(good, db_path).code == 0
    broken = write_config(tmp_path / "broken.json", {"svc": raw("crash-start"), "other": raw("ok", "--prefix", "o_")})
    r = crawl(broken, db_path)
    assert r.code == 1
    db = open_db(db_path)
    rows = db.query("SELECT id, stale, stale_reason FROM tools WHERE server = 'svc' ORDER BY id")
    assert [x["id"] for x in rows] == ["svc/tool_0", "svc/tool_1", "svc/tool_2"]
    assert all(x["stale"] == 1 and "exit code 3" in x["stale_reason"] for x in rows)
    assert db.scalar("SELECT sum(stale) FROM tools WHERE server = 'other'") == 0
    srv = _server(db, "svc")
    # the failure is recorded; what the last good crawl learned is kept
    assert srv["status"] == "failed" and "exit code 3" in srv["error"]
    assert srv["server_name"] == "rawmcp-ok" and srv["tool_count"] == 3
    # the second crawl's snapshot carries the stale tools, so a diff does not see them vanish
    snap = db.query("SELECT tool_id, stale FROM crawl_tools WHERE crawl_id = 2 AND server = 'svc'")
    assert len(snap) == 3 and all(s["stale"] == 1 for s in snap)
    assert db.one("SELECT status FROM crawl_servers WHERE crawl_id = 2 AND server = 'svc'")["status"] == "failed"
    db.close()
    # back to health: no longer stale
    assert crawl(good, db_path).code == 0
    db = open_db(db_path)
    assert db.scalar("SELECT sum(stale) FROM tools") == 0
    db.close()


# --- atomicity ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_readers_see_the_old_or_the_new_index_never_a_mix(tmp_path):
    db_path = tmp_path / "a.db"
    open_db(db_path, create=True).close()
    cfg = write_config(tmp_path / "many.json", {"many": raw("many"), "small": raw("ok")})
    seen: set[tuple] = set()
    stop = threading.Event()
    errors: list[BaseException] = []

    def watch() -> None:
        reader = open_db(db_path)
        try:
            while not stop.is_set():
                # one statement = one snapshot
                seen.add(
                    tuple(
                        reader.conn.execute(
                            "SELECT (SELECT count(*) FROM tools), (SELECT count(*) FROM tools_fts), "
                            "(SELECT max(id) FROM crawls), "
                            "(SELECT count(*) FROM crawl_tools WHERE crawl_id = (SELECT max(id) FROM crawls))"
                        ).fetchone()
                    )
                )
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            reader.close()

    t = threading.Thread(target=watch)
    t.start()
    try:
        r = crawl(cfg, db_path)
    finally:
        time.sleep(0.2)
        stop.set()
        t.join(10)
    assert r.code == 0 and not errors
    assert seen <= {(0, 0, None, 0), (5003, 5003, 1, 5003)}, seen
    assert (5003, 5003, 1, 5003) in seen


def test_reader_in_a_transaction_keeps_its_snapshot(tmp_path):
    db_path = tmp_path / "r.db"
    cfg1 = write_config(tmp_path / "one.json", {"svc": raw("ok", "--tools", "3")})
    cfg2 = write_config(tmp_path / "two.json", {"svc": raw("ok", "--tools", "5")})
    assert crawl(cfg1, db_path).code == 0
    reader = open_db(db_path)
    with reader.snapshot():
        assert reader.scalar("SELECT count(*) FROM tools") == 3
        assert crawl(cfg2, db_path).code == 0  # the writer is not blocked by the reader (WAL)
        assert reader.scalar("SELECT count(*) FROM tools") == 3
    assert reader.scalar("SELECT count(*) FROM tools") == 5
    reader.close()


# --- concurrency --------------------------------------------------------------------------------
class _Counter:
    def __init__(self):
        self.now = self.peak = 0

    def server_started(self, spec):
        self.now += 1
        self.peak = max(self.peak, self.now)

    def server_finished(self, result):
        self.now -= 1

    def step(self, what, done, total):
        pass


@pytest.mark.parametrize(
    "concurrency, expected_peak",
    [
        (None, 4),
        (2, 2),
        pytest.param(1, 1, marks=pytest.mark.slow),  # six 0.3 s starts one after another
    ],
)
def test_concurrency_cap(tmp_path, concurrency, expected_peak):
    from toolidx.crawl.config import load_config
    from toolidx.crawl.run import run_crawl

    cfg = load_config(write_config(tmp_path / "c.json", {f"s{i}": raw("ok", "--init-delay", "0.3") for i in range(6)}))
    counter = _Counter()
    db = open_db(tmp_path / "c.db", create=True)
    summary = run_crawl(cfg, db, concurrency=concurrency, progress=counter)
    db.close()
    assert summary.servers_ok == 6 and counter.peak == expected_peak


def test_concurrency_flag_and_setting(tmp_path):
    cfg = write_config(tmp_path / "c.json", {"a": raw("ok"), "b": raw("ok", "--prefix", "b_")}, concurrency=1)
    r = crawl(cfg, tmp_path / "c.db", "--concurrency", "2")
    assert r.code == 0 and r.json["servers_ok"] == 2
    bad = run_cli("crawl", "--config", cfg, "--db", tmp_path / "d.db", "--concurrency", "0")
    assert bad.code == 2 and not (tmp_path / "d.db").exists()


# --- secrets ------------------------------------------------------------------------------------
def test_secrets_never_reach_the_index(tmp_path, monkeypatch):
    secret, header_secret, url_secret = "sk-PLANTED-7f3a9c1e5b", "Bearer HDR-PLANTED-42aa", "URLTOKEN-PLANTED-99"
    monkeypatch.setenv("MY_TOKEN", secret)
    monkeypatch.setenv("URL_TOKEN", url_secret)
    cfg = write_config(
        tmp_path / "s.json",
        {
            # a careless server that prints its token on stderr, which we keep a tail of
            "leaky": raw("ok", env={"API_TOKEN": "${MY_TOKEN}", "RAWMCP_ECHO_ENV": "API_TOKEN"}),
            # a failing one whose error would name the command line
            "leaky-fail": raw("crash-start", env={"API_TOKEN": "${MY_TOKEN}"}),
            "remote": {
                "url": "http://127.0.0.1:1/mcp?key=${URL_TOKEN}",
                "headers": {"Authorization": header_secret},
                "timeout": 3,
            },
        },
    )
    db_path = tmp_path / "s.db"
    r = crawl(cfg, db_path)
    assert r.code == 1
    db = open_db(db_path)
    tail = db.scalar("SELECT stderr_tail FROM servers WHERE name = 'leaky'")
    assert "token is ***" in tail  # the server said it; we masked it
    connect = json.loads(db.scalar("SELECT connect FROM servers WHERE name = 'leaky'"))
    assert connect["env_keys"] == ["API_TOKEN", "RAWMCP_ECHO_ENV"]
    db.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.glob("s.db*"))
    for s in (secret, header_secret, "HDR-PLANTED", url_secret):
        assert s.encode() not in blob, s
    assert secret not in r.stdout + r.stderr and url_secret not in r.stdout + r.stderr


def test_server_environment_is_minimal_plus_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("PARENT_ONLY_SECRET", "should-not-pass")
    monkeypatch.setenv("GREETING", "hey")  # short values: longer ones are secrets, masked in the index
    cfg = write_config(
        tmp_path / "e.json",
        {
            "envy": raw(
                "ok",
                "--say-env",
                "PATH",
                "--say-env",
                "PARENT_ONLY_SECRET",
                "--say-env",
                "CONFIGURED",
                "--say-env",
                "DEFAULTED",
                env={"CONFIGURED": "${GREETING}!", "DEFAULTED": "${NOPE_UNSET:-fb}"},
            )
        },
    )
    assert crawl(cfg, tmp_path / "e.db").code == 0
    db = open_db(tmp_path / "e.db")
    said = db.scalar("SELECT instructions FROM servers WHERE name = 'envy'")
    db.close()
    assert "PARENT_ONLY_SECRET=<unset>" in said
    assert "CONFIGURED=hey!" in said and "DEFAULTED=fb" in said
    assert "PATH=<unset>" not in said


# --- why a server failed: its stderr, shown -------------------------------------------------------
def test_failed_servers_show_their_last_stderr_lines(tmp_path, monkeypatch):
    """crawl (text and --json), categories and doctor show what a failed server printed, masked and
    terminal-safe; before, the cause was only in `servers.stderr_tail`."""
    secret = "sk-STDERR-PLANTED-5d1e"
    monkeypatch.setenv("MY_TOKEN", secret)
    servers = {
        "py-missing": {"command": sys.executable, "args": [str(tmp_path / "gone" / "server.py")]},
        "crashes": raw("crash-start"),
        # prints its token and an escape sequence that would clear the screen, then exits 1
        "leaky": {
            "command": sys.executable,
            "env": {"API_TOKEN": "${MY_TOKEN}"},
            "args": [
                "-c",
                "import os, sys; sys.stderr.write('bad token ' + os.environ['API_TOKEN'] + '\x1b[2J\\n'); sys.exit(1)",
            ],
        },
        "healthy": raw("ok"),
    }
    node = shutil.which("node")
    if node:
        servers["node-missing"] = {"command": "node", "args": ["/nonexistent/index.js"]}
    cfg = write_config(tmp_path / "f.json", servers)
    r = crawl(cfg, tmp_path / "f.db")
    assert r.code == 1
    by = {s["server"]: s for s in r.json["servers"]}
    assert by["py-missing"]["error"].startswith("server closed the connection during initialize")
    assert any("can't open file" in ln and "server.py" in ln for ln in by["py-missing"]["stderr"])
    assert by["crashes"]["stderr"] == ["fatal: cannot open configuration /nonexistent/config.toml"]
    assert by["leaky"]["stderr"] == ["bad token ***\\u001b[2J"]
    assert by["healthy"]["stderr"] == []
    if node:  # Node prints the cause above its stack: it leads the lines shown
        assert "Error: Cannot find module '/nonexistent/index.js'" in by["node-missing"]["stderr"]
        assert not any(ln.startswith("at ") for ln in by["node-missing"]["stderr"])

    text = run_cli("crawl", "--config", cfg, "--db", tmp_path / "f.db", "--model", "none")
    assert text.code == 1
    assert "crashes: last stderr lines:\n  fatal: cannot open configuration" in text.stderr
    assert "can't open file" in text.stderr and "bad token ***\\u001b[2J" in text.stderr

    cats = run_cli("categories", "--db", tmp_path / "f.db", "--json")
    cat_by = {s["name"]: s for s in cats.json["servers"]}
    assert cat_by["crashes"]["stderr"] == ["fatal: cannot open configuration /nonexistent/config.toml"]
    assert cat_by["healthy"]["stderr"] == []
    cats_text = run_cli("categories", "--db", tmp_path / "f.db")
    assert "leaky: last stderr lines:\n  bad token ***\\u001b[2J" in cats_text.stderr

    doc = run_cli("doctor", "--db", tmp_path / "f.db", "--config", cfg, "--model", "none", "--json")
    checks = {(c["area"], c["name"]): c for c in doc.json["checks"]}
    assert "last stderr: fatal: cannot open configuration" in checks[("index", "server crashes")]["detail"]
    assert "bad token ***\\u001b[2J" in checks[("index", "server leaky")]["detail"]
    for out in (r, text, cats, cats_text, doc):
        assert secret not in out.stdout + out.stderr and "\x1b" not in out.stdout + out.stderr


def test_doctor_warns_of_a_stdio_script_that_does_not_exist(tmp_path):
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "here.py").write_text("")
    cfg = write_config(
        tmp_path / "d.json",
        {
            "gone": {"command": sys.executable, "args": [str(tmp_path / "dist" / "index.py")]},
            "relative": {"command": sys.executable, "args": ["srv/here.py"]},  # runs where toolidx runs
            "fine": {"command": sys.executable, "args": ["srv/here.py"], "cwd": "."},
            "package": {"command": sys.executable, "args": ["-m", "pkg.main", "--config=x.py", "@scope/a.js"]},
        },
    )
    doc = run_cli("doctor", "--db", tmp_path / "none.db", "--config", cfg, "--model", "none", "--json")
    checks = {c["name"]: c for c in doc.json["checks"] if c["area"] == "config"}
    gone = checks["server gone"]
    assert gone["status"] == "warn" and f"{tmp_path / 'dist' / 'index.py'}' does not exist" in gone["detail"]
    assert "fix the path in `args`" in gone["fix"]
    assert checks["server relative"]["status"] == "warn" and "add `cwd: .`" in checks["server relative"]["fix"]
    assert checks["server fine"]["status"] == "ok" and checks["server package"]["status"] == "ok"


# --- exit codes ---------------------------------------------------------------------------------
def test_exit_codes(tmp_path):
    ok = write_config(tmp_path / "ok.json", {"a": raw("ok")})
    assert crawl(ok, tmp_path / "1.db").code == 0
    failing = write_config(tmp_path / "f.json", {"a": raw("ok"), "b": raw("crash-start")})
    r = crawl(failing, tmp_path / "2.db")
    assert r.code == 1 and r.json["servers_ok"] == 1
    assert run_cli("crawl", "--config", tmp_path / "missing.json", "--db", tmp_path / "3.db").code == 2
    assert not (tmp_path / "3.db").exists()


def test_unset_variable_fails_that_server_only(tmp_path, monkeypatch):
    monkeypatch.delenv("SURELY_UNSET_VAR", raising=False)
    cfg = write_config(tmp_path / "u.json", {"a": raw("ok"), "b": raw("ok", env={"K": "${SURELY_UNSET_VAR}"})})
    r = crawl(cfg, tmp_path / "u.db")
    assert r.code == 1
    by = {s["server"]: s for s in r.json["servers"]}
    assert by["a"]["status"] == "ok"
    assert by["b"]["error"].startswith("environment variable(s) not set: SURELY_UNSET_VAR (set them where")


def test_only_named_servers_are_recrawled(tmp_path):
    cfg = write_config(tmp_path / "o.json", {"a": raw("ok"), "b": raw("ok", "--prefix", "b_")})
    db_path = tmp_path / "o.db"
    assert crawl(cfg, db_path).code == 0
    r = crawl(cfg, db_path, "--server", "b")
    assert r.code == 0 and [s["server"] for s in r.json["servers"]] == ["b"]
    assert r.json["tools"] == 6  # a's tools are kept
    unknown = crawl(cfg, db_path, "--server", "zzz")
    assert unknown.code == 2 and "zzz" in unknown.stderr


@pytest.mark.slow  # waits out a 0.5 s call timeout and a dying server, over three sessions
def test_live_connection_api_for_serve():
    """open_session/Connection as serve's execute_tool uses it: one connection, several calls."""
    import anyio

    from toolidx.crawl.config import build_config
    from toolidx.crawl.connect import BackendError, RemoteError, open_session

    spec = build_config({"mcpServers": {"s": raw("ok")}}, "t").servers[0]

    async def go():
        async with open_session(spec) as conn:
            assert conn.server_info == {"name": "rawmcp-ok", "title": "Raw MCP", "version": "1.0.0"}
            assert conn.protocol_version == "2025-06-18" and conn.capabilities["tools"]["listChanged"]
            tools, invalid = await conn.list_tools_raw()
            assert [t["name"] for t in tools] == ["tool_0", "tool_1", "tool_2"] and invalid == []
            r1 = await conn.call_tool("tool_1", {"path": "/x"}, timeout=5)
            assert r1 == {
                "content": [{"type": "text", "text": 'called tool_1 with {"path": "/x"}'}],
                "structuredContent": {"ok": True},
            }
            assert conn.alive
            with pytest.raises(RemoteError, match="Unknown tool: nope") as e:
                await conn.call_tool("nope", {}, timeout=5)
            assert e.value.code == -32602 and conn.alive  # an error answer, not a dead server
            assert "rawmcp starting" in conn.stderr_tail
        assert not conn.alive
        with pytest.raises(BackendError):
            await conn.call_tool("tool_1", {}, timeout=1)

    async def dying():
        async with open_session(spec) as conn:
            with pytest.raises(BackendError, match="timed out after 0.5 s"):
                await conn.call_tool("tool_0", {"sleep": 3}, timeout=0.5)
            with pytest.raises(
                BackendError, match=r"server closed the connection during tools/call tool_0 \(exit code 5\)"
            ):
                await conn.call_tool("tool_0", {"die": True}, timeout=5)
            assert not conn.alive

    async def caller_error():
        with pytest.raises(ValueError, match="mine"):  # not wrapped in the SDK's ExceptionGroups
            async with open_session(spec):
                raise ValueError("mine")

    anyio.run(go)
    anyio.run(dying)
    anyio.run(caller_error)


def test_open_session_failure_is_one_backend_error(tmp_path):
    import anyio

    from toolidx.crawl.config import build_config
    from toolidx.crawl.connect import BackendError, open_session

    spec = build_config({"mcpServers": {"s": raw("crash-start")}}, "t").servers[0]

    async def go():
        with pytest.raises(BackendError) as e:
            async with open_session(spec):
                pass
        assert str(e.value) == "server closed the connection during initialize (exit code 3)"
        assert "cannot open configuration" in e.value.stderr_tail

    anyio.run(go)


def test_relative_command_is_found_where_toolidx_runs(tmp_path, monkeypatch):
    import os

    monkeypatch.chdir(Path(sys.executable).parent.parent)  # e.g. the venv: command "bin/python"
    rel = os.path.relpath(sys.executable)
    assert os.sep in rel and not os.path.isabs(rel)
    (tmp_path / "elsewhere").mkdir()
    cfg = write_config(
        tmp_path / "r.json", {"s": {"command": rel, "args": [str(RAW)], "cwd": str(tmp_path / "elsewhere")}}
    )
    r = crawl(cfg, tmp_path / "r.db")
    assert r.code == 0, r.json["servers"][0]["error"]
