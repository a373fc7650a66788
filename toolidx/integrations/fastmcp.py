"""toolidx's search as a FastMCP search transform: one line in a FastMCP server.

    from fastmcp import FastMCP
    from toolidx.integrations.fastmcp import ToolidxSearchTransform

    mcp = FastMCP("My server")
    ...  # @mcp.tool definitions
    mcp.add_transform(ToolidxSearchTransform(cache="~/.cache/my-server/tools.db"))

The same shape as FastMCP's own `BM25SearchTransform` and `RegexSearchTransform`: `tools/list`
shows the pinned tools (`always_visible`), `search_tools` and `call_tool`; every other tool is
hidden yet callable through `call_tool` (or directly). `search_tools` ranks with toolidx's hybrid
search, model and "no good match" gate (`toolidx.integrations.catalog`) and answers each tool's
definition as `tools/list` has it with its `score` (calibrated, 0..1) and `why`; the catalog is
refreshed, changed tools embedded again, whenever the server's tools change.

Needs FastMCP (`pip install "toolidx[fastmcp]"`); nothing else in toolidx imports this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

try:
    from fastmcp.exceptions import ToolError
    from fastmcp.server.context import Context
    from fastmcp.server.transforms.search.base import BaseSearchTransform
    from fastmcp.tools.base import Tool
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError(f"toolidx.integrations.fastmcp needs FastMCP ({e}): pip install 'toolidx[fastmcp]'") from None

from ..core.errors import ToolidxError, UsageError
from .catalog import MAX_LIMIT, LiveCatalog, agent_answer, limit_problem

__all__ = ["ToolidxSearchTransform"]


class ToolidxSearchTransform(BaseSearchTransform):
    """Replace the tool listing with toolidx's search over the server's tools.

    Args:
        max_results: at most this many tools per search (the default of `search_tools`' `limit`).
        always_visible: tool names listed beside the search and call tools (and not searched).
        search_tool_name, call_tool_name: the names of the two synthetic tools.
        min_score: the score below which tools are not returned (None: toolidx's calibrated
            "no good match" threshold; 0: always the best `max_results`).
        cache: a file that keeps the tools' vectors, so a restart with the same tools embeds
            nothing (None: in memory, embedded at each start).
        model, model_path: the embedding model (default: TOOLIDX_MODEL_PATH, else toolidx's own).
        server: the server part of toolidx's ids (`server/tool`); the answers name tools by name.
    """

    def __init__(
        self,
        *,
        max_results: int = 5,
        always_visible: list[str] | None = None,
        search_tool_name: str = "search_tools",
        call_tool_name: str = "call_tool",
        min_score: float | None = None,
        cache: str | Path | None = None,
        model: str | None = None,
        model_path: str | None = None,
        server: str = "server",
    ) -> None:
        problem = limit_problem(max_results)
        if problem:
            raise UsageError(f"max_results: {problem}", fix=f"pass max_results from 1 to {MAX_LIMIT}")
        super().__init__(
            max_results=max_results,
            always_visible=always_visible,
            search_tool_name=search_tool_name,
            call_tool_name=call_tool_name,
        )
        self.min_score = min_score  # None: the calibrated gate
        self.live = LiveCatalog(server=server, cache=cache, model=model, model_path=model_path)
        self.live.preload()  # the model loads while the server starts
        self._search_tool: Tool | None = None

    def _make_search_tool(self) -> Tool:
        # FastMCP asks for the tool at every tools/list and tools/call: made once (its schema is
        # read from the function's signature, 2 ms a call)
        if self._search_tool is None:
            self._search_tool = self._new_search_tool()
        return self._search_tool

    def _new_search_tool(self) -> Tool:
        transform = self

        async def search_tools(
            query: Annotated[str, "What the tool should do, in plain words"],
            limit: Annotated[int | None, "At most this many tools (default: the server's)"] = None,
            ctx: Context = None,  # type: ignore[assignment]
        ) -> dict[str, Any]:
            """Search this server's tools by what they do.

            Returns the best tools' definitions (as list_tools has them), each with a score (0-1,
            the estimated chance it serves the request) and why it matched; `no_match` is true
            when no tool is good enough. Call one with call_tool.
            """
            problem = None if limit is None else limit_problem(limit)
            if problem:  # as the SDK helper answers it: 0 or 500 is not quietly another number
                raise ToolError(problem)
            tools = await transform._get_visible_tools(ctx)
            return await transform.answer(tools, query, transform._max_results if limit is None else limit)

        return Tool.from_function(fn=search_tools, name=self._search_tool_name)

    async def answer(self, tools: Sequence[Tool], query: str, limit: int) -> dict[str, Any]:
        """search_tools' answer over `tools` (the catalog refreshed first when they changed)."""
        import anyio

        def run() -> dict[str, Any]:
            return self.live.using(tools, lambda catalog: agent_answer(catalog, tools, query, limit, self.min_score))

        try:
            return await anyio.to_thread.run_sync(run)
        except ToolidxError as e:  # bad input (an empty query): the agent reads what to do
            raise ToolError(str(e)) from None

    async def prepare(self, server: Any) -> None:
        """Build the catalog now, embedding what the cache lacks, instead of at the first
        `search_tools` (a first start of 1,000 tools embeds for seconds, on a small machine
        minutes): `asyncio.run(transform.prepare(mcp))` before `mcp.run()`."""
        from types import SimpleNamespace

        import anyio

        # the catalog as search_tools will read it: this transform bypassed, middleware applied
        tools = await self.get_tool_catalog(SimpleNamespace(fastmcp=server))  # type: ignore[arg-type]
        hidden = [t for t in tools if t.name not in self._always_visible]
        await anyio.to_thread.run_sync(self.live.current, hidden)

    async def _search(self, tools: Sequence[Tool], query: str) -> Sequence[Tool]:
        """BaseSearchTransform's hook: the matching tools, best first, without their scores."""
        answer = await self.answer(tools, query, self._max_results)
        by_name = {t.name: t for t in tools}
        return [by_name[t["name"]] for t in answer["tools"]]
