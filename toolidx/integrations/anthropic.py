"""toolidx as the custom tool search of the Anthropic Messages API.

The request's `tools` holds every tool in scope with `defer_loading: true` (the model sees none of
them up front) plus one ordinary tool, `search_tools`. When the model calls it, `handle_search`
answers with a `tool_result` whose content is `tool_reference` blocks naming the tools toolidx
ranks best; the API then expands those references into full definitions and the model calls the
tool by name. `execute` runs that call through toolidx's execute path and returns the
`tool_result`.

Shapes: Anthropic, "Tool search tool" (custom tool search implementation: a client tool whose
result holds `{"type": "tool_reference", "tool_name": ...}` blocks; every referenced tool must be
in `tools` with `defer_loading: true`, else the request fails with 400),
https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool , and the
`ToolReferenceBlockParam` / `ToolParam.defer_loading` types of the anthropic Python SDK.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.counts import plural
from .common import DEFAULT_TIMEOUT_S, ToolCatalog, field

SEARCH_TOOL_NAME = "search_tools"
MAX_LIMIT = 20
NO_MATCH_TEXT = (
    "No good match: no available tool fits this request well. Rephrase the query, or "
    "tell the user that no available tool does this."
)


def search_tool_definition(name: str = SEARCH_TOOL_NAME, total: int | None = None) -> dict:
    """The one non-deferred tool: the model's way into the deferred catalog."""
    where = f" among {plural(total, 'tool')}" if total else ""
    return {
        "name": name,
        "description": (
            f"Find the right tool for a task{where} (they are not listed up front). "
            "Describe what you want to do in plain words; the best matching tools are "
            "loaded and can then be called directly by name. If nothing fits, the "
            "answer says so: rephrase, or tell the user no such tool exists."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The task in plain words, e.g. \"current time in Tokyo\".",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": 5,
                    "description": "How many tools to load at most.",
                },
            },
            "required": ["query"],
        },
    }


class AnthropicToolSearch:
    """`tools()` for the request, `handle_search(block)` for the model's search call, `execute(block)`
    for its call of a found tool. Blocks may be dicts or the SDK's objects."""

    def __init__(self, catalog: ToolCatalog, *, search_tool_name: str = SEARCH_TOOL_NAME, default_limit: int = 5):
        if search_tool_name in catalog.ids:
            raise ValueError(f"search tool name {search_tool_name!r} collides with a tool of the catalog")
        self.catalog = catalog
        self.search_tool_name = search_tool_name
        self.default_limit = default_limit

    # --- the request --------------------------------------------------------------------------
    def deferred_tools(self) -> list[dict]:
        """Every tool in scope, deferred: `{"name", "description", "input_schema", "defer_loading": true}`."""
        c = self.catalog
        return [
            {"name": name, "description": c.description(i), "input_schema": c.input_schema(i), "defer_loading": True}
            for i, name in c.names.items()
        ]

    def tools(self) -> list[dict]:
        """The request's `tools`: the search tool first (not deferred), then every deferred tool."""
        return [search_tool_definition(self.search_tool_name, len(self.catalog))] + self.deferred_tools()

    # --- the model's search call --------------------------------------------------------------
    def is_search(self, block: Any) -> bool:
        return field(block, "type") == "tool_use" and field(block, "name") == self.search_tool_name

    def search(self, query: str, limit: int | None = None) -> tuple[list[str], bool]:
        """(API names best first, no_match)."""
        n = max(1, min(int(limit or self.default_limit), MAX_LIMIT))
        found = self.catalog.search(query, limit=n)
        return [self.catalog.names[i] for i in found.ids], found.no_match

    def handle_search(self, block: Any) -> dict:
        """The `tool_result` for a `tool_use` of the search tool: `tool_reference` blocks (every
        name one of `tools()`), or, when nothing fits, an empty reference list and a text saying so."""
        args = field(block, "input") or {}
        query = str(args.get("query") or "").strip()
        names, no_match = self.search(query, args.get("limit")) if query else ([], True)
        content: list[dict] = [{"type": "tool_reference", "tool_name": n} for n in names]
        if not names:
            content.append({"type": "text", "text": NO_MATCH_TEXT if query else "Error: query is empty."})
        return {"type": "tool_result", "tool_use_id": field(block, "id"), "content": content}

    # --- the model's call of a found tool -------------------------------------------------------
    def tool_id(self, name: str) -> str:
        return self.catalog.resolve(name)

    async def execute(self, block: Any, executor: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
        """Run a `tool_use` block of a catalog tool (`executor` from `catalog.executor()`)."""
        result = await executor.call(self.tool_id(field(block, "name")), field(block, "input") or {}, timeout_s)
        return tool_result(field(block, "id"), result)

    def execute_sync(self, block: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
        result = self.catalog.call_sync(self.tool_id(field(block, "name")), field(block, "input") or {}, timeout_s)
        return tool_result(field(block, "id"), result)


def tool_result(tool_use_id: str, result: dict) -> dict:
    """An MCP CallToolResult as a Messages API `tool_result` block (text and images kept, other
    blocks and structured content as JSON text)."""
    content: list[dict] = []
    for c in result.get("content") or []:
        if c.get("type") == "text":
            content.append({"type": "text", "text": c.get("text", "")})
        elif c.get("type") == "image" and c.get("data"):
            content.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": c.get("mimeType", "image/png"), "data": c["data"]},
                }
            )
        else:
            content.append({"type": "text", "text": json.dumps(c, ensure_ascii=False)})
    if not content and result.get("structuredContent") is not None:
        content.append({"type": "text", "text": json.dumps(result["structuredContent"], ensure_ascii=False)})
    out: dict = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content or "(no output)"}
    if result.get("isError"):
        out["is_error"] = True
    return out
