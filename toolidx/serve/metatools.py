"""The discovery server's meta-tools as they go on the wire: names, descriptions written for an
LLM reader, and exact JSON input schemas.

Kept apart from server.py (which needs mcp) so `toolidx stats` can count their tokens without
importing the MCP SDK.
"""

from __future__ import annotations

import copy
from typing import Any

from ..core.counts import plural
from ..core.vocabulary import DETAIL_LEVELS, SEARCH_MODES
from ..search.request import FILTER_KEYS, META, json_schema

SEARCH_TYPES = [SEARCH_MODES[0], SEARCH_MODES[2], SEARCH_MODES[1]]  # the description's order: semantic, keyword
DETAILS = list(DETAIL_LEVELS)
SORT_BY = ["name", "server", "category", "execution_count", "success_rate", "recent"]
USAGE_SORTS = {"execution_count": "calls", "success_rate": "success", "recent": "recent"}
DEFAULT_TIMEOUT_MS = 30_000

# Request limits (docs/reliability.md): a meta-tool argument past one is refused with an
# invalid_arguments error that quotes at most 200 characters of it.
MAX_NAME_CHARS = 1_000  # tool_name, filter values, name_pattern, description_contains
MAX_LIST_ITEMS = 100  # values in one filter list
MAX_PAGE = 100_000


def _meta_param(key: str) -> dict:
    """search's parameter `key` as the meta-tools publish it: its doc and schema written once
    (search.request.PARAMS), with the request limits above."""
    schema = json_schema(key, META)
    if schema.get("type") == "array":
        schema.update(items={"type": "string", "maxLength": MAX_NAME_CHARS}, maxItems=MAX_LIST_ITEMS)
    elif schema.get("type") == "string" and key != "query":
        schema["maxLength"] = MAX_NAME_CHARS
    if schema.get("type") == "boolean":
        schema.pop("default", None)
    return schema


_FILTERS = {
    "type": "object",
    "description": "Optional narrowing; lists match any of their values.",
    "properties": {key: _meta_param(key) for key in (*FILTER_KEYS, "min_score")},
    "additionalProperties": False,
}

_TOOL_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_NAME_CHARS,
    "description": "The tool's id as search_tools/list_tools return it: \"server/tool\" "
    "(e.g. \"time/get_current_time\"). A bare tool name works when only one server has it.",
}


def _filters(search: bool) -> dict[str, Any]:
    f: dict[str, Any] = copy.deepcopy(_FILTERS)
    if not search:
        del f["properties"]["min_score"]
    return f


