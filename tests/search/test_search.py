"""search(): modes, scores, filters, hostile input, no-match, keyword-only fallback, and the CLI.

A small hand-made catalog (tests/data/search_catalog.jsonl) indexed with the real model, once
per session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from toolidx.core.errors import UsageError
from toolidx.core.filters import Filters

DATA = Path(__file__).parents[1] / "data"


def _index(tmp: Path, cli, *extra: str) -> Path:
    shutil.copy(DATA / "search_catalog.jsonl", tmp / "tools.jsonl")
    (tmp / "servers.yaml").write_text("mcpServers:\n  catalog:\n    tools_file: tools.jsonl\n")
    db = tmp / "search.db"
    r = cli("crawl", "--config", tmp / "servers.yaml", "--db", db, *extra)
    assert r.code == 0, r.stderr
    return db


@pytest.fixture(scope="session")
def search_db_path(tmp_path_factory, model_path) -> Path:
    from conftest import run_cli

    return _index(tmp_path_factory.mktemp("search"), run_cli, "--model-path", model_path)


@pytest.fixture(scope="session")
def keyword_db_path(tmp_path_factory) -> Path:
    """The same catalog crawled with no model: no vectors at all."""
    from conftest import run_cli

    return _index(tmp_path_factory.mktemp("search-kw"), run_cli, "--model", "none")


@pytest.fixture
def db(search_db_path):
    from toolidx.store.db import open_db

    d = open_db(search_db_path)
    yield d
    d.close()


@pytest.fixture
def run(db, embedder):
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    def go(query, **kw):
        asked = {k: kw.pop(k) for k in ("mode", "limit", "filters", "min_score") if k in kw}
        kw.setdefault("embedder", embedder)
        return search(db, SearchRequest(query, **asked).check(cut_long=True), **kw)  # as the library checks

    return go


HOSTILE = [
    '"',
    '""',
    '"unterminated',
    "*",
    "a*",
    "NEAR(git status, 2)",
    "-git",
    "git -status",
    "status:",
    "name:git",
    "(",
    ")",
    "((git) OR",
    "AND OR NOT",
    "^",
    "git + pdf",
    "{x}",
    "'; DROP TABLE tools; --",
    "\x00",
    "\\",
    "",
    "   ",
    "\n\t",
    "x" * 10240,
    "convert " * 2000,
    "Überprüfung übersetzen",
    "搜索文档",
    "検索 ファイル",
    "🔥📄",
    "convert 📄 pdf 🚀",
    "git_status\u200b",
    "ǅ ß ẞ İ",
    "0" * 500,
    "-- /* */",
]


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
@pytest.mark.parametrize("query", HOSTILE, ids=[f"q{i}" for i in range(len(HOSTILE))])
def test_hostile_queries_never_crash(run, query, mode):
    if not query.strip():  # nothing to search for: bad input, one line (exit 2 from the CLI)
        with pytest.raises(UsageError, match="the query is empty"):
            run(query, mode=mode, min_score=0.0)
        return
    res = run(query, mode=mode, min_score=0.0)
    assert res.mode_used == mode
    for h in res.hits:
        assert 0.0 <= h.score <= 1.0
    json.dumps(res.to_json())  # serialisable


def test_hostile_query_terms_are_quoted():
    from toolidx.core.tokens import fts_query, query_terms

    terms = query_terms('NEAR(a b) "x" -y name:z AND OR NOT *')
    assert "near" in terms and "and" not in terms  # NEAR is a word, and "and" a stop word
    q = fts_query(terms)
    assert all(part.startswith('"') and part.endswith('"') for part in q.split(" OR "))
    assert len(query_terms("word " * 5000 + " ".join(f"w{i}" for i in range(200)))) <= 48


def test_a_word_in_camel_case_is_searched_whole_as_well_as_in_parts(tmp_path):
    """Tool texts say "PowerPoint", "GitHub", "JavaScript" as one token each, and the query split
    them into parts only: "GitHub" searched "git" and "hub" (the git server's tools, none of
    GitHub's), "PowerPoint" searched "point" (`add_bullet_points`). Found driving serve as an agent
    would (round 16). The whole word comes first, then its parts (an identifier, "getUserById",
    still finds `get_user_by_id`)."""
    from conftest import run_cli, search_json

    from toolidx.core.tokens import query_terms

    assert query_terms("open the GitHub issue") == ["open", "github", "git", "hub", "issue"]
    assert query_terms("getUserById") == ["getuserbyid", "user", "id"]  # "get": a stop word
    assert query_terms("read_file v2_api") == ["read", "file", "v2", "api"]  # not camel case: as before
    tools = {
        "github": [("create_issue", "Create a new issue in a GitHub repository")],
        "git": [("git_status", "Show the working tree status of the git repository")],
        "deck": [
            ("add_bullet_points", "Add bullet points to a slide"),
            ("add_video", "Insert a video into a PowerPoint slide"),
        ],
    }
    for s, ts in tools.items():
        (tmp_path / f"{s}.json").write_text(
            json.dumps({"tools": [{"name": n, "description": d, "inputSchema": {"type": "object"}} for n, d in ts]})
        )
    cfg = {"mcpServers": {s: {"tools_file": str(tmp_path / f"{s}.json")} for s in tools}}
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    assert run_cli("crawl", "--config", tmp_path / "c.json", "--db", tmp_path / "i.db", "--model", "none").code == 0
    first = search_json(tmp_path / "i.db", "open an issue on GitHub", "--mode", "keyword", "--min-score", "0")["hits"][
        0
    ]
    assert first["id"] == "github/create_issue", first


@pytest.mark.parametrize(
    "name, words",
    [
        ("getStoryWithComments", ["get", "story", "with", "comments"]),
        ("get_current-time", ["get", "current", "time"]),
        ("HTMLParser", ["html", "parser"]),
        ("listAPIKeys", ["list", "api", "keys"]),
        # an acronym's plural is one word, in names and in queries ("merge two PDFs", "user IDs")
        ("PDFs", ["pdfs"]),
        ("getURLs", ["get", "urls"]),
        ("getIDsFor", ["get", "ids", "for"]),
        ("MCPServers", ["mcp", "servers"]),
        ("NFTsByOwner", ["nfts", "by", "owner"]),
    ],
)
def test_names_and_query_words_split_into_words(name, words):
    from toolidx.core.tooldoc import split_name

    assert split_name(name) == words


def test_an_acronym_plural_in_a_query_finds_its_tool(run):
    res = run("merge two PDFs", mode="keyword")
    assert res.hits[0].id == "pdf/merge_pdfs" and "pdfs" in res.hits[0].matched


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_finds_the_obvious_tool_first(run, mode):
    res = run("convert a pdf document to markdown", mode=mode)
    assert not res.no_match
    assert res.hits[0].id == "pdf/convert_pdf_to_markdown"
    h = res.hits[0]
    assert h.server == "pdf" and h.name == "convert_pdf_to_markdown" and h.description
    if mode != "semantic":
        assert {"pdf", "markdown"} <= set(h.matched)
        assert "terms:" in h.why
    else:
        assert h.matched == [] and "semantic" in h.why


def test_semantic_finds_a_paraphrase_with_no_shared_words(run):
    q = "will it be sunny or rainy in Lisbon tomorrow"
    assert run(q, mode="semantic").hits[0].id == "weather/get_forecast"
    assert run(q, mode="hybrid").hits[0].id == "weather/get_forecast"


def test_fuzzy_name_match_handles_typos_and_snake_case(run):
    for q in ("git_stauts", "git stauts", "gitStatus"):
        res = run(q, mode="hybrid")
        assert res.hits and res.hits[0].name == "git_status", q
        assert "fuzzy name" in res.hits[0].why
    kw = run("git_stauts", mode="keyword")
    assert kw.hits and kw.hits[0].name == "git_status"


def test_scores_in_range_and_order_is_deterministic(run):
    a = run("git repository status", min_score=0.0, limit=20)
    b = run("git repository status", min_score=0.0, limit=20)
    assert [h.to_json() for h in a.hits] == [h.to_json() for h in b.hits]
    # shown scores never increase; equal shown scores are ordered by the unrounded score
    # (low scores round alike), then by id
    scores = [h.score for h in a.hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] < scores[0]
    assert all(0.0 <= h.score <= 1.0 for h in a.hits)
    # two identical git_status tools on two servers: same evidence, tie broken by id
    ids = [h.id for h in a.hits]
    assert ids.index("git/git_status") < ids.index("git2/git_status")


def test_score_means_the_same_across_queries(run):
    """A clear match scores high whatever the query length; an unrelated query scores low."""
    short = run("merge pdf files").hits[0]
    long = run(
        "I have a few separate PDF files from the scanner and I would like to merge "
        "them into one single PDF document to send it"
    ).hits[0]
    assert short.id == long.id == "pdf/merge_pdfs"
    assert short.score > 0.5 and long.score > 0.5
    junk = run("bake a chocolate cake with my grandmother", min_score=0.0)
    assert junk.hits[0].score < 0.07 < short.score


def test_no_good_match_returns_nothing_and_says_so(run):
    res = run("Can you walk my dog in the park this afternoon?")
    assert res.no_match and res.hits == []
    assert any("no good match" in n for n in res.notes)
    assert res.threshold > 0
    shown = run("Can you walk my dog in the park this afternoon?", min_score=0.0)
    assert shown.hits and not shown.no_match


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_an_exact_purpose_tool_clears_the_gate_in_every_mode(run, mode):
    """One exact word ("factorial") in a paraphrase: the tool that does exactly that is the answer,
    not "no good match" (keyword mode's gate, fitted on ETOM alone, turned it away)."""
    res = run("compute the factorial of a number", mode=mode)
    assert not res.no_match and res.hits[0].id == "math/factorial"


def test_min_score_drops_hits_below_it(run):
    res = run("git", min_score=0.0, limit=20)
    cut = res.hits[1].score
    kept = run("git", min_score=cut, limit=20)
    assert kept.hits and all(h.score >= cut for h in kept.hits)
    with pytest.raises(UsageError):
        run("git", min_score=1.5)


def test_filters_apply_inside_candidate_generation(run):
    # the forecast tool is far down for a git query; the filter must still surface it
    res = run("git repository status", filters=Filters(servers=["weather"]), min_score=0.0)
    assert res.hits and {h.server for h in res.hits} == {"weather"}
    assert res.considered == 2
    ro = run("file", filters=Filters(read_only=True), min_score=0.0, limit=20)
    assert "files/read_file" in [h.id for h in ro.hits]
    assert not {"files/write_file", "files/delete_file"} & {h.id for h in ro.hits}
    nd = run("delete a file", filters=Filters(no_destructive=True), min_score=0.0, limit=20)
    assert "files/delete_file" not in [h.id for h in nd.hits]
    pat = run("status", filters=Filters(name_pattern="^git_"), min_score=0.0, limit=20)
    assert pat.hits and all(h.name.startswith("git_") for h in pat.hits)
    desc = run("file", filters=Filters(description_contains="PERMANENTLY"), min_score=0.0)
    assert [h.id for h in desc.hits] == ["files/delete_file"]
    r = run("send", mode="semantic", filters=Filters(servers=["calendar"]), min_score=0.0)
    assert [h.server for h in r.hits] == ["calendar"]
    # keyword search only finds tools sharing a word with the query, filter or not
    assert run("send", mode="keyword", filters=Filters(servers=["calendar"]), min_score=0.0).hits == []
    assert [h.id for h in run("create", mode="keyword", filters=Filters(servers=["calendar"])).hits] == [
        "calendar/create_event"
    ]


def test_a_keyword_search_that_finds_no_word_says_which_words(run):
    """keyword mode's "no good match" for a request no tool shares a word with said nothing at all
    (round 16, found trying toolidx as a new user); hybrid explains its own."""
    res = run("book a flight to Paris", mode="keyword")
    assert res.no_match and res.considered > 0
    assert res.notes == [
        "no good match: no tool has any of the words book, flight, paris; --mode hybrid or semantic reads the meaning too"
    ], res.notes


def test_filters_that_match_nothing(run):
    res = run("git", filters=Filters(servers=["nope"]))
    assert res.no_match and res.considered == 0
    assert any("no tools pass the filters" in n for n in res.notes)
    # a misspelt server says so, with the servers it may have meant (round 16, found trying
    # toolidx as a new user: `--server gti` said only that nothing passed)
    res = run("git", filters=Filters(servers=["gti", "wether"]))
    assert "no server 'gti' (did you mean git?), 'wether' (did you mean weather?) in the index" in res.notes[-1]
    res = run("git", filters=Filters(servers=["weather"], name_pattern="^nothing$"))
    assert res.no_match and not any("no server" in n for n in res.notes)  # the server is there


def test_invalid_regex_is_a_usage_error():
    with pytest.raises(UsageError, match="regex"):
        Filters(name_pattern="([unclosed")


def test_a_hostile_name_pattern_runs_in_linear_time_or_is_refused(tmp_path):
    """name_pattern comes from agents and HTTP clients; with Python's backtracking re, `(a+)+$`
    against a 256-character name ran for minutes inside SQLite's REGEXP. RE2 answers at once;
    patterns it cannot run in linear time (look-around, back-references) or too long to compile
    cheaply are one-line usage errors."""
    import re2

    from toolidx.core.filters import compile_pattern
    from toolidx.store.db import open_db

    conn = open_db(tmp_path / "x.db", create=True).conn
    for pattern in ("(a+)+$", "(x+x+)+y", "^(\\w+\\s?)*$!", "(a|aa)+$", "(.*a){12}$"):
        assert conn.execute("SELECT ? REGEXP ?", ("a" * 255 + "!", pattern)).fetchone() == (0,), pattern
        # linear because RE2 runs it, not Python's backtracking `re`: checked by engine, not by stopwatch
        assert isinstance(compile_pattern(pattern), type(re2.compile("x"))), pattern
    assert conn.execute("SELECT 'Git_Status' REGEXP '^git_'").fetchone() == (1,)  # still case-insensitive
    for bad, why in (
        ("(?=a)", "look-around"),
        ("(a)\\1", "back-references"),
        ("a" * 501, "longer than 500"),
        ("x{2,1000}" * 50, "too large"),
    ):
        with pytest.raises(UsageError) as e:
            Filters(name_pattern=bad)
        assert "invalid --name-pattern regex" in str(e.value)
        assert why in str(e.value) + (e.value.fix or ""), (bad, str(e.value))
        assert "\n" not in str(e.value)


def test_unknown_mode_and_bad_limit(run):
    with pytest.raises(UsageError):
        run("git", mode="magic")
    with pytest.raises(UsageError):
        run("git", limit=0)


def test_keyword_mode_loads_no_model(db):
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    res = search(db, SearchRequest("convert pdf", mode="keyword"))  # embedder=INDEX_MODEL: keyword never loads it
    assert res.mode_used == "keyword" and res.hits
    assert all("signals" in h.to_json() and h.signals.cosine is None for h in res.hits)


def test_without_a_model_hybrid_falls_back_to_keyword(keyword_db_path):
    from toolidx.search.hybrid import get_query_embedder, search
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    db = open_db(keyword_db_path)
    assert get_query_embedder(db) is None
    res = search(db, SearchRequest("convert pdf to markdown"))
    assert res.mode == "hybrid" and res.mode_used == "keyword"
    assert res.hits[0].id == "pdf/convert_pdf_to_markdown"
    assert any("ran keyword search instead" in n for n in res.notes)
    sem = search(db, SearchRequest("convert pdf", mode="semantic"))
    assert sem.mode_used == "keyword"
    db.close()


def test_a_search_reads_data_version_once_and_sees_a_crawl_committed_before_it(tmp_path, model_path, embedder):
    """A search's cache lookups (~15) ask the version pinned in its read snapshot, not PRAGMA
    data_version each (19 to 23 of them per hybrid search before, #33); a crawl committed by
    another connection between two searches is still seen by the next one (its entries rebuilt)."""
    from conftest import run_cli

    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    path = _index(tmp_path, run_cli, "--model-path", model_path)
    db = open_db(path)
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)  # FTS5's own statements start with "--": not ours

    def pragmas(query: str) -> tuple[int, list[str]]:
        seen.clear()
        hits = [h.id for h in search(db, SearchRequest(query, mode="hybrid"), embedder=embedder).hits]
        return sum(s == "PRAGMA data_version" for s in seen), hits

    query = "calibrate the flux capacitor of a time machine"
    count, hits = pragmas(query)
    assert count == 1 and "lab/calibrate_flux_capacitor" not in hits
    assert pragmas("convert a pdf into markdown")[0] == 1  # a warm cache: one as well
    resets = db.cache.stats()["resets"]
    tool = {
        "id": "lab/calibrate_flux_capacitor",
        "server": "lab",
        "name": "calibrate_flux_capacitor",
        "description": "Calibrate the flux capacitor of a time machine before a jump.",
        "input_schema": {"type": "object", "properties": {}},
    }
    with (tmp_path / "tools.jsonl").open("a") as f:
        f.write(json.dumps(tool) + "\n")
    r = run_cli("crawl", "--config", tmp_path / "servers.yaml", "--db", path, "--model-path", model_path)
    assert r.code == 0, r.stderr
    count, hits = pragmas(query)
    assert count == 1 and hits[0] == "lab/calibrate_flux_capacitor", hits
    assert db.cache.stats()["resets"] == resets + 1
    db.close()


def test_the_query_is_embedded_in_the_searching_thread(run, embedder):
    """After the keyword half, in the caller's thread: on a small machine the model's threads take
    every core, and a thread of its own beside the keyword half only slowed both
    (docs/research/search.md, Speed, round 12)."""
    import threading

    seen = []

    class Recording:
        def __getattr__(self, name):
            return getattr(embedder, name)

        def embed_query(self, text):
            seen.append(threading.get_ident())
            return embedder.embed_query(text)

    assert run("turn a pdf file into markdown text", embedder=Recording()).mode_used == "hybrid"
    assert seen == [threading.get_ident()]


def test_model_named_by_the_index_is_loaded_from_model_path(db, model_path, monkeypatch):
    from toolidx.core import embedding
    from toolidx.search import hybrid as search_mod
    from toolidx.search.request import SearchRequest

    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    monkeypatch.setattr(embedding, "_cache", {})  # a real load, not one an earlier test left
    e = search_mod.get_query_embedder(db)
    assert e is not None and e.dim == 384
    assert search_mod.get_query_embedder(db) is e and list(embedding._cache.values()) == [e]  # one cache
    assert search_mod.search(db, SearchRequest("weather forecast")).mode_used == "hybrid"


def test_unicode_queries_match_unicode_text(run):
    res = run("Übersetzung ins Deutsche", mode="keyword")
    assert res.hits and res.hits[0].id == "i18n/übersetzen_text"
    assert run("übersetzen", mode="keyword").hits[0].id == "i18n/übersetzen_text"


# --- CLI ---------------------------------------------------------------------------------------
def test_cli_search_json(cli, search_db_path, model_path, monkeypatch):
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    r = cli("search", "convert pdf to markdown", "--db", search_db_path, "--json", "--limit", "3")
    assert r.code == 0, r.stderr
    j = r.json
    assert j["toolidx"] == 1 and j["command"] == "search"
    assert j["mode_used"] == "hybrid" and j["no_match"] is False and j["count"] == len(j["hits"]) <= 3
    h = j["hits"][0]
    assert h["id"] == "pdf/convert_pdf_to_markdown"
    assert set(h) >= {"id", "server", "name", "title", "description", "score", "matched", "why"}


def test_cli_search_tsv_in_a_pipe_and_filters(cli, search_db_path):
    r = cli("search", "status", "--db", search_db_path, "--mode", "keyword", "--server", "git2")
    assert r.code == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].split("\t")[:2] == ["score", "tool"]
    assert lines[1].split("\t")[1] == "git2/git_status" and len(lines) == 2


