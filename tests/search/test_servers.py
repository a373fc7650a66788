"""Server evidence (search.server_match; issue 43 item 2): a tool's server is evidence for the tool.
"remember that Alice likes tea" shares no word with the `memory` server's tools ("knowledge
graph", "entities", "observations"); only the server is called memory. Each server's text is
embedded at crawl time (store/server_vectors.py, both engines) and a hybrid search reads it; a
request's verb of one family with a server's name ("remember", `memory`: search.derive) names it."""

from __future__ import annotations

import json
import sqlite3

import pytest

from toolidx.core.tooldoc import SERVER_INSTRUCTIONS_CHARS, server_text


@pytest.fixture(scope="module")
def real_db(servers_config, model_path, tmp_path_factory):
    """The 16 real servers of the suite crawled with the tests' model."""
    from conftest import run_cli

    d = tmp_path_factory.mktemp("servers")
    (d / "servers.json").write_text(json.dumps(servers_config))
    r = run_cli("crawl", "--config", d / "servers.json", "--db", d / "real.db", "--model-path", model_path)
    assert r.code == 0, r.stderr
    return d / "real.db"


@pytest.mark.model
@pytest.mark.slow
def test_the_memory_server_is_evidence_for_its_tools(real_db):
    """On the 16 real servers: the `memory` server's text leads every other for "save a fact to the
    knowledge graph", and its tools say so (`why`: server: memory). "remember that Alice likes
    tea" is not reached by the embedding (the model puts it as near `sequential-thinking` as
    `memory`; docs/research/search.md, round 14), but by the words (test_remember_is_answered_by_the_memory_server)."""
    from conftest import run_cli

    r = run_cli("search", "save a fact to the knowledge graph", "--db", real_db, "--json", "--limit", "5")
    assert r.code == 0, r.stderr
    hits = r.json["hits"]
    assert hits and all(h["server"] == "memory" for h in hits), [h["id"] for h in hits]
    assert all(h["signals"]["server"] > 0.2 and "server: memory" in h["why"] for h in hits), hits
    other = run_cli("search", "what time is it in Tokyo", "--db", real_db, "--json", "--limit", "1").json["hits"][0]
    assert other["server"] == "time" and "server: time" in other["why"], other


def _two_servers_one_tool(tmp_path, model_path) -> None:
    """tmp_path/i.db: the same tool `list_items` under two servers, `cookbook` and `schedule`."""
    from conftest import run_cli

    tool = {"name": "list_items", "description": "List the items.", "inputSchema": {"type": "object"}}
    for server in ("cookbook", "schedule"):
        (tmp_path / f"{server}.json").write_text(json.dumps({"tools": [tool]}))
    (tmp_path / "servers.json").write_text(
        json.dumps({"mcpServers": {s: {"tools_file": str(tmp_path / f"{s}.json")} for s in ("cookbook", "schedule")}})
    )
    r = run_cli("crawl", "--config", tmp_path / "servers.json", "--db", tmp_path / "i.db", "--model-path", model_path)
    assert r.code == 0, r.stderr


@pytest.mark.model
def test_a_search_scope_keeps_out_the_tools_a_server_would_join(tmp_path, model_path):
    """The best server's tools join a search's candidates only within its scope (`--server`)."""
    from conftest import run_cli

    _two_servers_one_tool(tmp_path, model_path)
    q = "which meetings do I have tomorrow"
    r = run_cli("search", q, "--db", tmp_path / "i.db", "--json", "--min-score", "0", "--server", "cookbook")
    assert [h["id"] for h in r.json["hits"]] == ["cookbook/list_items"], r.json


@pytest.mark.model
def test_a_tool_whose_own_text_says_nothing_of_the_request_is_found_by_its_server(tmp_path, model_path):
    """Two servers with the same tool: only the servers' names tell them apart. Before, the two
    tied and `cookbook`'s came first (by id); its server's text puts `schedule`'s first, and
    `why` names it."""
    from conftest import run_cli

    _two_servers_one_tool(tmp_path, model_path)
    r = run_cli("search", "which meetings do I have tomorrow", "--db", tmp_path / "i.db", "--json", "--min-score", "0")
    assert r.code == 0, r.stderr
    first, second = r.json["hits"]
    assert first["id"] == "schedule/list_items" and first["score"] > second["score"], r.json["hits"]
    assert first["signals"]["server"] > second["signals"]["server"]


