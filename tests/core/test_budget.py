"""Token budgets: the estimate, the order of cuts, and `--max-tokens` on the real commands."""

from __future__ import annotations

import json
import math

import pytest

from toolidx.core.budget import estimate_tokens, fit_budget

LONG = ("Convert a document between formats. " + "It keeps headings, tables and images intact. " * 12).strip()


def _payload(n: int = 8) -> dict:
    return {
        "query": "x",
        "hits": [
            {
                "id": f"s/t{i}",
                "description": f"Tool {i}. " + LONG,
                "input_schema": {
                    "type": "object",
                    "properties": {f"p{j}": {"type": "string", "description": "d" * 40} for j in range(6)},
                },
            }
            for i in range(n)
        ],
    }


def test_estimate_is_chars_over_four_of_compact_json():
    obj = {"a": "héllo", "b": [1, 2, 3]}
    compact = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    assert estimate_tokens(obj) == math.ceil(len(compact) / 4)
    assert estimate_tokens("") == 1  # the two quotes
    assert estimate_tokens({}) == 1


def test_payload_that_fits_is_returned_untouched():
    p = _payload(2)
    assert fit_budget(p, "hits", estimate_tokens(p)) is p
    assert "truncated" not in p


def test_cuts_descriptions_first_then_schemas_then_items():
    p = _payload(8)
    full = estimate_tokens(p)
    no_desc = json.loads(json.dumps(p))
    for h in no_desc["hits"]:
        h["description"] = h["description"][:60]
    # 1. a budget that shortened descriptions can meet: schemas and items stay
    r = fit_budget(p, "hits", estimate_tokens(no_desc) + 200)
    t = r["truncated"]
    assert t["descriptions_shortened"] >= 8 and t["schemas_dropped"] == 0 and t["items_dropped"] == 0
    assert all("input_schema" in h for h in r["hits"]) and len(r["hits"]) == 8
    assert all(len(h["description"]) <= 160 for h in r["hits"])
    assert estimate_tokens(r) <= t["max_tokens"] and t["fits"] and t["estimated_tokens"] <= t["max_tokens"]
    # 2. tighter: schemas go, every item stays
    r = fit_budget(p, "hits", 8 * 30 + 120)
    t = r["truncated"]
    assert t["schemas_dropped"] == 8 and t["items_dropped"] == 0 and len(r["hits"]) == 8
    assert not any("input_schema" in h for h in r["hits"])
    assert estimate_tokens(r) <= 8 * 30 + 120
    # 3. tighter still: items go from the end, the best ones stay in order
    r = fit_budget(p, "hits", 150)
    t = r["truncated"]
    kept = [h["id"] for h in r["hits"]]
    assert 0 < len(kept) < 8 and kept == [f"s/t{i}" for i in range(len(kept))]
    assert t["items_dropped"] == 8 - len(kept) and t["items_kept"] == len(kept)
    assert estimate_tokens(r) <= 150 and t["fits"]
    # the input is never modified
    assert estimate_tokens(p) == full and "truncated" not in p


def test_hits_lose_their_evidence_details_before_any_hit_is_dropped():
    hits = [
        {
            "id": f"s/t{i}",
            "description": "Merge PDF files.",
            "why": "terms: merge, pdf; semantic (0.71)",
            "matched": ["merge", "pdf", "files"],
            "signals": {"bm25": 12.345, "fuzzy": 0.0, "cosine": 0.7123, "coverage": 0.5, "name_words": 2},
        }
        for i in range(5)
    ]
    p = {"query": "merge pdfs", "hits": hits}
    lean = {"query": "merge pdfs", "hits": [{k: h[k] for k in ("id", "description", "why")} for h in hits]}
    r = fit_budget(p, "hits", estimate_tokens(lean) + 60)  # room for the record, not for details
    t = r["truncated"]
    assert t["details_dropped"] == 5 and t["items_dropped"] == 0 and len(r["hits"]) == 5 and t["fits"]
    assert all("signals" not in h and "matched" not in h and h["why"] for h in r["hits"])
    r = fit_budget(p, "hits", estimate_tokens(lean))  # then hits go, from the end
    assert 0 < r["truncated"]["items_kept"] < 5 and r["hits"][0]["id"] == "s/t0"
    assert "signals" in p["hits"][0]  # the input is never modified


def test_single_item_payload_is_shortened_never_dropped():
    p = {
        "id": "s/t",
        "description": LONG,
        "parameters": [{"name": "x", "description": LONG}],
        "input_schema": {"type": "object"},
    }
    r = fit_budget(p, None, 30)
    assert r["id"] == "s/t" and "parameters" not in r and "input_schema" not in r
    assert r["truncated"]["items_dropped"] == 0
    assert r["truncated"]["fits"] is False  # 30 tokens cannot hold it: says so rather than lie


def test_estimate_against_minilm_wordpiece(model_path, bench_dir):
    """The documented error: chars/4 against the MiniLM tokenizer (WordPiece splits every JSON
    punctuation mark, so it counts more tokens than LLM BPE tokenizers do)."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(f"{model_path}/tokenizer.json")
    tok.no_truncation()
    est = real = 0
    with open(bench_dir / "etom" / "tools.jsonl") as f:
        for line in list(f)[:400]:
            t = json.loads(line)
            est += estimate_tokens(t)
            real += len(
                tok.encode(json.dumps(t, ensure_ascii=False, separators=(",", ":")), add_special_tokens=False).ids
            )
    assert 0.55 <= est / real <= 0.80  # docs/catalog.md: ~0.66 on ETOM


def test_list_and_describe_honour_max_tokens(cli, catalog_db):
    full = cli("list", "--db", catalog_db, "--json").json
    r = cli("list", "--db", catalog_db, "--json", "--max-tokens", "300")
    assert r.code == 0, r.stderr
    cut = r.json
    t = cut["truncated"]
    assert t["items_dropped"] > 0 and t["items_kept"] == len(cut["items"])
    assert [i["id"] for i in cut["items"]] == [i["id"] for i in full["items"]][: len(cut["items"])]
    del cut["toolidx"], cut["command"]
    assert estimate_tokens(cut) <= 300
    assert "shortened to fit" in r.stderr or r.stderr == ""  # the note goes to stderr, never stdout

    d = cli(
        "describe", "docs/render_report", "--detail", "full", "--db", catalog_db, "--json", "--max-tokens", "250"
    ).json
    assert d["id"] == "docs/render_report"
    assert "input_schema" not in d and "example_arguments" not in d and d["truncated"]["schemas_dropped"] == 1
    whole = cli("describe", "docs/render_report", "--detail", "full", "--db", catalog_db, "--json").json
    assert "truncated" not in whole and "input_schema" in whole


def test_max_tokens_note_in_text_mode(cli, catalog_db):
    r = cli("list", "--db", catalog_db, "--max-tokens", "200")
    assert r.code == 0
    assert "shortened to fit ~200 tokens" in r.stderr and "items dropped" in r.stderr