def test_cli_search_no_match_exits_1(cli, search_db_path, model_path, monkeypatch):
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    r = cli("search", "walk my dog in the park", "--db", search_db_path, "--json")
    assert r.code == 1
    assert r.json["no_match"] is True and r.json["hits"] == []
    r = cli("search", "walk my dog in the park", "--db", search_db_path)
    assert r.code == 1 and "no good match" in r.stderr and r.stdout == ""


def test_cli_search_bad_input_exits_2(cli, search_db_path):
    r = cli("search", "git", "--db", search_db_path, "--name-pattern", "([x")
    assert r.code == 2 and "regex" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = cli("search", "git", "--db", search_db_path, "--mode", "magic", "--json")
    assert r.code == 2 and r.json["error"] == "UsageError"
    for empty in ("", "   "):  # bad input (2), not "no good match" (1) as before
        r = cli("search", empty, "--db", search_db_path, "--json")
        assert r.code == 2 and r.json["error"] == "UsageError" and "query is empty" in r.json["message"]
    r = cli("search", "git", "--db", search_db_path, "--min-score", "2")
    assert r.code == 2


def test_cli_search_max_tokens(cli, search_db_path):
    full = cli(
        "search", "file", "--db", search_db_path, "--mode", "keyword", "--json", "--min-score", "0", "--limit", "10"
    )
    cut = cli(
        "search",
        "file",
        "--db",
        search_db_path,
        "--mode",
        "keyword",
        "--json",
        "--min-score",
        "0",
        "--limit",
        "10",
        "--max-tokens",
        "250",
    )
    assert full.code == cut.code == 0
    assert len(cut.json["hits"]) < len(full.json["hits"])
    assert cut.json["truncated"]["items_dropped"] > 0
    assert [h["id"] for h in cut.json["hits"]] == [h["id"] for h in full.json["hits"]][: len(cut.json["hits"])]