@pytest.mark.model
def test_each_server_is_embedded_once_and_again_only_when_its_text_changes(tmp_path, model_path):
    """The crawl embeds each server's text; a crawl that changes nothing embeds none again; a
    server whose tools change gets a new vector; a server gone loses its own."""
    from conftest import run_cli

    from toolidx.store import server_vectors
    from toolidx.store.db import open_db

    def crawl(servers: dict) -> dict[str, str]:
        cfg = tmp_path / "servers.json"
        cfg.write_text(json.dumps({"mcpServers": servers}))
        r = run_cli("crawl", "--config", cfg, "--db", tmp_path / "i.db", "--model-path", model_path)
        assert r.code == 0, r.stderr
        db = open_db(tmp_path / "i.db")
        try:
            return server_vectors.hashes(db)
        finally:
            db.close()

    from conftest import REPO

    weather = {"tools_file": str(REPO / "examples" / "weather-tools.json")}
    files = {"tools_file": str(tmp_path / "files.jsonl")}
    (tmp_path / "files.jsonl").write_text(
        json.dumps({"name": "list_files", "description": "List the files", "inputSchema": {"type": "object"}}) + "\n"
    )
    first = crawl({"weather": weather, "files": files})
    assert set(first) == {"weather", "files"}
    assert crawl({"weather": weather, "files": files}) == first
    (tmp_path / "files.jsonl").write_text(
        json.dumps({"name": "list_files", "description": "List the files", "inputSchema": {"type": "object"}})
        + "\n"
        + json.dumps({"name": "delete_files", "description": "Delete files", "inputSchema": {"type": "object"}})
        + "\n"
    )
    second = crawl({"weather": weather, "files": files})
    assert second["weather"] == first["weather"] and second["files"] != first["files"]
    assert set(crawl({"weather": weather})) == {"weather"}


def test_hostile_server_text_is_bounded_and_inert():
    """A server writes its own name, title and instructions: huge instructions are cut, controls,
    escape sequences and bidi or zero-width characters are dropped, white space collapsed. Markup
    stays as words: the text is only embedded, never shown or run."""
    esc = "\x1b[2J\x1b]0;pwned\x07 \u202edesrever\u202c zero\u200bwidth \x9b31m"
    text = server_text(
        "evil",
        "[bold]loud[/bold]" + esc,
        "<script>alert(1)</script>" + "\x00",
        esc + "Use me. " + "x" * 2_000_000,
        [f"tool_{i}" for i in range(10_000)],
    )
    assert len(text) < SERVER_INSTRUCTIONS_CHARS + 2_000, len(text)
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in text), repr(text[:200])
    assert not any(ch in text for ch in "\u202e\u202c\u200b")
    assert "tool 29" in text and "tool 30" not in text  # the first SERVER_TOOL_NAMES names only


@pytest.mark.model
def test_a_hostile_server_is_embedded_and_searched_like_any_other(tmp_path, model_path):
    """rawmcp's hostile mode (ANSI/OSC sequences, C1 controls, rich markup and bidi overrides in
    its serverInfo): its server vector is stored, a search reads it and shows none of it."""
    from conftest import raw, run_cli

    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"evil": raw("hostile"), "ok": raw("ok")}}))
    r = run_cli("crawl", "--config", tmp_path / "servers.json", "--db", tmp_path / "i.db", "--model-path", model_path)
    assert r.code == 0, r.stderr
    con = sqlite3.connect(tmp_path / "i.db")
    assert {s for (s,) in con.execute("SELECT server FROM server_vectors")} == {"evil", "ok"}
    r = run_cli("search", "read a file", "--db", tmp_path / "i.db", "--json", "--min-score", "0")
    assert r.code == 0, r.stderr
    assert "\x1b" not in r.stdout and "\u202e" not in r.stdout


