"""eval: metric math on hand-computed cases, evaluate() on the small catalog, the CLI, and a
quality floor on the real ETOM set (slow) so ranking regressions fail."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from toolidx.errors import UsageError
from toolidx.eval import evaluate, ranking_metrics

DATA = Path(__file__).parent / "data"


def test_metric_math_any_labels():
    m = ranking_metrics(["a", "b", "c", "d", "e", "f"], ["c"])
    assert m["R@1"] == 0 and m["R@5"] == 1 and m["R@10"] == 1
    assert m["MRR@10"] == pytest.approx(1 / 3)
    assert m["nDCG@10"] == pytest.approx(1 / math.log2(4))
    m = ranking_metrics(["x", "b", "a"], ["a", "b"])
    assert m["R@1"] == 0 and m["R@5"] == 1 and m["MRR@10"] == pytest.approx(0.5)
    ideal = 1 + 1 / math.log2(3)
    assert m["nDCG@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)
    miss = ranking_metrics([f"t{i}" for i in range(12)] + ["a"], ["a"])
    assert miss == {"R@1": 0, "R@5": 0, "R@10": 0, "MRR@10": 0, "nDCG@10": 0}
    assert ranking_metrics([], ["a"])["R@10"] == 0


def test_metric_math_all_labels_and_custom_k():
    m = ranking_metrics(["a", "x", "b", "y"], ["a", "b", "c", "d"], labels="all", ks=(1, 3))
    assert m["R@1"] == pytest.approx(0.25) and m["R@3"] == pytest.approx(0.5)


@pytest.fixture(scope="module")
def small_db(tmp_path_factory, model_path):
    from conftest import run_cli
    from test_search import _index

    return _index(tmp_path_factory.mktemp("eval"), run_cli, "--model-path", model_path)


def test_evaluate_small_catalog(small_db, embedder):
    from toolidx.store import open_db

    db = open_db(small_db)
    r = evaluate(db, DATA / "search_queries.jsonl", modes=("hybrid", "keyword", "semantic"),
                 embedder=embedder)
    assert r["queries"] == 6 and r["evaluated"] == 4 and r["infeasible"] == 1
    assert r["unresolved"]["count"] == 1 and r["unresolved"]["queries"][0]["id"] == "q5"
    h = r["modes"]["hybrid"]
    assert h["mode_used"] == "hybrid"
    # every feasible query's tool is the obvious one in this catalog
    assert h["metrics"]["R@1"] == 1.0 and h["metrics"]["MRR@10"] == 1.0
    assert h["metrics"]["R@5@threshold"] == 1.0 and h["metrics"]["answered"] == 1.0
    assert h["abstention"] == {"n": 1, "rate": 1.0}
    assert set(h["metrics"]) >= {"R@1", "R@5", "R@10", "MRR@10", "nDCG@10"}
    # keyword search cannot see "weather ... tomorrow" = get_forecast ("will it be" shares no term)
    assert r["modes"]["keyword"]["metrics"]["R@1"] <= h["metrics"]["R@1"]
    db.close()


def test_evaluate_by_group_and_partly_missing(small_db, tmp_path, embedder):
    from toolidx.store import open_db

    q = tmp_path / "q.jsonl"
    q.write_text("\n".join(json.dumps(x) for x in [
        {"id": "a", "query": "merge pdf files", "relevant": ["pdf/merge_pdfs", "gone/x"], "level": 1},
        {"id": "b", "query": "send a slack message", "relevant": ["slack/send_message"], "level": 2},
    ]) + "\n")
    db = open_db(small_db)
    r = evaluate(db, q, modes=["keyword"], by="level", k=(1, 3))
    assert r["partly_unresolved"]["count"] == 1 and r["evaluated"] == 2
    g = r["modes"]["keyword"]["groups"]
    assert g["level=1"]["n"] == 1 and g["level=2"]["R@1"] == 1.0
    assert "R@3" in r["modes"]["keyword"]["metrics"] and r["modes"]["keyword"]["abstention"] is None
    db.close()


def test_evaluate_bad_files(small_db, tmp_path):
    from toolidx.store import open_db

    db = open_db(small_db)
    with pytest.raises(UsageError, match="not found"):
        evaluate(db, tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x", "relevant": []}\nnot json\n')
    with pytest.raises(UsageError, match=r"bad.jsonl:2"):
        evaluate(db, bad)
    with pytest.raises(UsageError):
        evaluate(db, DATA / "search_queries.jsonl", modes=["magic"])
    db.close()


def test_cli_eval(cli, small_db, model_path, monkeypatch):
    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    r = cli("eval", DATA / "search_queries.jsonl", "--db", small_db, "--json")
    assert r.code == 0, r.stderr
    j = r.json
    assert j["command"] == "eval" and set(j["modes"]) == {"hybrid", "keyword", "semantic"}
    assert j["modes"]["hybrid"]["metrics"]["R@1"] == 1.0
    t = cli("eval", DATA / "search_queries.jsonl", "--db", small_db, "--mode", "keyword")
    assert t.code == 0 and t.stdout.splitlines()[0].startswith("mode\t")
    assert "skipped" in t.stderr  # the unresolved query is reported, not counted as a miss
    bad = cli("eval", DATA / "nope.jsonl", "--db", small_db)
    assert bad.code == 2 and "not found" in bad.stderr


# --- quality floor on the real bench --------------------------------------------------------------
@pytest.fixture(scope="session")
def etom_sample(bench_dir, tmp_path_factory, model_path):
    """ETOM queries (a fixed sample of 80 from levels 1-2) over an index of the servers their
    tools live on plus half as many other servers as distractors (~500 tools)."""
    from conftest import run_cli

    queries = [json.loads(x) for x in (bench_dir / "etom" / "queries.jsonl").read_text().splitlines()]
    sample = random.Random(11).sample(queries, 80)
    tools = [json.loads(x) for x in (bench_dir / "etom" / "tools.jsonl").read_text().splitlines()]
    need = {t.split("/")[0] for q in sample for t in q["relevant"]}
    others = sorted({t["server"] for t in tools} - need)
    keep = need | set(random.Random(5).sample(others, min(len(others), len(need) // 2)))
    tmp = tmp_path_factory.mktemp("etom")
    (tmp / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools if t["server"] in keep))
    (tmp / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in sample))
    infeasible = [json.loads(x) for x in (bench_dir / "etom" / "queries_infeasible.jsonl").read_text().splitlines()]
    (tmp / "infeasible.jsonl").write_text("".join(json.dumps(q) + "\n" for q in random.Random(3).sample(infeasible, 40)))
    (tmp / "servers.yaml").write_text("mcpServers:\n  etom:\n    tools_file: tools.jsonl\n")
    r = run_cli("crawl", "--config", tmp / "servers.yaml", "--db", tmp / "etom.db", "--model-path", model_path)
    assert r.code == 0, r.stderr
    return tmp


@pytest.mark.slow
def test_quality_floor_on_etom_sample(etom_sample, embedder, bench_dir):
    from toolidx.store import open_db

    db = open_db(etom_sample / "etom.db")
    r = evaluate(db, etom_sample / "queries.jsonl", infeasible=etom_sample / "infeasible.jsonl",
                 embedder=embedder)
    h, k, s = (r["modes"][m]["metrics"] for m in ("hybrid", "keyword", "semantic"))
    # floors well under what the method measures (docs/search.md), above the plain baselines
    assert h["R@1"] >= 0.82 and h["R@5"] >= 0.94, h
    assert h["MRR@10"] > max(k["MRR@10"], s["MRR@10"]), (h, k, s)
    assert r["modes"]["hybrid"]["abstention"]["rate"] >= 0.7
    db.close()
