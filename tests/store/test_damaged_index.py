"""An index with a damaged page in the middle (#42 item 18, #45 item 4): `search` printed a
70-line traceback ("database disk image is malformed") and nothing on stdout even with --json,
while `list`, `describe` and `--mode keyword` went on. Every command that meets the damage says
one line naming the file and what to do (doctor, a copy restored, a crawl into a new file), exit
2, a JSON error with --json; `doctor` names the exact crawl. Through the real CLI, in a process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CATALOG_DATA

# every command is run on each damaged index; MUST_FAIL: those sure to read the damaged page (a
# vector page: a search by meaning; a page of `tools`: whatever reads every tool). The others may
# answer when they read no damaged page, or meet it: then the same one line.
COMMANDS = [
    ["search", "commit my changes"],
    ["search", "commit my changes", "--json"],
    ["search", "commit my changes", "--mode", "keyword"],
    ["search", "commit my changes", "--mode", "keyword", "--json"],
    ["list"],
    ["list", "--json"],
    ["describe", "git/git_commit"],
    ["describe", "git/git_commit", "--json"],
    ["similar", "git/git_commit"],
    ["categories"],
    ["stats"],
    ["audit"],
    ["diff", "--approved"],
    ["check", "--require", "git/git_commit"],
]
MUST_FAIL = {
    "tool_vectors_vector_chunks00": {
        "search commit my changes",
        "search commit my changes --json",
        "similar git/git_commit",
    },
    "tools": {"list", "list --json", "categories", "audit"},  # each reads every tool
}


def _toolidx(*args, model_path: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "toolidx", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TOOLIDX_MODEL_PATH": model_path},
    )


def _damage(db: Path, table: str) -> int:
    """Overwrite a page of `table` in the middle of its pages with garbage: which page, SQLite's
    dbstat says. Returns the page number."""
    from toolidx.store.sqlite.file import sqlite_module

    conn = sqlite_module().connect(db)
    pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", (table,))]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    page = pages[len(pages) // 2]
    with open(db, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(bytes((i * 151 + 7) % 256 for i in range(size)))
    return page


@pytest.fixture(scope="module")
def crawled(tmp_path_factory, model_path) -> Path:
    d = tmp_path_factory.mktemp("damaged")
    r = _toolidx("crawl", "--config", CATALOG_DATA / "servers.yaml", "--db", d / "whole.db", model_path=model_path)
    assert r.returncode == 0, r.stderr
    return d / "whole.db"


@pytest.mark.slow  # ~30 processes, a few with the model
@pytest.mark.parametrize("table", sorted(MUST_FAIL))
def test_every_command_that_meets_a_damaged_page_says_one_line(crawled, tmp_path, model_path, table, figure):
    db = tmp_path / "tools.db"
    shutil.copy(crawled, db)
    page = _damage(db, table)
    met = set()
    for args in COMMANDS:
        r = _toolidx(*args, "--db", db, model_path=model_path)
        said = " ".join(args)
        assert "Traceback" not in r.stderr, (said, r.stderr[-2000:])
        if r.returncode == 0 or (r.returncode == 1 and not any(w in r.stderr for w in ("corrupt", "malformed"))):
            continue  # this command reads no damaged page: it may answer (check: 1, a tools_file is not run)
        met.add(said)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (said, r.returncode, r.stderr[-2000:])
        assert lines[0].startswith(f"toolidx: error: {db}: corrupt or unreadable index"), (said, lines[0])
        assert f"toolidx doctor --db {db}" in lines[0] and "restore a copy" in lines[0], lines[0]
        new = tmp_path / "tools.new.db"
        assert f"toolidx crawl --config {CATALOG_DATA / 'servers.yaml'} --db {new} && mv {new} {db}" in lines[0]
        if "--json" in args:
            got = json.loads(r.stdout)
            assert got["command"] == "error" and got["code"] == "index_error" and got["where"] == str(db), got
    figure(f"page {page} of {table} damaged: commands that met it (one line, exit 2)", f"{len(met)} of {len(COMMANDS)}")
    assert MUST_FAIL[table] <= met, sorted(MUST_FAIL[table] - met)
    # doctor says what is damaged and the exact crawl that replaces the file
    r = _toolidx("doctor", "--db", db, "--model", "none", "--json", model_path=model_path)
    assert "Traceback" not in r.stderr and r.returncode == 1, r.stderr[-2000:]
    checks = {f"{c['area']}/{c['name']}": c for c in json.loads(r.stdout)["checks"]}
    integrity = checks["index/integrity"]
    assert integrity["status"] == "fail" and "quick_check" in integrity["detail"], integrity
    new = tmp_path / "tools.new.db"
    assert integrity["fix"] == (
        "restore a copy of the file, or crawl into a new one and move it over: "
        f"toolidx crawl --config {CATALOG_DATA / 'servers.yaml'} --db {new} && mv {new} {db}"
    ), integrity["fix"]
    # and that crawl, run as printed, gives a whole index
    r = _toolidx("crawl", "--config", CATALOG_DATA / "servers.yaml", "--db", new, model_path=model_path)
    assert r.returncode == 0, r.stderr
    os.replace(new, db)
    assert _toolidx("search", "commit my changes", "--db", db, model_path=model_path).returncode == 0


def test_serve_answers_a_damaged_page_with_an_index_error(crawled, tmp_path, model_path, embedder, caplog):
    """serve's meta-tools: an index_error naming neither the file nor a command the agent cannot run
    (the agent may be a token holder over HTTP); serve's log has the one line with both. Before:
    internal_error "DatabaseError: database disk image is malformed"."""
    import anyio
    from mcp import Client

    from toolidx.serve.server import build_server

    db = tmp_path / "tools.db"
    shutil.copy(crawled, db)
    srv = build_server(db, load_model=False)  # opened whole; the page is damaged under it
    srv.discovery.model.embedder, srv.discovery.model.state = embedder, "ready"
    _damage(db, "tool_vectors_vector_chunks00")

    async def main():
        async with Client(srv, mode="legacy") as c:
            return await c.call_tool("search_tools", {"query": "commit my changes"})

    with caplog.at_level("WARNING", logger="toolidx"):
        r = anyio.run(main)
    sc = r.structured_content
    assert r.is_error and sc["code"] == "index_error", sc
    assert "index is damaged (database disk image is malformed)" in sc["message"] and "toolidx doctor" in sc["fix"]
    assert str(db) not in json.dumps(sc)
    logged = [m for m in caplog.messages if "search_tools failed" in m]
    assert logged and str(db) in logged[0] and f"toolidx doctor --db {db}" in logged[0], caplog.messages


def test_v1_search_answers_a_damaged_page_with_an_index_error(crawled, tmp_path, model_path):
    """`/v1/search` of `serve --http` as the meta-tools: 503 with an index_error naming neither the
    file nor a command; serve's log has the one line with both (it answered a generic 500)."""
    import urllib.error
    import urllib.request

    from conftest import listening_url

    db = tmp_path / "tools.db"
    shutil.copy(crawled, db)
    err = tmp_path / "serve.err"
    with open(err, "w") as errf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolidx", "serve", "--db", str(db), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errf,
            env={**os.environ, "TOOLIDX_MODEL_PATH": model_path},
        )
    try:
        base = listening_url(proc, err)
        _damage(db, "tool_vectors_vector_chunks00")
        try:
            with urllib.request.urlopen(f"{base}/v1/search?q=commit+my+changes&mode=semantic", timeout=60) as r:
                status, body = r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            status, body = e.code, json.loads(e.read())
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert status == 503 and body["code"] == "index_error", (status, body)
    assert "index is damaged" in body["message"] and "toolidx doctor" in body["fix"]
    assert str(db) not in json.dumps(body)
    assert f"toolidx doctor --db {db}" in err.read_text()