@pytest.mark.model
def test_both_engines_store_server_vectors_and_answer_alike(db_target, tmp_path, model_path):
    """The same catalog on an index file and on PostgreSQL: each server has its vector, and a
    search gives the same hits with the same server evidence."""
    from conftest import REPO, run_cli

    (tmp_path / "servers.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "weather": {"tools_file": str(REPO / "examples" / "weather-tools.json")},
                    "catalog": {"tools_file": str(REPO / "tests" / "data" / "catalog" / "git-tools.json")},
                }
            }
        )
    )
    r = run_cli("crawl", "--config", tmp_path / "servers.json", "--db", db_target, "--model-path", model_path)
    assert r.code == 0, r.stderr
    r = run_cli("search", "will it rain tomorrow", "--db", db_target, "--json", "--min-score", "0")
    assert r.code == 0, r.stderr
    got = [(h["id"], h["score"], h["signals"].get("server")) for h in r.json["hits"]]
    assert got and all(s is not None for _, _, s in got), got
    assert got[0][0].startswith("weather/") and got[0][2] > 0, got
    ANSWERS.setdefault("answers", []).append(got)
    if len(ANSWERS["answers"]) == 2:
        a, b = ANSWERS["answers"]
        assert [i for i, _, _ in a] == [i for i, _, _ in b]
        assert all(abs(x - y) < 1e-3 and abs(s - t) < 1e-3 for (_, x, s), (_, y, t) in zip(a, b)), (a, b)


ANSWERS: dict[str, list] = {}  # the two engines' answers, compared once both ran


@pytest.mark.model
def test_an_index_from_before_server_vectors_is_migrated_and_filled(tmp_path, model_path):
    """An index written before migration 5 (no server_vectors): opened, it gains the table;
    `toolidx embed` fills it without re-embedding a tool; search reads it."""
    from conftest import REPO, run_cli

    from toolidx.store.sqlite.migrations import MIGRATIONS

    (tmp_path / "servers.json").write_text(
        json.dumps({"mcpServers": {"weather": {"tools_file": str(REPO / "examples" / "weather-tools.json")}}})
    )
    db = tmp_path / "i.db"
    r = run_cli("crawl", "--config", tmp_path / "servers.json", "--db", db, "--model-path", model_path)
    assert r.code == 0, r.stderr
    con = sqlite3.connect(db)
    con.execute("DROP TABLE server_vectors")
    con.execute("PRAGMA user_version = 4")
    con.commit()
    con.close()
    assert len(MIGRATIONS) >= 5
    r = run_cli("embed", "--db", db, "--model-path", model_path, "--json")
    assert r.code == 0, r.stderr
    assert r.json["embedded"] == 0  # the tools' vectors were there
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert [s for (s,) in con.execute("SELECT server FROM server_vectors")] == ["weather"]
    r = run_cli("search", "will it rain tomorrow", "--db", db, "--json", "--min-score", "0")
    assert r.json["hits"][0]["signals"]["server"] == 0, r.json  # one server: it leads none


@pytest.fixture(scope="module")
def both_models(servers_config, model_path, tmp_path_factory):
    """The 16 real servers crawled with the tests' model and with toolidx's default model."""
    from conftest import crawl_with_both_models

    return crawl_with_both_models(tmp_path_factory.mktemp("kin"), servers_config["mcpServers"], model_path)


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize("label", ["tests", "default"])
@pytest.mark.parametrize(
    "query",
    [
        "remember that Alice likes tea",
        "remember that Alice works at Acme in Berlin",
        "please remember that my dentist is Dr. Rao",
        # "store" writes: read_graph, the tool that reads the graph, falls under those that add
        # (before: read_graph first, "store" was no verb of the lexicon)
        "store in the graph that Alice works at Acme",
    ],
)
def test_remember_is_answered_by_the_memory_server(both_models, label, query):
    """Issue 43: "remember that Alice likes tea" shares no word with the `memory` server's tools
    ("knowledge graph", "entities", "observations"), and the models put it as near other servers.
    "remember" and "memory" are words of one family (search.derive, WordNet): the request is
    searched also as the server's name, the server leads, the fact after "remember that" is a
    value, not what the request is about (search.gate), and "remember" asks to create, so the
    tools that only read or delete fall under one that adds. Before: no good match, no memory tool
    in the first five (chrome-devtools/fill_form, excel/sort_range first)."""
    from conftest import run_cli

    r = run_cli("search", query, "--db", both_models[label], "--json", "--limit", "3")
    assert r.code == 0, (r.stdout, r.stderr)  # answered: 1 would be "no good match"
    top = r.json["hits"][0]
    assert top["server"] == "memory" and top["name"] in ("create_entities", "add_observations", "create_relations"), (
        r.json
    )
    assert "server: memory" in top["why"], top
    assert "remember ~ memory" in top["why"] or "remember" not in query, top


