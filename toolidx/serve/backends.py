"""Live connections to the real MCP servers behind `execute_tool`: started on first use, kept and
reused, restarted when they die, closed on shutdown.

Each connection lives in its own task for its whole life: the MCP client holds anyio task groups
that must be entered and left by the same task, while calls arrive from request tasks. A request
task only sends on the connection's streams, which is allowed from any task.

Specs come from the crawl config stored with the index (or `--config`), loaded at each (re)start
so that secrets are read from the environment at run time and never stored. When the config file
is gone, the spec is rebuilt from what the index stored (`servers.connect`: command, args, url and
the *names* of env vars / headers, resolved from the environment).

An index file may come from elsewhere (a merged shard, a download), and its launch lines say which
command runs and which secrets it reads. So without --config, the config the index names and the
index's own record are used only when a crawl on this machine vouched for them (store/trust.py),
or when the user passed --trust-index; otherwise the start is refused with what to do.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from ..core.errors import BaseExceptionGroup, ToolidxError
from ..core.servers import FOLDER_VAR, ServerSpec, launch_hash, relative_with_folder, stderr_lines
from ..crawl.config import build_config, expand, load_config

log = logging.getLogger("toolidx")

STOP_GRACE_S = 5.0


class BackendUnavailable(Exception):
    """A backend cannot be started or reached. `str()` is a one-line reason for the agent;
    `timed_out`: the call ran past its timeout (the backend may still be fine); `fix`: what to do
    about what happened (a refusal by a live server is not cured by a restart), or None."""

    def __init__(self, message: str | None, timed_out: bool = False, fix: str | None = None):
        super().__init__(message)
        self.timed_out = timed_out
        self.fix = fix


# what an agent can do, by what happened (execute's answer says it with the reason)
FIX_REFUSED = (
    "the server is running and answered this call with an error: check the arguments "
    "(describe_tool); an error of the network or of a service behind the server may pass, so "
    "retry later only for that; else tell the user the tool failed"
)
FIX_RESTARTED = "try again: the server process ended and is started afresh on the next call"
FIX_TIMED_OUT = "try again with a longer timeout, or a smaller request"
FIX_CONFIG = "the server's entry cannot start as configured (the reason above): tell the user; retries fail alike"
FIX_NOT_STARTED = "the server did not start (the reason above): tell the user; a retry only starts it again"
FIX_TOO_LARGE = "ask the tool for less (a smaller page, range or file), or tell the user its answer is too large"


# --- where specs come from ------------------------------------------------------------------------
def spec_from_index(name: str, server_row: dict, environ: dict[str, str] | None = None) -> ServerSpec:
    """Rebuild a spec from the index's `servers.connect`: `env` as the crawl config wrote it where
    that was kept (templates, paths, flags), expanded here; an env value the index holds only by
    name (a literal secret) cannot be rebuilt, and the spec says to pass --config. An index from
    before `env` was kept gives names only, read from the environment as before."""
    c = server_row.get("connect") or {}
    entry: dict[str, Any] = {"type": c.get("transport") or server_row.get("transport")}
    for key in ("command", "args", "cwd", "url", "tools_file", "timeout"):
        if c.get(key) not in (None, [], ""):
            entry[key] = c[key]
    if isinstance(c.get("env"), dict):
        entry["env"] = dict(c["env"])
        if c.get("env_file"):
            entry["envFile"] = c["env_file"]
    elif c.get("env_keys"):
        entry["env"] = {k: "${" + k + "}" for k in c["env_keys"]}
    if c.get("header_keys"):
        entry["headers"] = {k: "${" + k + "}" for k in c["header_keys"]}
    cfg = build_config({"mcpServers": {name: entry}}, f"index entry for {name!r}", environ=environ)
    spec = cfg.servers[0]
    if "***" in str(entry.get("url") or "") and not spec.problem:
        spec.problem = (
            "the index keeps no secret from the URL's query: start serve with --config naming the crawl config"
        )
    if c.get("env_secret") and not spec.problem:
        spec.problem = (
            f"the index keeps only the name of env {', '.join(map(str, c['env_secret']))} (a value "
            "written in the crawl config, treated as a secret): pass --config naming that config"
        )
    return spec


def untrusted_message(name: str, connect: Any, db_path: str | None) -> str:
    """The one-line refusal of a launch line that only the index vouches for."""
    what = connect.get("command") or connect.get("url") if isinstance(connect, dict) else None
    shown = f" ({str(what)[:80]!r})" if what else ""
    return (
        f"not starting server {name!r}: its launch line{shown} comes from the index"
        f"{' ' + db_path if db_path else ''}, and no crawl on this machine wrote it: pass --config naming a config "
        "that defines it, or --trust-index to run what this index says"
    )


def launch_relative(connect: Any, environ: Any) -> str | None:
    """What in a stored launch line (`servers.connect`) depends on the folder it is opened from, or
    None. A crawl stores the line pinned (absolute cwd, command and envFile, `${PWD}` substituted);
    an index crawled before (`cwd: "."`, no cwd with `python server.py`), or a forged one, rebuilt
    in the caller's folder would run whatever that folder holds, so it is not run at all. A path
    kept as a `${VAR}` template must still be absolute once expanded here."""
    c = connect if isinstance(connect, dict) else {}
    if c.get("transport") != "stdio":
        return None

    def here(v: Any) -> str:
        return expand(v, environ)[0] if isinstance(v, str) and "${" in v else v

    cwd, command, env_file = c.get("cwd"), c.get("command"), c.get("env_file")
    if not isinstance(cwd, str) or not os.path.isabs(here(cwd)):
        return f"working folder {cwd!r}" if cwd else "no working folder"
    if isinstance(command, str) and relative_with_folder(here(command)):
        return f"command {command!r}"
    if isinstance(env_file, str) and not os.path.isabs(here(env_file)):
        return f"envFile {env_file!r}"
    env = c.get("env")
    kept = list(env.values()) if isinstance(env, dict) else []
    for v in [cwd, command, *(c.get("args") or []), *kept, env_file]:
        found = FOLDER_VAR.search(v) if isinstance(v, str) else None
        if found:
            return found.group(0)
    return None


def relative_message(name: str, relative: str, db_path: str | None) -> str:
    """The one-line refusal of a launch line that means something else in each folder."""
    return (
        f"not starting server {name!r}: its launch line in the index{' ' + db_path if db_path else ''} "
        f"depends on the folder it is opened from ({relative[:80]}: crawled before launch lines were "
        "pinned), and is never resolved against this folder: crawl its config again, or pass "
        "--config naming that config"
    )


def _existing(path: str, near: str | None) -> Path | None:
    p = Path(path).expanduser()
    if p.is_file():
        return p
    if not p.is_absolute() and near:
        q = Path(near).resolve().parent / p
        if q.is_file():
            return q
    return None


@dataclass
class SpecSource:
    """Finds the spec of a server: `--config`, else the config the index was crawled from, else the
    index's own record. `server_row(name)` reads the index (None: not there)."""

    server_row: Callable[[str], dict | None]
    config_path: str | None = None  # --config: explicit, so a missing file is an error
    index_config_path: Callable[[], str | None] = lambda: None
    db_path: str | None = None
    environ: dict[str, str] | None = None
    trust_index: bool = False  # --trust-index: run the index's launch lines though no crawl here wrote them

    def spec(self, name: str) -> tuple[ServerSpec, str]:
        """(spec, where it came from). Raises BackendUnavailable, also for a launch line no config
        the user named holds (see the module docstring)."""
        from ..store.trust import trusted_config, trusted_launch

        env = os.environ if self.environ is None else self.environ
        try:
            if self.config_path:
                cfg = load_config(self.config_path, environ=dict(env))
                return self._pick(cfg, name), cfg.path or self.config_path
            stored = self.index_config_path()
            found = _existing(stored, self.db_path) if stored else None
            if found is not None and (self.trust_index or trusted_config(found)):
                cfg = load_config(found, environ=dict(env))
                if any(s.name == name for s in cfg.servers):
                    spec = self._pick(cfg, name)
                    if spec.transport == "stdio" and not spec.raw.get("cwd"):
                        spec.cwd = self._crawled_in(name, env)  # not the folder serve happens to run in
                    return spec, str(found)
            row = self.server_row(name)
            if row is None:
                raise BackendUnavailable(f"server {name!r} is not in the index")
            connect = row.get("connect") or {}
            if not self.trust_index and not trusted_launch(launch_hash(connect)):
                raise BackendUnavailable(untrusted_message(name, connect, self.db_path))
            relative = launch_relative(connect, env)
            if relative:  # even with --trust-index: its meaning would be this folder's, not the index's
                raise BackendUnavailable(relative_message(name, relative, self.db_path))
            return spec_from_index(name, row, dict(env)), "index"
        except ToolidxError as e:
            raise BackendUnavailable(f"cannot read how to start {name!r}: {e}") from None

    def _crawled_in(self, name: str, env: Any) -> str:
        """The folder the crawl ran `name` in, for a config that names no `cwd` (the server ran where
        toolidx ran): from the index's pinned launch line, when this machine's crawl wrote it."""
        from ..store.trust import trusted_launch

        row = self.server_row(name) or {}
        connect = row.get("connect") or {}
        relative = launch_relative(connect, env) if connect else "no launch line"
        if relative is None and (self.trust_index or trusted_launch(launch_hash(connect))):
            return expand(connect["cwd"], env)[0]
        index = f"the index {self.db_path}" if self.db_path else "the index"
        raise BackendUnavailable(
            f"not starting server {name!r}: its config names no cwd, and {index} holds no folder a crawl on "
            "this machine ran it in (it would run in whatever folder serve runs in): crawl its config again, "
            "or pass --config naming it"
        )

    @staticmethod
    def _pick(cfg: Any, name: str) -> ServerSpec:
        for s in cfg.servers:
            if s.name == name:
                return s
        raise BackendUnavailable(f"server {name!r} is not in the config {cfg.path}")


