"""toolidx's search inside a server made with the MCP Python SDK: one call after the tools are
registered, for `MCPServer` or the low-level `Server`.

    from mcp.server.mcpserver import MCPServer
    from toolidx.integrations.mcpsdk import add_tool_search

    server = MCPServer("My server")
    ...  # @server.tool() definitions
    search = add_tool_search(server, cache="~/.cache/my-server/tools.db")
    anyio.run(search.prepare)  # optional: build the catalog now, not at the first search

It wraps the server's own `tools/list` and `tools/call` handlers: `tools/list` then shows the
pinned tools (`always_visible`) and three tools, `search_tools` (toolidx's hybrid ranking, scores,
why each matched and "no good match", as `toolidx.integrations.catalog` searches), `describe_tool`
(a tool's parameters, or its full definition) and `call_tool` (runs a hidden tool through the
server's own handler). Hidden tools stay callable by name too. The catalog follows the tools the
server's own handler lists, refreshed when they change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from ..core.errors import ToolidxError, UsageError
from .catalog import MAX_LIMIT, LiveCatalog, agent_answer, limit_problem

__all__ = ["ToolSearch", "add_tool_search"]


class ToolSearch(LiveCatalog):
    """What `add_tool_search` returns: the catalog its search_tools reads, and `prepare`."""

    _prepare: Any = None  # set by add_tool_search: the server's hidden tools, read without a request

    async def prepare(self) -> None:
        """Build the catalog now (the model loaded, what the cache lacks embedded) instead of at
        the first `search_tools`: `anyio.run(search.prepare)` before the server runs. The server's
        own tools/list handler is called with no request context (`ctx` None)."""
        await self._prepare()


def _result(payload: Any, error: bool = False) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload if isinstance(payload, dict) and not error else None,
        is_error=error,
    )


def _meta_tools(search: str, describe: str, call: str, max_results: int) -> list[Tool]:
    return [
        Tool(
            name=search,
            description="Search this server's tools by what they do. Returns the best tools' definitions "
            "(as tools/list has them), each with a score (0-1, the estimated chance it serves the request) "
            f"and why it matched; no_match is true when no tool is good enough. Call one with {call}.",
            input_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in plain words"},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                        "description": f"At most this many tools (default {max_results})",
                    },
                },
                "required": ["query"],
            },
        ),
        Tool(
            name=describe,
            description="One tool in detail: its parameters (detail 'schema'), or its whole definition with an "
            "example of valid arguments (detail 'full').",
            input_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name"},
                    "detail": {"type": "string", "enum": ["summary", "schema", "full"], "default": "schema"},
                },
                "required": ["name"],
            },
        ),
        Tool(
            name=call,
            description=f"Call a tool found with {search} by its name, with its arguments.",
            input_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name"},
                    "arguments": {"type": "object", "description": "The tool's arguments"},
                },
                "required": ["name"],
            },
        ),
    ]


def add_tool_search(
    server: Any,
    *,
    max_results: int = 5,
    always_visible: list[str] | None = None,
    min_score: float | None = None,
    cache: str | Path | None = None,
    model: str | None = None,
    model_path: str | None = None,
    search_tool_name: str = "search_tools",
    describe_tool_name: str = "describe_tool",
    call_tool_name: str = "call_tool",
) -> ToolSearch:
    """Put toolidx's search in front of `server`'s tools (an `MCPServer` or a low-level `Server`
    with `tools/list` and `tools/call` handlers). The arguments are `ToolidxSearchTransform`'s
    (toolidx.integrations.fastmcp). Returns the catalog it searches (`prepare()` builds it now)."""
    import anyio

    problem = limit_problem(max_results)
    if problem:
        raise UsageError(f"max_results: {problem}", fix=f"pass max_results from 1 to {MAX_LIMIT}")
    low = getattr(server, "_lowlevel_server", server)  # MCPServer keeps its handlers on a low-level Server
    listing, calling = low.get_request_handler("tools/list"), low.get_request_handler("tools/call")
    if listing is None or calling is None:
        raise UsageError("the server has no tools/list or tools/call handler", fix="register its tools first")
    own_list, own_call = listing.handler, calling.handler
    pinned = set(always_visible or [])
    meta = _meta_tools(search_tool_name, describe_tool_name, call_tool_name, max_results)
    meta_names = {t.name for t in meta}
    label = str(getattr(low, "name", None) or "server").replace("/", "-")  # '/' separates server and tool in ids
    live = ToolSearch(server=label, cache=cache, model=model, model_path=model_path)
    live.preload()  # the model loads while the server starts

    async def own_tools(ctx: Any) -> list[Tool]:
        tools: list[Tool] = []
        cursor = None
        while True:
            page = await own_list(ctx, PaginatedRequestParams(cursor=cursor))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def list_tools(ctx: Any, params: PaginatedRequestParams) -> ListToolsResult:
        return ListToolsResult(tools=[*(t for t in await own_tools(ctx) if t.name in pinned), *meta])

    async def search(ctx: Any, args: dict) -> CallToolResult:
        query, limit = args.get("query"), args.get("limit", max_results)
        if not isinstance(query, str) or not query.strip():
            return _result({"error": "query must be a non-empty string"}, error=True)
        problem = limit_problem(limit)
        if problem:
            return _result({"error": problem}, error=True)
        hidden = [t for t in await own_tools(ctx) if t.name not in pinned]

        def run() -> dict[str, Any]:
            return live.using(hidden, lambda catalog: agent_answer(catalog, hidden, query, limit, min_score))

        return _result(await anyio.to_thread.run_sync(run))

    async def describe(ctx: Any, args: dict) -> CallToolResult:
        name, detail = args.get("name"), args.get("detail", "schema")
        hidden = [t for t in await own_tools(ctx) if t.name not in pinned]
        if not isinstance(name, str) or name not in {t.name for t in hidden}:
            return _result({"error": f"unknown tool: {name!r}"}, error=True)
        try:
            # this caller's own list, whole: another caller's may hold the same name defined otherwise
            d = await anyio.to_thread.run_sync(lambda: live.using(hidden, lambda c: c.describe(name, str(detail))))
        except ToolidxError as e:
            return _result({"error": str(e)}, error=True)
        return _result(d.to_json())

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> Any:
        args = params.arguments or {}
        if params.name == search_tool_name:
            return await search(ctx, args)
        if params.name == describe_tool_name:
            return await describe(ctx, args)
        if params.name != call_tool_name:
            return await own_call(ctx, params)  # a pinned or hidden tool called by its own name
        name, arguments = args.get("name"), args.get("arguments") or {}
        if not isinstance(name, str) or name in meta_names:
            return _result({"error": f"{call_tool_name} calls the server's tools, not {name!r}"}, error=True)
        if not isinstance(arguments, dict):
            return _result({"error": "arguments must be an object"}, error=True)
        if name not in {t.name for t in await own_tools(ctx)}:
            return _result({"error": f"unknown tool: {name!r}", "fix": f"find it with {search_tool_name}"}, error=True)
        return await own_call(ctx, CallToolRequestParams(name=name, arguments=arguments))

    async def prepare() -> None:
        hidden = [t for t in await own_tools(None) if t.name not in pinned]
        await anyio.to_thread.run_sync(live.current, hidden)

    live._prepare = prepare
    low.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    low.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    return live
