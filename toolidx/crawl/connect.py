"""MCP client connections (stdio, Streamable HTTP, SSE) for crawl and for serve's execute_tool.

Why not the SDK's high-level `Client`: it probes `server/discover` first (up to 10 s against
servers that ignore unknown methods), has no stderr capture, and validates whole `tools/list`
pages, so ONE spec-invalid tool would lose a server's valid ones. Here the legacy `initialize`
handshake runs on a `ClientSession`, and `initialize`, `tools/list` and `tools/call` are sent as
raw JSON-RPC so results are kept as sent (wire JSON) and tools are validated one by one
(`tooldoc.validate_tool`).

Imports mcp (~1 s): only crawl (for live servers) and serve import this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar, Token
from typing import Any, TextIO, cast

import anyio
import anyio.abc

from .. import __version__
from ..core.errors import BaseExceptionGroup
from ..core.servers import ServerResult, ServerSpec
from ..core.tooldoc import fix_strings, json_depth, validate_tool

log = logging.getLogger("toolidx")

STDERR_TAIL_BYTES = 4096
MAX_PAGES = 10_000  # a server whose cursors never end is reported, not followed forever

# Besides the SDK's minimal set (HOME, LOGNAME, PATH, SHELL, TERM, USER), the variables a server
# needs to behave like it does in a terminal: locale, temp dir, time zone, proxies and CA bundles.
# The rest of our environment (tokens!) is not passed: like Claude Desktop, a server gets the
# minimal environment plus its configured `env`.
PASS_ENV = (
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TZ",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "XDG_RUNTIME_DIR",
)

# The SDK logs a traceback for every junk line a server prints on stdout, and logs under "client"
# and "mcp.*". Without a handler of its own, Python's last-resort handler would put those on our
# stderr, in the middle of the progress display. A NullHandler keeps them out unless the user
# configures logging.
for _name in ("mcp", "client", "httpx2", "httpx"):
    logging.getLogger(_name).addHandler(logging.NullHandler())
    logging.getLogger(_name).propagate = False


class BackendError(Exception):
    """The server could not be reached or used: transport failure, timeout, server death."""


class RemoteError(BackendError):
    """The server answered a request with a JSON-RPC error. The connection is still usable."""

    def __init__(self, message: str, code: int | None = None, data: Any = None):
        super().__init__(message)
        self.code, self.data = code, data


# --- the server process, for its exit code ------------------------------------------------------
# The SDK's stdio transport owns the process and does not expose it; its exit code is the most
# useful fact about a server that dies at start. The spawn function is wrapped (once) to hand the
# process to whoever set `_spawned` in this task's context, and to start those servers (toolidx's
# own, not another user of the SDK in this process) under the supervisor (supervisor.py), which
# stops all a server started when toolidx stops it or dies.
_spawned: ContextVar[list | None] = ContextVar("toolidx_spawned", default=None)


def _install_spawn_hook() -> None:
    import mcp.client.stdio as stdio

    orig = getattr(stdio, "_create_platform_compatible_process", None)
    if orig is None or getattr(orig, "_toolidx_hook", False):
        return  # a future SDK without this seam: exit codes are just not reported

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        holder = _spawned.get()
        if holder is not None and _can_supervise():
            process = await _spawn_supervised(*args, **kwargs)
        else:
            process = await orig(*args, **kwargs)
        _cap_stdout(process)
        holder = _spawned.get()
        if holder is not None:
            holder.append(process)
        return process

    spawn._toolidx_hook = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = spawn


# --- the supervisor each stdio server runs under -------------------------------------------------
SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")
_lifeline_lock = threading.Lock()
_lifeline: list[int] = []  # [read end, write end]: the write end is held by this process alone, for life
_supervised: set[int] = set()  # pids of the supervisors started and not yet stopped


def _can_supervise() -> bool:
    return sys.platform != "win32" and bool(sys.executable) and os.path.isfile(SUPERVISOR)


def _lifeline_fd() -> int:
    """The read end of the pipe whose end of file tells each supervisor that this process died.
    Both ends are close-on-exec: no other child holds the write end open after this process."""
    with _lifeline_lock:
        if not _lifeline:
            _lifeline.extend(os.pipe())
        return _lifeline[0]


def _forget_lifeline() -> None:
    """In a forked child: the parent's pipe is not this process's life (and would keep the parent's
    supervisors waiting on this child's end)."""
    for fd in _lifeline:
        with contextlib.suppress(OSError):
            os.close(fd)
    _lifeline.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_lifeline)


