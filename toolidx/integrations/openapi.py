"""`toolidx export --format openapi`: the tools in scope as one OpenAPI 3.1 document, for REST
gateways and API catalogs.

- one `POST /tools/{server}/{tool}` operation per tool (each segment percent-encoded), operationId
  the API-safe name (`server__tool`), summary the title (else the description's first line),
  description the tool's, tags its server (and category when it differs);
- the input schema is the JSON request body, the output schema (when the tool has one) the 200
  response (else the MCP CallToolResult); annotations as `x-mcp-annotations`, the id as
  `x-toolidx-id`;
- each schema lives in `components/schemas` as `{name}.input` / `{name}.output`; its
  `$defs` / `definitions` are lifted beside it as `{name}.input.{def}` and every local `$ref`
  (`#`, `#/$defs/X`, `#/properties/...`) is rewritten to point there, so the document resolves.
  `$schema`, `$id` and `$anchor` are dropped (the document's dialect is OpenAPI 3.1's JSON Schema
  2020-12);
- a schema is walked by position (a property named `enum` is a schema, an `enum` keyword's list
  values); a ref that is not local (`file://`, `http://`, a relative file, an anchor) is renamed
  `x-unfollowed-ref` wherever it is in the document, values included, so no reader of the
  document reads a file or fetches a URL because a server said so.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any
from urllib.parse import quote, unquote

from ..core.schemas import is_local_ref, validate
from .common import ToolCatalog

OPENAPI_VERSION = "3.1.0"
_COMPONENT = re.compile(r"[^A-Za-z0-9._-]")
_DEFS = ("$defs", "definitions")
CALL_TOOL_RESULT = {
    "type": "object",
    "description": "An MCP CallToolResult: content blocks, optional structuredContent, isError.",
    "properties": {
        "content": {
            "type": "array",
            "items": {"type": "object", "properties": {"type": {"type": "string"}}, "required": ["type"]},
        },
        "structuredContent": {"type": "object"},
        "isError": {"type": "boolean"},
    },
    "required": ["content"],
}


def _unescape(part: str) -> str:
    return unquote(part).replace("~1", "/").replace("~0", "~")


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


class _Lifter:
    """One tool schema split into components, its local refs rewritten."""

    def __init__(self, base: str, schema: dict, components: dict[str, Any]):
        self.base, self.components = base, components
        root = copy.deepcopy(schema)
        self.root = _inert(schema)
        self.defs: dict[tuple[str, str], str] = {}  # (keyword, def name) -> component name
        taken: set[str] = set()
        lifted: dict[str, Any] = {}
        for kw in _DEFS:
            group = root.pop(kw, None) if isinstance(root, dict) else None
            if not isinstance(group, dict):
                continue
            for name in sorted(group):
                comp = f"{base}.{_COMPONENT.sub('_', name) or '_'}"
                while comp in taken or comp == base:
                    comp += "_"
                taken.add(comp)
                self.defs[(kw, name)] = comp
                lifted[comp] = group[name]
        for k in ("$schema", "$id"):
            if isinstance(root, dict):
                root.pop(k, None)
        components[base] = repair(self.rewrite(root))
        for comp, sub in lifted.items():
            if isinstance(sub, dict):
                sub = {k: v for k, v in sub.items() if k not in ("$schema", "$id")}
            components[comp] = repair(self.rewrite(sub))

    def ref(self, ref: str) -> str:
        parts = ref[1:].split("/")[1:] if ref[1:].startswith("/") else []
        if len(parts) >= 2 and _unescape(parts[0]) in _DEFS:
            comp = self.defs.get((_unescape(parts[0]), _unescape(parts[1])))
            if comp is not None:
                return "/".join([f"#/components/schemas/{_escape(comp)}", *parts[2:]])
        return "/".join([f"#/components/schemas/{_escape(self.base)}", *parts])

    def _bad_value(self, value: Any, node: dict) -> bool:
        # checked as the document reads it: refs out of it unfollowed, no nested $id moving the base
        return validate(value, _inert({k: v for k, v in node.items() if k != "default"}), self.root) is not None

    def rewrite(self, node: Any) -> Any:
        """A schema with its local refs pointed into the components. Walked by schema position
        (a property named `enum` is a schema, an `enum` keyword's list is values); whatever
        could make a reader leave the document is taken out: a non-local ref renamed `x-unfollowed-*`
        (here, in `values` and in `_inert`), `$id`, `$schema` and `$anchor` dropped."""
        if not isinstance(node, dict):
            return node if isinstance(node, bool) else values(node)
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in _REFS and isinstance(v, str):
                if is_local_ref(v):
                    out[k] = self.ref(v) if k == "$ref" else v
                else:
                    out[f"x-unfollowed-{k[1:]}"] = v
            elif k in _RESOURCE:
                continue  # would change the base the refs below resolve against, or clash between tools
            elif k == "default" and self._bad_value(v, node):
                out["x-default"] = values(v)  # OpenAPI validators check defaults against the schema
            elif k in _SCHEMA_ONE or (k == "items" and isinstance(v, dict | bool)):
                out[k] = self.rewrite(v)
            elif k in _SCHEMA_LIST and isinstance(v, list):
                out[k] = [self.rewrite(x) for x in v]
            elif k in _SCHEMA_MAPS and isinstance(v, dict):
                out[k] = {name: self.rewrite(x) if isinstance(x, dict | bool) else values(x) for name, x in v.items()}
            else:
                out[k] = values(v)  # values (enum, const, examples, default) and unknown keywords
        return out


# where a schema holds schemas (JSON Schema 2020-12, and draft-04/07's `items` list, `additionalItems`,
# `dependencies`); everything else in a schema is a value or an unknown keyword
_SCHEMA_ONE = (
    "additionalItems",
    "contains",
    "additionalProperties",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
_RESOURCE = ("$id", "$schema", "$anchor", "$dynamicAnchor", "$recursiveAnchor")


def _inert(node: Any) -> Any:
    """A copy of a schema no validator can leave the document from: non-local refs renamed (as in
    `values`) and `$id`s, which set the base local refs resolve against, dropped."""
    if isinstance(node, dict):
        return {
            (f"x-unfollowed-{k[1:]}" if k in _REFS and isinstance(v, str) and not is_local_ref(v) else k): _inert(v)
            for k, v in node.items()
            if k != "$id"
        }
    if isinstance(node, list):
        return [_inert(v) for v in node]
    return node


def values(node: Any) -> Any:
    """Data from a server placed in the document (enum, const, examples, defaults, unknown keywords,
    annotations) with every non-local `$ref` key renamed `x-unfollowed-ref`: tools that resolve
    JSON references wherever they appear in a document would otherwise read the file or fetch the
    URL."""
    if isinstance(node, dict):
        return {
            (f"x-unfollowed-{k[1:]}" if k in _REFS and isinstance(v, str) and not is_local_ref(v) else k): values(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [values(v) for v in node]
    return node


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_META: Any = None


def repair(schema: Any, rounds: int = 32) -> Any:
    """Make a schema valid JSON Schema 2020-12 (the dialect of OpenAPI 3.1) where an older draft
    or a mistake left it invalid: a misused keyword becomes `x-<keyword>` (kept, ignored); a
    subschema that is no schema at all becomes `{"x-invalid-schema": <it>}` (accepts anything)."""
    global _META
    if _META is None:
        from jsonschema import Draft202012Validator

        _META = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    for _ in range(rounds):
        errors = list(_META.iter_errors(schema))
        if not errors:
            return schema
        fixed = False
        for e in sorted(errors, key=lambda e: -len(e.absolute_path)):
            path = list(e.absolute_path)
            if not path:
                return {"x-invalid-schema": schema}
            parent: Any = schema
            try:
                for p in path[:-1]:
                    parent = parent[p]
                key = path[-1]
                value = parent[key]
            except (KeyError, IndexError, TypeError):
                continue  # already moved by an earlier fix of this round
            container = path[-2] if len(path) >= 2 else None
            if isinstance(key, int) or container in _SCHEMA_MAPS:
                parent[key] = {"x-invalid-schema": value}
            elif key == "items" and isinstance(value, list):
                parent.pop(key)
                parent["prefixItems"] = value
            else:
                parent.pop(key)
                parent[f"x-{key}"] = value
            fixed = True
            break  # paths shift after a fix: validate again
        if not fixed:
            break
    return schema if not list(_META.iter_errors(schema)) else {"x-invalid-schema": schema}


def _schema(s: Any) -> dict:
    return s if isinstance(s, dict) and s else {"type": "object", "properties": {}}


def openapi_document(catalog: ToolCatalog, title: str = "toolidx tools") -> tuple[dict, dict[str, str]]:
    """(the document, {operationId: tool id})."""
    paths: dict[str, Any] = {}
    components: dict[str, Any] = {"CallToolResult": CALL_TOOL_RESULT}
    tags: set[str] = set()
    names: dict[str, str] = {}
    digest = hashlib.sha256()
    for tool_id in sorted(catalog.names):
        t = catalog.tool(tool_id)
        op_id = catalog.names[tool_id]
        names[op_id] = tool_id
        digest.update(f"{tool_id}\0{t.get('hash') or ''}\0".encode())
        _Lifter(f"{op_id}.input", _schema(t.get("input_schema")), components)
        if isinstance(t.get("output_schema"), dict) and t["output_schema"]:
            _Lifter(f"{op_id}.output", t["output_schema"], components)
            ok: dict[str, Any] = {
                "description": "The tool's structured result (structuredContent).",
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{op_id}.output"}}},
            }
        else:
            ok = {
                "description": "The tool's result (an MCP CallToolResult).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallToolResult"}}},
            }
        desc = (t.get("description") or "").strip()
        summary = (t.get("title") or desc.split("\n", 1)[0] or t["name"]).strip()
        op_tags = [t["server"]] + ([t["category"]] if t.get("category") and t["category"] != t["server"] else [])
        tags.update(op_tags)
        op: dict[str, Any] = {
            "operationId": op_id,
            "summary": summary[:200],
            "description": desc or summary,
            "tags": op_tags,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{op_id}.input"}}},
            },
            "responses": {
                "200": ok,
                "default": {
                    "description": "The tool failed or the call was refused (isError).",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallToolResult"}}},
                },
            },
            "x-toolidx-id": tool_id,
        }
        if t.get("annotations"):
            op["x-mcp-annotations"] = values(t["annotations"])
        path = "/tools/" + quote(t["server"], safe="") + "/" + quote(t["name"], safe="")
        paths[path] = {"post": op}
    doc = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": title,
            "version": f"{len(names)}-{digest.hexdigest()[:12]}",
            "description": "MCP tools from a toolidx index, one POST operation per tool (request body: the "
            "tool's arguments).",
        },
        "tags": [{"name": n} for n in sorted(tags)],
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(components.items()))},
    }
    return doc, names
