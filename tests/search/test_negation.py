"""What a request forbids (search.negation; issue 42 item 10, issue 43): "do not delete my files,
just list them" put `delete_files` first at a calibrated 1.00 in six phrasings of six. The rule on
its own, then through search with the real model on a catalog that has both tools.

tests/data/negation_heldout.jsonl is the held-out set (written before the rule, not tuned on):
benchmarks/trust.py measures it on the 16 real servers; the cases here are others."""

from __future__ import annotations

import json

import pytest

from toolidx.search import actions, negation

SIX = [
    "do not delete my files, just list them",
    "don't delete my files; only list them",
    "Never delete my files. List them.",
    "list my files without deleting any of them",
    "instead of deleting my files, list them",
    "rather than removing my files, just show me the list of them",
]


@pytest.mark.parametrize(
    ("query", "said", "forbidden", "asked", "text"),
    [
        ("do not delete my files, just list them", ("delete",), {"delete"}, "read", "my files, just list them"),
        ("list the files but don't delete anything", ("delete",), {"delete"}, "read", "list the files but anything"),
        ("without editing it, show me the config", ("editing",), {"update"}, "read", "it, show me the config"),
        ("instead of creating a branch, switch to main", ("creating",), {"create"}, None, "a branch, switch to main"),
        # its first word, and the first verb after it that writes; never one that reads ("query")
        ("never run a write query, I only want to read", ("run", "write"), {"create"}, "read", None),
        ("never run a drop query, I only want to read", ("run",), set(), "read", None),
        # the clause's verb outside the lexicon: only tools named with it
        ("not the merge, just show me the pull request", ("merge",), set(), "read", None),
        ("please don\u2019t stop the server; restart it", ("stop",), {"stop"}, None, None),
    ],
)
def test_what_a_request_forbids(query, said, forbidden, asked, text):
    n = negation.read(query)
    assert n is not None
    assert n.said == said and set(n.actions) == forbidden and n.request[0] == asked, n
    if text is not None:
        assert n.text == text


@pytest.mark.parametrize(
    "query",
    [
        "list my files",
        "is the server not working?",  # "not" inside a clause forbids nothing
        "whether or not the build passed",
        "delete the old logs",
        # a condition, an argument's value, and a verb that is what is asked (the object is forbidden)
        "if it doesn't exist, please create it",
        'send the note "Don\'t panic" to Bob',
        "don't delete the repo, just delete the branch",
        "send the invoice to the client without sending a copy to the company",
    ],
)
def test_a_request_that_forbids_nothing(query):
    assert negation.read(query) is None


def test_forbidden_tools_by_name_and_by_action():
    n = negation.read("do not delete my files, just list them")
    assert n.forbids("delete_files") and n.forbids("remove_file") and n.forbids("purgeCache")
    assert not n.forbids("list_files") and not n.forbids("read_file") and not n.forbids("create_file")
    # a verb outside the lexicon forbids the tools named with it, in any inflection
    m = negation.read("without merging the pull request, check its status")
    assert m.forbids("merge_pull_request") and not m.forbids("get_pull_request_status")
    assert actions.forms("stopping") >= {"stop"} and actions.forms("deleted") >= {"delete"}


TOOLS = [
    ("delete_files", "Delete one or more files from the file system permanently.", {"destructiveHint": True}),
    ("list_files", "List the files in a directory of the file system.", {"readOnlyHint": True}),
    ("read_file", "Read the complete contents of a file.", {"readOnlyHint": True}),
    ("move_file", "Move or rename a file.", {}),
    ("write_file", "Create a new file or overwrite one with new content.", {}),
    ("search_files", "Search the file system for files whose names match a pattern.", {"readOnlyHint": True}),
]


