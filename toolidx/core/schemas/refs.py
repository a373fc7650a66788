"""`$ref` and `allOf`: the one resolver of a schema's local references and composition, used by
parameter tables and example arguments, `diff`'s field-level walk and `export`'s typed wrappers.

Only local refs are followed (`#`, `#/...`): a file, a URL or an anchor is never read or fetched.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any


def is_local_ref(ref: str) -> bool:
    """`#` or a JSON pointer into this document (`#/...`): no file, URL or anchor."""
    return ref == "#" or ref.startswith("#/")


def resolve_ref(root: Any, ref: str) -> Any:
    """A local JSON pointer (`#/$defs/X`, `#/definitions/X`, `#`) inside `root`, or None (a file,
    a URL, an anchor: never read, never fetched)."""
    if not isinstance(ref, str) or not is_local_ref(ref):
        return None
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


@dataclass(frozen=True)
class Resolved:
    """A schema with its `$ref` chain followed and its `allOf` members folded in."""

    schema: Any  # a dict; `true`, `false` or any other non-object as it was
    seen: frozenset[str]  # the refs passed in plus this schema's own chain: the cycle guard for what lies below
    via: tuple[str, ...]  # every ref followed, in order: the chain's, then the allOf members'
    unresolved: str | None  # the chain's ref that was not followed: not local, missing, no object, or a cycle

    @property
    def obj(self) -> dict:
        """The schema as an object: `{}` for `true`, `false` and anything else that is not one."""
        return self.schema if isinstance(self.schema, dict) else {}


def resolve(schema: Any, root: Any, seen: frozenset[str] = frozenset()) -> Resolved:
    """Follow `schema`'s `$ref` chain inside `root` (keywords beside a `$ref` override its target,
    as 2019-09 allows) and fold its `allOf` members into it: their properties united (a later
    member's schema of a property wins), their `required` names joined in the schema's own order
    (the first occurrence wins), any other keyword taken from the first that has it. A ref in
    `seen` (a cycle) or one that cannot be followed is dropped and named in `unresolved`."""
    via: list[str] = []
    unresolved = None
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        target = None if ref in seen else resolve_ref(root, ref)
        if not isinstance(target, dict):
            schema, unresolved = rest, ref
            break
        seen = seen | {ref}
        via.append(ref)
        schema = {**target, **rest}
    if isinstance(schema, dict) and isinstance(schema.get("allOf"), list):
        schema = _fold_all_of(schema, root, seen, via)
    return Resolved(schema, seen, tuple(via), unresolved)


def _fold_all_of(schema: dict, root: Any, seen: frozenset[str], via: list[str]) -> dict:
    out = {k: v for k, v in schema.items() if k != "allOf"}
    for member in schema["allOf"]:
        r = resolve(member, root, seen)  # a member that refers back to this schema is a cycle: dropped
        via.extend(r.via)
        if not isinstance(r.schema, dict):
            continue
        for k, v in r.schema.items():
            if k == "properties" and isinstance(v, dict):
                have = out.get("properties")
                out["properties"] = {**(have if isinstance(have, dict) else {}), **v}
            elif k == "required" and isinstance(v, list):
                have = out.get("required")
                names = [*(have if isinstance(have, list) else []), *v]
                # a name is a string; an object in the list names nothing and is left out
                out["required"] = list(dict.fromkeys(n for n in names if isinstance(n, Hashable)))
            elif k not in out:
                out[k] = v
    return out