# --- typing slips (toolidx.search.spelling) ------------------------------------------------------
def test_a_slip_is_searched_also_as_the_catalogs_word(keyword_db_path):
    """Keyword search finds nothing for a word no tool has; the slip's English neighbour that a
    tool has is searched beside it, and the result says so."""
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    db = open_db(keyword_db_path)
    res = search(db, SearchRequest("wether forcast", mode="keyword"))
    assert res.corrections == {"wether": ["weather"], "forcast": ["forecast"]}
    assert res.hits and res.hits[0].id == "weather/get_forecast"
    assert any("also searched for weather (for 'wether'); forecast (for 'forcast')" in n for n in res.notes)
    assert res.to_json()["corrections"] == res.corrections
    assert search(db, SearchRequest("weather forecast", mode="keyword")).corrections == {}
    db.close()


def test_what_is_never_taken_for_a_slip(keyword_db_path):
    from toolidx.search.spelling import corrections
    from toolidx.store.db import open_db

    db = open_db(keyword_db_path)
    for text in (
        "merge pdfs and pasted renting",  # English, the catalog's, inflections the word list lacks
        "the Forcast app",  # a capitalised word is a name, but for a sentence's first word
        "open /tmp/forcast.txt or forcast_id or forcast-2 or forcast.io",  # paths, ids, hosts
        "forcastt mergge",  # a letter too many: the word less it is rarely what was meant
        "wthr",  # no English word one edit away that a tool has
        'the "wether forcast" app',  # a quoted value means exactly what it says
    ):
        assert corrections(db, text) == {}, text
    assert corrections(db, "the forcast, please.") == {"forcast": ["forecast"]}  # punctuation ends a word
    assert corrections(db, "Thanks. Forcast for today?") == {"forcast": ["forecast"]}  # a sentence's first word
    db.close()