async def _spawn_supervised(
    command: str, args: list[str], env: dict[str, str] | None = None, errlog: TextIO = sys.stderr, cwd: Any = None
) -> Any:
    """What the SDK's `_create_platform_compatible_process` does (a process in a session of its
    own, piped stdin/stdout, stderr to `errlog`), with the supervisor in between: the process the
    SDK gets is the supervisor, which exits as the server does. A server that cannot be started
    raises the OSError its own start would have (FileNotFoundError: command not found, ...)."""
    status_r, status_w = os.pipe()
    try:
        process = await anyio.open_process(
            [sys.executable, "-I", "-S", SUPERVISOR, str(_lifeline_fd()), str(status_w), command, *args],
            env=env,
            stderr=errlog,
            cwd=cwd,
            start_new_session=True,
            pass_fds=(_lifeline[0], status_w),
        )
    finally:
        os.close(status_w)
    try:
        said = await anyio.to_thread.run_sync(_read_all, status_r, abandon_on_cancel=True)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _discard(process)
        raise
    if said == b"0":
        _supervised.add(process.pid)
        return process
    await _discard(process)
    if said.isdigit():
        code = int(said)
        raise OSError(code, os.strerror(code), command)
    raise OSError(f"the supervisor of {command!r} did not start (exit code {process.returncode})")


def _read_all(fd: int) -> bytes:
    try:
        chunks = []
        while chunk := os.read(fd, 64):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


async def _discard(process: Any) -> None:
    """A supervisor whose server will not be used: stopped as any, then its pipes closed."""
    import signal

    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 1.0)):
        if process.returncode is None:
            with contextlib.suppress(OSError):
                os.kill(process.pid, sig)
        with anyio.move_on_after(wait):
            await process.wait()
    with contextlib.suppress(Exception):
        await process.stdout.aclose()


async def _stop_supervised(process: Any) -> None:
    """The stop, as soon as the session is over: the server's stdin closed, its supervisor told to
    stop (the server then gets EOF_GRACE_S to exit on that EOF, then SIGTERM, then SIGKILL, every
    process it started with it; supervisor.py). The SDK's own stop, which follows, then finds it
    gone in about 1.5 s at most, not after its 2 s + 2 s (a serve stopped by its client has 2 s)."""
    import signal

    if process.pid not in _supervised:
        return  # the SDK's own start (Windows): its stop as it is
    _supervised.discard(process.pid)
    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    if process.returncode is None:
        with contextlib.suppress(OSError):
            os.kill(process.pid, signal.SIGTERM)


# --- a server's answers, one line each, capped ------------------------------------------------------
# The SDK reads a server's stdout by appending each chunk to the line so far (quadratic): one 120 MiB
# line took the whole call timeout and held the event loop, every other serve client with it. Lines
# reach the SDK whole (no copy per chunk) and at most MAX_ANSWER_BYTES long; a longer one is drained
# unread and replaced by a JSON-RPC error for its request id, so the call fails at once.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
ANSWER_OVER_LIMIT = "answer_over_limit"  # the refusal's error data: BackendPool tells it from the server's


def _cap_stdout(process: Any) -> None:
    """Read the server's stdout through _CappedLines. The SDK needs the process object itself (it
    checks its type before killing it), so the stream is swapped inside it: anyio's asyncio Process
    keeps it in `_stdout`, behind its `stdout` property. Another backend, or Windows: uncapped."""
    inner = getattr(process, "_stdout", None)
    if inner is not None and sys.platform != "win32":
        process._stdout = _CappedLines(inner)