@pytest.fixture(scope="module")
def files_db(tmp_path_factory, model_path):
    """A files server with both `delete_files` and `list_files`, crawled with the tests' model."""
    from conftest import run_cli

    d = tmp_path_factory.mktemp("negation")
    with open(d / "tools.jsonl", "w") as f:
        for name, desc, ann in TOOLS:
            schema = {"type": "object", "properties": {"path": {"type": "string", "description": "Path"}}}
            tool = {"id": f"files/{name}", "server": "files", "name": name, "description": desc}
            f.write(json.dumps(tool | {"input_schema": schema, "annotations": ann}) + "\n")
    (d / "servers.yaml").write_text("mcpServers:\n  files:\n    tools_file: tools.jsonl\n")
    r = run_cli("crawl", "--config", d / "servers.yaml", "--db", d / "i.db", "--model-path", model_path)
    assert r.code == 0, r.stderr
    return d / "i.db"


@pytest.mark.model
@pytest.mark.parametrize("query", SIX)
def test_a_negated_request_never_puts_the_tool_it_forbids_first(files_db, query):
    """The issue's six phrasings: the tool that deletes is never first, ranks below every tool
    that does not delete, and says why; the tool that lists is first. Before the rule
    `delete_files` was first in every one."""
    from conftest import run_cli

    r = run_cli("search", query, "--db", files_db, "--json", "--min-score", "0")
    assert r.code == 0, r.stderr
    ids = [h["id"] for h in r.json["hits"]]
    assert ids[0] == "files/list_files", ids
    assert ids[-1] == "files/delete_files", ids
    gone = r.json["hits"][-1]
    assert gone["signals"]["negated"] == 1 and gone["why"].startswith("negated: "), gone
    # answered: the gate reads what is asked, not what is forbidden
    gated = run_cli("search", query, "--db", files_db, "--json")
    assert not gated.json["no_match"] and gated.json["hits"][0]["id"] == "files/list_files"


@pytest.mark.parametrize("model", [None, "someone/else-model"])
def test_a_forbidden_tool_scores_under_every_other_calibrated_or_not(model):
    """score_candidates: the best evidence of the list, forbidden, ranks last, with the model's
    constants (the list's odds shared among the others) and without them (rank fusion)."""
    from toolidx.search import calibration as cal

    def ev(rank, cos):
        return {"bm25": 10.0 - rank, "cos": cos, "fuzzy": 0.0, "coverage": 0.5, "kw_rank": rank, "vec_rank": rank}

    cands = {1: ev(0, 0.9) | {"negated": 1}, 2: ev(1, 0.6), 3: ev(2, 0.3), 4: ev(3, 0.1)}
    scores = cal.score_candidates(cands, "hybrid", 300, model=model, n_terms=5)
    assert sorted(scores, key=lambda r: -scores[r]) == [2, 3, 4, 1], scores
    if model is None:  # the others share the list's odds: the best of them scores higher than beside it
        beside = cal.score_candidates({r: dict(c, negated=0) for r, c in cands.items()}, "hybrid", 300, n_terms=5)
        assert scores[2] > beside[2] and beside[1] > beside[2]


@pytest.mark.model
def test_both_engines_forbid_alike(db_target, tmp_path, model_path):
    """The same catalog on an index file and on PostgreSQL: the same order, the forbidden tool last."""
    from conftest import run_cli

    with open(tmp_path / "tools.jsonl", "w") as f:
        for name, desc, ann in TOOLS:
            tool = {"id": f"files/{name}", "server": "files", "name": name, "description": desc}
            f.write(json.dumps(tool | {"input_schema": {"type": "object"}, "annotations": ann}) + "\n")
    (tmp_path / "servers.yaml").write_text("mcpServers:\n  files:\n    tools_file: tools.jsonl\n")
    r = run_cli("crawl", "--config", tmp_path / "servers.yaml", "--db", db_target, "--model-path", model_path)
    assert r.code == 0, r.stderr
    r = run_cli("search", SIX[0], "--db", db_target, "--json", "--min-score", "0")
    ids = [h["id"] for h in r.json["hits"]]
    assert len(ids) == len(TOOLS) and ids[0] == "files/list_files" and ids[-1] == "files/delete_files", r.json
