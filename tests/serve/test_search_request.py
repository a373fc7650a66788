"""One search request for every front-end (#33): each parameter is documented once and published
the same on the CLI's --help, search_tools' schema and /v1/search's OpenAPI; every filter works on
every front-end; a front-end's own note on a missing model replaces search's by field, not by
matching its words."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import discovery_over
from starlette.datastructures import QueryParams

from toolidx.search.request import CLI, FILTER_KEYS, HTTP, META, PARAM, PARAMS
from toolidx.serve.answers import answer

TOOLS = {
    "tools": [
        {
            "name": "get_current_time",
            "description": "Get the current time in a timezone.",
            "inputSchema": {
                "type": "object",
                "properties": {"timezone": {"type": "string"}},
                "examples": [{"timezone": "Asia/Tokyo"}],
            },
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": "set_time_zone",
            "description": "Set the time zone of the clock.",
            "inputSchema": {"type": "object", "properties": {"zone": {"type": "string"}}},
            "annotations": {"destructiveHint": True},
        },
    ]
}


@pytest.fixture
def discovery(tmp_path: Path):
    return discovery_over(tmp_path, TOOLS)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_parameter_is_published_on_every_front_end_as_documented_once():
    from typer.testing import CliRunner

    from toolidx.cli.main import app
    from toolidx.serve.http import openapi_document
    from toolidx.serve.metatools import META_TOOLS

    help_text = _flat(CliRunner().invoke(app, ["search", "--help"], terminal_width=400).output)
    schema = next(t for t in META_TOOLS if t["name"] == "search_tools")["inputSchema"]["properties"]
    api = {p["name"]: p for p in openapi_document()["paths"]["/v1/search"]["get"]["parameters"]}
    assert set(FILTER_KEYS) >= {"servers", "no_destructive", "has_examples", "read_only", "name_pattern"}
    for p in PARAMS:
        assert all(p.names[front] for front in (CLI, META, HTTP)), f"{p.key} is missing on a front-end"
        cli = p.names[CLI]
        assert cli in help_text and _flat(p.help(CLI)) in help_text, p.key
        meta = p.names[META].removeprefix("filters.")
        where = schema["filters"]["properties"] if p.names[META].startswith("filters.") else schema
        assert where[meta]["description"] == p.help(META), p.key
        assert api[p.names[HTTP]]["description"] == p.help(HTTP), p.key
    # the limits each reader gets
    assert schema["limit"]["maximum"] == 50 and api["k"]["schema"]["maximum"] == 100


def test_the_cli_takes_the_filter_options_from_the_table_once():
    """(#44) search, list, categories and export get the filter options from the parameter table
    through one decorator: cli/main.py spells none of them, and each command offers every one with
    the table's help (export all but --has-examples)."""
    import inspect

    from typer.testing import CliRunner

    from toolidx.cli import main
    from toolidx.cli.main import app

    for command in (main.search, main.list_cmd, main.categories, main.export):
        source = inspect.getsource(inspect.unwrap(command))
        names = [p.names[CLI].lstrip("-").replace("-", "_") for p in PARAMS if p.filter]
        assert [n for n in names if f"    {n}: " in source] == [], command.__name__  # no parameter of its own
    for command in ("search", "list", "categories", "export"):
        text = _flat(CliRunner().invoke(app, [command, "--help"], terminal_width=400).output)
        for p in PARAMS:
            if p.filter and not (command == "export" and p.key == "has_examples"):
                assert p.names[CLI] in text and _flat(p.help(CLI)) in text, (command, p.key)


def test_every_front_end_runs_the_one_search_with_the_request_it_built():
    """(#44) search() takes the request its front-end built and checked (no loose arguments, no
    SearchRequest.run calling back into it); serve's three front-ends share answers.run_search, the
    console's page among them; the console imports nothing of serve/http.py, and its form's modes
    are core.vocabulary's."""
    import inspect

    from toolidx.search import hybrid
    from toolidx.search.request import SearchRequest

    assert list(inspect.signature(hybrid.search).parameters) == ["db", "req", "embedder", "spelling", "learned"]
    assert not hasattr(SearchRequest, "run")
    package = Path(__file__).parents[2] / "toolidx"
    console = package / "serve" / "console"
    assert "..http" not in (console / "pages.py").read_text() + (console / "app.py").read_text()
    form = (console / "templates" / "search.html").read_text()  # its modes: core.vocabulary's
    assert "{% for m in search_modes %}" in form and '"semantic"' not in form
    for front in ("serve/http.py", "serve/answers.py"):
        text = (package / front).read_text()
        assert "hybrid import search" not in text or front == "serve/answers.py", front


@pytest.mark.parametrize("flag, kept", [("has_examples", "time/get_current_time"), ("no_destructive", None)])
def test_every_filter_works_on_every_front_end(discovery, flag, kept):
    from toolidx.serve.answers import search_payload

    query = "time zone clock"
    everything = search_payload(discovery, QueryParams({"q": query, "min_score": "0", "mode": "keyword"}))
    assert {h["id"] for h in everything["hits"]} == {"time/get_current_time", "time/set_time_zone"}
    api = search_payload(discovery, QueryParams({"q": query, "min_score": "0", "mode": "keyword", flag: "true"}))
    meta = answer(
        discovery, "search_tools", {"query": query, "search_type": "keyword", "filters": {flag: True, "min_score": 0}}
    ).payload
    assert [h["id"] for h in api["hits"]] == [h["id"] for h in meta["hits"]] == ["time/get_current_time"]
    assert PARAM[flag].names[HTTP] == flag


def test_a_front_ends_note_on_the_model_replaces_searchs_own(discovery):
    discovery.model.state = "unavailable"
    a = answer(discovery, "search_tools", {"query": "current time", "search_type": "semantic"})
    notes = a.payload["notes"]
    assert notes == ["semantic model unavailable: keyword results"], notes


def test_bad_parameters_are_named_as_each_front_end_spells_them(discovery):
    from toolidx.core.errors import UsageError
    from toolidx.search.request import SearchRequest
    from toolidx.serve.answers import search_payload

    with pytest.raises(UsageError, match=r"^k: must be 1\.\.100 \(got 101\)"):
        search_payload(discovery, QueryParams({"q": "time", "k": "101"}))
    with pytest.raises(UsageError, match=r"^has_examples: must be true or false"):
        search_payload(discovery, QueryParams({"q": "time", "has_examples": "perhaps"}))
    with pytest.raises(UsageError, match=r"^--min-score: must be between 0 and 1"):
        SearchRequest("time", min_score=2.0).check(CLI)
    with pytest.raises(UsageError, match=r"^search_type: unknown search mode 'magic'"):
        SearchRequest("time", mode="magic").check(META)


def test_the_console_form_has_every_parameter():
    """The web console's search form sends /v1/search's parameters (it calls search_payload):
    every one has a field there."""
    import re

    form = (Path(__file__).parents[2] / "toolidx" / "serve" / "console" / "templates" / "search.html").read_text()
    fields = set(re.findall(r'name="(\w+)"', form))
    assert {p.names[HTTP] for p in PARAMS} <= fields, {p.names[HTTP] for p in PARAMS} - fields
