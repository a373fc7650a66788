"""`toolidx diff` and `toolidx history` end to end: indexes built from the edited tools_file
catalogs in tests/data/diff (every change kind of issue 5), checked through the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import run_cli

DATA = Path(__file__).parents[1] / "data" / "diff"


@pytest.fixture(scope="session")
def diff_dbs(tmp_path_factory) -> dict[str, Path]:
    """one.db: crawl v1 then v2 (two crawls); old.db: v1 only; new.db: v2 only."""
    d = tmp_path_factory.mktemp("diff")
    out = {k: d / f"{k}.db" for k in ("one", "old", "new")}
    for db, versions in ((out["one"], ("v1", "v2")), (out["old"], ("v1",)), (out["new"], ("v2",))):
        for v in versions:
            r = run_cli("crawl", "--config", DATA / f"{v}.yaml", "--db", db, "--model", "none", "--json")
            assert r.code == (1 if v == "v2" else 0), r.stderr  # v2: `notes` fails on purpose
    return out


@pytest.fixture(scope="session")
def one_diff(diff_dbs) -> dict:
    r = run_cli("diff", "--db", diff_dbs["one"], "--json")
    assert r.code == 0, r.stderr  # no --fail-on: a diff is a report
    return r.json


def _tools(payload: dict) -> dict[str, dict]:
    return {t["id"]: t for s in payload["servers"] for t in s["tools"]}


def _kinds(tool: dict) -> set[tuple[str, str, str]]:
    return {(c["path"] or c["field"], c["kind"], c["severity"]) for c in tool["changes"]}


def test_json_envelope_and_sides(one_diff, diff_dbs):
    j = one_diff
    assert j["toolidx"] == 1 and j["command"] == "diff" and j["diff_format"] == 1
    assert j["from"]["crawl_id"] == 1 and j["to"]["crawl_id"] == 2
    assert j["from"]["db"] == str(diff_dbs["one"])
    assert j["highest"] == "breaking" and j["fail_on"] == [] and j["gate_failed"] is False


def test_every_change_kind_is_classified(one_diff):
    t = _tools(one_diff)
    assert t["shop/delete_order"]["change"] == "removed" and t["shop/delete_order"]["severity"] == "breaking"
    # renames: identical body (certain) and a close match (scored, with a reason)
    fp = t["shop/find_products"]
    assert fp["change"] == "renamed" and fp["renamed_from"]["name"] == "search_products"
    assert fp["renamed_from"]["certain"] is True and fp["renamed_from"]["score"] == 1.0
    lc = t["shop/list_clients"]
    assert lc["renamed_from"]["name"] == "list_customers" and lc["renamed_from"]["certain"] is False
    assert 0.72 <= lc["renamed_from"]["score"] < 1 and "description" in lc["renamed_from"]["reason"]
    assert ("description", "description_changed", "risky") in _kinds(lc)
    # $ref-nested changes, required/optional parameters, constraints, types, default, annotation
    assert _kinds(t["shop/create_order"]) == {
        ("currency", "property_added", "breaking"),
        ("coupon", "property_added", "compatible"),
        ("items[].quantity", "constraint_tightened", "breaking"),
        ("shipping.country", "enum_values_removed", "breaking"),
        ("note", "constraint_loosened", "compatible"),
        ("priority", "type_widened", "compatible"),
        ("gift", "default_changed", "risky"),
        ("annotations.destructiveHint", "annotation_changed", "risky"),
    }
    nested = [c for c in t["shop/create_order"]["changes"] if c["path"] == "shipping.country"][0]
    assert nested["via"] == ["#/$defs/Address"] and nested["old"] == ["MX"]
    assert _kinds(t["shop/update_stock"]) == {("annotations.readOnlyHint", "annotation_changed", "risky")}
    assert _kinds(t["shop/get_price"]) == {
        ("currency", "property_removed", "breaking"),
        ("amount", "type_widened", "breaking"),
    }
    assert all(c["field"] == "outputSchema" for c in t["shop/get_price"]["changes"])
    assert t["shop/ping"]["severities"] == ["compatible"]
    assert t["shop/format_text"]["severities"] == ["compatible"]
    # the planted injection: a risky description change plus what the audit recognised
    go = t["shop/get_order"]
    assert go["severities"] == ["risky"]
    assert {
        c["message"].rsplit("(", 1)[-1].rstrip(")") for c in go["changes"] if c["kind"] == "injection_appeared"
    } == {"hidden-tag", "secret-access", "conceal-from-user"}
    words = [c for c in go["changes"] if c["kind"] == "description_changed"][0]["words"]
    assert words[0] == {"op": "equal", "text": "Get an order by its id."}
    assert words[1]["op"] == "insert" and "<IMPORTANT>" in words[1]["text"]
    assert t["shop/add_review"]["severities"] == ["compatible"]
    assert t["shop/export_data"]["change"] == "added" and t["shop/export_data"]["severities"] == ["risky", "compatible"]
    assert "shop/shop_info" not in t  # unchanged tools are only counted


def test_servers_failed_removed_added(one_diff):
    s = {x["server"]: x for x in one_diff["servers"]}
    assert s["notes"]["state"] == "failed" and "notes-missing.json" in s["notes"]["error"]
    assert s["notes"]["tools"] == [] and s["notes"]["unchanged"] == 2  # carried over, not removed
    assert s["legacy"]["state"] == "removed" and [t["change"] for t in s["legacy"]["tools"]] == ["removed"]
    assert s["weather"]["state"] == "added" and s["weather"]["tools"][0]["severities"] == ["compatible"]
    summary = one_diff["summary"]
    assert summary["tools"] == {"added": 3, "removed": 2, "renamed": 2, "changed": 6, "unknown": 0, "unchanged": 3}
    assert summary["servers"] == {"removed": 1, "failed": 1, "added": 1}


def test_two_files_failed_server_is_unknown_not_removed(diff_dbs):
    r = run_cli("diff", diff_dbs["old"], diff_dbs["new"], "--json", "--server", "notes", "--fail-on", "breaking")
    assert r.code == 0, r.stdout
    [s] = r.json["servers"]
    assert s["state"] == "failed" and s["new_tools"] == 0
    assert sorted((t["name"], t["change"], t["severity"]) for t in s["tools"]) == [
        ("add_note", "unknown", None),
        ("list_notes", "unknown", None),
    ]
    assert r.json["summary"]["tools"]["removed"] == 0


def test_one_file_is_compared_with_db(diff_dbs):
    r = run_cli("diff", diff_dbs["old"], "--db", diff_dbs["new"], "--json", "--server", "shop")
    assert r.code == 0 and r.json["to"]["db"] == str(diff_dbs["new"])
    assert r.json["summary"]["tools"]["renamed"] == 2


@pytest.mark.parametrize(
    "args, code",
    [
        (["--fail-on", "breaking"], 1),
        (["--fail-on", "risky", "--server", "shop", "--server", "notes"], 1),
        (["--fail-on", "breaking,risky", "--server", "weather"], 0),
        (["--fail-on", "any", "--server", "weather"], 1),
        (["--fail-on", "compatible", "--server", "notes"], 0),
        (["--fail-on", "none"], 0),
        (["--fail-on", "brekaing"], 2),
        (["--from", "99"], 2),
        (["--from", "banana"], 2),
        (["--server", "nope"], 2),
        (["--format", "yaml"], 2),
    ],
)
def test_exit_codes(diff_dbs, args, code):
    r = run_cli("diff", "--db", diff_dbs["one"], *args)
    assert r.code == code, (r.stdout[-500:], r.stderr)
    if code == 2:
        assert r.stderr.startswith("toolidx: error:") and "Traceback" not in r.stderr


def test_usage_errors_without_crawls_to_compare(diff_dbs, tmp_path):
    single = tmp_path / "single.db"
    shutil.copy(diff_dbs["old"], single)
    r = run_cli("diff", "--db", single, "--json")
    assert r.code == 2 and "first crawl" in r.stderr and r.json["command"] == "error"
    assert run_cli("diff", "--db", tmp_path / "missing.db").code == 2
    assert run_cli("diff", single, single, single).code == 2


def test_reverse_and_explicit_crawls(diff_dbs):
    r = run_cli("diff", "--db", diff_dbs["one"], "--from", "2", "--to", "1", "--json")
    s = {x["server"]: x for x in r.json["servers"]}
    assert s["weather"]["state"] == "removed" and s["legacy"]["state"] == "added"
    t = _tools(r.json)
    assert t["shop/search_products"]["renamed_from"]["name"] == "find_products"
    # the readOnly flip reversed is compatible, the removed output field reversed is an addition
    assert t["shop/update_stock"]["severities"] == ["compatible"]
    assert ("currency", "property_added", "compatible") in _kinds(t["shop/get_price"])
    same = run_cli("diff", "--db", diff_dbs["one"], "--from", "previous", "--to", "latest", "--json")
    assert same.json["summary"] == run_cli("diff", "--db", diff_dbs["one"], "--json").json["summary"]


def test_markdown_for_a_pull_request(diff_dbs):
    r = run_cli("diff", "--db", diff_dbs["one"], "--format", "markdown", "--fail-on", "breaking")
    assert r.code == 1
    md = r.stdout
    assert md.startswith("### toolidx diff\n")
    assert "**6 breaking**" in md
    assert "| `shop` | ok | 2 | 1 | 2 | 6 | 0 |" in md
    assert "| `notes` | failed | 0 | 0 | 0 | 0 | 0 | 0 | 0 |" in md
    assert "🔴 **renamed** `shop/find_products` ← `search_products` (certain" in md
    assert "List the shop's ~~customers~~ **clients**" in md
    assert "\\<IMPORTANT\\>" in md  # tags are escaped, so the comment shows them instead of hiding them
    assert "--fail-on breaking: matching changes found" in r.stderr


def test_plain_text_in_a_pipe(diff_dbs):
    r = run_cli("diff", "--db", diff_dbs["one"])
    assert r.code == 0
    assert "shop/find_products ← `search_products` (certain" in r.stdout
    assert "notes: FAILED in the newer crawl — tools not removed" in r.stdout
    assert "inputSchema: parameter `shipping.country`: value [\"MX\"] removed (via `#/$defs/Address`)" in r.stdout
    assert r.stdout.rstrip().endswith("1 server removed, 1 server failed, 1 server added")


def test_history(diff_dbs):
    r = run_cli("history", "--db", diff_dbs["one"], "--json")
    assert r.code == 0
    c2, c1 = r.json["crawls"]
    assert (c2["id"], c2["previous"], c2["tools"], c2["stale"]) == (2, 1, 14, 2)
    assert (c2["added"], c2["removed"], c2["changed"]) == (5, 4, 6)
    assert c2["failed_servers"] == ["notes"] and c2["servers_crawled"] == 3
    assert (c1["id"], c1["tools"], c1["added"]) == (1, 13, None)
    shop = run_cli("history", "--db", diff_dbs["one"], "--server", "shop", "--json").json["crawls"][0]
    assert (shop["tools"], shop["added"], shop["removed"], shop["changed"], shop["failed_servers"]) == (11, 4, 3, 6, [])
    text = run_cli("history", "--db", diff_dbs["one"], "--limit", "1")
    assert text.stdout.splitlines()[0].startswith("crawl\tstarted") and len(text.stdout.splitlines()) == 2


def test_audit_of_a_past_crawl(diff_dbs):
    past = run_cli("audit", "--db", diff_dbs["one"], "--crawl", "1", "--json")
    assert past.code == 0 and past.json["source"]["crawl_id"] == 1 and past.json["scanned"] == 13
    now = run_cli("audit", "--db", diff_dbs["one"], "--json")
    assert now.code == 1 and now.json["source"]["crawl_id"] is None
    assert {t["id"] for t in now.json["tools"]} == {"shop/get_order", "shop/export_data"}