def test_without_the_word_list_search_goes_on(keyword_db_path, monkeypatch, tmp_path, capsys):
    from toolidx.search import spelling
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    monkeypatch.setattr(spelling, "WORDS", tmp_path / "missing.txt")
    spelling._english.cache_clear()
    spelling._by_letter.cache_clear()
    db = open_db(keyword_db_path)
    try:
        res = search(db, SearchRequest("weather forcast", mode="keyword"))  # "weather" alone is still searched
        assert res.corrections == {} and res.hits[0].server == "weather"
        assert "missing.txt" in capsys.readouterr().err
    finally:
        db.close()
        spelling._english.cache_clear()
        spelling._by_letter.cache_clear()


def test_hybrid_search_reads_the_corrected_words(run):
    res = run("read a fiel")
    assert res.corrections == {"fiel": ["file"]}
    assert res.hits[0].id == "files/read_file"
    res = run("post a mesage to the team chanel")
    assert res.corrections == {"mesage": ["message"], "chanel": ["channel"]}
    assert res.hits[0].name == "send_message"


def test_search_json_names_the_corrections(search_db_path, cli):
    r = cli("search", "wether forcast", "--db", search_db_path, "--json")
    out = json.loads(r.stdout)
    assert out["corrections"] == {"wether": ["weather"], "forcast": ["forecast"]}
    assert out["hits"][0]["id"] == "weather/get_forecast"


