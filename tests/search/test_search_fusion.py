"""Issue 10 / 13 item 12: identifiers with digits match exactly; runners-up only while plausible;
the fusion and calibration constants apply only to the model they were fitted on."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from toolidx.core.tokens import query_terms
from toolidx.search import calibration as cal


def test_query_terms_keep_digits_inside_identifiers_and_drop_bare_numbers():
    assert query_terms("tool_01234") == ["tool", "01234"]
    assert query_terms("call tool_7 then v2") == ["call", "tool", "7", "v2"]
    assert query_terms("what did Tesla close at on March 3rd 2023") == ["tesla", "close", "march", "3rd"]
    assert query_terms("2023 42") == []


@pytest.fixture(scope="module")
def numbered_db(tmp_path_factory, model_path) -> Path:
    """200 tools that differ only by the number in their name."""
    from conftest import run_cli

    tmp = tmp_path_factory.mktemp("numbered")
    with open(tmp / "tools.jsonl", "w") as f:
        for i in range(0, 20000, 100):
            f.write(
                json.dumps(
                    {
                        "name": f"tool_{i:05d}",
                        "description": "A generated test tool.",
                        "inputSchema": {"type": "object", "properties": {}},
                    }
                )
                + "\n"
            )
    (tmp / "servers.yaml").write_text("mcpServers:\n  gen:\n    tools_file: tools.jsonl\n")
    r = run_cli("crawl", "--config", tmp / "servers.yaml", "--db", tmp / "n.db", "--model-path", model_path)
    assert r.code == 0, r.stderr
    return tmp / "n.db"


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("query", ["tool_01200", "run tool_01200 please", "tool01200"])
def test_an_exact_name_with_digits_ranks_first(numbered_db, embedder, mode, query):
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    db = open_db(numbered_db)
    try:
        res = search(db, SearchRequest(query, mode=mode, limit=5), embedder=embedder if mode == "hybrid" else None)
        assert res.hits, res.notes
        assert res.hits[0].id == "gen/tool_01200", [h.id for h in res.hits]
        if "_" in query:  # as a keyword (tool01200 is found by its fuzzy name)
            assert "01200" in res.hits[0].matched
    finally:
        db.close()


def _cands():
    # rowid -> evidence as search.gather gives it
    return {
        1: {"bm25": 9.0, "cos": 0.8, "fuzzy": 0.0, "coverage": 1.0, "kw_rank": 0, "vec_rank": 0},
        2: {"bm25": 1.0, "cos": 0.2, "fuzzy": 0.0, "coverage": 0.2, "kw_rank": 1, "vec_rank": 3},
        3: {"bm25": 0.0, "cos": 0.3, "fuzzy": 0.0, "vec_rank": 1},
    }


def test_constants_apply_only_to_the_model_they_were_fitted_on():
    assert cal.is_calibrated("sentence-transformers/all-MiniLM-L6-v2")
    assert not cal.is_calibrated("BAAI/bge-small-en-v1.5")
    mini = cal.score_candidates(_cands(), "hybrid", model="sentence-transformers/all-MiniLM-L6-v2")
    other = cal.score_candidates(_cands(), "hybrid", model="BAAI/bge-small-en-v1.5")
    assert mini != other
    # another model: reciprocal rank fusion, 1 for the tool first in both lists
    assert other[1] == pytest.approx(1.0)
    assert other[1] > other[2] and other[1] > other[3]
    sem = cal.score_candidates(_cands(), "semantic", model="BAAI/bge-small-en-v1.5")
    assert sem[1] == pytest.approx(0.8)
    # keyword scores do not depend on the model
    assert cal.score_candidates(_cands(), "keyword", model="BAAI/bge-small-en-v1.5") == cal.score_candidates(
        _cands(), "keyword"
    )


@pytest.mark.parametrize("model", sorted(cal.FITS))
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_the_score_reads_the_list_beside_the_hit_and_keeps_the_order(model, mode):
    """Issue 22: a first hit that clearly beats the rest reads higher than the same evidence among
    many alike (an impossible request matches many tools a little); the hits keep the order of
    their ranking value whatever the list."""

    def cands(cos_first, cos_rest, n=12):
        return {r: {"bm25": 0.0, "cos": cos_first if r == 1 else cos_rest, "fuzzy": 0.0} for r in range(1, n + 1)}

    lead, flat = cands(0.55, 0.05), cands(0.55, 0.54)
    s_lead = cal.score_candidates(lead, mode, model=model, n_terms=5)
    s_flat = cal.score_candidates(flat, mode, model=model, n_terms=5)
    assert s_lead[1] > s_flat[1] + 0.1, (s_lead[1], s_flat[1])
    assert lead[1]["share"] > 0.8 and flat[1]["share"] < 0.2  # recorded for signals.share
    assert s_lead[2] < s_flat[2]  # a runner-up far behind the first reads lower than one close to it
    rng = random.Random(22)
    for _ in range(200):
        c = {
            r: {"bm25": rng.random() * 10, "cos": rng.random(), "fuzzy": 0.0, "coverage": rng.random()}
            for r in range(30)
        }
        z = cal.ranking_values(c, mode, n_terms=5, model=model)
        score = cal.score_candidates(c, mode, model=model, n_terms=5)
        by_z, by_score = sorted(c, key=lambda r: (-z[r], r)), sorted(c, key=lambda r: (-score[r], r))
        assert [z[r] for r in by_score] == sorted(z.values(), reverse=True)
        assert by_z[0] == by_score[0] or score[by_z[0]] == score[by_score[0]]


def test_an_index_of_another_model_is_searched_uncalibrated_and_says_so(search_db_path, embedder, tmp_path):
    import shutil

    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    for suffix in ("", "-wal", "-shm"):
        src = Path(str(search_db_path) + suffix)
        if src.exists():
            shutil.copy(src, tmp_path / ("s.db" + suffix))
    db = open_db(tmp_path / "s.db")
    try:
        calibrated = search(db, SearchRequest("zzqx unrelated gibberish words"), embedder=embedder)
        db.set_meta("embed_model", "example/other-model")
        res = search(db, SearchRequest("zzqx unrelated gibberish words"), embedder=embedder)
        assert any("uncalibrated" in n for n in res.notes), res.notes
        assert not res.no_match and res.hits  # no gate: the scores are not probabilities
        assert res.gate == 0.0
        assert calibrated.gate > 0
    finally:
        db.close()


def test_runners_up_shown_only_while_plausible(db, embedder):
    from toolidx.search import hybrid
    from toolidx.search.request import SearchRequest

    q = "convert a pdf document to markdown"
    res = hybrid.search(db, SearchRequest(q, limit=10), embedder=embedder)
    assert res.hits
    best = res.hits[0].score
    assert all(h.score >= hybrid.RUNNER_UP_SHARE * best - 1e-4 for h in res.hits)
    # what the score read of the list: each hit's share of the odds of the best 10, the first's the largest
    shares = [h.signals.share for h in res.hits]
    assert all(s is not None and 0 <= s <= 1 for s in shares) and shares[0] == max(shares)
    assert "share" in res.hits[0].to_json()["signals"]
    everything = hybrid.search(db, SearchRequest(q, limit=10, min_score=0.0), embedder=embedder)
    assert len(everything.hits) == 10  # --min-score 0 still shows all
    cut = [h for h in everything.hits if h.score < hybrid.RUNNER_UP_SHARE * best]
    assert cut, "the catalog has tools far below the best: the rule must have cut some"
    assert len(res.hits) == 10 - len(cut)


@pytest.fixture
def db(search_db_path):
    from toolidx.store.db import open_db

    d = open_db(search_db_path)
    yield d
    d.close()


@pytest.fixture(scope="session")
def search_db_path(tmp_path_factory, model_path) -> Path:
    from conftest import run_cli
    from test_search import _index

    return _index(tmp_path_factory.mktemp("search-fusion"), run_cli, "--model-path", model_path)