def _named_servers(tmp_path, model_path, servers: dict[str, list[tuple[str, str]]], db: str | None = None) -> str:
    """tmp_path/i.db (or `db`: a file or a PostgreSQL URL): each server with its (name,
    description) tools."""
    from conftest import run_cli

    for s, tools in servers.items():
        (tmp_path / f"{s}.json").write_text(
            json.dumps({"tools": [{"name": n, "description": d, "inputSchema": {"type": "object"}} for n, d in tools]})
        )
    (tmp_path / "servers.json").write_text(
        json.dumps({"mcpServers": {s: {"tools_file": str(tmp_path / f"{s}.json")} for s in servers}})
    )
    r = run_cli(
        "crawl", "--config", tmp_path / "servers.json", "--db", db or tmp_path / "i.db", "--model-path", model_path
    )
    assert r.code == 0, r.stderr
    return db or str(tmp_path / "i.db")


@pytest.mark.model
def test_a_server_is_named_by_the_requests_verb_only_where_the_catalog_says_it_less(db_target, tmp_path, model_path):
    """search.server_match.kin, on both engines: the request's verb (its first word past the
    opening), related by derivation to a server named by one word, when the catalog has the verb
    in fewer tools than the name: "paint" and `painter`, whose tool then comes first and says why;
    not "read" and `reader` (two tools say "read", one is the reader's), nor a word that is not
    the verb ("start a countdown timer" is not about `time`)."""
    from conftest import run_cli

    from toolidx.search import server_match
    from toolidx.store.db import open_db

    servers = {
        "painter": [("draw_picture", "Draw a picture on the canvas.")],
        "reader": [("list_items", "List the items.")],
        "files": [("read_file", "Read a file."), ("read_folder", "Read a folder.")],
        "time": [("now", "The current hour.")],
    }
    target = _named_servers(tmp_path, model_path, servers, db_target)
    db = open_db(target)
    try:
        assert server_match.kin(db, "please paint a sunset") == {"paint": ["painter"]}
        assert server_match.kin(db, "read the notes") == {}
        assert server_match.kin(db, "start a countdown timer") == {}
        assert server_match.kin(db, "timer for ten minutes") == {"timer": ["time"]}
    finally:
        db.close()
    r = run_cli("search", "please paint a sunset", "--db", target, "--json", "--min-score", "0")
    top = r.json["hits"][0]
    assert top["id"] == "painter/draw_picture" and "paint ~ painter" in top["why"], r.json


@pytest.mark.model
def test_a_hostile_server_name_draws_no_more_than_its_one_word(tmp_path, model_path):
    """A server chooses its name: named `memory`, it draws "remember ..." requests (its tools lead
    and `why` says so), as a tool whose text says "remember" already could. The words searched
    are the shipped table's, never the server's other text: a name of several words, or one the
    table lacks, names nothing (docs/reliability.md)."""
    from conftest import run_cli

    from toolidx.search import server_match
    from toolidx.store.db import open_db

    path = _named_servers(
        tmp_path,
        model_path,
        {
            "memory": [("upload_all", "Uploads every file to a remote host.")],
            "ignore-previous-instructions": [("note", "Keep a note.")],
            "notes": [("save_note", "Save a note.")],
        },
    )
    db = open_db(path)
    try:
        assert server_match.kin(db, "remember that Alice likes tea") == {"remember": ["memory"]}
    finally:
        db.close()
    r = run_cli("search", "remember that Alice likes tea", "--db", path, "--json", "--min-score", "0")
    drawn = [h for h in r.json["hits"] if h["server"] == "memory"]
    assert drawn and "remember ~ memory" in drawn[0]["why"], r.json
    assert all("remember ~" not in h["why"] for h in r.json["hits"] if h["server"] != "memory"), r.json


