"""describe: detail levels, forgiving ids, parameter tables, and example arguments that validate
(on the fixture, on every tool of the fast real servers, and on every ETOM and LiveMCPBench schema)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import jsonschema
import pytest
from conftest import CliResult, run_cli, run_pty
from jsonschema.validators import validator_for

from toolidx.catalog.describe import describe, example_arguments, parameter_table
from toolidx.core.clock import now_iso
from toolidx.core.errors import NotFoundError, UsageError
from toolidx.store.db import open_db


def _check(value, schema) -> list[str]:
    """Independent validation, formats included."""
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    return [e.message for e in cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(value)]


# --- detail levels through the CLI ----------------------------------------------------------------
def test_summary_schema_full(cli, catalog_db):
    s = cli("describe", "git/git_log", "--db", catalog_db, "--detail", "summary", "--json")
    assert s.code == 0, s.stderr
    d = s.json
    assert d["command"] == "describe" and d["detail"] == "summary"
    assert (d["id"], d["server"], d["name"], d["category"]) == ("git/git_log", "git", "git_log", "dev")
    assert d["required"] == ["repo_path"] and d["params"] == ["repo_path", "max_count"]
    assert d["read_only"] is True and d["hints"] == ["read-only"] and "vcs" in d["tags"]
    assert "parameters" not in d and "input_schema" not in d

    d = cli("describe", "git/git_log", "--db", catalog_db, "--json").json  # schema: the CLI's default (#45)
    assert d["detail"] == "schema"
    assert d["parameters"] == [
        {
            "name": "repo_path",
            "type": "string",
            "required": True,
            "default": None,
            "enum": None,
            "description": None,
            "constraints": None,
        },
        {
            "name": "max_count",
            "type": "integer",
            "required": False,
            "default": 10,
            "enum": None,
            "description": None,
            "constraints": ">= 1",
        },
    ]
    assert "input_schema" not in d

    d = cli("describe", "gitplus/git_clone", "--detail", "full", "--db", catalog_db, "--json").json
    assert d["input_schema"]["required"] == ["url"]
    assert d["annotations"] == {"openWorldHint": True}
    assert d["server_info"]["name"] == "gitplus" and d["server_info"]["status"] == "ok"
    assert d["server_info"]["transport"] == "tools_file"
    assert d["example_arguments"] == {"url": "https://example.com"} and d["example_valid"] is True
    assert d["hash"] and d["first_seen"]


def test_text_output_in_a_pipe(cli, catalog_db):
    r = cli("describe", "docs/convert_pdf", "--detail", "full", "--db", catalog_db)
    assert r.code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "id\tdocs/convert_pdf" in lines
    assert "parameter\ttype\trequired\tdefault\tenum\tdescription" in lines
    assert 'to\tstring\t\t"markdown"\t"markdown", "html", "text"\t' in lines
    assert any(line.startswith("example_arguments\t{") for line in lines)


def test_nested_schema_table_and_example(cli, catalog_db):
    d = cli("describe", "docs/render_report", "--detail", "full", "--db", catalog_db, "--json").json
    rows = {r["name"]: r for r in d["parameters"]}
    # $ref/$defs resolved, nesting dotted, array elements as [], anyOf/oneOf joined
    assert rows["sections"]["type"] == "array<object>" and rows["sections"]["constraints"] == "minItems 1"
    assert rows["sections[].heading"]["required"] is True
    assert rows["sections[].level"]["default"] == 2 and rows["sections[].level"]["constraints"] == ">= 1, <= 6"
    assert rows["options.margins.top"]["required"] is True and rows["options.margins.bottom"]["required"] is False
    assert rows["due"]["type"] == "string (date-time) | null"
    assert rows["delivery.kind"]["enum"] == ["email", "upload"] and rows["delivery.kind"]["required"] is True
    assert rows["delivery.to"]["type"] == "string (email)" and rows["delivery.to"]["required"] is False
    assert rows["version"]["type"] == "integer" and rows["version"]["enum"] == [2]
    assert rows["format"]["enum"] == ["pdf", "docx", "html"]
    ex = d["example_arguments"]
    assert d["example_valid"] is True and _check(ex, d["input_schema"]) == []
    assert set(ex) >= {"title", "sections", "ticket", "copies", "ratio", "options", "delivery", "version", "due"}
    assert ex["version"] == 2 and ex["copies"] % 2 == 0 and 0 < ex["ratio"] < 1
    assert ex["options"]["margins"]["top"] is not None and ex["sections"][0]["heading"]


# --- ids ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spelling",
    [
        "docs/word_count",
        "docs.word_count",
        "docs:word_count",
        "mcp__docs__word_count",
        "word_count",
        " docs/word_count ",
    ],
)
def test_id_spellings(catalog_db, spelling):
    assert describe(open_db(catalog_db), spelling).id == "docs/word_count"


def test_unknown_id_suggests_closest(cli, catalog_db):
    r = cli("describe", "git/git_stats", "--db", catalog_db, "--json")
    assert r.code == 2 and "Traceback" not in r.stderr
    err = json.loads(r.stdout)
    assert err["error"] == "NotFoundError"  # as before the codes; `code` is the vocabulary serve's answers use
    assert err["code"] == "unknown_tool"
    assert err["suggestions"][0] in ("git/git_status", "gitplus/git_status")
    assert "git/git_status" in err["suggestions"][:2]
    assert r.stderr.count("\n") == 1 and "did you mean" in r.stderr

    with pytest.raises(NotFoundError) as e:
        describe(open_db(catalog_db), "convert_pfd")
    assert e.value.suggestions[0] == "docs/convert_pdf"


def test_ambiguous_bare_name_lists_both(catalog_db):
    with pytest.raises(NotFoundError) as e:
        describe(open_db(catalog_db), "git_status")
    assert e.value.suggestions == ["git/git_status", "gitplus/git_status"]
    assert "2 servers" in str(e.value)


def test_bad_detail_is_a_usage_error(cli, catalog_db):
    r = cli("describe", "git/git_log", "--detail", "everything", "--db", catalog_db)
    assert r.code == 2 and "summary, schema, full" in r.stderr
    r = cli("describe", "git/git_log", "--detail", "everything", "--db", catalog_db, "--json")
    assert (r.json["error"], r.json["code"]) == ("UsageError", "usage_error")
    with pytest.raises(UsageError):
        describe(open_db(catalog_db), "", "summary")


# --- example arguments ----------------------------------------------------------------------------
TRICKY = [
    {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
            "id": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
        },
        "required": ["when", "day", "mail", "id", "ip"],
    },
    {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": r"^[A-Z]{3}\d{2}(-[a-z]+)?$"},
            "short": {"type": "string", "minLength": 12, "maxLength": 12},
        },
        "required": ["code", "short"],
    },
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 5, "maximum": 9, "multipleOf": 3},
            "x": {"type": "number", "exclusiveMinimum": 2.5},
            "old": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
            "neg": {"type": "integer", "maximum": -4},
        },
        "required": ["n", "x", "old", "neg"],
        "$schema": "http://json-schema.org/draft-04/schema#",
    },
    {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "minItems": 3,
                "uniqueItems": True,
            },
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
        },
        "required": ["tags", "pair"],
    },
    {
        "type": "object",
        "properties": {"kind": {"enum": ["file", "url"]}, "path": {"type": "string"}, "url": {"type": "string"}},
        "required": ["kind"],
        "if": {"properties": {"kind": {"const": "file"}}},
        "then": {"required": ["path"]},
        "else": {"required": ["url"]},
    },
    {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "dependencies": {"a": ["b"]},
        "required": ["a"],
    },
    {
        "type": "object",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
                },
                "required": ["value", "next"],
            }
        },
        "properties": {"head": {"$ref": "#/$defs/node"}},
        "required": ["head"],
    },
    {
        "type": "object",
        "properties": {"meta": {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2}},
        "required": ["meta"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "q": {"type": "string", "examples": ["weather in Lisbon"]},
            "unit": {"type": ["string", "null"], "default": "metric"},
        },
        "required": ["q", "unit"],
    },
    {"type": "object", "properties": {"opt": {"type": "string"}}},  # nothing required
    {
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"const": "x"}}, "required": ["b"]},
        ],
    },
]


@pytest.mark.parametrize("schema", TRICKY, ids=lambda s: ",".join(sorted(s.get("properties", {}))) or "allOf")
def test_example_validates_on_tricky_schemas(schema):
    ex = example_arguments(schema)
    assert _check(ex, schema) == [], ex
    for req in schema.get("required", []):
        assert req in ex


def test_example_prefers_the_schemas_own_values():
    ex = example_arguments(TRICKY[8])
    assert ex == {"q": "weather in Lisbon", "unit": "metric"}
    assert example_arguments(TRICKY[9]) == {"opt": "example"}  # optional filled when none is required
    assert example_arguments({"type": "object"}) == {} and example_arguments(None) == {}


def test_a_repository_asked_apart_from_its_owner_is_a_name():
    """GitHub's create_issue asks `owner` and `repo` apart, and its example said
    "repo": "owner/repo" (round 16, found driving serve as an agent would)."""
    props = {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"}}
    ex = example_arguments({"type": "object", "properties": props, "required": ["owner", "repo", "title"]})
    assert ex == {"owner": "octocat", "repo": "example-repo", "title": "Example title"}
    assert example_arguments({"type": "object", "properties": {"repo": {"type": "string"}}, "required": ["repo"]}) == {
        "repo": "owner/repo"
    }
    pattern = {"type": "string", "pattern": "^[^/]+/[^/]+$"}  # the schema wants owner/repo: it stays so
    ex = example_arguments(
        {"type": "object", "properties": {"owner": props["owner"], "repo": pattern}, "required": ["owner", "repo"]}
    )
    assert "/" in ex["repo"]


@pytest.mark.slow  # ~3,000 real schemas: 15-30 s
def test_every_bench_schema_gets_a_valid_example(bench_dir):
    """ETOM's 2,375 and LiveMCPBench's 527 input schemas, as their servers published them."""
    n = 0
    bad, broken = [], []
    for name in ("etom", "livemcp"):
        with open(bench_dir / name / "tools.jsonl") as f:
            for line in f:
                t = json.loads(line)
                schema = t["input_schema"]
                ex = example_arguments(schema)
                parameter_table(schema)  # never raises either
                try:
                    errors = _check(ex, schema)
                except jsonschema.exceptions.UnknownType:
                    broken.append(t["id"])
                    continue
                if errors:
                    bad.append((t["id"], errors[0]))
                n += 1
    assert n >= 2375 + 527 - len(broken)
    assert bad == []
    # the only schema nothing can be checked against is itself invalid ("type": "string[]")
    assert broken == ["mcp-image-compression/image_compression"]


@pytest.mark.servers
@pytest.mark.slow
def test_every_real_tool_gets_a_valid_example(catalog_real_db, cli):
    db = open_db(catalog_real_db)
    ids = [r["id"] for r in db.query("SELECT id FROM tools ORDER BY id")]
    assert len(ids) >= 70  # 76 tools on 5 servers
    for tid in ids:
        d = describe(db, tid, "full").to_json()
        assert d["example_valid"], (tid, d.get("example_problem"))
        assert _check(d["example_arguments"], d["input_schema"]) == [], tid
        names = {r["name"] for r in d["parameters"]}
        assert set(d["required"]) <= names
    # and one through the CLI, as a person would run it
    r = cli("describe", "everything/echo", "--detail", "full", "--db", catalog_real_db, "--json")
    assert r.code == 0 and r.json["example_arguments"] == {"message": "Hello, world"}  # a plausible value by name


def test_only_examples_that_validate_are_shown_and_counted(tmp_path, cli, db_target):
    """A schema default that breaks its own pattern, or a saved example of an older schema, is
    neither shown by describe --examples nor counted by --has-examples; generated values follow
    the parameter's name. On both engines: the tools with examples are found by JSON paths in SQL
    (store.catalog.documented_example_rows, db.sql's spellings)."""
    tools = [
        {
            "name": "good",
            "description": "Convert money.",
            "inputSchema": {
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$", "examples": ["EUR"]}},
                "required": ["code"],
            },
        },
        {
            "name": "bad_default",
            "description": "Convert money.",
            "inputSchema": {
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$", "default": "usd"}},
                "required": ["code"],
            },
        },
        {
            "name": "stale_saved",
            "description": "Weather alerts.",
            "examples": [{"arguments": {"region": 5}}],
            "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]},
        },
        {
            "name": "weak",
            "description": "Look things up.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "timezone": {"type": "string"},
                    "repo": {"type": "string"},
                    "repo_path": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "url": {"type": "string"},
                    "user_email": {"type": "string"},
                    "query": {"type": "string"},
                    "id": {"type": "string"},
                },
                "required": ["timezone", "repo", "repo_path", "limit", "url", "user_email", "query", "id"],
            },
        },
    ]
    (tmp_path / "t.json").write_text(json.dumps(tools))
    (tmp_path / "c.json").write_text(json.dumps({"mcpServers": {"x": {"tools_file": str(tmp_path / "t.json")}}}))
    db = db_target
    assert cli("crawl", "--config", tmp_path / "c.json", "--db", db, "--model", "none").code == 0
    r = cli("list", "--db", db, "--has-examples", "--json")
    assert [t["id"] for t in r.json["items"]] == ["x/good"]
    for tid in ("x/good", "x/bad_default", "x/stale_saved", "x/weak"):
        r = cli("describe", tid, "--db", db, "--examples", "--json")
        schema = r.json.get("input_schema") or next(t["inputSchema"] for t in tools if f"x/{t['name']}" == tid)
        assert r.json["examples"] and all(e["valid"] for e in r.json["examples"]), tid
        assert all(_check(e["arguments"], schema) == [] for e in r.json["examples"]), tid
        assert {e["arguments"].get("code") for e in r.json["examples"]} & {"usd"} == set()
        assert {"region": 5} not in [e["arguments"] for e in r.json["examples"]]
    r = cli("describe", "x/weak", "--db", db, "--examples", "--json")
    assert r.json["examples"] == [
        {
            "source": "generated",
            "valid": True,
            "arguments": {
                "timezone": "Europe/Paris",
                "repo": "owner/repo",
                "repo_path": "/tmp/example",
                "limit": 10,
                "url": "https://example.com",
                "user_email": "user@example.com",
                "query": "example query",
                "id": "abc123",
            },
        }
    ]
    r = cli("describe", "x/weak", "--db", db, "--examples")
    assert "does not validate" not in r.stdout


