"""Typed reads of schema keywords and JSON value types, shared by the parameter table and the
example generator."""

from __future__ import annotations

from typing import Any, TypeVar

MAX_DEPTH = 6  # nesting shown in a parameter table / filled in an example
_D = TypeVar("_D")


# The value when it has the expected JSON type, else a default.
def dict_at(s: dict, key: str) -> dict[str, Any]:
    v = s.get(key)
    return v if isinstance(v, dict) else {}


def list_at(s: dict, key: str) -> list[Any]:
    v = s.get(key)
    return v if isinstance(v, list) else []


def int_at(s: dict, key: str, default: _D) -> int | _D:
    v = s.get(key)
    return v if isinstance(v, int) else default


def never(schema: Any) -> bool:
    """`{"not": {}}` / `false`: matches nothing (zod writes it for "may be absent")."""
    return schema is False or (isinstance(schema, dict) and schema.get("not") in ({}, True) and len(schema) == 1)


def json_type(value: Any) -> str:
    """The JSON Schema type name of a JSON value (bool before int: bool is an int in Python)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
