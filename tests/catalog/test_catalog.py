"""list and categories: pagination, sorting, the shared filters, counts, failed and stale servers."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import CATALOG_DATA

from toolidx.catalog.listing import categories, list_tools
from toolidx.core.errors import UsageError
from toolidx.core.filters import Filters
from toolidx.core.taxonomy import definition
from toolidx.store.db import open_db

ALL = [
    "docs/convert_pdf",
    "docs/merge_pdfs",
    "docs/render_report",
    "docs/word_count",
    "git/git_commit",
    "git/git_diff",
    "git/git_log",
    "git/git_reset",
    "git/git_status",
    "gitplus/gitDiff",
    "gitplus/git_clone",
    "gitplus/git_push",
    "gitplus/git_status",
]


def _ids(res: dict) -> list[str]:
    return [t["id"] for t in res["items"]]


def test_pages_cover_everything_once(cli, catalog_db):
    seen = []
    page = 1
    while page:
        r = cli("list", "--db", catalog_db, "--page", page, "--page-size", 4, "--json")
        assert r.code == 0, r.stderr
        d = r.json
        assert d["command"] == "list" and d["total"] == 13 and d["pages"] == 4 and d["page_size"] == 4
        assert len(d["items"]) == (4 if page < 4 else 1)
        seen += _ids(d)
        page = d["next_page"]
    assert sorted(seen) == ALL and len(set(seen)) == 13
    # sorted by name (case-insensitive), ties by id
    names = [i.split("/")[1].lower() for i in seen]
    assert names == sorted(names)
    assert seen.index("git/git_status") < seen.index("gitplus/git_status")


def test_item_shape(catalog_db):
    item = next(i for i in list_tools(open_db(catalog_db)).items if i.id == "gitplus/git_push")
    assert item.to_json() == {
        "id": "gitplus/git_push",
        "server": "gitplus",
        "name": "git_push",
        "title": None,
        "description": "Push local commits to a remote git repository.",
        "tags": ["vcs", "community", "destructive", "open-world"],
        "category": "dev",
        "params": ["path", "remote", "force"],
        "read_only": None,
        "destructive": True,
        "stale": False,
    }


@pytest.mark.parametrize("sort,order", [("server", "asc"), ("server", "desc"), ("category", "asc"), ("name", "desc")])
def test_sorts_are_total_and_stable(catalog_db, sort, order):
    db = open_db(catalog_db)
    items = list_tools(db, sort=sort, order=order).to_json()["items"]
    keys = {
        "server": lambda t: (t["server"], t["name"].lower()),
        "category": lambda t: (t["category"], t["server"], t["name"].lower()),
        "name": lambda t: (t["name"].lower(), t["name"]),
    }[sort]
    got = [keys(t) for t in items]
    assert got == sorted(got, reverse=order == "desc")
    assert len(items) == 13
    # the same call twice gives the same order (ties broken by id)
    assert [t.id for t in list_tools(db, sort=sort, order=order).items] == [t["id"] for t in items]


def test_filters_match_a_python_reading_of_the_rows(cli, catalog_db):
    rows = {t["id"]: t for t in list_tools(open_db(catalog_db), page_size=100).to_json()["items"]}

    def expect(pred):
        return sorted(i for i, t in rows.items() if pred(t))

    cases = [
        (["--server", "git"], lambda t: t["server"] == "git"),
        (["--server", "git", "--server", "docs"], lambda t: t["server"] in ("git", "docs")),
        (["--tag", "community"], lambda t: "community" in t["tags"]),
        (["--exclude-tag", "vcs"], lambda t: "vcs" not in t["tags"]),
        (["--category", "documents"], lambda t: t["category"] == "documents"),
        (["--name-pattern", "^git_(s|d)"], lambda t: t["name"].startswith(("git_s", "git_d"))),
        (["--name-pattern", "PDF"], lambda t: "pdf" in t["name"]),
        (["--description-contains", "REPOSITORY"], lambda t: "repository" in t["description"].lower()),
        (["--read-only"], lambda t: t["read_only"] is True),
        # MCP's defaults: not read-only and not saying destructiveHint: false is destructive
        (["--no-destructive"], lambda t: t["read_only"] is True or t["destructive"] is False),
        (
            ["--server", "git", "--no-destructive", "--tag", "vcs"],
            lambda t: t["server"] == "git" and (t["read_only"] is True or t["destructive"] is False),
        ),
    ]
    for args, pred in cases:
        r = cli("list", "--db", catalog_db, "--json", "--page-size", 100, *args)
        assert r.code == 0, (args, r.stderr)
        assert sorted(_ids(r.json)) == expect(pred), args
        assert r.json["total"] == len(expect(pred))
        assert expect(pred), f"filter {args} matches nothing: a test that cannot fail"


def test_bad_input_is_one_line_exit_2(cli, catalog_db):
    r = cli("list", "--db", catalog_db, "--name-pattern", "([unclosed")
    assert r.code == 2 and "invalid --name-pattern regex" in r.stderr and "Traceback" not in r.stderr
    r = cli("list", "--db", catalog_db, "--sort", "popularity")
    assert r.code == 2 and "name, server, category" in r.stderr
    r = cli("list", "--db", catalog_db, "--page-size", 0)
    assert r.code == 2
    with pytest.raises(UsageError):
        list_tools(open_db(catalog_db), order="sideways")


def test_page_past_the_end(catalog_db):
    d = list_tools(open_db(catalog_db), page=9, page_size=5)
    assert d.items == [] and d.total == 13 and d.next_page is None
    assert "past the last page" in d.notes[0] and "past the last page" in d.to_json()["notes"][0]


def test_a_misspelt_server_is_named_with_what_it_may_have_meant(cli, catalog_db):
    """list --server gti printed an empty page and nothing else (found trying toolidx as a new
    user, round 16)."""
    r = cli("list", "--db", catalog_db, "--server", "dcos", "--json")
    assert r.code == 0 and r.json["total"] == 0
    assert r.json["notes"] == ["no server 'dcos' (did you mean docs?) in the index"]
    assert "notes" not in cli("list", "--db", catalog_db, "--server", "docs", "--json").json


def test_text_list_is_tsv_in_a_pipe(cli, catalog_db):
    r = cli("list", "--db", catalog_db, "--server", "docs")
    lines = r.stdout.splitlines()
    assert lines[0] == "id\ttitle\tdescription"
    assert lines[1].startswith("docs/convert_pdf\tConvert PDF\tConvert a PDF")
    assert len(lines) == 5 and "page 1 of 1, 4 tools" in r.stderr


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_list_sorted_by_category_shows_the_category(cli, catalog_db, order):
    """--sort category orders by a field the plain table did not show: the text has it first, the
    rows in the JSON's order with the JSON's categories."""
    r = cli("list", "--db", catalog_db, "--sort", "category", "--order", order)
    lines = [line.split("\t") for line in r.stdout.splitlines()]
    assert lines[0] == ["category", "id", "title", "description"]
    items = cli("list", "--db", catalog_db, "--sort", "category", "--order", order, "--json").json["items"]
    assert [(c, i) for c, i, *_ in lines[1:]] == [(t["category"] or "-", t["id"]) for t in items]
    cats = [c for c, *_ in lines[1:]]
    assert cats == sorted(cats, reverse=order == "desc") and len(set(cats)) > 1


def test_categories_counts(cli, catalog_db):
    r = cli("categories", "--db", catalog_db, "--json")
    assert r.code == 0, r.stderr
    d = r.json
    # the config's categories win over the taxonomy; a taxonomy name carries its definition
    assert d["categories"] == [
        {"name": "dev", "count": 9, "definition": None},
        {"name": "documents", "count": 4, "definition": definition("documents")},
    ]
    tags = {t["name"]: t["count"] for t in d["tags"]}
    assert tags["vcs"] == 9 and tags["community"] == 4 and tags["office"] == 4
    assert tags["read-only"] == 5 and tags["destructive"] == 2
    assert [(s["name"], s["count"], s["stale"], s["status"]) for s in d["servers"]] == [
        ("docs", 4, 0, "ok"),
        ("git", 5, 0, "ok"),
        ("gitplus", 4, 0, "ok"),
    ]
    assert d["total"] == 13
    # the same filters as list
    c = categories(open_db(catalog_db), Filters(read_only=True))
    assert c.total == 5 and {s.name for s in c.servers} == {"git", "docs"}
    assert [(row.name, row.count) for row in c.categories] == [("dev", 3), ("documents", 2)]


def test_failed_server_shows_status_and_stale_tools(cli, tmp_path, model_path):
    for f in CATALOG_DATA.iterdir():
        shutil.copy(f, tmp_path / f.name)
    cfg = tmp_path / "servers.yaml"
    db = tmp_path / "c.db"
    assert cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 0
    (tmp_path / "gitplus-tools.json").unlink()  # the server is gone at the next crawl
    assert cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 1
    d = cli("categories", "--db", db, "--json").json
    gp = next(s for s in d["servers"] if s["name"] == "gitplus")
    assert gp["status"] == "failed" and gp["stale"] == 4 and gp["count"] == 4 and "not found" in gp["error"]
    lst = cli("list", "--db", db, "--server", "gitplus", "--json").json
    assert all(t["stale"] for t in lst["items"]) and lst["total"] == 4
    text = cli("categories", "--db", db)
    assert any(line.startswith("gitplus\t4\t4\tfailed\t") for line in text.stdout.splitlines())


@pytest.mark.slow
def test_list_pages_through_etom(cli, bench_dir, tmp_path):
    """2,375 real tools on 491 servers: paging by 1,000 returns each id once, in sort order."""
    cfg = tmp_path / "etom.json"
    cfg.write_text(json.dumps({"mcpServers": {"etom": {"tools_file": str(bench_dir / "etom" / "tools.jsonl")}}}))
    db = tmp_path / "etom.db"
    assert cli("crawl", "--config", cfg, "--db", db, "--model", "none").code == 0
    idx = open_db(db)
    ids = []
    page = 1
    while page:
        d = list_tools(idx, page=page, page_size=1000, sort="server")
        ids += [t.id for t in d.items]
        page = d.next_page
    expected = sorted(
        (json.loads(line)["id"] for line in (bench_dir / "etom" / "tools.jsonl").read_text().splitlines()),
        key=lambda i: (i.split("/")[0], i.split("/", 1)[1].lower(), i),
    )
    assert ids == expected
    cats = categories(idx)
    assert len(cats.servers) == 491 and sum(s.count for s in cats.servers) == 2375
