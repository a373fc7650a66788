"""A tool's parameters as a flat table for people: one row per parameter (dotted for nesting, `[]`
for array elements) with its type label, whether it is required, default, enum, description and
constraints."""

from __future__ import annotations

import re
from typing import Any

from .refs import resolve
from .typed import MAX_DEPTH, json_type, list_at, never


def type_label(schema: Any, root: Any, seen: frozenset[str] = frozenset()) -> str:
    """`string`, `integer | null`, `array<string>`, `object`, `any`."""
    r = resolve(schema, root, seen)
    s, seen = r.obj, r.seen
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list) and s[key]:
            labels = [type_label(x, root, seen) for x in s[key] if not never(x)]
            return " | ".join(dict.fromkeys(labels)) or "never"
    t = s.get("type")
    if isinstance(t, list):
        return " | ".join(str(x) for x in t) or "any"
    if t is None:
        if "properties" in s:
            t = "object"
        elif "items" in s:
            t = "array"
        elif "const" in s:
            return json_type(s["const"])
        elif isinstance(s.get("enum"), list) and s["enum"]:
            return " | ".join(dict.fromkeys(json_type(v) for v in s["enum"]))
        else:
            return "any"
    if t == "array":
        items = resolve(s.get("items"), root, seen).obj
        if items:
            return f"array<{type_label(items, root, seen)}>"
    if t == "string" and isinstance(s.get("format"), str):
        return f"string ({s['format']})"
    return str(t)


def _constraints(s: dict) -> str | None:
    parts = []
    for key, label in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        v = s.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(f"{label} {v}")
    for key in ("minLength", "maxLength", "minItems", "maxItems", "pattern", "multipleOf"):
        if key in s:
            parts.append(f"{key} {s[key]}")
    return ", ".join(parts) or None


def _variants(s: dict, root: Any, seen: frozenset) -> list[dict]:
    """The object/array branches of an anyOf/oneOf (what nested rows are listed from)."""
    out = []
    for key in ("anyOf", "oneOf"):
        for x in s.get(key) or []:
            x = resolve(x, root, seen).obj
            if x.get("type") in ("object", "array") or "properties" in x or "items" in x:
                out.append(x)
    return out


def _union(variants: list[dict]) -> dict:
    """One object out of alternative object shapes: every property any of them has (the first
    description wins, consts become an enum); required only where all of them require it."""
    if len(variants) == 1:
        return variants[0]
    props: dict[str, Any] = {}
    for v in variants:
        for name, sub in (v.get("properties") or {}).items():
            if name not in props:
                props[name] = sub
            elif isinstance(sub, dict) and isinstance(props[name], dict):
                a, b = props[name], sub
                values = [
                    *(a.get("enum") or ([a["const"]] if "const" in a else [])),
                    *(b.get("enum") or ([b["const"]] if "const" in b else [])),
                ]
                if values:
                    props[name] = {**{k: x for k, x in a.items() if k != "const"}, "enum": list(dict.fromkeys(values))}
    reqs = [set(v.get("required") or []) for v in variants]
    required = [n for n in props if all(n in r for r in reqs)]
    items = next((v["items"] for v in variants if isinstance(v.get("items"), dict)), None)
    out: dict[str, Any] = {"properties": props, "required": required} if props else {}
    if items is not None:
        out["items"] = items
    return out


def _rows(schema: Any, root: Any, prefix: str, required: bool, seen: frozenset, depth: int, out: list[dict]) -> None:
    r = resolve(schema, root, seen)
    s, seen = r.obj, r.seen
    variants = _variants(s, root, seen)
    node = s if ("properties" in s or "items" in s) else _union(variants) if variants else s
    if prefix:
        enum = s.get("enum") if isinstance(s.get("enum"), list) else ([s["const"]] if "const" in s else None)
        out.append(
            {
                "name": prefix,
                "type": type_label(s, root, seen),
                "required": required,
                "default": s.get("default"),
                "enum": enum,
                "description": s.get("description")
                if isinstance(s.get("description"), str)
                else (node.get("description") if isinstance(node.get("description"), str) else None),
                "constraints": _constraints(s),
            }
        )
    if depth >= MAX_DEPTH:
        return
    props = node.get("properties")
    if isinstance(props, dict):
        req = list_at(node, "required")
        for name, sub in props.items():
            _rows(sub, root, f"{prefix}.{name}" if prefix else str(name), name in req, seen, depth + 1, out)
    items = node.get("items")
    if isinstance(items, dict) and prefix:
        r = resolve(items, root, seen)
        i, iseen = r.obj, r.seen
        if "properties" in i or _variants(i, root, iseen) or "items" in i:
            # the element itself is not a row; its fields are, as name[].field
            for sub_name, sub in (i.get("properties") or {}).items():
                req = list_at(i, "required")
                _rows(sub, root, f"{prefix}[].{sub_name}", sub_name in req, iseen, depth + 1, out)


def parameter_table(schema: dict | None, order: list[str] | None = None) -> list[dict]:
    """One row per parameter: name (dotted for nesting, `[]` for array elements), type,
    required, default, enum, description, constraints. `$ref`s resolved, anyOf/oneOf types
    joined with ` | `. `order`: top-level names in the server's order (the index stores schemas
    as canonical JSON, keys sorted); nested rows stay under their parent."""
    if not isinstance(schema, dict):
        return []
    out: list[dict] = []
    _rows(schema, schema, "", True, frozenset(), 0, out)
    if order:
        rank = {n: i for i, n in enumerate(order)}
        out.sort(key=lambda r: rank.get(re.split(r"\.|\[\]", r["name"], maxsplit=1)[0], len(rank)))
    return out


def required_params(schema: dict | None) -> list[str]:
    if not isinstance(schema, dict):
        return []
    s = resolve(schema, schema, frozenset()).obj
    req = s.get("required")
    return [str(r) for r in req] if isinstance(req, list) else []
