"""`toolidx serve --http [HOST:]PORT`: the discovery server over MCP Streamable HTTP for many
clients at once, plus a stateless search API for gateways, on one ASGI app (Starlette + uvicorn,
both installed with the mcp SDK).

    /mcp             MCP Streamable HTTP (the same meta-tools as over stdio)
    GET /v1/search   the JSON of `toolidx search --json`
    GET /openapi.json  OpenAPI 3.1 for /v1/search
    GET /healthz     liveness for load balancers (no token needed)

One process, one Discovery, one BackendPool: backends are shared by every client; each request
runs in its own task (searches in worker threads), so a slow tool holds up only its own caller.
A bearer token (access.py) is checked on /mcp and /v1/search; its scope narrows what that request
can find and run. Tokens are never logged: a token is named by its label (file:NAME:LINE or env:VAR).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import anyio

from .. import __version__
from ..core.counts import plural
from ..core.errors import DatabaseError, ToolidxError, UsageError
from ..core.vocabulary import JSON_VERSION
from ..search.learned import CALLER
from .access import ANONYMOUS, Grant, HostPolicy, Tokens, check_allowed, is_loopback
from .answers import search_payload
from .console import PATHS as CONSOLE_PATHS
from .discovery import Discovery, damaged_index_answer
from .recorder import token_of
from .refusals import REFUSALS

log = logging.getLogger("toolidx")

OPEN_PATHS = ("/healthz", "/openapi.json")
TOKEN_PATHS = ("/mcp", "/v1/search")  # every other path is 404, with no token asked for
MAX_SESSIONS = 1000  # open MCP sessions, all tokens together
SESSIONS_PER_TOKEN = 100  # open MCP sessions one token may hold


async def _refuse(
    send: Any,
    status: int,
    error: str,
    message: str,
    fix: str | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = json.dumps(
        {"toolidx": JSON_VERSION, "command": "error", "error": error, "message": message, "fix": fix}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- Host and Origin --------------------------------------------------------------------------------
class HostGuard:
    """ASGI middleware, outermost, on every route: a Host header that cannot name this listener
    gets 421, a browser Origin from elsewhere 403 (access.HostPolicy says which pass). The SDK's
    own check only covers binds on exactly 127.0.0.1, localhost and ::1, so serve turns it off
    and checks every bind here, /healthz included."""

    def __init__(self, app: Any, policy: HostPolicy):
        self.app, self.policy = app, policy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k: v.decode("latin-1") for k, v in scope.get("headers", []) if k in (b"host", b"origin")}
        host, origin = headers.get(b"host"), headers.get(b"origin")
        if not self.policy.host_ok(host):
            REFUSALS(
                "host",
                f"421 for {scope.get('path')!r}: Host {(host or '')[:80]!r} does not name this "
                "server (DNS rebinding?); allow a name with --allow-host",
            )
            await _refuse(
                send,
                421,
                "misdirected_request",
                f"Host {(host or '')[:80]!r} does not name this server",
                fix="connect by the address serve listens on, or start serve with --allow-host NAME",
            )
            return
        if not self.policy.origin_ok(origin, host):
            REFUSALS(
                "origin",
                f"403 for {scope.get('path')!r}: Origin {(origin or '')[:80]!r} is not allowed; "
                "allow it with --allow-origin",
            )
            await _refuse(
                send,
                403,
                "forbidden_origin",
                f"Origin {(origin or '')[:80]!r} may not use this server",
                fix="start serve with --allow-origin ORIGIN for a browser client on that origin",
            )
            return
        await self.app(scope, receive, send)


# --- authentication -------------------------------------------------------------------------------
class BearerAuth:
    """ASGI middleware: /mcp and /v1/search need `Authorization: Bearer TOKEN` when tokens are set
    (401 with `WWW-Authenticate: Bearer` otherwise). The matching grant goes into the ASGI scope
    (`toolidx.grant`), and as the SDK's authenticated user, so an MCP session can only be used
    with the token that opened it.

    Each token (or, without tokens, the one anonymous caller) may hold at most `per_token` MCP
    sessions (503 `too_many_sessions` past it), so one client cannot take every one of the SDK's
    sessions and shut the others out for the idle timeout. `live()` gives the ids of the sessions
    still open."""

    def __init__(
        self,
        app: Any,
        tokens: Tokens,
        live: Callable[[], Collection[str]] | None = None,
        per_token: int = SESSIONS_PER_TOKEN,
    ):
        self.app, self.tokens, self.live, self.per_token = app, tokens, live, per_token
        self.owned: dict[str, set[str]] = {}  # grant label -> the ids of the sessions it opened
        self.opening: dict[str, int] = {}  # grant label -> opening requests under way

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS or scope.get("path") in CONSOLE_PATHS:
            await self.app(scope, receive, send)  # the console checks its own sessions (console/app.py)
            return
        if scope.get("path") not in TOKEN_PATHS:
            # A 401 here would send MCP clients into OAuth discovery: on a 401 they fetch
            # /.well-known/oauth-protected-resource[/mcp], oauth-authorization-server and
            # openid-configuration, and read any answer but 200 or 404 as "OAuth required"
            # (the SDK's OAuth client raises on it). serve has no OAuth: a plain 404 says so,
            # and a client with a static bearer header just sends it.
            await _refuse(
                send,
                404,
                "not_found",
                f"no such path: {str(scope.get('path'))[:200]}",
                fix="MCP is at /mcp, the search API at /v1/search (bearer token), /openapi.json, /healthz",
            )
            return
        grant: Grant | None = ANONYMOUS
        offered = None
        if len(self.tokens):
            header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"), "")
            kind, _, value = header.strip().partition(" ")
            offered = value.strip() if kind.lower() == "bearer" else None
            grant = self.tokens.match(offered) if offered else None
        if grant is None:
            log.info(f"401 for {scope.get('path')}: {'bad' if offered else 'no'} bearer token")
            await _unauthorized(send, bool(offered))
            return
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken

        scope = dict(scope)
        scope["toolidx.grant"] = grant
        if len(self.tokens):  # binds each MCP session to the token that opened it
            scope["user"] = AuthenticatedUser(AccessToken(token=grant.label, client_id=grant.label, scopes=[]))
        opens = (
            self.live is not None
            and scope.get("method") == "POST"
            and scope.get("path", "").startswith("/mcp")
            and not any(k == b"mcp-session-id" for k, _ in scope.get("headers", []))
        )
        if not opens:
            await self.app(scope, receive, send)
            return
        await self._open_session(grant.label, scope, receive, send)

    async def _open_session(self, label: str, scope: Any, receive: Any, send: Any) -> None:
        assert self.live is not None
        mine = self.owned.setdefault(label, set())
        mine.intersection_update(self.live())  # closed sessions (DELETE, idle timeout) no longer count
        if len(mine) + self.opening.get(label, 0) >= self.per_token:
            REFUSALS("sessions", f"503 for {label}: it holds {len(mine)} MCP sessions, the most one token may")
            await _refuse(
                send,
                503,
                "too_many_sessions",
                f"this token holds {len(mine)} open MCP sessions, the most one token may",
                fix="end sessions you no longer use (DELETE /mcp); idle ones close after 30 minutes",
            )
            return

        async def noting(message: Any) -> None:
            if message["type"] == "http.response.start":
                sid = next((v.decode("latin-1") for k, v in message.get("headers", []) if k == b"mcp-session-id"), None)
                if sid:
                    mine.add(sid)
            await send(message)

        self.opening[label] = self.opening.get(label, 0) + 1
        try:
            await self.app(scope, receive, noting)
        finally:
            self.opening[label] -= 1


async def _unauthorized(send: Any, offered: bool) -> None:
    # No resource_metadata: that parameter is what tells an MCP client to start OAuth. A wrong
    # token says invalid_token (RFC 6750); a missing one no error code, as the RFC asks.
    challenge = 'Bearer realm="toolidx"' + (
        ', error="invalid_token", error_description="this bearer token is not accepted here"' if offered else ""
    )
    body = json.dumps(
        {
            "toolidx": JSON_VERSION,
            "command": "error",
            "error": "unauthorized",
            "message": "a valid bearer token is required (Authorization: Bearer TOKEN)",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", challenge.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- /v1/search -----------------------------------------------------------------------------------
def openapi_document(base_url: str | None = None) -> dict:
    """OpenAPI 3.1 for the search API (the MCP endpoint is described by MCP itself)."""
    from ..search.request import HTTP, PARAMS, Param, json_schema

    def param(p: Param) -> dict:
        name = p.names[HTTP]
        out: dict[str, Any] = {"name": name, "in": "query", "required": p.key == "query"}
        schema = json_schema(p.key, HTTP)
        out["description"] = schema.pop("description")
        out["schema"] = schema
        if p.many:
            out.update(style="form", explode=True)
        return out

    hit = {
        "type": "object",
        "required": ["id", "server", "name", "score"],
        "properties": {
            "id": {"type": "string", "description": "SERVER/TOOL"},
            "server": {"type": "string"},
            "name": {"type": "string"},
            "title": {"type": ["string", "null"]},
            "description": {"type": ["string", "null"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1, "description": "calibrated score"},
            "matched": {"type": "array", "items": {"type": "string"}},
            "why": {"type": ["string", "null"]},
            "signals": {"type": "object"},
            "stale": {"type": "boolean", "description": "its server failed its last crawl"},
            "note": {"type": "string", "description": "'stale: its server failed its last crawl (why)', or ''"},
        },
    }
    result = {
        "type": "object",
        "required": ["toolidx", "command", "query", "no_match", "hits"],
        "properties": {
            "toolidx": {"type": "integer", "const": JSON_VERSION},
            "command": {"type": "string", "const": "search"},
            "query": {"type": "string"},
            "mode": {"type": "string"},
            "mode_used": {"type": "string"},
            "no_match": {"type": "boolean", "description": "true when no tool scores above the calibrated threshold"},
            "threshold": {"type": "number"},
            "calibrated_threshold": {"type": "number"},
            "count": {"type": "integer"},
            "considered": {"type": "integer"},
            "notes": {"type": "array", "items": {"type": "string"}},
            "corrections": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "description": "typing slips in the query, each with the catalog's words searched beside it",
            },
            "hits": {"type": "array", "items": {"$ref": "#/components/schemas/Hit"}},
        },
    }
    error = {
        "type": "object",
        "required": ["error", "message"],
        "properties": {
            "toolidx": {"type": "integer"},
            "command": {"type": "string", "const": "error"},
            "error": {"type": "string"},
            "code": {"type": "string", "description": "the error's kind (core.errors)"},
            "message": {"type": "string"},
            "fix": {"type": ["string", "null"]},
        },
    }
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "toolidx search API",
            "version": __version__,
            "description": "Find MCP tools for a task in a toolidx index: the JSON of `toolidx search --json`.",
        },
        "paths": {
            "/v1/search": {
                "get": {
                    "operationId": "searchTools",
                    "summary": "Find tools for a task (hybrid ranking, calibrated scores)",
                    "parameters": [param(p) for p in PARAMS if p.names[HTTP]],
                    "responses": {
                        "200": {
                            "description": "the ranked hits (no_match true when nothing fits well)",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SearchResult"}}},
                        },
                        "400": {
                            "description": "bad parameters",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                        },
                        "401": {
                            "description": "missing or invalid bearer token",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                        },
                    },
                }
            }
        },
        "components": {
            "schemas": {"SearchResult": result, "Hit": hit, "Error": error},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
    }
    if base_url:
        doc["servers"] = [{"url": base_url}]
    return doc


# --- the app --------------------------------------------------------------------------------------
def build_app(
    server: Any, tokens: Tokens, policy: HostPolicy, base_url: str | None = None, sessions: Any = None
) -> Any:
    """The ASGI app: MCP at /mcp plus the search API and the console, behind HostGuard then
    BearerAuth. `sessions`: the console's (console.sessions.Sessions; `toolidx ui` brings one
    holding its one-time link)."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    disc: Discovery = server.discovery

    def view(request: Request) -> Discovery:
        grant = request.scope.get("toolidx.grant")
        return server.views.get(getattr(grant, "label", ""), disc)

    async def v1_search(request: Request) -> JSONResponse:
        d = view(request)
        CALLER.set(token_of(request.scope.get("toolidx.grant")))  # whose learned pairs count fully
        try:
            await anyio.to_thread.run_sync(d.refresh)
            payload = await anyio.to_thread.run_sync(search_payload, d, request.query_params)
        except ToolidxError as e:
            # the index unreadable (a catalog's database down) is this server's fault, for now: 503
            unavailable = isinstance(e, DatabaseError)
            return JSONResponse(
                {"toolidx": JSON_VERSION, "command": "error", **e.to_json()},
                status_code=503 if unavailable else 400,
                headers={"Retry-After": "5"} if unavailable else None,
            )
        except Exception as e:
            damage = damaged_index_answer("/v1/search", e)
            if damage is None:
                raise
            return JSONResponse({"toolidx": JSON_VERSION, "command": "error", **damage.payload}, status_code=503)
        return JSONResponse(payload)

    async def openapi(_request: Request) -> JSONResponse:
        return JSONResponse(openapi_document(base_url))

    async def healthz(_request: Request) -> JSONResponse:
        # no query of its own: the poll (every --poll seconds) and each request look at the index
        problem = disc.index_problem
        body = {"status": "ok" if problem is None else "unavailable", "version": __version__, "model": disc.model.state}
        if problem is not None:
            body["index"] = problem
        return JSONResponse(body, status_code=200 if problem is None else 503)

    routes = [
        Route("/v1/search", v1_search, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]
    from .console.app import Console

    routes += Console(server, tokens, https=policy.scheme == "https", sessions=sessions).routes()
    off = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # HostGuard checks every bind
    app = server.streamable_http_app(
        custom_starlette_routes=routes, max_sessions=MAX_SESSIONS, json_response=True, transport_security=off
    )

    def live() -> Collection[str]:  # the SDK's open sessions (no public accessor; a test covers it)
        return server.session_manager._server_instances

    return HostGuard(BearerAuth(app, tokens, live), policy)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or a one-line UsageError (port in use, unknown host)."""
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        raise UsageError(
            f"--http {where}: unknown host ({e.strerror})",
            fix="use an IP address or a resolvable name, e.g. 127.0.0.1:8765",
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as e:
        sock.close()
        import errno

        if e.errno == errno.EADDRINUSE:
            raise UsageError(
                f"--http {where}: address already in use", fix="stop what listens there or pick another port"
            ) from None
        raise UsageError(
            f"--http {where}: cannot listen ({e.strerror or e})", fix="pick another address or port"
        ) from None
    sock.set_inheritable(False)
    return sock


def check_exposure(host: str, tokens: Tokens) -> None:
    """No tokens on a non-loopback address: refuse to start."""
    if not is_loopback(host) and not len(tokens):
        raise UsageError(
            f"--http {host}: a bearer token is required on a non-loopback address",
            fix="add --token-env NAME or --token-file PATH (or listen on 127.0.0.1)",
        )


def check_tls(cert: str, key: str) -> None:
    """The certificate chain and its private key load together (PEM files), or a one-line
    UsageError before anything listens."""
    import ssl

    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not Path(path).is_file():
            raise UsageError(f"{flag} {path}: no such file", fix="give the PEM file's path")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key, password=lambda: b"")  # an encrypted key fails, never prompts
    except (ssl.SSLError, OSError) as e:
        with contextlib.suppress(OSError):  # the one failure worth its own words
            if b"ENCRYPTED" in Path(key).read_bytes()[:4096]:
                raise UsageError(
                    f"--tls-key {key}: the private key is encrypted (a passphrase cannot be asked for here)",
                    fix=f"decrypt it once: openssl pkey -in {key} -out key.pem",
                ) from None
        reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or str(e)
        raise UsageError(
            f"--tls-cert {cert} / --tls-key {key}: cannot be used ({reason})",
            fix="give a PEM certificate (chain) and the unencrypted private key that matches it",
        ) from None


def _stop_on_signals(userver: Any) -> None:
    """SIGINT, SIGTERM and SIGHUP stop serve cleanly (exit 0, the usage queue written, the backends
    stopped by the lifespan). uvicorn handles SIGINT/SIGTERM while it serves, then raises the signal
    again under the handler it found: the default one would kill the process (-15) before the usage
    queue is written; SIGHUP's would kill it at once, backends left running. Main thread only."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, lambda _s, _f: setattr(userver, "should_exit", True))


def serve_http(
    db_path: str,
    address: tuple[str, int],
    tokens: Tokens,
    tls: tuple[str, str] | None = None,
    allow_hosts: tuple[str, ...] = (),
    allow_origins: tuple[str, ...] = (),
    sessions: Any = None,
    announce: Any = None,
    **options: Any,
) -> None:
    """`toolidx serve --http`: check the tokens and the TLS files, build the server (index errors
    first), bind the port (errors before anything serves), then serve until SIGINT/SIGTERM.
    `tls`: (certificate chain, private key) PEM files: HTTPS instead of plain HTTP. `allow_hosts`,
    `allow_origins`: more Host names and browser origins to answer (access.HostPolicy).
    `sessions`: the console's (`toolidx ui`'s, with its one-time link); `announce(base_url)` is
    called once the port is bound."""
    from .server import build_server

    host, port = address
    check_exposure(host, tokens)
    check_allowed(allow_hosts, allow_origins)
    if tls is not None:
        check_tls(*tls)
    server = build_server(db_path, grants=tokens.grants, **options)
    sock = listen(host, port)
    tokens.warn_if_loose()
    import uvicorn

    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    base = f"{'https' if tls else 'http'}://{shown}:{bound}"
    policy = HostPolicy(host, bound, "https" if tls else "http", allow_hosts, allow_origins)
    app = build_app(server, tokens, policy, base, sessions)
    auth = f"{plural(len(tokens), 'token')} required" if len(tokens) else "loopback only, no token"
    sys.stderr.write(f"toolidx serve: MCP at {base}/mcp, search API at {base}/v1/search ({auth}); Ctrl-C to stop\n")
    sys.stderr.flush()
    if announce is not None:
        announce(base)
    from .limits import BACKLOG, connection_cap, guarded_protocol, quiet_loop_errors

    # A request head over h11's 16 KiB gets 400; idle keep-alive connections close after 5 s.
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
        ws="none",
        backlog=BACKLOG,
        http=guarded_protocol(connection_cap(), REFUSALS),
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    userver = uvicorn.Server(config)

    async def run() -> None:
        quiet_loop_errors(asyncio.get_running_loop(), REFUSALS)
        await userver.serve(sockets=[sock])

    _stop_on_signals(userver)
    try:
        asyncio.run(run())
    finally:
        sock.close()
        if server.discovery.usage is not None:
            server.discovery.usage.close()  # what is still queued is written
