"""A tool's usage examples, from every place one comes from, each marked with its `source`:

- `schema`: the input schema's own `examples` (whole argument objects), and one object built
  from its properties' `examples` / `default` values;
- `tools_file`: a saved tool list's row may carry `examples` (argument objects, or
  `{"arguments": {...}}`);
- `recorded`: successful calls `toolidx serve --record-examples` kept (secrets redacted), from the
  usage file; serve shows a caller only those recorded in its own scope, and every one is
  redacted again when read (a row written by an older, weaker redaction is no leak);
- `generated`: toolidx's own example arguments (core.schemas.example_arguments), checked
  against the schema.

`has_examples` (core.filters) counts the first three only: every tool has a generated one.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.redact import redact
from ..core.schemas import example_arguments, validate
from ..store.usage import UsageStore

MAX_EXAMPLES = 8


def _schema_examples(schema: Any) -> list[dict]:
    if not isinstance(schema, dict):
        return []
    out = [e for e in (schema.get("examples") or []) if isinstance(e, dict)] \
        if isinstance(schema.get("examples"), list) else []
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


def tool_examples(tool: dict, usage: UsageStore | None = None, scope: str | None = None) -> list[dict]:
    """[{"arguments", "source", "valid"}] for one tool row (store.tools.get_tool), distinct,
    documented ones first, at most MAX_EXAMPLES. `scope`: recorded examples of that scope label
    only (serve's answer to a caller); None: all of them (the CLI, run by the file's owner)."""
    schema = tool.get("input_schema") or {"type": "object"}
    found: list[tuple[str, dict]] = [("schema", e) for e in _schema_examples(tool.get("input_schema"))]
    found += [("tools_file", e) for e in _listed_examples(tool.get("definition"))]
    if usage is not None:
        found += [("recorded", redact(e["arguments"])[0]) for e in usage.examples(tool["id"], scope)]
    found.append(("generated", example_arguments(schema)))
    out: list[dict] = []
    seen: set[str] = set()
    for source, args in found:
        key = json.dumps(args, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        out.append({"arguments": args, "source": source, "valid": validate(args, schema) is None})
        if len(out) == MAX_EXAMPLES:
            break
    return out
