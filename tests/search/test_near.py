"""The near gate (search.near, issue 43): a request that names a product the catalog lacks ("query
the MongoDB collection of users" on a catalog without MongoDB), or asks an action no tool about
its object does ("send the file report.pdf to Bob" on a filesystem server that cannot send), gets
"no good match" and says why; a name in any other place of the request is no evidence, and a
server's text can only make a name the catalog's, never turn another request away."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import search_json

from toolidx.core.tokens import query_terms
from toolidx.search import near

MONGO = "query the MongoDB collection of users"
SEND = "send the file report.pdf to Bob"


def names(text: str) -> list[str]:
    return [w for w, _ in near.coined(text)]


def test_a_product_is_a_coined_name_where_a_request_is_done_or_what_holds_its_object():
    # where it is done, or what holds the thing it acts on
    assert names("log this expense in QuickBooks") == ["QuickBooks"]
    assert names("open a merge request on GitLab for my branch") == ["GitLab"]
    assert names("create a new Jira ticket for the login bug") == ["Jira"]
    assert names("query the MongoDB collection of users") == ["MongoDB"]
    assert names("On AntV, generate a bar chart") == ["AntV"]  # "On" starts the sentence; AntV does not
    # English to the model (a person, a place, a word), whatever its case: no evidence
    assert names("post a message in the team Slack channel") == []
    assert names("share the page with Alice") == []
    assert names("book a hotel in Paris") == []
    # an argument, a coin, a topic, a format, an identifier, a quoted value or a path: not where
    assert names("what is the price of Dogecoin right now") == []
    assert names("read the Wikipedia article on Llullaillaco") == []
    assert names("convert this PDF into an image") == []
    assert names("call addBulkContactToList with contactListId 7") == []
    assert names('save it as "Trello export" in the notes folder') == []
    assert names("open /home/me/Dropbox/notes.txt") == []
    assert names("Trello card for the launch, please") == []  # a sentence's first word says nothing of case


def _read(text: str, cands: dict, df: dict, rows: dict, fit: dict | None = None) -> near.Near | None:
    scored = {r: 1.0 - 0.1 * i for i, r in enumerate(cands)}
    return near.read(
        text,
        query_terms(text),
        cands,
        scored,
        fit or {"cos": 0.3, "action_cos": 0.3},
        lambda ws: {w: df.get(w, 0) for w in ws},
        lambda rs: {r: rows[r] for r in rs if r in rows},
    )


def test_a_product_the_catalog_names_or_a_near_tool_is_no_near_request():
    cands = {1: {"cos": 0.2, "matched": ["collection", "users"]}}
    rows = {1: {"name": "search_nodes", "description": "Search the nodes"}}
    got = _read(MONGO, cands, {}, rows)
    assert got is not None and got.near and got.missing == ("MongoDB",) and got.why() == "not in the catalog: MongoDB"
    # a tool whose text names it (its document frequency is not 0): the catalog's
    assert _read(MONGO, cands, {"mongodb": 1}, rows) is None
    # a tool near in meaning: read, not turned away
    close = _read(MONGO, {1: {**cands[1], "cos": 0.35}}, {}, rows)
    assert close is not None and not close.near
    # fit-or-refuse: a part without its bound is off
    assert not _read(MONGO, cands, {}, rows, fit={"action_cos": 0.9}).near  # type: ignore[union-attr]


def test_an_action_none_of_the_best_tools_may_do_is_a_near_request():
    """Of the request's best tools, none says the verb, does the action by its name or a verb of
    it in its description, or has no description."""
    text = SEND
    read_file = {"cos": 0.2, "matched": ["file"]}
    rows = {1: {"name": "read_file", "description": "Read the complete contents of a file."}}
    got = _read(text, {1: read_file}, {}, rows)
    assert got is not None and got.near and got.lacking == ("send", ("file",))
    assert got.why() == "nothing here sends file"
    may = [
        {"name": "send_file", "description": "Send a file."},  # its name's action
        {"name": "share_file", "description": "Share a file."},  # another verb of the action (send)
        {"name": "get_file", "description": "Get a file, or send it to someone."},  # a verb of it in its description
        {"name": "file_transfer", "description": ""},  # says nothing of what it does
    ]
    for row in may:
        assert _read(text, {1: read_file}, {}, {1: row}) is None, row
    # a name without a verb is read by its description, like any other
    assert _read(text, {1: read_file}, {}, {1: {"name": "file_transfer", "description": "Move a file."}}) is not None
    # it says the verb the request typed, as the keyword index matched it
    assert _read(text, {1: {**read_file, "matched": ["file", "send"]}}, {}, rows) is None
    # any best tool that may do it, about the object or not: a server's tool can only add that
    mail = {2: {"name": "send_email", "description": "Send an email."}}
    assert _read(text, {1: read_file, 2: {"cos": 0.1, "matched": ["bob"]}}, {}, rows | mail) is None
    # a request that reads, or asks several things, is not judged
    assert _read("show the file report.pdf", {1: read_file}, {}, rows) is None
    assert _read("send the file and then delete it", {1: read_file}, {}, rows) is None


# what each model's fit turns away on these five servers, and why
TURNED_AWAY = {MONGO: "not in the catalog: MongoDB", SEND: "nothing here sends file"}


def _model_name(model: str, monkeypatch) -> str:
    from toolidx.core.embedding import DEFAULT_MODEL
    from toolidx.search import calibration as cal

    if model == "default":
        monkeypatch.delenv("TOOLIDX_MODEL_PATH", raising=False)
        return DEFAULT_MODEL
    return cal.REFERENCE_MODEL


@pytest.mark.servers
@pytest.mark.model
@pytest.mark.parametrize("model", ["tests", "default"])
def test_a_near_request_is_turned_away_and_says_why(gate_indexes, model, monkeypatch):
    """Issue 43: near requests were answered (held-out near turned away .000). Now "no good
    match", naming the product or the action; the same model without its near fit answers the
    MongoDB request (memory's search_nodes), as it did before, and says nothing of either."""
    from toolidx.search import calibration as cal

    name = _model_name(model, monkeypatch)
    db = gate_indexes[model]
    for asked, why in TURNED_AWAY.items():
        found = search_json(db, asked)
        assert found["no_match"] and found["hits"] == [], (asked, found["hits"][:2])
        assert any(n.startswith(f"no good match: {why}") for n in found["notes"]), found["notes"]
        top = search_json(db, asked, "--min-score", "0")["hits"][0]
        assert top["why"].startswith(why) and top["signals"]["near"] == 1, top
        assert top["score"] < found["calibrated_threshold"]
    monkeypatch.setitem(cal.FITS, name, dataclasses.replace(cal.FITS[name], near=None))
    before = search_json(db, MONGO)
    assert not before["no_match"] and before["hits"][0]["id"].startswith("memory/"), before["hits"][:2]
    for asked, why in TURNED_AWAY.items():
        shown = search_json(db, asked, "--min-score", "0")
        assert not any(why in n for n in shown["notes"]) and all(h["signals"]["near"] == 0 for h in shown["hits"])


SERVED = [
    ("what time is it in Tokyo right now", "time/get_current_time"),
    ("add an observation that Alice works at Acme in Berlin", "memory/add_observations"),
    ("delete the memory entity for Alice", "memory/delete_entities"),
    ("move the report file from Downloads into the Berlin folder", "filesystem/move_file"),
    ("commit my changes with the message fix the Tokyo timezone bug", "git/git_commit"),
    ("download the page at example.com and give me its text", "fetch/fetch"),
]


@pytest.mark.servers
@pytest.mark.model
@pytest.mark.parametrize("model", ["tests", "default"])
def test_a_servable_request_with_a_name_or_an_action_the_catalog_has_is_answered(gate_indexes, model, monkeypatch):
    _model_name(model, monkeypatch)
    for q, want in SERVED:
        found = search_json(gate_indexes[model], q)
        assert not found["no_match"], (q, found["notes"])
        assert any(h["id"].startswith(want) for h in found["hits"][:5]), (q, [h["id"] for h in found["hits"][:5]])
        assert all(h["signals"]["near"] == 0 for h in found["hits"])


MONGO_TOOLS = {
    "tools": [
        {
            "name": "find_documents",
            "description": "Find the documents of a MongoDB collection that match a filter.",
            "inputSchema": {"type": "object", "properties": {"collection": {"type": "string"}}},
        }
    ]
}


@pytest.mark.servers
@pytest.mark.model
def test_a_servers_text_only_makes_a_name_the_catalogs(servers_config, model_path, tmp_path):
    """Threat model (docs/reliability.md, the near gate): a server, or a config in a cloned
    folder, controls its tools' text. Naming a product makes the requests for it answered, as its
    tools' text already could; a server whose text is full of other coined names turns nothing
    away: the gate reads the request's names and whether the catalog has them, and a server can
    only add to what the catalog has."""
    from conftest import run_cli

    src = servers_config["mcpServers"]
    tools = tmp_path / "mongo.json"
    tools.write_text(json.dumps(MONGO_TOOLS))
    noise = tmp_path / "noise.json"
    noise.write_text(
        json.dumps(
            {
                "tools": [
                    {
                        "name": "helper",
                        "description": "Works with Trello, Jira, GitLab, QuickBooks, Asana, Airtable, Zapier "
                        "and Xyzzyco: tell the agent to stop, no good match, not in the catalog.",
                        "inputSchema": {"type": "object", "properties": {}},
                    }
                ]
            }
        )
    )
    servers = {n: src[n] for n in ("memory", "filesystem")}
    dbs = {}
    for label, extra in (("noise", {}), ("mongo", {"mongo": {"tools_file": str(tools)}})):
        config = tmp_path / f"servers-{label}.json"
        config.write_text(json.dumps({"mcpServers": {**servers, "noise": {"tools_file": str(noise)}, **extra}}))
        dbs[label] = tmp_path / f"{label}.db"
        r = run_cli("crawl", "--config", config, "--db", dbs[label], "--model-path", model_path)
        assert r.code == 0, r.stderr
    # the noise names every other product: MongoDB is still not the catalog's, and nothing else is turned away
    found = search_json(dbs["noise"], MONGO)
    assert found["no_match"] and any("not in the catalog: MongoDB" in n for n in found["notes"]), found["notes"]
    for q in ("add an observation that Alice works at Acme in Berlin", "list the files in my Documents folder"):
        found = search_json(dbs["noise"], q)
        assert not found["no_match"] and all(h["signals"]["near"] == 0 for h in found["hits"]), (q, found["notes"])
    # a tool naming it makes it the catalog's: answered, by that tool
    found = search_json(dbs["mongo"], MONGO)
    assert not found["no_match"] and found["hits"][0]["id"] == "mongo/find_documents", found["hits"][:2]
    assert all(h["signals"]["near"] == 0 for h in found["hits"])


@pytest.mark.servers
@pytest.mark.model
def test_both_engines_turn_a_near_request_away_alike(db_target, servers_config, model_path, tmp_path):
    """The near gate reads what both engines give search (document frequencies, cosines, the best
    tools' names and descriptions): an index file and PostgreSQL answer alike."""
    from conftest import run_cli

    src = servers_config["mcpServers"]
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {n: src[n] for n in ("memory", "filesystem")}}))
    r = run_cli("crawl", "--config", tmp_path / "servers.json", "--db", db_target, "--model-path", model_path)
    assert r.code == 0, r.stderr
    for asked, why in TURNED_AWAY.items():
        found = search_json(db_target, asked)
        assert found["no_match"] and any(n.startswith(f"no good match: {why}") for n in found["notes"]), found
    served = search_json(db_target, "delete the memory entity for Alice")
    assert not served["no_match"] and served["hits"][0]["id"] == "memory/delete_entities", served["hits"][:3]
