"""One tool in detail: `summary`, `schema` (a readable parameter table) or `full` (raw schemas,
annotations, server info and an example `arguments` object that validates against the schema).

Tool ids are forgiving (see `resolve`): `server/tool`, `server.tool`, `server:tool`, `server__tool`,
`mcp__server__tool`, or a bare tool name when only one server has it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..core.errors import UsageError
from ..core.schemas import example_arguments, parameter_table, required_params, validate
from ..core.toolcard import ToolSummary
from ..core.tooldoc import annotation_tags
from ..core.vocabulary import DETAIL_LEVELS as DETAILS
from ..store.index import Reader
from ..store.tools import get_server, get_tool
from ..store.usage import UsageStore
from .examples import generated_arguments, tool_examples
from .metrics import Metrics, tool_usage
from .resolve import UnknownToolError, resolve_tool_id

__all__ = ["describe", "example_arguments", "parameter_table", "DETAILS", "Description", "FullDetail"]

log = logging.getLogger("toolidx")
_T = TypeVar("_T")


@dataclass
class FullDetail:
    """What detail "full" adds: the raw schemas, server info and an example that was validated."""

    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any] | None
    icons: list[Any] | None
    meta: dict[str, Any] | None  # the definition's `_meta`
    server_info: dict[str, Any] | None
    example_arguments: Any
    example_problem: str | None  # why the generated example does not validate; None when it does
    hash: str | None
    first_seen: str | None
    updated_at: str | None

    def to_json(self) -> dict[str, Any]:
        out = {
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "annotations": self.annotations,
            "icons": self.icons,
            "_meta": self.meta,
            "server_info": self.server_info,
            "example_arguments": self.example_arguments,
            "example_valid": self.example_problem is None,
            "hash": self.hash,
            "first_seen": self.first_seen,
            "updated_at": self.updated_at,
        }
        if self.example_problem:
            out["example_problem"] = self.example_problem
        return out


@dataclass
class Description(ToolSummary):
    """What `describe` returns (`to_json()`: the `describe --json` document's body). Its
    `description` is the whole text, not the first line."""

    hints: list[str] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    stale_reason: str | None = None
    detail: str = "summary"
    parameters: list[dict[str, Any]] | None = None  # detail "schema" and "full": the parameter table
    full: FullDetail | None = None  # detail "full"
    metrics: Metrics | None = None  # asked for: the usage file's figures
    examples: list[dict[str, Any]] | None = None  # asked for: catalog.examples

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "server": self.server,
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "tags": self.tags,
            "category": self.category,
            "hints": self.hints,
            "read_only": self.read_only,
            "destructive": self.destructive,
            "required": self.required,
            "params": self.params,
            "stale": self.stale,
            "stale_reason": self.stale_reason,
            "detail": self.detail,
        }
        if self.parameters is not None:
            out["parameters"] = self.parameters
        if self.full is not None:
            out.update(self.full.to_json())
        if self.metrics is not None:
            out["metrics"] = self.metrics.to_json()
        if self.examples is not None:
            out["examples"] = self.examples
        return out


def _server_info(db: Reader, name: str) -> dict | None:
    s = get_server(db, name)
    if s is None:
        return None
    keys = (
        "name",
        "server_name",
        "server_title",
        "server_version",
        "protocol_version",
        "transport",
        "status",
        "error",
        "crawled_at",
        "last_ok_at",
        "instructions",
        "capabilities",
        "category",
        "tags",
    )
    return {k: s.get(k) for k in keys}


def _read(usage: UsageStore | None, read: Callable[[UsageStore | None], _T]) -> _T:
    """`read(usage)`; when the usage file cannot be read, `read(None)` (what the index alone says),
    with a warning: a describe never fails for the usage file."""
    try:
        return read(usage)
    except Exception as e:
        if usage is None:
            raise
        log.warning(f"usage file unreadable, answering without it: {type(e).__name__}: {e}")
        return read(None)


def describe(
    db: Reader,
    tool_id: str,
    detail: str = "summary",
    *,
    usage: UsageStore | None = None,
    metrics: bool = False,
    examples: bool = False,
    scope: str | None = None,
) -> Description:
    """One tool at `detail` (summary | schema | full); with `metrics`, its usage figures from
    `usage` (zeros when nothing is recorded); with `examples`, its usage examples (catalog.examples:
    recorded ones from `usage`, of the `scope` label only when given). The one describe of the
    CLI and of serve's describe_tool."""
    if detail not in DETAILS:
        raise UsageError(f"unknown detail level {detail!r}", fix="use one of: " + ", ".join(DETAILS))
    tid = resolve_tool_id(db, tool_id)
    t = get_tool(db, tid)
    if t is None:  # removed between the look-up and the read (a crawl committed meanwhile)
        raise UnknownToolError(f"no tool {tool_id!r} in the index", [], where=db.path)
    schema = t.get("input_schema") or {}
    out = Description.from_row(t)
    out.description = t.get("description") or ""
    out.hints = annotation_tags(t.get("annotations"))
    out.required = required_params(schema)
    out.stale_reason = t.get("stale_reason")
    out.detail = detail
    if detail in ("schema", "full"):
        out.parameters = parameter_table(schema, t.get("param_names"))
    server_info = _server_info(db, t["server"]) if detail == "full" or examples else None
    if detail == "full":
        example = generated_arguments(t, server_info)
        out.full = FullDetail(
            input_schema=t.get("input_schema"),
            output_schema=t.get("output_schema"),
            annotations=t.get("annotations"),
            icons=t.get("icons"),
            meta=t.get("meta"),
            server_info=server_info,
            example_arguments=example,
            example_problem=validate(example, schema),
            hash=t.get("hash"),
            first_seen=t.get("first_seen"),
            updated_at=t.get("updated_at"),
        )
    if metrics:
        out.metrics = _read(usage, lambda u: tool_usage(u, t["id"]))
    if examples:
        out.examples = _read(usage, lambda u: tool_examples(t, u, scope, server_info))
    return out