class _CappedLines(anyio.abc.ByteReceiveStream):
    """A server's stdout handed on in whole lines of at most MAX_ANSWER_BYTES (see above)."""

    def __init__(self, inner: Any, cap: int = MAX_ANSWER_BYTES):
        self._inner, self._cap = inner, cap
        self._held: list[bytes] = []  # the line so far
        self._size = 0
        self._over = False  # draining a line over the cap
        self._refused = False  # its refusal already handed on
        self._head = b""
        self._tail = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            out = self._feed(await self._inner.receive())
            if out:
                return out

    def _feed(self, chunk: bytes) -> bytes:
        out: list[bytes] = []
        while chunk:
            nl = chunk.find(b"\n")
            part, chunk = (chunk, b"") if nl < 0 else (chunk[: nl + 1], chunk[nl + 1 :])
            if not self._over:
                self._held.append(part)
                self._size += len(part)
                if self._size > self._cap:
                    self._over, self._refused = True, False
                    self._head = b"".join(self._held)[:4096]
                    self._held, self._size = [], 0
                    out.append(self._refusal(self._head))
                elif nl >= 0:
                    out.append(b"".join(self._held))
                    self._held, self._size = [], 0
            if self._over:
                self._tail = (self._tail + part[-300:])[-300:]
                if nl >= 0:
                    if not self._refused:  # its id was not at the start: perhaps at the end
                        out.append(self._refusal(self._head + b" " + self._tail))
                    self._over, self._head, self._tail = False, b"", b""
        return b"".join(out)

    def _refusal(self, seen: bytes) -> bytes:
        import json

        rid = request_id_of(seen.decode("utf-8", errors="replace"))
        if rid is None:
            return b""
        self._refused = True
        log.warning(f"a server answer over {self._cap >> 20} MiB was not read")
        error = {
            "code": -32603,
            "message": f"the server's answer is over {self._cap >> 20} MiB on one line (toolidx's limit): not read",
            "data": ANSWER_OVER_LIMIT,
        }
        return (json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + "\n").encode()

    async def aclose(self) -> None:
        await self._inner.aclose()

    @property
    def extra_attributes(self) -> Any:
        return self._inner.extra_attributes


# --- what a server leaves behind ------------------------------------------------------------------
# The supervisor (supervisor.py) stops every process a server started, with it. Should it be gone
# (killed by the SDK's SIGKILL to its group after 2 s + 2 s, or not used: Windows), the server's
# descendants noted before the stop are ended here after it (an npx -> node chain whose node ignores
# EOF, a browser it launched in a group of its own); on Windows the SDK's Job Object does it.
END_GRACE_S = 2.0


def _descendants(pid: int) -> list[tuple[int, str]]:
    from .supervisor import descendants

    return descendants(pid) if sys.platform != "win32" else []


def _same(pid: int, started: str) -> bool:
    from .supervisor import same

    return same(pid, started)


async def _end_processes(tree: list[tuple[int, str]]) -> None:
    """SIGTERM what is left of `tree`, SIGKILL what is left of that after END_GRACE_S."""
    import signal

    left = [(p, t) for p, t in tree if _same(p, t)]
    if not left:
        return
    with anyio.CancelScope(shield=True):  # a shutdown by signal arrives as a cancellation
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p, _ in left:
                with contextlib.suppress(OSError):
                    os.kill(p, sig)
            with anyio.move_on_after(END_GRACE_S):
                while left:
                    await anyio.sleep(0.02)
                    left = [(p, t) for p, t in left if _same(p, t)]
            if not left:
                return