# --- one connection -------------------------------------------------------------------------------
@dataclass
class _Backend:
    spec: ServerSpec
    conn: Any = None
    error: str | None = None
    started_at: float = field(default_factory=time.monotonic)
    ready: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    tails: list[str] = field(default_factory=list)  # the server's stderr, once its session is over

    async def run(self) -> None:
        from ..crawl.connect import open_session

        try:
            async with open_session(self.spec, tail_out=self.tails) as conn:
                self.conn = conn
                self.ready.set()
                await self.stop.wait()
        except Exception as e:  # a dead server surfaces here (often as an ExceptionGroup)
            self.error = self.spec.mask(_one_line(e))
            if self.conn is not None and not self.stop.is_set():
                log.warning(f"backend {self.spec.name!r} closed: {self.error}")
        finally:
            self.ready.set()
            self.done.set()

    @property
    def usable(self) -> bool:
        return self.conn is not None and not self.done.is_set() and bool(self.conn.alive)

    def stderr_tail(self) -> str:
        tail = self.spec.mask(getattr(self.conn, "stderr_tail", "") or "") or ""
        return tail.strip().splitlines()[-1][:300] if tail.strip() else ""


def _one_line(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_one_line(x) for x in e.exceptions[:3])
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# --- the pool -------------------------------------------------------------------------------------
class BackendPool:
    """`async with BackendPool(source) as pool: await pool.call(server, tool, args, timeout)`."""

    def __init__(self, source: SpecSource):
        self.source = source
        self._backends: dict[str, _Backend] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._starts: dict[str, int] = {}
        self._tg: Any = None

    async def __aenter__(self) -> BackendPool:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            # shielded: a shutdown by signal arrives as a cancellation, and the backends must still
            # be stopped, all at once (each in about 1 s: crawl/supervisor.py; bounded by STOP_GRACE_S)
            with anyio.CancelScope(shield=True):
                await self.close_all()
        finally:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)

    async def close_all(self) -> None:
        async with anyio.create_task_group() as tg:
            for b in list(self._backends.values()):
                tg.start_soon(self._stop, b)
        self._backends.clear()

    @staticmethod
    async def _stop(b: _Backend) -> None:
        b.stop.set()
        with anyio.move_on_after(STOP_GRACE_S):
            await b.done.wait()

    async def connection(self, server: str) -> Any:
        """A live connection to `server`, started or restarted as needed."""
        lock = self._locks.setdefault(server, anyio.Lock())
        async with lock:
            b = self._backends.get(server)
            if b is not None and b.usable:
                return b.conn
            restarting = b is not None
            if b is not None:
                await self._stop(b)
            spec, where = self.source.spec(server)
            if spec.problem:
                # a config problem (an unset variable, a refused entry): the same call fails the same way
                raise BackendUnavailable(f"cannot start server {server!r}: {spec.problem}", fix=FIX_CONFIG)
            if spec.transport == "tools_file":
                raise BackendUnavailable(
                    f"server {server!r} is a saved tool list (tools_file), not a live server: its tools cannot be run"
                )
            b = _Backend(spec)
            self._backends[server] = b
            self._tg.start_soon(b.run)
            with anyio.move_on_after(spec.timeout + STOP_GRACE_S):
                await b.ready.wait()
            if b.conn is None:
                b.stop.set()
                self._backends.pop(server, None)
                said = stderr_lines(b.tails[-1] if b.tails else None, spec.mask)  # why it died, in its words
                raise BackendUnavailable(
                    spec.mask(
                        f"server {server!r} did not start "
                        f"({b.error or 'timed out'}; spec from {where})"
                        + (f"; last stderr: {' | '.join(said)}" if said else "")
                    ),
                    fix=FIX_NOT_STARTED,
                )
            self._starts[server] = self._starts.get(server, 0) + 1
            if restarting:
                log.warning(f"backend {server!r} restarted")
            return b.conn

    async def call(self, server: str, tool: str, arguments: dict, timeout: float) -> dict:
        """The CallToolResult as wire JSON. Raises BackendUnavailable (with the server's last
        stderr line when it died)."""
        from ..crawl.connect import ANSWER_OVER_LIMIT, MAX_ANSWER_BYTES, BackendError, RemoteError

        conn = await self.connection(server)
        try:
            return await conn.call_tool(tool, arguments, timeout)
        except RemoteError as e:
            if e.data == ANSWER_OVER_LIMIT:  # drained unread by the transport, not the server's error
                raise BackendUnavailable(
                    f"server {server!r} answered {tool} with over {MAX_ANSWER_BYTES >> 20} MiB on one line: "
                    "not read (toolidx's limit per answer)",
                    fix=FIX_TOO_LARGE,
                ) from None
            raise BackendUnavailable(
                conn.spec.mask(f"server {server!r} refused the call: {e}"), fix=FIX_REFUSED
            ) from None
        except BackendError as e:
            b = self._backends.get(server)
            dead = b is not None and not b.usable
            msg = f"server {server!r} failed during the call: {e}"
            code = await conn.exit_code_soon(0.5) if dead else None
            if code is not None and "exit code" not in msg:
                msg += f" (exit code {code})"
            tail = b.stderr_tail() if b is not None else ""
            if dead:
                msg += " (the server process ended; it is restarted on the next call)"
            if tail:
                msg += f"; its last stderr line: {tail}"
            timed_out = str(e).startswith("timed out")
            raise BackendUnavailable(
                conn.spec.mask(msg),
                timed_out=timed_out,
                fix=FIX_RESTARTED if dead else FIX_TIMED_OUT if timed_out else None,
            ) from None

    def status(self) -> dict[str, dict]:
        return {
            name: {"alive": b.usable, "starts": self._starts.get(name, 0), "error": b.error}
            for name, b in self._backends.items()
        }