META_TOOLS: list[dict] = [
    {
        "name": "search_tools",
        "title": "Search tools",
        "description": (
            "Find the right tool for a task among every tool of every MCP server indexed here "
            "(they are not listed directly). Describe what you want to do in plain words; you get "
            "ranked matches with ids, one-line descriptions and a 0..1 relevance score. If nothing "
            "fits, the answer says so explicitly (no_match: true) instead of guessing: then "
            "rephrase or tell the user no such tool exists. Next step: describe_tool for the "
            "exact arguments, then execute_tool to run it."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": _meta_param("query"),
                "limit": _meta_param("limit"),
                "filters": _filters(search=True),
                "include_schemas": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also return each match's input schema (costs context; "
                    "usually describe_tool on the one you pick is better).",
                },
                "search_type": {**_meta_param("mode"), "enum": SEARCH_TYPES},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "list_tools",
        "title": "List all tools",
        "description": (
            "Browse the full catalog page by page, in a stable order (use search_tools to find a "
            "tool for a task; use this to see everything a server offers). Returns items, the "
            "total count, and next_page (null on the last page)."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "page": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_PAGE,
                    "default": 1,
                    "description": "1-based page number.",
                },
                "page_size": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100,
                    "default": 20,
                    "description": "Tools per page.",
                },
                "sort_by": {
                    "type": "string",
                    "enum": SORT_BY,
                    "default": "name",
                    "description": "name: by tool name; server: grouped by server; "
                    "category: grouped by category; execution_count, success_rate, "
                    "recent: by calls made through this server (never-called last).",
                },
                "sort_order": {
                    "type": "string",
                    "enum": ["asc", "desc"],
                    "description": "Default asc for name/server/category, desc (most first) for the usage sorts.",
                },
                "filters": _filters(search=False),
                "include_schemas": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also return each tool's input schema (costs context).",
                },
            },
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "describe_tool",
        "title": "Describe a tool",
        "description": (
            "Everything needed to call one tool correctly: its parameters (types, required, "
            "defaults, allowed values), the full input schema, its annotations (read-only, "
            "destructive) and an example arguments object. An unknown name returns the closest "
            "existing names. Call this before execute_tool."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool_name": _TOOL_NAME,
                "detail": {
                    "type": "string",
                    "enum": DETAILS,
                    "default": "schema",
                    "description": "summary: description and parameter names; schema (default): "
                    "plus a parameter table, the input schema, annotations and example "
                    "arguments; full: plus output schema and server details.",
                },
                "include_metrics": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also return usage metrics: calls, success rate, p50/p95 duration, last used.",
                },
                "include_examples": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also return usage examples (argument objects that "
                    "worked or that the tool documents).",
                },
                "check": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also check it is callable now (preflight): in scope, approved, and "
                    "its server starts and still lists it unchanged. Slower: starts the "
                    "server.",
                },
            },
            "required": ["tool_name"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "execute_tool",
        "title": "Run a tool",
        "description": (
            "Run one tool on its real MCP server and get its result back unchanged (content, "
            "structuredContent, isError). `arguments` is checked against the tool's input schema "
            "first: if it does not fit, nothing is run and the answer lists what is wrong, with the "
            "schema and an example to fix the call. Find the tool with search_tools and its "
            "arguments with describe_tool first."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool_name": _TOOL_NAME,
                "arguments": {
                    "type": "object",
                    "default": {},
                    "description": "The tool's arguments, exactly as its input schema asks (see describe_tool).",
                },
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 100,
                    "maximum": 600_000,
                    "default": DEFAULT_TIMEOUT_MS,
                    "description": "Give up after this many milliseconds.",
                },
            },
            "required": ["tool_name"],
            "additionalProperties": False,
        },
        # it runs arbitrary tools: no hint can be promised
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    },
    {
        "name": "get_tool_categories",
        "title": "Tool categories, tags and servers",
        "description": (
            "An overview of what is available: categories, tags and servers, each with a tool "
            "count (and each server's status). Use it to pick values for the `filters` of "
            "search_tools and list_tools, or to answer \"what can you do?\"."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "include_tags": {"type": "boolean", "default": True, "description": "Include the tag list."},
                "include_servers": {"type": "boolean", "default": True, "description": "Include the server list."},
            },
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "get_similar_tools",
        "title": "Similar tools",
        "description": (
            "Alternatives to one tool: tools doing the same or nearly the same thing, on the same "
            "or other servers, with likely duplicates flagged. Use it when a tool fails, is "
            "missing a feature, or to choose between overlapping servers."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool_name": _TOOL_NAME,
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 5,
                    "description": "How many alternatives at most.",
                },
            },
            "required": ["tool_name"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
]

META_NAMES = frozenset(t["name"] for t in META_TOOLS)

# Claude Code defers every MCP tool behind its own tool search unless the tool opts out with this
# key; without it the model would first have to search for the searcher.
ALWAYS_LOAD_KEY = "anthropic/alwaysLoad"
ALWAYS_LOADED = ("search_tools", "describe_tool", "execute_tool")
# Claude Code's tool search also reads a short phrase per tool: what a request for it sounds like.
SEARCH_HINT_KEY = "anthropic/searchHint"
SEARCH_HINTS = {
    "search_tools": "find a tool for any task among all MCP servers",
    "list_tools": "browse every available MCP tool",
    "describe_tool": "arguments and schema of an MCP tool",
    "execute_tool": "run any MCP tool",
    "get_tool_categories": "what tools, servers and categories are available",
    "get_similar_tools": "alternatives to an MCP tool",
}
# Claude Code cuts tool descriptions and server instructions beyond 2 KB.
DESCRIPTION_MAX_BYTES = 2048
CUT_MARKER = " [...cut by toolidx]"

INSTRUCTIONS = (
    "This server stands in for many MCP servers. Their tools are not listed one by one: find one "
    "with search_tools (plain-language task), check its arguments with describe_tool, run it with "
    "execute_tool. get_tool_categories shows what is available; list_tools pages through all of it."
)

_WORKFLOW = (
    "Workflow: 1) search_tools with the task in plain words (it says no_match when nothing fits); "
    "2) describe_tool on the id you pick for its exact arguments; 3) execute_tool with that id and "
    "arguments: it runs the real tool and returns its result unchanged. get_tool_categories gives an "
    "overview; list_tools pages through everything."
)