# --- stderr capture -----------------------------------------------------------------------------
class _StderrFile:
    """A temp file the server's stderr goes to (the SDK needs a real file descriptor).

    Opened in append mode: the child shares the file offset, and O_APPEND keeps its writes at the
    end while we seek around to read the tail."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="toolidx-stderr-")
        os.close(fd)
        self.file = open(self.path, "a+b")  # noqa: SIM115 - closed in close()
        if sys.platform != "win32":
            os.unlink(self.path)  # nothing left behind, even if we are killed

    def tail(self, limit: int = STDERR_TAIL_BYTES) -> str:
        try:
            self.file.flush()
            size = os.fstat(self.file.fileno()).st_size
            self.file.seek(max(0, size - limit))
            data = self.file.read()
        except (OSError, ValueError):
            return ""
        text = data.decode("utf-8", errors="replace")
        if size > limit and "\n" in text:
            text = text.split("\n", 1)[1]  # start at a line boundary
        return text.strip()

    def close(self) -> None:
        try:
            self.file.close()
            if sys.platform == "win32":
                os.unlink(self.path)
        except OSError:
            pass


# --- errors -------------------------------------------------------------------------------------
def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in _leaves(e)]
    return [exc]


def _one_reason(exc: BaseException, spec: ServerSpec, phase: str, exit_code: int | None) -> str:
    """Nested ExceptionGroups from the SDK's task groups, flattened to the one fact that helps."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    leaves = [e for e in _leaves(exc) if not isinstance(e, anyio.get_cancelled_exc_class())] or [exc]

    def rank(e: BaseException) -> int:  # the most specific cause first
        if isinstance(e, (FileNotFoundError, PermissionError, NotADirectoryError)):
            return 0
        if isinstance(e, MCPError) and e.code != CONNECTION_CLOSED:
            return 1
        if isinstance(e, (TimeoutError,)):
            return 2
        if isinstance(e, MCPError):
            return 4
        return 3

    e = sorted(leaves, key=rank)[0]
    exited = f" (exit code {exit_code})" if exit_code is not None else ""
    if isinstance(e, FileNotFoundError):
        if spec.transport == "stdio" and spec.cwd and not os.path.isdir(spec.cwd):
            return f"working directory not found: {spec.cwd}"
        return f"command not found: {spec.command}"
    if isinstance(e, PermissionError):
        return f"cannot run {spec.command}: permission denied"
    if isinstance(e, NotADirectoryError):
        return f"cannot start {spec.command}: {e.strerror}"
    if isinstance(e, MCPError):
        if e.code == CONNECTION_CLOSED:
            return f"server closed the connection during {phase}{exited}"
        if e.code == REQUEST_TIMEOUT:
            return f"timed out after {spec.timeout:g} s during {phase}"
        return f"{phase} failed: server error {e.code}: {e.message}"
    if isinstance(e, TimeoutError):
        return f"timed out after {spec.timeout:g} s during {phase}"
    name = type(e).__name__
    if name == "ValidationError":
        first = str(e).splitlines()
        return f"{phase} failed: invalid response ({first[0] if first else 'validation error'})"
    if name.startswith(("ConnectError", "ConnectTimeout")):
        return f"cannot connect to {_url_for_error(spec)}: {e or name}"
    if name == "HTTPStatusError":
        status = getattr(getattr(e, "response", None), "status_code", "?")
        return f"{phase} failed: HTTP {status} from {_url_for_error(spec)}"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else name
    if spec.transport == "stdio" and exit_code is not None:
        return f"{phase} failed: {msg}{exited}"
    return f"{phase} failed: {name}: {msg}" if msg != name else f"{phase} failed: {name}"


def _url_for_error(spec: ServerSpec) -> str:
    # as written (an expanded ${TOKEN} stays hidden), query values masked
    return spec.mask(str(spec.raw.get("url") or spec.url)) or ""


def scrub(text: str | None, spec: ServerSpec) -> str | None:
    """Mask the server's secrets (`ServerSpec.mask`) in text that is going to be stored or shown."""
    return spec.mask(text)


# --- messages the SDK's parser rejects -----------------------------------------------------------
MAX_LINE_DEPTH = 900  # deeper than this a message is answered with a parse error for its request


