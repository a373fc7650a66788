"""`toolidx serve`: the discovery MCP server. A handful of meta-tools stand in for every indexed
tool; `execute_tool` runs the real one on its real server.

Built on the SDK's low-level `Server` so the published JSON schemas are exactly ours
(`metatools.py`). The answers themselves live in `answers.py`, over the state in `discovery.py`
(no MCP in either); this module only wires them to MCP: list/call handlers, the backend pool,
reload + `tools/list_changed`, the model loading in the background. The transports that serve it
are `stdio.py` and `http.py`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from .. import __version__
from ..core.errors import INTERNAL_ERROR, UNKNOWN_TOOL
from ..core.filters import Filters
from ..search import learned
from ..store.tools import get_server
from .answers import answer, call_timeout, check_arguments
from .backends import BackendPool, SpecSource
from .discovery import DEFAULT_MAX_TOKENS, Discovery, damaged_index_answer, error_answer
from .execute import execute
from .metatools import DEFAULT_TIMEOUT_MS, META_NAMES, meta_tools
from .recorder import Usage, token_of

log = logging.getLogger("toolidx")

DEFAULT_POLL_S = 1.0


class _Run:
    """The client connections to notify when the tool list changes: one over stdio, one per
    client over HTTP (where the lifespan, and so the backend pool, is entered once for the whole
    process). Held weakly: a connection that ended is forgotten."""

    def __init__(self) -> None:
        self.connections: weakref.WeakSet[Any] = weakref.WeakSet()

    def remember(self, session: Any) -> None:
        # ctx.session is per request; the SDK's per-client Connection outlives it and sends on
        # the client's standalone channel (the GET stream over HTTP)
        self.connections.add(getattr(session, "_connection", None) or session)

    async def notify_tools_changed(self) -> None:
        # no request yet: the client has not listed anything that could be stale
        for conn in list(self.connections):
            try:
                await conn.send_tool_list_changed()
            except Exception as e:  # the client may be gone; never fail a request over this
                log.debug(f"list_changed not sent: {e}")
                self.connections.discard(conn)


def build_server(
    db_path: str | Path,
    *,
    config_path: str | None = None,
    scope: Filters | None = None,
    expose_tools: bool = False,
    pins: list[str] | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    poll_interval: float = DEFAULT_POLL_S,
    load_model: bool = True,
    always_load: bool = True,
    usage_db: str | None = None,
    record_examples: bool = False,
    grants: list[Any] | None = None,
    trust_index: bool = False,
    learn: bool = True,
) -> Any:
    """The discovery server over the index at `db_path` (a DiscoveryServer: the SDK's low-level
    Server, with `.discovery` its state). `always_load`: mark the core meta-tools
    `anthropic/alwaysLoad` (clients that defer MCP tools then load them on the first turn).
    `usage_db`: the usage file (default: beside the index, see store/usage.py);
    `record_examples`: keep successful calls' arguments, secrets redacted, as examples.
    `grants` (serve --http's tokens, access.Grant): each answers inside its own scope, narrowed by
    `scope`; a request carries its grant in the HTTP request's ASGI scope (`toolidx.grant`).
    `trust_index`: start servers from the index's launch lines though no crawl on this machine
    wrote them (backends.SpecSource). `learn`: link successful calls to the searches that showed
    their tools and lift those tools for requests like them (search.learned; serve --no-learn).
    Raises ToolidxError for an unusable index, a bad --pin or a token scope naming an unknown server."""
    # the index and options first: their errors need no MCP import (~1 s)
    disc = Discovery(
        str(db_path), scope=scope, expose_tools=expose_tools, pins=pins, max_tokens=max_tokens, config_path=config_path
    )
    views = {g.label: disc.scoped(g.scope) for g in grants or [] if not g.scope.is_empty()}
    disc.usage = Usage(disc.db_path, usage_db, record_examples=record_examples, scope=scope, learn=learn)
    from .mcp_server import DiscoveryServer

    source = SpecSource(
        server_row=lambda name: get_server(disc.db, name),
        config_path=config_path,
        index_config_path=lambda: disc.db.get_meta("config_path"),
        db_path=disc.db_path,
        trust_index=trust_index,
    )
    pools: list[BackendPool] = []  # one per stdio connection; one for the process over HTTP

    def view(ctx: Any) -> Discovery:
        """The Discovery this request may see: its token's scope over HTTP, the server's otherwise."""
        return views.get(grant_label(ctx) or "", disc)

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[dict]:
        run = _Run()
        async with BackendPool(source) as pool:
            pools.append(pool)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_watch, disc, run, poll_interval)
                try:
                    yield {"pool": pool, "run": run}
                finally:
                    tg.cancel_scope.cancel()
                    pools.remove(pool)

    async def refreshed(ctx: Any) -> None:
        if disc.refresh():
            run = _run_of(ctx)
            if run is not None:
                await run.notify_tools_changed()

    async def on_list_tools(ctx: Any, params: Any) -> dict:
        await refreshed(ctx)
        # ttlMs 0: a new crawl may change the list at any time (2026-07-28 clients cache otherwise)
        d = view(ctx)
        tools = meta_tools(always_load, await anyio.to_thread.run_sync(d.catalog_summary))
        return {"tools": tools + d.exposed_definitions(), "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}

    async def on_call_tool(ctx: Any, params: Any) -> dict:
        result = await call_tool(ctx, params)
        # 2026-07-28 results must say they are complete; older clients ignore the key
        return result if "resultType" in result else {**result, "resultType": "complete"}

    async def call_tool(ctx: Any, params: Any) -> dict:
        name, args = params.name, params.arguments or {}
        d = view(ctx)
        learned.CALLER.set(learner(ctx))  # whose search reads what was learned
        try:
            await refreshed(ctx)
            if name == "execute_tool":
                problem = check_arguments(name, args)
                if problem:
                    return problem.to_result()
                return await _execute(ctx, d, args["tool_name"], args.get("arguments", {}), call_timeout(args))
            if name in META_NAMES:
                answered = await anyio.to_thread.run_sync(_answer, d, ctx, name, args)
                if name == "describe_tool" and args.get("check") and not answered.is_error:
                    from .preflight import add_check

                    await add_check(answered, d, ctx.lifespan_context["pool"])
                return answered.to_result()
            exposed = d.exposed()
            if name in exposed:
                return await _execute(ctx, d, exposed[name], args, DEFAULT_TIMEOUT_MS / 1000)
            return error_answer(
                UNKNOWN_TOOL,
                f"no tool named {name!r} on this server",
                "find tools with search_tools and run them with execute_tool",
            ).to_result()
        except Exception as e:  # a bug must come back as an error result, not kill the session
            damage = damaged_index_answer(name, e)
            if damage is not None:
                return damage.to_result()
            log.warning(f"{name} failed: {type(e).__name__}: {e}")
            return error_answer(INTERNAL_ERROR, f"{name} failed: {type(e).__name__}: {e}").to_result()

    server = DiscoveryServer(
        disc,
        pools,
        version=__version__,
        title="toolidx: every MCP tool, one search away",
        instructions=disc.instructions(),
        lifespan=lifespan,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )

    async def remember_session(ctx: Any, call_next: Any) -> Any:
        run = _run_of(ctx)
        if run is not None and getattr(ctx, "session", None) is not None:
            run.remember(ctx.session)
        return await call_next(ctx)

    server.middleware.append(remember_session)
    server.views = views
    if load_model:  # stdio and HTTP alike: the one model policy (discovery.Model)
        disc.model.start(disc.db)
    return server


def grant_label(ctx: Any) -> str | None:
    """The label of the token a request came with (serve --http), or None."""
    request = getattr(ctx, "request", None)
    grant = getattr(request, "scope", {}).get("toolidx.grant") if request is not None else None
    return getattr(grant, "label", None)


def learner(ctx: Any) -> str:
    """Whose pairs a request records and reads (search.learned): its token's label, '' over stdio
    or without tokens."""
    request = getattr(ctx, "request", None)
    return token_of(getattr(request, "scope", {}).get("toolidx.grant") if request is not None else None)


def _run_of(ctx: Any) -> _Run | None:
    lc = getattr(ctx, "lifespan_context", None)
    return lc.get("run") if isinstance(lc, dict) else None


def _session_of(ctx: Any) -> Any:
    """The MCP session a request belongs to (the SDK's per-client Connection outlives the
    per-request session object), or None."""
    session = getattr(ctx, "session", None)
    return getattr(session, "_connection", None) or session


def _answer(d: Discovery, ctx: Any, name: str, args: dict) -> Any:
    """A meta-tool's answer (in a worker thread); a search's is noted for its session before the
    answer goes back, so the call that follows it finds it (Usage.saw_search)."""
    answered = answer(d, name, args)
    if name == "search_tools" and not answered.is_error and d.usage is not None:
        _saw_search(d, ctx, args, answered)
    return answered


def _saw_search(d: Discovery, ctx: Any, args: dict, answered: Any) -> None:
    shown = [h["id"] for h in answered.payload.get("hits", []) if isinstance(h, dict) and h.get("id")]
    embedder = d.model.embedder  # only once loaded: noting a search never waits for the model
    d.usage.saw_search(
        _session_of(ctx), learner(ctx), args.get("query", ""), shown, embedder, d.db.get_meta("embed_model")
    )


async def _execute(ctx: Any, disc: Discovery, tool_name: str, arguments: Any, timeout: float) -> dict:
    return await execute(
        disc,
        ctx.lifespan_context["pool"],
        tool_name,
        arguments,
        timeout,
        usage=disc.usage,
        alternative="use get_similar_tools for an alternative",
        session=_session_of(ctx),
    )


async def _watch(disc: Discovery, run: _Run, interval: float) -> None:
    """Notice a new crawl even while the client is idle, and tell it the tool list changed."""
    while True:
        await anyio.sleep(interval)
        try:
            changed = disc.refresh()
        except Exception as e:  # a locked or half-written file: try again next tick
            log.debug(f"index check failed: {e}")
            continue
        if changed:
            log.info("index changed: reloaded")
            await run.notify_tools_changed()