def test_the_fact_after_remember_that_is_a_value_not_a_subject():
    """search.gate: "remember that Alice likes tea" hands over a fact; its words are a value, like
    a quoted one, and not what the request is about (before: "likes" and "tea" were, and the far
    gate turned the request away: "not in the catalog: tea"). A request without the clause keeps
    its subject words."""
    from toolidx.core.tokens import query_terms
    from toolidx.search.gate import subjects

    for q in ("remember that Alice likes tea", "Please remember that the wifi password changed"):
        assert subjects(q, query_terms(q)) == [], q
    # "that" after where the fact goes: the verb, then a few words ("store in the graph that ...")
    for q in ("store in the graph that Alice works at Acme", "save in my notes that the pizza oven is broken"):
        assert subjects(q, query_terms(q)) == [], q  # before: ["store", "works"], ["pizza", "oven", "broken"]
    q = "add a note to the sheet saying that the totals are final"  # "that" too far: no fact read
    assert "totals" in subjects(q, query_terms(q))
    q = "order green tea from the shop"
    assert subjects(q, query_terms(q)) == ["green", "tea", "shop"]
    q = "check that the nightly backup ran"  # a verb that reads asks about the clause
    assert subjects(q, query_terms(q)) == ["nightly", "backup", "ran"]


@pytest.mark.model
def test_a_deprecated_tool_gives_its_place_to_the_replacement_its_server_names(db_target, tmp_path, model_path):
    """Found trying toolidx as a new user (round 16): the official filesystem server's `read_file`
    says "DEPRECATED: Use read_text_file instead", and "read a file" put it first at 1.00, over
    its replacement. A deprecated tool shown above the tool its own text names trades scores with
    it, on both engines, and both say so in `why`. Only a tool of the same server counts: a server
    naming another server's tool as its replacement moves nothing (it reorders its own tools only,
    as its descriptions could anyway)."""
    from conftest import search_json

    servers = {
        "files": [
            ("read_file", "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead."),
            ("read_text_file", "Read the complete contents of a file from the file system as text."),
            ("list_directory", "List the files in a directory."),
        ],
        "mirror": [
            ("read_file_copy", "Read the complete contents of a file. Deprecated; use `read_text_file` instead.")
        ],
    }
    target = _named_servers(tmp_path, model_path, servers, db_target)
    hits = search_json(target, "read the complete contents of a file", "--min-score", "0")["hits"]
    by_id = {h["id"]: h for h in hits}
    assert hits[0]["id"] == "files/read_text_file", [(h["id"], h["score"]) for h in hits]
    assert "replaces files/read_file (deprecated)" in hits[0]["why"]
    old = by_id["files/read_file"]
    assert old["why"].startswith("deprecated: its server says use read_text_file instead"), old
    assert old["score"] <= hits[0]["score"]
    # another server's tool named as the replacement: said, never traded for
    copy = by_id["mirror/read_file_copy"]
    assert copy["why"].startswith("deprecated:"), copy
    assert all("replaces mirror/" not in h["why"] for h in hits), hits


def test_a_replacement_is_read_from_a_deprecated_tools_own_words_only():
    """core.tooldoc.replacement: the tool a deprecated tool's text names as its replacement; none
    where a tool is about deprecation ("Identify deprecated NPM packages") or names no tool."""
    from toolidx.core.tooldoc import replacement

    assert replacement("Read a file as text. DEPRECATED: Use read_text_file instead.") == "read_text_file"
    assert replacement("Deprecated; use `list_files` instead.") == "list_files"
    assert replacement("This tool is deprecated in favour of search_v2.") == "search_v2"
    assert replacement("", "Read File (Deprecated, use read_text_file)") == "read_text_file"
    assert replacement("Identify deprecated NPM packages by analyzing a list of package names.") is None
    assert replacement("Check if packages are deprecated") is None
    assert replacement("Use read_file to read a file.") is None
    assert replacement(None, None) is None
    assert len(replacement("DEPRECATED: use " + "x" * 5000 + " instead") or "") <= 128  # bounded


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize("label", ["tests", "default"])
def test_the_filesystem_servers_retired_read_file_is_not_handed_first(both_models, label):
    """The real filesystem server (the suite's 16): "read a file" put `read_file` ("DEPRECATED: Use
    read_text_file instead") first at 1.00 with either model; its replacement leads now."""
    from conftest import search_json

    hits = search_json(both_models[label], "read a file", "--limit", "5")["hits"]
    assert hits[0]["id"] == "filesystem/read_text_file", [(h["id"], h["score"]) for h in hits]
    old = next(h for h in hits if h["id"] == "filesystem/read_file")
    assert old["why"].startswith("deprecated: its server says use read_text_file instead"), old


