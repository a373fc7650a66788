"""A tool's usage examples, from every place one comes from, each marked with its `source`:

- `schema`: the input schema's own `examples` (whole argument objects), and one object built
  from its properties' `examples` / `default` values;
- `tools_file`: a saved tool list's row may carry `examples` (argument objects, or
  `{"arguments": {...}}`);
- `recorded`: successful calls `toolidx serve --record-examples` kept (secrets redacted), from the
  usage file; serve shows a caller only those recorded in its own scope, and every one is
  redacted again when read (a row written by an older, weaker redaction is no leak);
- `generated`: toolidx's own example arguments (core.schemas.example_arguments).

Only examples that validate against the tool's input schema are shown or counted: one that does
not (a default that breaks a pattern, a saved example of an older schema) would teach a call
the tool refuses. `has_examples` (core.filters) keeps tools with a valid example from the first
three sources (`example_tool_ids`): every tool has a generated one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core.redact import redact
from ..core.schemas import compile_validator, example_arguments, schema_errors
from ..store.catalog import documented_example_rows
from ..store.index import Reader
from ..store.tools import get_tool
from ..store.usage import UsageStore

MAX_EXAMPLES = 8


def _schema_examples(schema: Any) -> list[dict]:
    if not isinstance(schema, dict):
        return []
    out = (
        [e for e in (schema.get("examples") or []) if isinstance(e, dict)]
        if isinstance(schema.get("examples"), list)
        else []
    )
    props = schema.get("properties")
    built: dict[str, Any] = {}
    if isinstance(props, dict):
        for name, p in props.items():
            if not isinstance(p, dict):
                continue
            if isinstance(p.get("examples"), list) and p["examples"]:
                built[name] = p["examples"][0]
            elif "default" in p:
                built[name] = p["default"]
    if built:
        out.append(built)
    return out


def _listed_examples(definition: Any) -> list[dict]:
    ex = definition.get("examples") if isinstance(definition, dict) else None
    if not isinstance(ex, list):
        return []
    out = []
    for e in ex:
        if isinstance(e, dict) and isinstance(e.get("arguments"), dict):
            out.append(e["arguments"])
        elif isinstance(e, dict):
            out.append(e)
    return out


def _checker(schema: Any) -> Callable[[Any], bool]:
    """validate(args, schema) is None, with the validator compiled once for all of a tool's
    examples (a schema that cannot be checked passes, as in core.schemas.validate)."""
    v = compile_validator(schema)

    def ok(args: Any) -> bool:
        return v is None or not schema_errors(v, args)

    return ok


def _own(tool: dict, usage: UsageStore | None, scope: str | None) -> list[tuple[str, dict]]:
    found: list[tuple[str, dict]] = [("schema", e) for e in _schema_examples(tool.get("input_schema"))]
    found += [("tools_file", e) for e in _listed_examples(tool.get("definition"))]
    if usage is not None:
        found += [("recorded", redact(e["arguments"])[0]) for e in usage.examples(tool["id"], scope)]
    return found


def generated_arguments(tool: dict, server: dict | None = None) -> dict:
    """toolidx's own example `arguments` for one tool row: its schema read with the tool's
    description and title, then its `server`'s instructions and names (describe's server_info),
    which say what kind of file a path takes (an Excel server's `path`: .xlsx)."""
    schema = tool.get("input_schema") or {"type": "object"}
    s = server or {}
    texts = (s.get("instructions"), s.get("server_title"), s.get("server_name"))
    return example_arguments(schema, (tool.get("description"), tool.get("title"), *texts))


def tool_examples(
    tool: dict, usage: UsageStore | None = None, scope: str | None = None, server: dict | None = None
) -> list[dict]:
    """[{"arguments", "source", "valid"}] for one tool row (store.tools.get_tool): distinct ones
    that validate against its input schema (so `valid` is always true), documented ones first,
    at most MAX_EXAMPLES. `scope`: recorded examples of that scope label only (serve's answer to
    a caller); None: all of them (the CLI, run by the file's owner). `server`: its server's
    row (see generated_arguments)."""
    schema = tool.get("input_schema") or {"type": "object"}
    ok = _checker(schema)
    found = _own(tool, usage, scope) + [("generated", generated_arguments(tool, server))]
    out: list[dict] = []
    seen: set[str] = set()
    for source, args in found:
        key = json.dumps(args, sort_keys=True, default=str)
        if key in seen or not ok(args):
            continue
        seen.add(key)
        out.append({"arguments": args, "source": source, "valid": True})
        if len(out) == MAX_EXAMPLES:
            break
    return out


def example_tool_ids(db: Reader, usage: UsageStore | None = None, scope: str | None = None) -> list[str]:
    """Ids of the tools with an example of their own (schema, tools_file, recorded in `scope`;
    None: in any) that validates: what the `has_examples` filter keeps (Filters.example_ids).
    The index's part is kept in db.cache until the index changes."""

    def documented() -> frozenset[str]:
        return frozenset(
            t["id"]
            for t in documented_example_rows(db)
            if any(map(_checker(t.get("input_schema") or {"type": "object"}), (a for _, a in _own(t, None, None))))
        )

    cached: frozenset[str] = db.cache.get("documented_examples", documented, len)
    ids = set(cached)
    if usage is not None:
        for tool_id in sorted(usage.tools_with_examples(scope) - ids):
            tool = get_tool(db, tool_id)
            if tool is not None and any(
                map(
                    _checker(tool.get("input_schema") or {"type": "object"}),
                    (e["arguments"] for e in usage.examples(tool_id, scope)),
                )
            ):
                ids.add(tool_id)
    return sorted(ids)