def cut_text(text: str, max_bytes: int = DESCRIPTION_MAX_BYTES, marker: str = CUT_MARKER) -> str:
    """`text` within `max_bytes` of UTF-8, cut at a character boundary with a visible marker."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    keep = raw[: max_bytes - len(marker.encode("utf-8"))].decode("utf-8", errors="ignore")
    return keep.rstrip() + marker


# The catalog summary (serve.stats.catalog_of) holds this many servers by name and categories by
# size at most: more than the instructions can show (each name costs 3 bytes or more of its half
# of DESCRIPTION_MAX_BYTES), so they say the same as with every name, and the counts say how many.
SUMMARY_NAMES = DESCRIPTION_MAX_BYTES // 2 // 3 + 1


def instructions(
    total: int | None = None,
    servers: list[tuple[str, int]] | None = None,
    categories: list[str] | None = None,
    server_count: int | None = None,
    category_count: int | None = None,
) -> str:
    """The server's `instructions`: what the catalog holds (tool and server counts, the servers
    and categories by name, as many as fit) and the search -> describe -> execute workflow, within
    DESCRIPTION_MAX_BYTES. Without a catalog summary, the generic text. `servers` and `categories`
    may be the first of longer lists: `server_count` and `category_count` say how long (default:
    the lists are whole)."""
    if total is None:
        return INSTRUCTIONS
    servers = servers or []
    categories = categories or []
    counts = {
        "Servers": len(servers) if server_count is None else server_count,
        "Categories": len(categories) if category_count is None else category_count,
    }
    head = (
        f"toolidx: one search over {plural(total, 'tool')} of {plural(counts['Servers'], 'MCP server')}, "
        "indexed here instead of listed (they are not in your tool list; these meta-tools reach all of them)."
    )
    parts = [head, _WORKFLOW]
    budget = DESCRIPTION_MAX_BYTES - len(" ".join(parts).encode()) - 40
    for label, names in (("Servers", [f"{n} ({c})" for n, c in servers]), ("Categories", categories)):
        if not names:
            continue
        line, shown = f"{label}: ", 0
        for name in names:
            piece = (", " if shown else "") + name
            if len((line + piece).encode()) > budget // 2:
                break
            line, shown = line + piece, shown + 1
        if shown < counts[label]:
            line += f" and {counts[label] - shown} more"
        parts.insert(-1, line + ".")
    return cut_text(" ".join(parts))


SEARCH_CATALOG_MAX_WORDS = 60  # the catalog sentence search_tools' description gains
SHOWN_SERVERS, _SHOWN_CATEGORIES = 8, 6


def catalog_sentence(
    total: int, servers: list[tuple[str, int]], categories: list[str], server_count: int | None = None
) -> str:
    """What search_tools fronts, in one short sentence: the tool count, the servers (largest
    first) and the top categories, at most SEARCH_CATALOG_MAX_WORDS words. `servers` may be some
    of them (the largest SHOWN_SERVERS and every one named like a category among them):
    `server_count` says how many there are (default: all are given)."""
    ranked = sorted(servers, key=lambda s: (-s[1], s[0]))
    names = [n for n, _ in ranked[:SHOWN_SERVERS]]
    count = len(ranked) if server_count is None else server_count
    more = f" and {count - len(names)} more" if count > len(names) else ""
    text = f"Searches {plural(total, 'tool')} of {plural(count, 'MCP server')}" + (
        f" ({', '.join(names)}{more})" if names else ""
    )
    shown = {n for n, _ in ranked}
    cats = [c for c in categories if c and c not in shown][:_SHOWN_CATEGORIES]  # not the servers again
    if cats:
        text += f"; top categories: {', '.join(cats)}"
    words = text.split()
    if len(words) > SEARCH_CATALOG_MAX_WORDS:
        text = " ".join(words[:SEARCH_CATALOG_MAX_WORDS]) + " …"
    return text + "."


def meta_tools(always_load: bool = True, catalog: tuple | None = None) -> list[dict]:
    """A fresh copy of the wire definitions (callers may add to them), each with
    `_meta["anthropic/searchHint"]`. `always_load`: mark the core three with
    `_meta["anthropic/alwaysLoad"]` so clients that defer MCP tools load them. `catalog`: (tool
    count, [(server, tools)], categories by size[, server count, category count]), the summary the
    server instructions are built from (catalog.listing.CatalogSummary); search_tools' description
    then names what it searches (within 2 KB)."""
    tools = copy.deepcopy(META_TOOLS)
    if catalog is not None:
        search = next(t for t in tools if t["name"] == "search_tools")
        search["description"] = cut_text(catalog_sentence(*catalog[:4]) + " " + search["description"])
    for t in tools:
        t["_meta"] = {SEARCH_HINT_KEY: SEARCH_HINTS[t["name"]]}
        if always_load and t["name"] in ALWAYS_LOADED:
            t["_meta"][ALWAYS_LOAD_KEY] = True
    return tools
