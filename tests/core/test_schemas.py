"""core.schemas: the one validator factory follows refs inside a schema only (a server's schema
must not make toolidx read a file or fetch a URL), and the parts behind other refs are not checked
while the rest is."""

from __future__ import annotations

import pytest

from toolidx.core.schemas import (
    compile_validator,
    example_arguments,
    required_params,
    resolve,
    resolve_ref,
    schema_errors,
    validate,
)

D7 = "http://json-schema.org/draft-07/schema#"


def hostile(t) -> list[dict]:
    """Schemas whose refs lead to the file or the URL of `t`, in every way a draft allows."""
    folder = t.file.parent.as_uri() + "/"
    base = t.url.rsplit("/", 1)[0] + "/"
    return [
        {"$ref": t.file.as_uri()},
        {"$ref": t.url},
        {"$ref": f"{t.url}#/type"},  # a pointer into the fetched document
        {"$id": folder, "$ref": "int.json"},  # a relative ref against an $id base
        {"$id": base, "$ref": "int.json"},
        {"$schema": D7, "$ref": t.file.as_uri()},  # draft-07: $ref alone
        {"$schema": "https://json-schema.org/draft/2019-09/schema", "$ref": t.url},
        {"$dynamicRef": t.url},
        {"allOf": [{"$ref": t.url}], "unevaluatedProperties": False},
        {"properties": {"x": {"$schema": D7, "$ref": t.file.as_uri()}}},  # a nested draft switch
        {"$schema": t.url, "$ref": t.file.as_uri()},
    ]


def test_refs_out_of_the_schema_read_no_file_and_fetch_no_url(ref_targets):
    before = [validate("x", s) for s in hostile(ref_targets)]
    examples = [
        example_arguments({"type": "object", "properties": {"n": s}, "required": ["n"]}) for s in hostile(ref_targets)
    ]
    validators = [compile_validator(s) for s in hostile(ref_targets)]
    results = [schema_errors(v, {"x": "y"}) for v in validators if v is not None]
    # what the ref names is `{"type": "integer"}`: had it been read, "x" would be refused
    assert before == [None] * len(before)
    assert all(isinstance(e, dict) for e in examples) and len(results) == len(validators)
    assert (ref_targets.reads, ref_targets.requests) == (0, 0)


def test_the_rest_of_the_schema_is_still_checked(ref_targets):
    s = {"type": "object", "properties": {"n": {"$ref": ref_targets.url}, "m": {"type": "integer"}}, "required": ["m"]}
    assert validate({"n": "any"}, s) == "'m' is a required property"
    assert validate({"n": "any", "m": "one"}, s) == "'one' is not of type 'integer'"
    assert validate({"n": "any", "m": 1}, s) is None
    assert validate(1, {"$ref": ref_targets.url, "minimum": 5}) == "1 is less than the minimum of 5"
    assert example_arguments(s) == {"m": 1}
    assert (ref_targets.reads, ref_targets.requests) == (0, 0)


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i"},
        {"$schema": D7, "definitions": {"i": {"type": "integer"}}, "$ref": "#/definitions/i"},
        {
            "$defs": {"i": {"$id": "https://example.com/i.json", "type": "integer"}},
            "$ref": "https://example.com/i.json",
        },
        {
            "$id": "https://example.com/root.json",
            "$defs": {"i": {"$id": "i.json", "type": "integer"}},
            "$ref": "i.json",
        },
        {"properties": {"n": {"$ref": "#/$defs/i"}}, "$defs": {"i": {"type": "integer"}}, "type": "integer"},
    ],
)
def test_refs_inside_the_schema_still_resolve(schema):
    assert validate("x", schema) == "'x' is not of type 'integer'"
    assert validate(3, schema) is None


def test_the_drafts_metaschemas_resolve_without_a_fetch(ref_targets):
    assert validate(3, {"$ref": "https://json-schema.org/draft/2020-12/schema"}) is not None
    assert validate({"type": "string"}, {"$ref": "https://json-schema.org/draft/2020-12/schema"}) is None
    assert (ref_targets.reads, ref_targets.requests) == (0, 0)


def test_resolve_ref_follows_json_pointers_only():
    root = {"foo": {"type": "integer"}, "$defs": {"a/b": {"type": "string"}}}
    assert resolve_ref(root, "#/$defs/a~1b") == {"type": "string"}
    assert resolve_ref(root, "#") is root
    assert resolve_ref(root, "#foo") is None  # an anchor, not the key `foo`
    assert resolve_ref(root, "file:///etc/passwd") is None and resolve_ref(root, "other.json#/foo") is None


def test_resolve_follows_the_ref_chain_and_folds_all_of_in_the_schemas_order():
    root = {
        "$defs": {
            "Base": {"properties": {"z": {"type": "string"}, "a": {}}, "required": ["z", "a"]},
            "Alias": {"$ref": "#/$defs/Base", "description": "an alias"},
        },
        "properties": {"q": {}},
        "required": ["q"],
        "allOf": [{"$ref": "#/$defs/Alias"}, {"properties": {"m": {}}, "required": ["m", "a", {"x": 1}]}],
    }
    r = resolve(root, root)
    assert r.schema["required"] == ["q", "z", "a", "m"]  # the schema's own order, first occurrence wins
    assert list(r.schema["properties"]) == ["q", "z", "a", "m"] and r.schema["description"] == "an alias"
    assert r.via == ("#/$defs/Alias", "#/$defs/Base") and r.unresolved is None
    assert required_params(root) == ["q", "z", "a", "m"]
    # keywords beside a $ref override its target
    assert resolve({"$ref": "#/$defs/Base", "required": []}, root).schema["required"] == []


def test_resolve_drops_what_it_cannot_follow_and_names_it():
    loop = {
        "$defs": {
            "A": {"allOf": [{"$ref": "#/$defs/A"}], "properties": {"x": {}}},
            "B": {"$ref": "#/$defs/B", "type": "string"},
        }
    }
    r = resolve({"$ref": "#/$defs/A"}, loop)
    assert r.schema == {"properties": {"x": {}}} and r.via == ("#/$defs/A",) and r.seen == {"#/$defs/A"}
    assert resolve({"$ref": "#/$defs/B"}, loop).unresolved == "#/$defs/B"  # a cycle
    out = resolve({"$ref": "https://example.com/s.json", "type": "integer"}, loop)
    assert (out.schema, out.unresolved, out.via) == ({"type": "integer"}, "https://example.com/s.json", ())
    assert resolve(True, loop).obj == {} and resolve(False, loop).schema is False
