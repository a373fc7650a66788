"""The one JSON Schema validator toolidx uses (describe's examples, serve's arguments, the
meta-tools' own arguments), offline: a ref that leads out of the schema is never read or fetched."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# `$recursiveRef` (2019-09), and the unevaluated* keywords, which follow refs to see what was evaluated.
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef", "unevaluatedItems", "unevaluatedProperties")
_OFFLINE: dict[type, Any] = {}
_REGISTRY: Any = None


def _unfollowed_part_passes(check: Any) -> Any:
    """A keyword check under which a reference that leads out of the schema (a file, a URL, a
    relative document) is not checked: that part accepts anything and the tool's own server
    judges it, while the rest of the schema is still checked."""
    from referencing.exceptions import Unresolvable

    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        try:
            errors = list(check(validator, value, instance, schema))  # refs resolve lazily: all of them here
        except Unresolvable:
            return
        yield from errors

    return keyword


def _offline(cls: Any) -> Any:
    """`cls` with its reference-following keywords made lenient (`_unfollowed_part_passes`)."""
    if cls not in _OFFLINE:
        from jsonschema.validators import extend

        _OFFLINE[cls] = extend(
            cls, {k: _unfollowed_part_passes(v) for k, v in cls.VALIDATORS.items() if k in _REF_KEYWORDS}
        )
    return _OFFLINE[cls]


def compile_validator(schema: Any) -> Any | None:
    """The one JSON Schema validator toolidx uses (describe's examples, serve's arguments, the
    meta-tools' own arguments): the draft the schema's `$schema` names (2020-12 when it names
    none), with format checks. None when the schema itself is broken: then nothing can be
    checked, and the server that owns the tool judges.

    Schemas come from servers: a `$ref` resolves inside the schema only (`#/...`, or a resource
    the schema embeds with `$id`, the drafts' metaschemas). jsonschema's default registry reads
    any other ref (`file:///...` opens the file, `https://...` fetches it); the registry here has
    no retrieval, so a ref toolidx cannot resolve reads and fetches nothing, and the part of
    the schema behind it accepts any value (the rest is still checked)."""
    global _REGISTRY
    import jsonschema
    from jsonschema.validators import validator_for

    if _REGISTRY is None:
        from referencing import Registry

        _REGISTRY = Registry()  # no `retrieve`: a ref not in the schema is Unresolvable, never fetched
    try:
        cls = (
            validator_for(schema, default=jsonschema.Draft202012Validator)
            if isinstance(schema, dict)
            else jsonschema.Draft202012Validator
        )
        cls.check_schema(schema)
        return _offline(cls)(schema, format_checker=cls.FORMAT_CHECKER, registry=_REGISTRY)
    except Exception:  # SchemaError, unknown $schema
        return None


def schema_errors(validator: Any, value: Any) -> list | None:
    """Every error of `value` under a `compile_validator` validator, or None when the schema cannot
    be checked after all: a ref met past a nested `$schema` (jsonschema switches to that draft's
    plain class there), a schema too deep to walk. Nothing is read or fetched either way."""
    try:
        return list(validator.iter_errors(value))
    except Exception:
        return None


def validation_errors(value: Any, schema: Any) -> list | None:
    """Validation errors, or None when the schema cannot be checked (broken)."""
    validator = compile_validator(schema)
    return None if validator is None else schema_errors(validator, value)


def validate(value: Any, schema: Any, root: Any | None = None) -> str | None:
    """None when `value` validates against `schema` (refs resolved against `root`), else the
    first error's message. Schemas that cannot be checked (broken) count as valid, and so do the
    parts behind refs that leave the schema (see `compile_validator`)."""
    root = schema if root is None else root
    if root is not schema and isinstance(root, dict) and isinstance(schema, dict):
        # check a subschema with the root's definitions in reach of its local refs
        schema = {**{k: root[k] for k in ("$defs", "definitions") if k in root}, **schema}
    errors = validation_errors(value, schema)
    return errors[0].message if errors else None