# --- usage: the one describe of the CLI and serve ---------------------------------------------------
def test_usage_metrics_and_examples_come_from_the_one_describe(tmp_path):
    """`describe(..., usage=, metrics=, examples=, scope=)` is what both `describe --metrics
    --examples` and serve's describe_tool send: the recorded figures, the recorded examples of one
    scope label only when asked, and the index's own answer (zeros, documented examples) when the
    usage file cannot be read."""
    from conftest import REPO, crawl

    from toolidx.store.usage import open_usage, usage_path

    db = tmp_path / "c.db"
    assert crawl(REPO / "tests" / "data" / "catalog" / "servers.yaml", db).code == 0
    store = open_usage(usage_path(db), create=True)
    store.record_calls([("git/git_status", "git", "ok", 12.0, "", now_iso())])
    store.record_calls([("git/git_status", "git", "tool_error", 30.0, "", now_iso())])
    store.add_example("git/git_status", {"repo_path": "/mine"}, scope="servers=git")
    store.add_example("git/git_status", {"repo_path": "/theirs"}, scope="")
    index = open_db(db)

    d = describe(index, "git/git_status", usage=store, metrics=True, examples=True)
    assert (d.metrics.calls, d.metrics.ok, d.metrics.success_rate) == (2, 1, 0.5)
    recorded = [e["arguments"] for e in d.examples if e["source"] == "recorded"]
    assert sorted(r["repo_path"] for r in recorded) == ["/mine", "/theirs"]
    scoped = describe(index, "git/git_status", usage=store, examples=True, scope="servers=git")
    assert [e["arguments"] for e in scoped.examples if e["source"] == "recorded"] == [{"repo_path": "/mine"}]
    assert scoped.metrics is None and "metrics" not in scoped.to_json()
    # the JSON keeps describe's order: the tool's fields, then the figures, then the examples
    assert list(d.to_json())[-2:] == ["metrics", "examples"]
    assert describe(index, "git/git_status").to_json().keys() == d.to_json().keys() - {"metrics", "examples"}

    store.close()  # a closed connection reads like a broken file: the index alone answers, with a warning
    warned: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: warned.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("toolidx").addHandler(handler)
    try:
        broken = describe(index, "git/git_status", usage=store, metrics=True, examples=True)
    finally:
        logging.getLogger("toolidx").removeHandler(handler)
    assert broken.metrics.calls == 0 and broken.examples
    assert all(e["source"] != "recorded" for e in broken.examples)
    assert len(warned) == 2 and all("usage file unreadable" in w for w in warned)