class _Reparse(anyio.abc.ObjectReceiveStream):
    """The transport's read stream, with a second chance for messages the SDK's JSON parser
    rejects although they are valid JSON: nested deeper than its limit (~200) or holding a lone
    surrogate (`\\ud800`). The SDK turns such a line into an exception and the request waits
    for its timeout, so one deep or odd tool would lose a whole `tools/list` page. Here the line
    is parsed again by Python's json (surrogates are then fixed by `fix_strings`, deep tools
    rejected one by one by `validate_tool`); a line even Python cannot read becomes a JSON-RPC
    error for its request id, so the request fails at once with the reason."""

    def __init__(self, inner: Any):
        self._inner = inner

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        item = await self._inner.receive()
        if isinstance(item, Exception):
            return _reparse(item) or item
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close:
            close()


def rejected_line(exc: Exception) -> str | None:
    """The line the SDK's JSON parser rejected, from its ValidationError (None: another error)."""
    errors = getattr(exc, "errors", None)
    try:
        first = errors()[0] if callable(errors) else None
    except Exception:
        return None
    if not first or first.get("type") != "json_invalid" or not isinstance(first.get("input"), str):
        return None
    return first["input"]


def request_id_of(line: str) -> int | str | None:
    """The JSON-RPC id of a message too deep (or too long) to parse: the top-level "id" before
    the body, or at its very end (None when not found)."""
    import json
    import re

    rid_rx = r'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
    head = re.split(r'"(?:result|error|params)"\s*:', line[:100_000], maxsplit=1)[0]
    m = re.search(rid_rx, head) or re.search(rid_rx + r"\s*\}\s*$", line[-300:])
    return json.loads(m.group(1)) if m else None


def _reparse(exc: Exception) -> Any:
    import json

    import mcp_types as types
    from mcp.shared.message import SessionMessage

    line = rejected_line(exc)
    if line is None:
        return None
    try:
        obj = json.loads(line)
        if not isinstance(obj, dict):
            return None
        if json_depth(obj, MAX_LINE_DEPTH) > MAX_LINE_DEPTH:
            raise RecursionError
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(obj, by_name=False))
    except RecursionError:
        rid = request_id_of(line)
        if rid is None:
            return None
        return SessionMessage(
            types.JSONRPCError(
                jsonrpc="2.0",
                id=rid,
                error=types.ErrorData(
                    code=-32700, message=f"the server's answer nests deeper than {MAX_LINE_DEPTH} levels: not read"
                ),
            )
        )
    except Exception:
        return None


# --- the connection -----------------------------------------------------------------------------
def child_env(spec: ServerSpec) -> dict[str, str]:
    """What the server process gets: the SDK's minimal set + PASS_ENV + the configured `env`."""
    env = {k: os.environ[k] for k in PASS_ENV if os.environ.get(k)}
    env.update(spec.env)
    return env