def test_a_few_tools_do_not_make_a_weak_match_an_answer(run):
    """The score's list share counts a list shorter than calibration.LIST_K as if its weakest
    filled it: among a scope of 2 tools an impossible request's best would otherwise hold half the
    odds and pass the gate."""
    scope = Filters(servers=["weather"])  # get_forecast, get_alerts
    for mode in ("hybrid", "keyword"):
        res = run("book a table for two at an italian restaurant tonight", filters=scope, mode=mode)
        assert res.no_match, (mode, [(h.id, h.score) for h in res.hits])
    res = run("will it rain in Paris in the next days", filters=scope)
    assert res.hits[0].id == "weather/get_forecast" and res.hits[0].score > 0.5


def test_word_counts_survive_their_cache_filling_up(keyword_db_path, monkeypatch):
    """Retrieval.document_counts clears its per-version cache when full: the words a query already
    had counted are still answered (a KeyError there failed the search)."""
    from toolidx.store import retrieval
    from toolidx.store.db import open_db

    db = open_db(keyword_db_path)
    try:
        with db.snapshot():
            first = db.retrieval.document_frequency(["weather", "forecast"])
            monkeypatch.setattr(retrieval, "MAX_DF_CACHED", 2)
            again = db.retrieval.document_frequency(["weather", "forecast", "file", "message"])
        assert first == {"weather": 2, "forecast": 1}
        assert again == {**first, "file": again["file"], "message": again["message"]} and again["file"] > 0
    finally:
        db.close()
