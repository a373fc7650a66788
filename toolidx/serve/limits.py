"""serve --http's connection limits: what a flood of slow or half-open connections may hold.

uvicorn alone waits forever for a request's head or body and accepts until the process runs out
of file descriptors; asyncio then logs a traceback for every failed accept (over 100 MB in a
minute, measured). Here each connection has a deadline for its request head and one for its body
(then 408 and close), the number of connections stays below the open-files limit, and when it is
reached the connection waiting longest for its head gives way to the newcomer (a slow client
cannot keep out a fresh one); only with no such connection is the newcomer refused (503). Each
kind of refusal is logged as one line at most every 10 s (refusals.REFUSALS).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..core.vocabulary import JSON_VERSION

HEAD_TIMEOUT_S = 10.0  # from connect (or the previous answer) to a complete request head
BODY_TIMEOUT_S = 30.0  # from the head to the whole body (bodies are at most 4 MiB)
MAX_CONNECTIONS = 1000
FD_RESERVE = 128  # descriptors kept for the index, the usage file, backends' pipes, the model
# asyncio accepts up to `backlog` connections in one go before the ones evicted meanwhile are
# closed, so that many descriptors may be in use beyond the cap for a moment
BACKLOG = 128


def _raw(status: str, error: str) -> bytes:
    body = json.dumps({"toolidx": JSON_VERSION, "command": "error", "error": error, "message": status}).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode() + body


REFUSED = _raw("503 Service Unavailable", "too_many_connections")
TIMED_OUT = _raw("408 Request Timeout", "request_timeout")


def connection_cap() -> int:
    """MAX_CONNECTIONS, or fewer so that connections alone cannot use up the open-files limit
    (raised to its hard limit first, where the system allows)."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to respect
        return MAX_CONNECTIONS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft - FD_RESERVE - BACKLOG))


def guarded_protocol(cap: int, refusals: Callable[[str, str], None]) -> type:
    """An h11 protocol class for uvicorn's `http=` with these limits; `refusals(kind, line)`
    logs (rate-limited)."""
    waiting: dict[Any, None] = {}  # connections awaiting a request head, oldest first

    class Guarded(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            self._timer: asyncio.TimerHandle | None = None
            self._since = time.monotonic()
            self._refused = False
            if len(self.connections) >= cap:
                oldest = next(iter(waiting), None)
                if oldest is None:
                    self._refused, self.transport = True, transport
                    refusals("connections", f"503: {cap} connections open (the cap), a new one refused")
                    transport.write(REFUSED)
                    transport.close()
                    return
                oldest._drop(
                    "evicted",
                    f"{cap} connections open (the cap): the one waiting longest for its "
                    "request head closed for a new one",
                )
            super().connection_made(transport)
            self._await_head()

        def data_received(self, data: bytes) -> None:
            if not self._refused:
                super().data_received(data)

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before and not self.transport.is_closing():  # a request head arrived
                waiting.pop(self, None)
                self._since = time.monotonic()
                self._arm(BODY_TIMEOUT_S)

        def on_response_complete(self) -> None:
            # the next head is awaited from now, before uvicorn starts a request the client sent
            # behind this one (pipelined): starting it ends the wait (handle_events) instead of
            # this re-arming the head deadline under a request that is running
            if not self.transport.is_closing():
                self._await_head()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            waiting.pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
            if not self._refused:
                super().connection_lost(exc)

        def _await_head(self) -> None:
            self._since = time.monotonic()
            waiting.pop(self, None)
            waiting[self] = None
            self._arm(HEAD_TIMEOUT_S)

        def _arm(self, delay: float) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_later(max(0.0, delay), self._check)

        def _check(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            age = time.monotonic() - self._since
            if self in waiting:
                if age >= HEAD_TIMEOUT_S:
                    self._drop("head", f"408: no complete request head within {HEAD_TIMEOUT_S:g} s, connection closed")
                else:
                    self._arm(HEAD_TIMEOUT_S - age)
            elif self.cycle is not None and self.cycle.more_body and not self.cycle.response_started:
                if age >= BODY_TIMEOUT_S:
                    self._drop("body", f"408: request body not complete within {BODY_TIMEOUT_S:g} s, connection closed")
                else:
                    self._arm(BODY_TIMEOUT_S - age)

        def _drop(self, kind: str, line: str) -> None:
            waiting.pop(self, None)
            refusals(kind, line)
            if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
                self.transport.write(TIMED_OUT)
            self.transport.close()

    return Guarded


def quiet_loop_errors(loop: asyncio.AbstractEventLoop, refusals: Callable[[str, str], None]) -> None:
    """asyncio logs a traceback for each failed accept (out of file descriptors), many a second:
    one line per 10 s instead; everything else as before."""

    def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            refusals("accept", f"cannot accept connections: {context.get('exception')}")
            return
        lp.default_exception_handler(context)

    loop.set_exception_handler(handler)