class Connection:
    """One live, initialized MCP session. Made by `open_session`; valid inside its `async with`."""

    def __init__(self, spec: ServerSpec, session: Any, stderr: _StderrFile | None, processes: list, phase: list[str]):
        self.spec = spec
        self._session = session
        self._stderr = stderr
        self._processes = processes
        self._phase = phase
        self._closed = False
        self.server_info: dict = {}
        self.protocol_version: str | None = None
        self.instructions: str | None = None
        self.capabilities: dict = {}

    @property
    def stderr_tail(self) -> str:
        """The server's last stderr, secrets masked (it may log the token it was given)."""
        return self.spec.mask(self._stderr.tail() if self._stderr else "") or ""

    @property
    def exit_code(self) -> int | None:
        return self._processes[0].returncode if self._processes else None

    async def exit_code_soon(self, within: float = 1.0) -> int | None:
        """The exit code of a server that just closed its stdout (it may not be reaped yet)."""
        if not self._processes:
            return None
        with anyio.move_on_after(within):
            while self._processes[0].returncode is None:
                await anyio.sleep(0.02)
        return self._processes[0].returncode

    @property
    def alive(self) -> bool:
        return not self._closed and self.exit_code is None

    async def _request(
        self, method: str, params: dict | None, timeout: float | None, raw_opts: dict | None = None
    ) -> dict:
        """A raw JSON-RPC request: the result dict exactly as the server sent it."""
        opts: dict[str, Any] = dict(raw_opts or {})
        if timeout is not None:
            opts["timeout"] = timeout
        if method == "initialize":  # before the handshake there is nothing to stamp
            return await self._session._dispatcher.send_raw_request(method, params, opts)
        data: dict[str, Any] = {"method": method, "params": dict(params or {})}
        # The session's stamp adds what the negotiated protocol needs (e.g. the
        # Mcp-Protocol-Version header on HTTP); the dispatcher is the SDK's raw-request seam.
        self._session._stamp(data, opts)
        return await self._session._dispatcher.send_raw_request(method, data.get("params") or None, opts)

    def _sdk_verdict(self, e: Any, started: float, timeout: float | None) -> str | None:
        """ "closed" / "timeout" when the SDK itself raised the MCPError (the connection really
        closed, our timeout really elapsed); None when it is the server's own JSON-RPC error that
        happens to use the same code (-32000 and -32001 are free for servers to use)."""
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        if e.code == CONNECTION_CLOSED and e.data is None and getattr(self._session._dispatcher, "_closed", True):
            return "closed"
        if (
            e.code == REQUEST_TIMEOUT
            and e.data is None
            and timeout is not None
            and time.perf_counter() - started >= timeout * 0.95
        ):
            return "timeout"
        return None

    async def _initialize(self, timeout: float | None) -> None:
        import mcp_types as types
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

        params = {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "toolidx", "version": __version__},
        }
        raw = await self._send("initialize", params, timeout, "initialize", raw_opts={"cancel_on_abandon": False})
        raw = fix_strings(raw)
        result = types.InitializeResult.model_validate(raw, by_name=False)
        if result.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise BackendError(f"unsupported protocol version {result.protocol_version!r}")
        self._session.adopt(result)
        await self._session.send_notification(types.InitializedNotification())
        info = raw.get("serverInfo") if isinstance(raw.get("serverInfo"), dict) else {}
        self.server_info = {k: info.get(k) for k in ("name", "title", "version")}
        self.protocol_version = result.protocol_version
        self.instructions = raw.get("instructions") if isinstance(raw.get("instructions"), str) else None
        self.capabilities = raw.get("capabilities") if isinstance(raw.get("capabilities"), dict) else {}

    async def list_tools_raw(self, timeout: float | None = None) -> tuple[list[dict], list[dict]]:
        """Every page of `tools/list`: (valid tools as sent, [{"name", "reason"}] for the rest)."""
        tools: list[dict] = []
        invalid: list[dict] = []
        seen: set[str] = set()
        cursor: str | None = None
        cursors: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            self._phase[0] = "tools/list" if page == 1 else f"tools/list page {page}"
            raw = await self._send("tools/list", {"cursor": cursor} if cursor else None, timeout, self._phase[0])
            items = raw.get("tools")
            if not isinstance(items, list):
                raise BackendError(f"{self._phase[0]}: result has no `tools` list")
            for item in items:
                reason = validate_tool(item)
                if reason is None:
                    item = fix_strings(item)  # a lone surrogate: replaced, the tool kept
                name = item.get("name") if isinstance(item, dict) else None
                if reason is None and name in seen:
                    reason = "duplicate name"
                if reason:
                    invalid.append({"name": name if isinstance(name, str) else None, "reason": reason})
                    continue
                seen.add(str(name))  # valid: a string
                tools.append(item)
            cursor = raw.get("nextCursor")
            if cursor is None or cursor == "":
                self._phase[0] = "ready"
                return tools, invalid
            if not isinstance(cursor, str) or cursor in cursors:
                raise BackendError(f"{self._phase[0]}: nextCursor {cursor!r} repeats or is not a string")
            cursors.add(cursor)
        raise BackendError(f"tools/list: more than {MAX_PAGES} pages")

    async def call_tool(self, name: str, arguments: dict, timeout: float) -> dict:
        """`tools/call`; the CallToolResult as wire JSON, unchanged.

        Raises BackendError on transport failure, timeout or server death, and RemoteError (a
        BackendError) when the server answers with a JSON-RPC error."""
        if self._closed:
            raise BackendError("connection is closed")
        return await self._send(
            "tools/call", {"name": name, "arguments": arguments or {}}, timeout, f"tools/call {name}"
        )

    async def _send(
        self, method: str, params: dict | None, timeout: float | None, during: str, raw_opts: dict | None = None
    ) -> dict:
        """`_request` with the SDK's errors turned into BackendError / RemoteError."""
        from mcp.shared.exceptions import MCPError

        started = time.perf_counter()
        try:
            return await self._request(method, params, timeout, raw_opts)
        except MCPError as e:
            verdict = self._sdk_verdict(e, started, timeout)
            if (
                verdict is None
                and e.code == -32000
                and e.message == "Connection closed"
                and e.data is None
                and await self.exit_code_soon(0.3) is not None
            ):
                verdict = "closed"  # the write failed before the SDK noticed the end: the process is gone
            if verdict == "timeout":
                raise BackendError(f"timed out after {timeout:g} s during {during}") from None
            if verdict == "closed":
                self._closed = True
                code = await self.exit_code_soon()
                raise BackendError(
                    f"server closed the connection during {during}"
                    + (f" (exit code {code})" if code is not None else "")
                ) from None
            raise RemoteError(f"{during} failed: server error {e.code}: {e.message}", e.code, e.data) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as e:
            self._closed = True
            raise BackendError(f"connection lost during {during} ({type(e).__name__})") from None


