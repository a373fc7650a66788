"""similar: nearest tools by stored vector, the lexical fallback, and duplicates across servers."""

from __future__ import annotations

import pytest
from conftest import CATALOG_DATA

from toolidx.catalog.similar import SimilarTools, duplicate_reason, similar
from toolidx.core.errors import NotFoundError
from toolidx.store.db import open_db


def _by_id(res: SimilarTools) -> dict:
    return {h.id: h.to_json() for h in res.similar}


def test_semantic_neighbours_and_duplicates(cli, catalog_db):
    r = cli("similar", "git/git_status", "--db", catalog_db, "--json", "--limit", 5)
    assert r.code == 0, r.stderr
    d = r.json
    assert d["command"] == "similar" and d["tool"] == "git/git_status" and d["method"] == "semantic"
    hits = d["similar"]
    assert len(hits) == 5 and "git/git_status" not in [h["id"] for h in hits]
    assert all(0.0 <= h["score"] <= 1.0 for h in hits)
    assert [(-h["score"], h["id"]) for h in hits] == sorted((-h["score"], h["id"]) for h in hits)
    # the same tool on another server comes first and is flagged, with its reason
    assert hits[0]["id"] == "gitplus/git_status" and hits[0]["likely_duplicate"] is True
    assert hits[0]["reason"].startswith("same name on another server")
    assert d["duplicates"] == 1
    # other git tools are similar, not duplicates
    assert all(not h["likely_duplicate"] for h in hits[1:])
    assert all(h["server"] in ("git", "gitplus") for h in hits)


def test_name_spellings_count_as_the_same_name(catalog_db):
    d = similar(open_db(catalog_db), "git/git_diff", 3)
    top = _by_id(d)["gitplus/gitDiff"]
    assert top["likely_duplicate"] and "same name" in top["reason"]


def test_unrelated_tools_score_low_and_are_never_duplicates(catalog_db):
    d = similar(open_db(catalog_db), "docs/word_count", 12)
    assert len(d.similar) == 12 and d.duplicates == 0
    assert max(h.score for h in d.similar if h.server != "docs") < 0.5


def test_lexical_fallback_without_vectors(cli, tmp_path):
    db = tmp_path / "lex.db"
    assert cli("crawl", "--config", CATALOG_DATA / "servers.yaml", "--db", db, "--model", "none").code == 0
    r = cli("similar", "git/git_status", "--db", db, "--json")
    assert r.code == 0, r.stderr
    d = r.json
    assert d["method"] == "lexical"
    hits = d["similar"]
    assert hits[0]["id"] == "gitplus/git_status" and hits[0]["likely_duplicate"]
    assert "lexical similarity" in hits[0]["reason"]
    assert all(0.0 <= h["score"] <= 1.0 for h in hits)
    ids = [h["id"] for h in hits]
    assert ids.index("git/git_diff") < ids.index("docs/word_count")  # words about git rank above others


def test_duplicate_rule():
    a = {"server": "a", "name": "git_status", "param_names": ["repo_path"]}
    same_elsewhere = {"server": "b", "name": "gitStatus", "param_names": ["path", "includeUntracked"]}
    assert duplicate_reason(a, same_elsewhere, 0.80, "semantic").startswith("same name")
    assert duplicate_reason(a, same_elsewhere, 0.50, "semantic") is None  # same name, different job
    assert duplicate_reason(a, {**same_elsewhere, "server": "a"}, 0.99, "semantic") is None  # same server
    near = {"server": "b", "name": "git_statuses", "param_names": ["repo_path"]}
    assert "near-same name" in duplicate_reason(a, near, 0.85, "semantic")
    assert duplicate_reason(a, {**near, "param_names": ["branch"]}, 0.85, "semantic") is None
    other = {"server": "b", "name": "repo_state", "param_names": ["repo_path"]}
    assert "near-identical" in duplicate_reason(a, other, 0.95, "semantic")
    assert duplicate_reason(a, other, 0.90, "semantic") is None


