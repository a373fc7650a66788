"""Jobs that used to be done twice, now done once: the former callers must agree.

- Tool names: `toolidx describe` (catalog.resolve) and serve's describe_tool / execute_tool
  (Discovery.resolve) accept the same spellings and fail the same way.
- JSON Schema validation: describe's example check (core.schemas.validate) and execute_tool's
  argument check (Discovery.validation_errors) accept and refuse the same values.
- Compact JSON: what budgets count is what agents and tables are shown.
Keyword-only index, no model, no server: part of the fast tier.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from toolidx.core.budget import estimate_tokens
from toolidx.core.filters import Filters
from toolidx.core.schemas import compile_validator, validate
from toolidx.core.tooldoc import compact_json
from toolidx.serve.discovery import Discovery, LookupProblem

CATALOG = Path(__file__).parent / "data" / "catalog"


@pytest.fixture(scope="module")
def lexical_catalog(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("oneway") / "c.db"
    r = run_cli("crawl", "--config", CATALOG / "servers.yaml", "--db", db, "--model", "none")
    assert r.code == 0, r.stderr
    return db


def _cli_id(db: Path, name: str) -> tuple[str, list[str]]:
    """(resolved id or error kind, suggestions) as `toolidx describe --json` reports them."""
    r = run_cli("describe", name, "--db", db, "--json")
    if r.code == 0:
        return r.json["id"], []
    assert r.code == 2, r.stderr
    return "error", r.json.get("suggestions", [])


def _serve_id(disc: Discovery, name: str) -> tuple[str, list[str]]:
    try:
        return disc.resolve(name)["id"], []
    except LookupProblem as e:
        return "error", e.suggestions


SPELLINGS = [
    "docs/word_count",
    "docs.word_count",
    "docs:word_count",
    "docs__word_count",
    "mcp__docs__word_count",
    "word_count",
    "  docs/word_count ",
    "git_log",
    "gitplus__git_push",
]


@pytest.mark.parametrize("name", SPELLINGS)
def test_cli_and_serve_resolve_the_same_spellings(lexical_catalog, name):
    disc = Discovery(str(lexical_catalog))
    cli, serve = _cli_id(lexical_catalog, name), _serve_id(disc, name)
    assert cli == serve
    assert cli[0] != "error"


@pytest.mark.parametrize("name", ["git_status", "git/git_stats", "convert_pfd", "nothing/like_this"])
def test_cli_and_serve_fail_the_same_way(lexical_catalog, name):
    disc = Discovery(str(lexical_catalog))
    cli, serve = _cli_id(lexical_catalog, name), _serve_id(disc, name)
    assert cli[0] == serve[0] == "error"
    assert cli[1] == serve[1]  # the same suggestions, in the same order


def test_bare_name_ambiguous_everywhere_but_unique_in_scope(lexical_catalog):
    with pytest.raises(LookupProblem) as e:
        Discovery(str(lexical_catalog)).resolve("git_status")
    assert e.value.code == "ambiguous_tool" and e.value.suggestions == ["git/git_status", "gitplus/git_status"]
    scoped = Discovery(str(lexical_catalog), scope=Filters(servers=["gitplus"]))
    assert scoped.resolve("git_status")["id"] == "gitplus/git_status"
    with pytest.raises(LookupProblem) as e:
        scoped.resolve("git.git_log")  # a spelling of a real tool outside the scope
    assert e.value.code == "out_of_scope"
    assert all(s.startswith("gitplus/") for s in e.value.suggestions)


def test_exposed_names_resolve(lexical_catalog):
    disc = Discovery(str(lexical_catalog), expose_tools=True)
    for exposed, tool_id in disc.exposed().items():
        assert disc.resolve(exposed)["id"] == tool_id
        assert _cli_id(lexical_catalog, exposed)[0] == tool_id  # the CLI reads them too


SCHEMAS = [
    {"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}, "required": ["mail"]},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
    {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"x": {"type": "number", "maximum": 5, "exclusiveMaximum": True}},
    },
    {"type": "object", "properties": {"a": {"type": "nonsense"}}},  # broken: nothing can be checked
]
VALUES = [{}, {"mail": "a@b.example"}, {"mail": "not an address"}, {"n": 0}, {"n": 3}, {"x": 5}, {"x": 4.5}, {"a": 1}]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_describe_and_execute_validate_alike(lexical_catalog, schema):
    disc = Discovery(str(lexical_catalog))
    tool = {"id": "t/" + json.dumps(schema), "input_schema": schema}
    for value in VALUES:
        describe_ok = validate(value, schema) is None
        execute_ok = disc.validation_errors(tool, value) == []
        assert describe_ok == execute_ok, (schema, value)
    assert (compile_validator(schema) is None) == (schema is SCHEMAS[-1])


def test_budgets_count_the_json_agents_see():
    value = {"name": "ünïcode", "n": [1, 2.5, None], "nested": {"k": "v"}}
    assert compact_json(value) == '{"name":"ünïcode","n":[1,2.5,null],"nested":{"k":"v"}}'
    assert estimate_tokens(value) == -(-len(compact_json(value)) // 4)


def test_unknown_servers_are_checked_in_one_place(lexical_catalog):
    """(#33) "no server named ..." was written five times, the postgresql:// test three: each is
    now one function (core.errors.check_servers, store.urls.is_pg_url), and every command that
    names servers says the same line."""
    package = Path(__file__).parents[1] / "toolidx"
    sources = {p: p.read_text() for p in package.rglob("*.py")}
    assert [p.name for p, text in sources.items() if "no server named" in text] == ["errors.py"]
    assert [p.name for p, text in sources.items() if '"postgres://"' in text] == ["urls.py"]
    for args in (
        ("diff", "--approved", "--server", "nope"),
        ("audit", "--server", "nope"),
        ("approve", "--server", "nope"),
        ("crawl", "--config", CATALOG / "servers.yaml", "--server", "nope"),
    ):
        r = run_cli(*args, "--db", lexical_catalog)
        assert r.code != 0 and "no server named 'nope'" in r.stderr, (args, r.stderr)


def test_the_store_only_writes_a_crawl():
    """(#33) store.crawls writes what the crawl hands it: which tools to embed, the embedding
    itself, its warnings and the trust file are crawl/write.py's."""
    store = (Path(__file__).parents[1] / "toolidx" / "store" / "crawls.py").read_text()
    for decided_by_the_crawl in ("embed_documents", "LazyEmbedder", "warn_once", "trust.record", "model_changed"):
        assert decided_by_the_crawl not in store, decided_by_the_crawl