def _command_path(spec: ServerSpec) -> str:
    """A relative command with a directory part (`.venv/bin/python`) is found where toolidx runs,
    as a shell would, unless it exists relative to the server's `cwd` (what exec would do)."""
    cmd = spec.command or ""
    if os.path.isabs(cmd) or (os.sep not in cmd and "/" not in cmd):
        return cmd
    if spec.cwd and os.path.exists(os.path.join(spec.cwd, cmd)):
        return cmd
    return os.path.abspath(cmd) if os.path.exists(cmd) else cmd


@asynccontextmanager
async def _transport(spec: ServerSpec, stderr: _StderrFile | None, processes: list) -> AsyncIterator[tuple[Any, Any]]:
    """The streams to the server; `processes` gets the one the stdio transport starts."""
    if spec.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=_command_path(spec),
            args=list(spec.args),
            env=child_env(spec),
            cwd=spec.cwd,
            encoding_error_handler="replace",
        )
        # the SDK hands errlog to the child as its stderr: any file with a descriptor will do
        errlog = cast(TextIO, stderr.file if stderr else sys.stderr)
        tree: list[tuple[int, str]] = []
        try:
            async with stdio_client(params, errlog=errlog) as (r, w):
                try:
                    yield r, w
                finally:  # before the stop: once the server is gone, its children are no longer its
                    tree = _descendants(processes[0].pid) if processes else []
                    if processes:
                        with anyio.CancelScope(shield=True):
                            await _stop_supervised(processes[0])
        finally:
            await _end_processes(tree)
    elif spec.transport == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=dict(spec.headers), timeout=httpx2.Timeout(spec.timeout, read=300.0))
        async with client, streamable_http_client(spec.url or "", http_client=client) as (r, w):
            yield r, w
    elif spec.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(spec.url or "", headers=dict(spec.headers), timeout=spec.timeout) as (r, w):
            yield r, w
    else:
        raise BackendError(f"transport {spec.transport!r} has no live connection")


