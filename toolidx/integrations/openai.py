"""toolidx as the client-executed `tool_search` of the OpenAI Responses API.

The request's `tools` holds `{"type": "tool_search", "execution": "client", "description",
"parameters"}`; the model answers with a `tool_search_call` (its `arguments` follow our
`parameters`: a query and a limit), the application answers with a `tool_search_output` carrying
the **full** function definitions toolidx ranks best, grouped into namespaces, and the model then
emits `function_call` items (`namespace` + `name`) that `execute` runs through toolidx's execute
path and answers with `function_call_output`.

Namespaces hold fewer than 10 functions (OpenAI recommends it for token efficiency and accuracy):
one per server, or per category inside a big server, then cut into chunks of at most 9.

Shapes: OpenAI, "Tool search" guide (client-executed tool search: `tool_search_output` with
`execution: "client"`, the `call_id` of the call, `status: "completed"` and the loaded `tools`;
namespaces; functions with `defer_loading: true`),
https://developers.openai.com/api/docs/guides/tools-tool-search , and the
`ResponseToolSearchCall`, `ResponseToolSearchOutputItemParam`, `ToolSearchToolParam` and
`ToolSearchOutputNamespaceToolParam` types of the openai Python SDK.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ..core.counts import plural
from ..core.tooldoc import tool_name_part
from .common import DEFAULT_TIMEOUT_S, ToolCatalog, field, result_text

MAX_PER_NAMESPACE = 9  # "fewer than 10 functions per namespace"
NAME_MAX = 64
MAX_LIMIT = 20
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _safe(text: str, taken: set[str], full: str) -> str:
    base = _UNSAFE.sub("_", text) or "tool"
    if len(base) <= NAME_MAX and base not in taken:
        return base
    return base[: NAME_MAX - 7] + "_" + hashlib.sha256(full.encode()).hexdigest()[:6]


def tool_search_definition(total: int | None = None) -> dict:
    where = f" among {plural(total, 'tool')}" if total else ""
    return {
        "type": "tool_search",
        "execution": "client",
        "description": (
            f"Find the tools needed for the task{where} (they are not loaded up front). "
            "Describe what you want to do in plain words; the best matching tools are "
            "loaded, grouped by server. An empty result means no available tool fits."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The task in plain words."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": "How many tools to load at most (default 8).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }


class OpenAIToolSearch:
    """`tools()` for the request, `handle_search(item)` for a `tool_search_call`, `execute(item)`
    for a `function_call` of a loaded tool. Items may be dicts or the SDK's objects."""

    def __init__(self, catalog: ToolCatalog, *, default_limit: int = 8, max_per_namespace: int = MAX_PER_NAMESPACE):
        self.catalog = catalog
        self.default_limit = default_limit
        self.place: dict[str, tuple[str, str]] = {}  # id -> (namespace, function name)
        self.by_place: dict[tuple[str, str], str] = {}
        self.namespace_description: dict[str, str] = {}
        self._group(max(1, min(max_per_namespace, MAX_PER_NAMESPACE)))

    def _group(self, size: int) -> None:
        by_server: dict[str, list[str]] = {}
        for i in self.catalog.names:  # ids in order
            by_server.setdefault(i.partition("/")[0], []).append(i)
        taken_ns: set[str] = set()
        for server, ids in by_server.items():
            groups: list[tuple[str, str, list[str]]]  # (name, description, ids)
            desc = f"Tools of the MCP server {server!r}"
            if len(ids) <= size:
                groups = [(server, desc + ".", ids)]
            else:
                by_cat: dict[str, list[str]] = {}
                for i in ids:
                    by_cat.setdefault(self.catalog.tool(i).get("category") or "other", []).append(i)
                groups = []
                for cat, cids in by_cat.items():
                    label = server if len(by_cat) == 1 else f"{server}__{cat}"
                    chunks = [cids[k : k + size] for k in range(0, len(cids), size)]
                    for n, chunk in enumerate(chunks, 1):
                        name = label if len(chunks) == 1 else f"{label}_{n}"
                        part = f" (part {n} of {len(chunks)})" if len(chunks) > 1 else ""
                        what = f", category {cat}" if len(by_cat) > 1 else ""
                        groups.append(
                            (
                                name,
                                f"{desc}{what}{part}: " + ", ".join(self.catalog.tool(i)["name"] for i in chunk) + ".",
                                chunk,
                            )
                        )
            for name, description, gids in groups:
                ns = _safe(name, taken_ns, f"{server}/{name}")
                taken_ns.add(ns)
                self.namespace_description[ns] = description
                taken_fn: set[str] = set()
                for i in gids:
                    fn = _safe(tool_name_part(i, keep="_-"), taken_fn, i)  # a look-alike never takes a name
                    taken_fn.add(fn)
                    self.place[i], self.by_place[(ns, fn)] = (ns, fn), i

    # --- the request --------------------------------------------------------------------------
    def tools(self) -> list[dict]:
        """The request's `tools`: the client-executed tool_search (nothing else is needed: the
        found tools arrive in `tool_search_output`)."""
        return [tool_search_definition(len(self.catalog))]

    def function(self, tool_id: str) -> dict:
        """A tool's full function definition inside its namespace."""
        c = self.catalog
        return {
            "type": "function",
            "name": self.place[tool_id][1],
            "description": c.description(tool_id),
            "defer_loading": True,
            "parameters": c.input_schema(tool_id),
        }

    def namespaces(self, tool_ids: list[str] | None = None) -> list[dict]:
        """`tool_ids` (default: all) as namespace objects, namespaces in first-hit order, each
        holding its found functions in rank order."""
        grouped: dict[str, list[dict]] = {}
        for i in self.catalog.names if tool_ids is None else tool_ids:
            grouped.setdefault(self.place[i][0], []).append(self.function(i))
        return [
            {"type": "namespace", "name": ns, "description": self.namespace_description[ns], "tools": fns}
            for ns, fns in grouped.items()
        ]

    # --- the model's search call --------------------------------------------------------------
    def is_search(self, item: Any) -> bool:
        return field(item, "type") == "tool_search_call"

    def search(self, query: str, limit: int | None = None) -> tuple[list[str], bool]:
        n = max(1, min(int(limit or self.default_limit), MAX_LIMIT))
        found = self.catalog.search(query, limit=n)
        return found.ids, found.no_match

    def handle_search(self, item: Any) -> dict:
        """The `tool_search_output` item answering a `tool_search_call`."""
        args = field(item, "arguments") or {}
        if isinstance(args, str):
            args = json.loads(args or "{}")
        query = str(args.get("query") or args.get("goal") or "").strip()
        ids, _ = self.search(query, args.get("limit")) if query else ([], True)
        return {
            "type": "tool_search_output",
            "call_id": field(item, "call_id"),
            "execution": "client",
            "status": "completed",
            "tools": self.namespaces(ids),
        }

    # --- the model's call of a loaded function --------------------------------------------------
    def tool_id(self, item: Any) -> str:
        key = (field(item, "namespace") or "", field(item, "name") or "")
        if key in self.by_place:
            return self.by_place[key]
        return self.catalog.resolve(key[1])

    def _arguments(self, item: Any) -> Any:
        raw = field(item, "arguments") or "{}"
        return json.loads(raw) if isinstance(raw, str) else raw

    async def execute(self, item: Any, executor: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
        result = await executor.call(self.tool_id(item), self._arguments(item), timeout_s)
        return function_call_output(field(item, "call_id"), result)

    def execute_sync(self, item: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
        result = self.catalog.call_sync(self.tool_id(item), self._arguments(item), timeout_s)
        return function_call_output(field(item, "call_id"), result)


def function_call_output(call_id: str, result: dict) -> dict:
    text = result_text(result)
    return {
        "type": "function_call_output",
        "call_id": call_id,
        "output": ("Error: " + text) if result.get("isError") and not text.startswith("Error") else text,
    }