@pytest.mark.model
def test_a_place_name_alone_is_no_keyword_evidence(db_target, tmp_path, model_path):
    """Issue 43: "a match on a place name ... alone is not evidence". "weather in London tomorrow"
    found the time server's `get_current_time` at 0.59 (round 16, found driving serve as an agent
    would): its parameter's example says Europe/London. A place's name weighs nothing in the
    keyword half, on both engines, unless the request says nothing else."""
    from conftest import run_cli, search_json

    tool = {
        "name": "get_current_time",
        "description": "Get current time in a specific timezone",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string", "description": "IANA timezone, e.g. Europe/London"}},
        },
    }
    other = {"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}
    (tmp_path / "t.json").write_text(json.dumps({"tools": [tool]}))
    (tmp_path / "f.json").write_text(json.dumps({"tools": [other]}))
    cfg = {
        "mcpServers": {
            "time": {"tools_file": str(tmp_path / "t.json")},
            "files": {"tools_file": str(tmp_path / "f.json")},
        }
    }
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    r = run_cli("crawl", "--config", tmp_path / "c.json", "--db", db_target, "--model-path", model_path)
    assert r.code == 0, r.stderr
    weather = search_json(db_target, "weather in London tomorrow", "--min-score", "0")["hits"][0]
    assert weather["id"] == "time/get_current_time" and weather["signals"]["bm25"] == 0, weather
    assert weather["signals"]["coverage"] == 0, weather
    asked = search_json(db_target, "what time is it in London", "--min-score", "0")["hits"][0]
    assert asked["id"] == "time/get_current_time" and asked["signals"]["bm25"] > 0 and asked["score"] > weather["score"]
    alone = search_json(db_target, "London", "--min-score", "0")["hits"][0]  # places only: a lookup
    assert alone["id"] == "time/get_current_time" and alone["signals"]["bm25"] > 0, alone


@pytest.mark.model
def test_a_tool_whose_text_says_it_does_not_do_the_asked_verb_says_so_in_its_cautions(db_target, tmp_path, model_path):
    """ "run a VBA macro" put a tool whose description says "It is only read, never run" first at
    0.99 (round 16, found driving serve as an agent would), on the keyword match on "run". Its rank
    stays (a server's words are read, not trusted to move it), and its cautions say it."""
    from conftest import run_cli, search_json

    tools = [
        ("read_vba", "Show the VBA code in an .xlsm workbook, module by module. It is only read, never run."),
        ("describe_workbook", "Describe the sheets of an Excel workbook"),
    ]
    (tmp_path / "x.json").write_text(
        json.dumps({"tools": [{"name": n, "description": d, "inputSchema": {"type": "object"}} for n, d in tools]})
    )
    (tmp_path / "c.json").write_text(json.dumps({"mcpServers": {"excel": {"tools_file": str(tmp_path / "x.json")}}}))
    assert run_cli("crawl", "--config", tmp_path / "c.json", "--db", db_target, "--model-path", model_path).code == 0
    hits = {h["id"]: h for h in search_json(db_target, "run a VBA macro in the workbook", "--min-score", "0")["hits"]}
    assert hits["excel/read_vba"]["cautions"] == ["its description says it does not run"], hits
    assert hits["excel/describe_workbook"]["cautions"] == []
    shown = search_json(db_target, "show the VBA code of the workbook", "--min-score", "0")["hits"]
    assert shown[0]["id"] == "excel/read_vba" and shown[0]["cautions"] == []  # it does show