@asynccontextmanager
async def open_session(
    spec: ServerSpec, *, phase: list[str] | None = None, tail_out: list[str] | None = None
) -> AsyncIterator[Connection]:
    """Start/reach the server and run the `initialize` handshake (bounded by `spec.timeout`).

    Failures raise BackendError with one readable reason and `.stderr_tail`. An exception the
    caller raises inside `async with` comes out as itself, not wrapped in the SDK's
    ExceptionGroups. `phase` (a one-item list) tracks where we are, for timeout reports;
    `tail_out` receives the server's last stderr before the capture file is closed."""
    from mcp.client.session import ClientSession

    _install_spawn_hook()
    phase = phase if phase is not None else ["start"]
    phase[0] = "start"
    stderr = _StderrFile() if spec.transport == "stdio" else None
    processes: list = []
    token: Token[list | None] | None = _spawned.set(processes)
    try:
        async with _transport(spec, stderr, processes) as (read, write):
            if token is not None:
                _spawned.reset(token)
            token = None

            async def on_message(message: Any) -> None:
                """Stray stdout lines that are not JSON-RPC arrive here as exceptions, and
                notifications such as tools/list_changed: tolerated, a crawl lists anyway."""

            async with ClientSession(_Reparse(read), write, message_handler=on_message) as session:
                conn = Connection(spec, session, stderr, processes, phase)
                phase[0] = "initialize"
                with anyio.fail_after(spec.timeout):
                    await conn._initialize(spec.timeout)
                phase[0] = "ready"
                try:
                    yield conn
                finally:
                    conn._closed = True
    except Exception as e:
        leaves = [x for x in _leaves(e) if not isinstance(x, anyio.get_cancelled_exc_class())]
        mine = [x for x in leaves if isinstance(x, BackendError)]
        if mine:
            err = mine[0]
        elif phase[0] == "ready" and len(leaves) == 1 and not _is_transport_error(leaves[0]):
            raise leaves[0] from None  # the caller's own exception, unwrapped
        else:
            where = _phase_name(phase[0])
            code = processes[0].returncode if processes else None
            err = BackendError(scrub(_one_reason(e, spec, where, code), spec) or "")
        if stderr is not None and not getattr(err, "stderr_tail", None):
            err.stderr_tail = scrub(stderr.tail(), spec)  # type: ignore[attr-defined]
        raise err from None
    finally:
        if token is not None:
            _spawned.reset(token)
        if stderr is not None:
            if tail_out is not None:
                tail_out.append(scrub(stderr.tail(), spec) or "")
            stderr.close()


def _is_transport_error(e: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError

    return isinstance(
        e, (MCPError, OSError, TimeoutError, anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
    )


def _phase_name(phase: str) -> str:
    return "tools/list" if phase == "ready" else phase


async def list_server_tools(spec: ServerSpec) -> ServerResult:
    """Crawl one live server. Never raises for the server's failures: they are in the result.

    One deadline (`spec.timeout`) covers start, initialize and every tools/list page."""
    from ..core.clock import now_iso

    t0, started = time.perf_counter(), now_iso()
    result = ServerResult(spec, "failed", started)
    phase = ["start"]
    tails: list[str] = []
    try:
        with anyio.fail_after(spec.timeout):
            async with open_session(spec, phase=phase, tail_out=tails) as conn:
                tools, invalid = await conn.list_tools_raw()
                info = conn.server_info
                result.status = "ok"
                result.server_name, result.server_title = info.get("name"), info.get("title")
                result.server_version = info.get("version")
                result.protocol_version = conn.protocol_version
                result.instructions = conn.instructions
                result.capabilities = conn.capabilities
                result.tools, result.invalid_tools = tools, invalid
    except BackendError as e:
        result.status, result.error = "failed", str(e)
    except TimeoutError:
        result.status = "failed"
        result.error = f"timed out after {spec.timeout:g} s during {_phase_name(phase[0])}"
    except Exception as e:  # never let one server's oddity escape as a traceback
        result.status = "failed"
        result.error = scrub(_one_reason(e, spec, _phase_name(phase[0]), None), spec)
    if not result.ok:
        result.tools, result.invalid_tools = [], []
        result.error = scrub(result.error, spec)
    result.stderr_tail = scrub("\n".join(t for t in tails if t), spec) or None
    result.duration_ms = round((time.perf_counter() - t0) * 1000, 1)
    return result
