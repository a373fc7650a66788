"""Hybrid search's BM25 weighs each query word by idf**calibration.IDF_POWER instead of idf
(docs/research/search.md: long requests). Checked against FTS5's own one-word bm25() on a real index: the
weighted score is exactly the sum of each word's FTS5 term rescaled by idf**(IDF_POWER - 1)."""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import pytest

from toolidx.core.tokens import fts_query, query_terms
from toolidx.search import calibration as cal
from toolidx.store.db import open_db
from toolidx.store.sqlite import retrieval as retrieval_sqlite

DATA = Path(__file__).parents[1] / "data"
QUERIES = [
    "merge pdf files into one document",
    "git repository status and recent commits",
    "send a message to the team channel about the release",
    "list files",
]


@pytest.fixture(scope="module")
def idx_db(tmp_path_factory, model_path):
    from conftest import run_cli

    d = tmp_path_factory.mktemp("idf")
    shutil.copy(DATA / "search_catalog.jsonl", d / "tools.jsonl")
    (d / "servers.yaml").write_text("mcpServers:\n  catalog:\n    tools_file: tools.jsonl\n")
    r = run_cli("crawl", "--config", d / "servers.yaml", "--db", d / "kw.db", "--model-path", model_path)
    assert r.code == 0, r.stderr
    db = open_db(d / "kw.db")
    yield db
    db.close()


def _expected(db, terms, power):
    n = int(db.scalar("SELECT count(*) FROM tools"))
    total: dict[int, float] = {}
    for w in terms:
        rows = retrieval_sqlite.fts_candidates(db, fts_query([w]), 10_000)
        if not rows:
            continue
        idf = max(math.log((n - len(rows) + 0.5) / (len(rows) + 0.5)), 1e-6)  # FTS5's idf
        for r, s in rows:
            total[r] = total.get(r, 0.0) + s * idf ** (power - 1.0)
    return total


@pytest.mark.parametrize("query", QUERIES)
def test_idf_power_rescales_each_word_of_fts5_bm25(idx_db, query):
    terms = query_terms(query)
    plain = idx_db.retrieval.keyword(terms, 50)
    fts = retrieval_sqlite.fts_candidates(idx_db, fts_query(terms), 50)
    assert [r for r, _ in plain] == [r for r, _ in fts]  # idf_power 1: FTS5's own bm25
    assert [s for _, s in plain] == pytest.approx([s for _, s in fts], rel=1e-9)
    got = dict(idx_db.retrieval.keyword(terms, 50, idf_power=cal.IDF_POWER))
    want = _expected(idx_db, terms, cal.IDF_POWER)
    assert set(got) == set(want)
    for r, s in got.items():
        assert s == pytest.approx(want[r], rel=1e-9)


def test_hybrid_uses_the_weighted_bm25_and_keyword_mode_plain_bm25(idx_db, embedder):
    from toolidx.search.hybrid import gather

    q = "send a message to the team channel about the release"
    hy, terms, used, _ = gather(idx_db, q, mode="hybrid", filters=None, embedder=embedder)
    kw, _, _, _ = gather(idx_db, q, mode="keyword", filters=None, embedder=None)
    assert used == "hybrid" and cal.IDF_POWER < 1.0
    want = _expected(idx_db, terms, cal.IDF_POWER)
    plain = _expected(idx_db, terms, 1.0)
    for r, c in hy.items():
        if c["bm25"] > 0:
            assert c["bm25"] == pytest.approx(want[r], rel=1e-9)
    for r, c in kw.items():
        assert c["bm25"] == pytest.approx(plain[r], rel=1e-9)
    assert any(abs(hy[r]["bm25"] - kw[r]["bm25"]) > 1e-6 for r in hy if r in kw and kw[r]["bm25"] > 0)


def test_quoted_values_weigh_less_and_stay_out_of_the_embedding():
    from toolidx.search import quoted

    q = 'Search the "my_data" index for documents containing the keyword \'AI risk\''
    assert quoted.strip_quoted(q) == "Search the index for documents containing the keyword"
    terms = query_terms(q)
    w = quoted.QUOTED_WEIGHT
    assert quoted.term_weights(q, terms) == {"data": w, "ai": w, "risk": w}  # "my": a stop word
    # a word also outside quotes keeps its weight; apostrophes are not quotes
    assert quoted.term_weights('index "index" files', ["index", "files"]) == {}
    assert quoted.strip_quoted("the users' files and the teams' docs") == "the users' files and the teams' docs"
    # nothing but quotes (or no quotes): read as typed
    assert quoted.strip_quoted('"git status"') == '"git status"'
    assert quoted.term_weights('"git status"', ["git", "status"]) == {}


