"""One tool in detail: `summary`, `schema` (a readable parameter table) or `full` (raw schemas,
annotations, server info and an example `arguments` object that validates against the schema).

Tool ids are forgiving (see `resolve`): `server/tool`, `server.tool`, `server:tool`, `server__tool`,
`mcp__server__tool`, or a bare tool name when only one server has it.
"""

from __future__ import annotations

from typing import Any, TypedDict

from ..core.errors import UsageError
from ..core.schemas import example_arguments, parameter_table, required_params, validate
from ..core.tooldoc import annotation_tags
from ..core.vocabulary import DETAIL_LEVELS as DETAILS
from ..store.db import Database
from ..store.tools import get_server, get_tool
from .resolve import UnknownToolError, resolve_tool_id

__all__ = ["describe", "example_arguments", "parameter_table", "DETAILS"]


class _Summary(TypedDict):
    id: str
    server: str
    name: str
    title: str | None
    description: str
    tags: list[str]
    category: str | None
    hints: list[str]
    read_only: bool | None
    destructive: bool | None
    required: list[str]
    params: list[str]
    stale: bool
    stale_reason: str | None
    detail: str


# `parameters` from detail "schema"; the raw schemas, server info and a validated example at
# "full"
class _Detailed(TypedDict, total=False):
    parameters: list[dict[str, Any]]
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any] | None
    icons: list[Any] | None
    _meta: dict[str, Any] | None
    server_info: dict[str, Any] | None
    example_arguments: Any
    example_valid: bool
    example_problem: str
    hash: str | None
    first_seen: str | None
    updated_at: str | None


class Description(_Summary, _Detailed):
    """What `describe` returns (the `describe --json` document's body)."""


def _server_info(db: Database, name: str) -> dict | None:
    s = get_server(db, name)
    if s is None:
        return None
    keys = ("name", "server_name", "server_title", "server_version", "protocol_version", "transport",
            "status", "error", "crawled_at", "last_ok_at", "instructions", "capabilities", "category",
            "tags")
    return {k: s.get(k) for k in keys}


def describe(db: Database, tool_id: str, detail: str = "summary") -> Description:
    """A JSON-able description of one tool at `detail` (summary | schema | full)."""
    if detail not in DETAILS:
        raise UsageError(f"unknown detail level {detail!r}", fix="use one of: " + ", ".join(DETAILS))
    tid = resolve_tool_id(db, tool_id)
    t = get_tool(db, tid)
    if t is None:  # removed between the look-up and the read (a crawl committed meanwhile)
        raise UnknownToolError(f"no tool {tool_id!r} in the index", [], where=db.path)
    schema = t.get("input_schema") or {}
    out: Description = {
        "id": t["id"], "server": t["server"], "name": t["name"], "title": t.get("title"),
        "description": t.get("description") or "", "tags": t.get("tags") or [],
        "category": t.get("category"), "hints": annotation_tags(t.get("annotations")),
        "read_only": t.get("read_only"), "destructive": t.get("destructive"),
        "required": required_params(schema), "params": t.get("param_names") or [],
        "stale": bool(t.get("stale")), "stale_reason": t.get("stale_reason"), "detail": detail,
    }
    if detail in ("schema", "full"):
        out["parameters"] = parameter_table(schema, t.get("param_names"))
    if detail == "full":
        example = example_arguments(schema)
        problem = validate(example, schema)
        out.update({
            "input_schema": t.get("input_schema"), "output_schema": t.get("output_schema"),
            "annotations": t.get("annotations"), "icons": t.get("icons"), "_meta": t.get("meta"),
            "server_info": _server_info(db, t["server"]),
            "example_arguments": example, "example_valid": problem is None,
            "hash": t.get("hash"), "first_seen": t.get("first_seen"), "updated_at": t.get("updated_at"),
        })
        if problem:
            out["example_problem"] = problem
    return out
