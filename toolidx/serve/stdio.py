"""`toolidx serve` over stdio, the transport MCP clients start it with (`http.py` is the other):
the server speaks on private copies of fd 0/1 read and written by the event loop, stray output goes
to stderr, an over-long or unreadable request is answered with an error instead of silence, and
SIGTERM/SIGHUP/SIGINT end the run like stdin EOF (the backends stopped with it).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any

import anyio
import anyio.abc

log = logging.getLogger("toolidx")


def run_stdio(server: Any) -> None:
    """Serve over stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        pipes = await _pipe_streams()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
            async with stdio_server(*(pipes or ())) as (read, write):
                await server.run(_ReadGuard(read, write), write, server.create_initialization_options())
            tg.cancel_scope.cancel()  # stdin closed: the run is over

    anyio.run(main)


async def _stop_on_signal(scope: Any) -> None:
    """SIGTERM / SIGHUP / SIGINT end the run like stdin EOF does: the lifespan closes the backend pool,
    which stops every backend at once, as crawl does (stdin closed, then its supervisor stops it and
    all it started: crawl/supervisor.py), within the 2 s an MCP client waits before its own SIGTERM.
    Were serve killed instead, each supervisor would see it die and stop its backend all the same."""
    import signal

    # SIGINT too: as KeyboardInterrupt it would unwind the loop from wherever it lands (exit 130)
    names = ("SIGTERM", "SIGHUP", "SIGINT")
    wanted = [s for s in (getattr(signal, n, None) for n in names) if s is not None]
    try:
        with anyio.open_signal_receiver(*wanted) as signals:
            async for signum in signals:
                log.info(f"signal {signum}: shutting down")
                scope.cancel()
                return
    except (NotImplementedError, ValueError, RuntimeError):  # no signals here (e.g. Windows)
        return


MAX_REQUEST_BYTES = 64 * 1024 * 1024  # one JSON-RPC message (line); a longer one is refused


def _refusal(request_id: Any, code: int, message: str) -> str:
    import json

    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}) + "\n"


class _PipeLines:
    """stdin as an async iterator of lines, read by the event loop: the SDK's default reads every
    line in a worker thread, a thread hop per request that shows in execute_tool's overhead.

    A line over MAX_REQUEST_BYTES is skipped and answered with an error (the session goes on)."""

    def __init__(self, reader: Any, writer: _PipeWriter | None = None):
        self._reader = reader
        self._writer = writer

    def __aiter__(self) -> _PipeLines:
        return self

    async def __anext__(self) -> str:
        import asyncio

        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as e:  # EOF
                if not e.partial:
                    raise StopAsyncIteration from None
                line = e.partial
            except asyncio.LimitOverrunError as e:
                await self._skip_long_line(e.consumed)
                continue
            return line.decode("utf-8", errors="replace")

    async def _skip_long_line(self, consumed: int) -> None:
        import asyncio

        from ..crawl.connect import request_id_of

        head = await self._reader.readexactly(consumed)
        rid = request_id_of(head[:4096].decode("utf-8", errors="replace"))
        while True:  # drop the rest of the line, however long
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.IncompleteReadError:
                break
            except asyncio.LimitOverrunError as e:
                await self._reader.readexactly(e.consumed)
        log.warning(f"request line over {MAX_REQUEST_BYTES >> 20} MiB refused")
        if self._writer is not None and rid is not None:
            await self._writer.write(
                _refusal(
                    rid,
                    -32600,
                    f"request refused: over {MAX_REQUEST_BYTES >> 20} MiB (toolidx serve's limit per message)",
                )
            )
            await self._writer.flush()


class _ReadGuard(anyio.abc.ObjectReceiveStream):
    """The server's read stream: a message the SDK could not parse (valid JSON nested deeper than
    its parser allows, about 200 levels, or not JSON at all) is answered with a JSON-RPC parse
    error for its id instead of no answer at all."""

    def __init__(self, inner: Any, write: Any):
        self._inner, self._write = inner, write

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._refuse(item)

    async def _refuse(self, exc: Exception) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        from ..crawl.connect import rejected_line, request_id_of

        line = rejected_line(exc)
        rid = request_id_of(line) if line else None
        log.warning(f"unreadable request refused: {str(exc).splitlines()[-1][:200] if str(exc) else exc!r}")
        if rid is None:
            return
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=rid,
            error=types.ErrorData(
                code=-32700, message="request not read: nested deeper than about 200 levels, or not valid JSON"
            ),
        )
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._write.send(SessionMessage(error))

    async def aclose(self) -> None:
        await self._inner.aclose()


class _PipeWriter:
    """stdout written by the event loop (no thread hop per message; the transport buffers)."""

    def __init__(self, transport: Any, protocol: Any):
        self._transport, self._protocol = transport, protocol

    async def write(self, text: str) -> None:
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        if self._transport.get_write_buffer_size():
            await self._protocol._drain_helper()


async def _pipe_streams() -> tuple[Any, Any] | None:
    """Protocol streams on private copies of fd 0/1 when both are pipes (as MCP clients start us),
    with fd 0 moved to /dev/null and fd 1 to stderr so stray prints (ours, a library's, a child's)
    can never corrupt the wire. None (the SDK's own streams) for anything else, e.g. a terminal."""
    import asyncio
    import os
    import stat

    try:
        if not all(stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode) for fd in (0, 1)):
            return None
        loop = asyncio.get_running_loop()
        sys.stdout.flush()
        wire_in, wire_out = os.dup(0), os.dup(1)
        reader = asyncio.StreamReader(limit=MAX_REQUEST_BYTES, loop=loop)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(wire_in, "rb", buffering=0)
        )
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(wire_out, "wb", buffering=0)
        )
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        writer = _PipeWriter(transport, protocol)
        return _PipeLines(reader, writer), writer
    except (OSError, ValueError, RuntimeError, NotImplementedError) as e:
        log.debug(f"pipe streams unavailable ({e}); using the SDK's")
        return None


def serve_stdio(db_path: str, **options: Any) -> None:
    """`toolidx serve`: build the server (errors in the index or options raise first, before any
    protocol byte), then serve it over stdio."""
    from .server import build_server

    server = build_server(db_path, **options)
    if sys.stdin.isatty():  # started by hand: say what it is waiting for (on stderr)
        sys.stderr.write(
            "toolidx serve: speaking MCP on stdin/stdout; start it from an MCP client "
            "(`toolidx serve --print-config` prints the entry). Ctrl-D to stop.\n"
        )
    try:
        run_stdio(server)
    finally:
        if server.discovery.usage is not None:
            server.discovery.usage.close()  # what is still queued is written