def test_term_weights_scale_single_words(idx_db):
    terms = query_terms("merge pdf files into one document")
    plain = dict(idx_db.retrieval.keyword(terms, 50))
    low = dict(idx_db.retrieval.keyword(terms, 50, term_weights={"pdf": 0.25}))
    pdf = dict(idx_db.retrieval.keyword(["pdf"], 50))
    assert pdf and set(low) == set(plain)
    for r in plain:
        assert low[r] == pytest.approx(plain[r] - 0.75 * pdf.get(r, 0.0), rel=1e-9)


def test_hybrid_coverage_is_the_share_of_query_words_a_tool_has(idx_db, embedder):
    """Hybrid's coverage evidence: matched words / query words, quoted values weighing less."""
    from toolidx.search.hybrid import search
    from toolidx.search.quoted import QUOTED_WEIGHT
    from toolidx.search.request import SearchRequest

    db = idx_db
    res = search(db, SearchRequest("merge pdf files into one document", min_score=0.0, limit=8), embedder=embedder)
    terms = query_terms("merge pdf files into one document")
    assert res.mode_used == "hybrid" and res.hits
    for h in res.hits:
        assert h.signals.coverage == round(len(h.matched) / len(terms), 3), h.id
    assert res.hits[0].signals.coverage > 0
    q = 'merge pdf files named "quarterly report"'
    res = search(db, SearchRequest(q, min_score=0.0, limit=8), embedder=embedder)
    terms = query_terms(q)
    w = {t: (QUOTED_WEIGHT if t in ("quarterly", "report") else 1.0) for t in terms}
    for h in res.hits:
        assert h.signals.coverage == round(sum(w[t] for t in h.matched) / sum(w.values()), 3), h.id


def test_name_words_count_the_tool_name_words_a_query_has_as_the_index_stems_them(idx_db):
    from toolidx.search.hybrid import _name_words

    rows = {n: r for r, n in idx_db.retrieval.tool_names()}

    def count(query, name):
        return _name_words(idx_db, query_terms(query), [rows[name]])[rows[name]]

    assert count("merging two PDFs into one", "merge_pdfs") == 2  # stemmed: merg, pdf
    assert count("show the git status of my repo", "git_status") == 2
    assert count("are there severe weather alerts in Texas", "get_alerts") == 1  # "get": a stop word
    assert count("are there severe weather alerts in Texas", "get_forecast") == 0
    assert count("run this SQL query", "run_sql_query") == 3


def test_a_query_with_two_name_words_adds_name_weight_to_the_hybrid_score(idx_db, embedder, monkeypatch):
    from toolidx.search.hybrid import gather, search
    from toolidx.search.request import SearchRequest

    q = "merge these pdfs for me"
    weight = 0.05  # fit_fusion.py fits the name weight to 0; the mechanism must still add what it is set to
    model = idx_db.get_meta("embed_model")
    fit = cal.fit_for(model)
    cands, terms, _, _ = gather(idx_db, q, mode="hybrid", filters=None, embedder=embedder)
    rows = {n: r for r, n in idx_db.retrieval.tool_names()}

    def z(name_weight):  # the ranking value search scores by, with the name weight set to name_weight
        monkeypatch.setitem(cal.FITS, model, dataclasses.replace(fit, name=name_weight))
        return cal.ranking_values(cands, "hybrid", n_terms=len(terms), model=model)

    on, off = z(weight), z(0.0)
    for name, bonus in (("merge_pdfs", weight), ("convert_pdf_to_markdown", 0.0)):
        assert on[rows[name]] - off[rows[name]] == pytest.approx(bonus, abs=1e-9), name
    hits = {h.id: h for h in search(idx_db, SearchRequest(q, min_score=0.0), embedder=embedder).hits}
    assert hits["pdf/merge_pdfs"].signals.name_words == 2
    assert hits["pdf/convert_pdf_to_markdown"].signals.name_words == 1