def test_unknown_tool_and_text_output(cli, catalog_db):
    r = cli("similar", "git/git_stat", "--db", catalog_db)
    assert r.code == 2 and "did you mean" in r.stderr
    with pytest.raises(NotFoundError):
        similar(open_db(catalog_db), "nope/nothing")
    r = cli("similar", "git.git_status", "--db", catalog_db, "-n", 2)
    lines = r.stdout.splitlines()
    assert lines[0] == "id\tscore\tduplicate\twhy"
    assert lines[1].startswith("gitplus/git_status\t0.") and "\tyes\tsame name" in lines[1]
    assert "1 likely duplicate" in r.stderr


@pytest.mark.servers
@pytest.mark.slow
def test_real_git_servers_are_flagged_as_duplicates(catalog_real_db):
    """mcp-server-git and @cyanheads/git-mcp-server both ship git_status, git_diff, ...: each
    git/* tool finds its namesake among its nearest, flagged; nothing else is flagged."""
    db = open_db(catalog_real_db)
    for name in ("git_status", "git_diff", "git_log", "git_add", "git_reset", "git_show"):
        hits = _by_id(similar(db, f"git/{name}", 5))
        assert f"cyanheads-git/{name}" in hits, (name, list(hits))
        assert hits[f"cyanheads-git/{name}"]["likely_duplicate"], hits[f"cyanheads-git/{name}"]
        assert [i for i, h in hits.items() if h["likely_duplicate"]] == [f"cyanheads-git/{name}"]
    assert _by_id(similar(db, "git/git_diff", 1))["cyanheads-git/git_diff"]["score"] > 0.8
    d = similar(db, "memory/read_graph", 10)
    assert d.duplicates == 0


def test_a_name_behind_a_prefix_is_the_same_name():
    """#45 item 9: playwright's browser_take_screenshot and chrome-devtools' take_screenshot."""
    a = {"server": "chrome-devtools", "name": "take_screenshot", "param_names": ["format", "fullPage"]}
    b = {"server": "playwright", "name": "browser_take_screenshot", "param_names": ["type", "filename"]}
    assert "same name behind a prefix (browser_)" in duplicate_reason(a, b, 0.85, "semantic")
    assert "same name behind a prefix (browser_)" in duplicate_reason(b, a, 0.85, "semantic")
    assert duplicate_reason(a, b, 0.75, "semantic") is None  # the bar: 0.80 (lexical 0.70)
    assert duplicate_reason(a, b, 0.72, "lexical") is not None
    assert duplicate_reason(a, {**b, "server": a["server"]}, 0.99, "semantic") is None  # same server
    snap = {"server": "playwright", "name": "browser_snapshot", "param_names": []}
    assert duplicate_reason({**a, "name": "take_snapshot"}, snap, 0.85, "semantic") is None  # not behind a prefix
    assert duplicate_reason({**a, "name": "screenshot"}, {**b, "name": "screenshots_take"}, 0.85, "semantic") is None


@pytest.fixture(scope="module")
def browsers_db(servers_config, tmp_path_factory):
    """The two real browser servers, embedded with toolidx's own model (the default a user gets)."""
    import json

    from conftest import run_cli

    d = tmp_path_factory.mktemp("browsers")
    src = servers_config["mcpServers"]
    (d / "c.json").write_text(json.dumps({"mcpServers": {n: src[n] for n in ("playwright", "chrome-devtools")}}))
    r = run_cli("crawl", "--config", d / "c.json", "--db", d / "b.db", "--model", "toolidx/tool-minilm-l6-v2")
    assert r.code == 0, r.stderr
    return d / "b.db"


@pytest.mark.servers
def test_real_browser_servers_screenshot_tools_are_flagged(browsers_db):
    """What the user saw: `similar` listed playwright's screenshot tool at 0.85, not flagged."""
    from conftest import run_cli

    r = run_cli("similar", "chrome-devtools/take_screenshot", "--db", browsers_db, "-n", "3")
    assert r.code == 0, r.stderr
    first = r.stdout.splitlines()[1].split("\t")
    assert first[0] == "playwright/browser_take_screenshot" and first[2] == "yes", r.stdout
    assert first[3].startswith("the same name behind a prefix (browser_) on another server"), r.stdout
    flagged = [line.split("\t")[0] for line in r.stdout.splitlines()[1:] if line.split("\t")[2] == "yes"]
    assert flagged == ["playwright/browser_take_screenshot"], r.stdout  # browser_snapshot (0.80) is not
    assert "1 likely duplicate" in r.stderr