# tool names of real servers (the `everything` reference server among them), where the old scorer
# answered made-up names with substrings: `nosuch/tool` -> everything/example_tool, toggle-...
REAL_NAMES = {
    "everything": [
        "toggle-simulated-logging",
        "echo",
        "add",
        "get-tiny-image",
        "example_tool",
        "long-running-operation",
    ],
    "shell": ["shell_whereis", "shell_which", "shell_free"],
    "docs": ["add_footnote_to_document", "word_count"],
    "biomcp": ["think", "search"],
    "time": ["get_current_time", "convert_time"],
}


@pytest.fixture(scope="module")
def real_names_db(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("names")
    cfg = "mcpServers:\n"
    for srv, names in REAL_NAMES.items():
        tools = [{"name": n, "description": f"The {n} tool.", "inputSchema": {"type": "object"}} for n in names]
        (d / f"{srv}.json").write_text(json.dumps({"tools": tools}))
        cfg += f"  {srv}:\n    tools_file: {srv}.json\n"
    (d / "c.yaml").write_text(cfg)
    assert run_cli("crawl", "--config", d / "c.yaml", "--db", d / "t.db", "--model", "none").code == 0
    return str(d / "t.db")


@pytest.mark.parametrize("name", ["nosuch/tool", "hello_world", "nothing/here", "foo", "xyz/abc"])
def test_a_name_like_no_tool_gets_no_suggestions(real_names_db, name):
    """#36 item 10: made-up names got up to five unrelated ids."""
    r = run_cli("describe", name, "--db", real_names_db, "--json")
    assert r.code == 2 and json.loads(r.stdout)["suggestions"] == []
    assert "did you mean" not in r.stderr and "toolidx list" in r.stderr


@pytest.mark.parametrize(
    "name, meant",
    [
        ("time/get_curent_time", ["time/get_current_time"]),
        ("shell/shel_which", ["shell/shell_which", "shell/shell_whereis"]),
        ("everything/tiny-image", ["everything/get-tiny-image"]),
    ],
)
def test_a_name_one_slip_from_a_tool_gets_it_and_no_noise(real_names_db, name, meant):
    with pytest.raises(NotFoundError) as e:
        describe(open_db(real_names_db), name)
    assert e.value.suggestions == meant


# --- #45 item 6: what a person reads of the real time and Excel servers ----------------------------
@pytest.fixture(scope="module")
def time_excel_db(servers_config, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("time-excel")
    src = servers_config["mcpServers"]
    (d / "c.json").write_text(json.dumps({"mcpServers": {n: src[n] for n in ("time", "excel")}}))
    assert run_cli("crawl", "--config", d / "c.json", "--db", d / "t.db", "--model", "none").code == 0
    return d / "t.db"


@pytest.mark.servers
def test_describe_shows_the_parameter_table_without_being_asked(time_excel_db):
    """The README's row promised a parameter table; a plain `describe` needed --detail schema."""
    r = run_pty("describe", "time/convert_time", "--db", time_excel_db, columns=120)
    assert r.code == 0, r.screen
    assert "parameters" in r.screen and "source_timezone" in r.screen and "target_timezone" in r.screen
    assert r.screen.count("yes") == 3, r.screen  # the required column: all three
    r = run_pty("describe", "time/convert_time", "--db", time_excel_db, "--detail", "summary", columns=120)
    assert r.code == 0 and "parameters" not in r.screen.split(), r.screen


@pytest.mark.servers
def test_full_detail_shows_the_example_once(time_excel_db):
    for run in (run_cli, run_pty):
        r = run("describe", "time/convert_time", "--db", time_excel_db, "--detail", "full")
        text = r.stdout if isinstance(r, CliResult) else r.screen
        assert (
            r.code == 0
            and text.count('"source_timezone": "Europe/Paris"') + text.count('"source_timezone":"Europe/Paris"') == 1
        ), text


@pytest.mark.servers
def test_two_ends_get_two_values_and_a_path_the_files_kind(time_excel_db):
    """convert_time converted Europe/Paris to Europe/Paris; the Excel server's workbook paths were
    /tmp/example.txt."""
    d = run_cli("describe", "time/convert_time", "--db", time_excel_db, "--detail", "full", "--json").json
    ex = d["example_arguments"]
    assert ex["source_timezone"] != ex["target_timezone"] and d["example_valid"], ex
    examples = {}
    for name in ("create_workbook", "read_range", "export_csv", "insert_image", "read_vba"):
        d = run_cli("describe", f"excel/{name}", "--db", time_excel_db, "--detail", "full", "--json").json
        assert d["example_valid"] and _check(d["example_arguments"], d["input_schema"]) == [], name
        examples[name] = d["example_arguments"]
    assert examples["create_workbook"]["path"] == "/tmp/example.xlsx"  # "Create a new, empty Excel workbook."
    assert examples["read_range"]["path"] == "/tmp/example.xlsx"  # the server's "Excel workbooks (.xlsx, .xlsm)"
    assert examples["export_csv"]["csv_path"] == "/tmp/example.csv"  # its own ".csv or .tsv file"
    assert examples["export_csv"]["path"] == "/tmp/example.xlsx"  # the tool's CSV is csv_path's
    assert examples["insert_image"]["image_path"] == "/tmp/example.png"
    assert examples["insert_image"]["path"] == "/tmp/example.xlsx"
    assert examples["read_vba"]["path"] == "/tmp/example.xlsm"  # "in an .xlsm or .xltm workbook"
    r = run_cli("describe", "excel/create_workbook", "--db", time_excel_db, "--examples", "--json")
    assert {"path": "/tmp/example.xlsx"} in [e["arguments"] for e in r.json["examples"]]


def test_ends_and_file_kinds_on_plain_schemas():
    s = {"type": "string"}
    ex = example_arguments({"type": "object", "properties": {"from": s, "to": s}, "required": ["from", "to"]})
    assert ex["from"] != ex["to"]
    ex = example_arguments(
        {
            "type": "object",
            "properties": {"from_currency": s, "to_currency": s},
            "required": ["from_currency", "to_currency"],
        }
    )
    assert (ex["from_currency"], ex["to_currency"]) == ("EUR", "USD")
    ex = example_arguments(
        {"type": "object", "properties": {"start_date": s, "end_date": s}, "required": ["start_date", "end_date"]}
    )
    assert ex["start_date"] < ex["end_date"]
    # the second end keeps to its schema: an enum of one value stays as it is
    one = {"type": "string", "enum": ["UTC"]}
    ex = example_arguments(
        {"type": "object", "properties": {"source_tz": one, "target_tz": one}, "required": ["source_tz", "target_tz"]}
    )
    assert ex == {"source_tz": "UTC", "target_tz": "UTC"}
    path = {"type": "object", "properties": {"path": s}, "required": ["path"]}
    assert example_arguments(path) == {"path": "/tmp/example.txt"}
    assert example_arguments(path, ("Convert a PDF document to plain text.",)) == {"path": "/tmp/example.pdf"}
    assert example_arguments(path, ("Get a tree of files and folders as a JSON structure.",)) == {
        "path": "/tmp/example.txt"
    }
    assert example_arguments(path, ("Remove an image from a sheet.", "Excel workbooks")) == {
        "path": "/tmp/example.xlsx"
    }
    # only extensions from toolidx's own list reach the example, whatever a server writes
    assert example_arguments(path, ("Opens .IGNOR files",)) == {"path": "/tmp/example.txt"}
