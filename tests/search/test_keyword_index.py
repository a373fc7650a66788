"""store.sqlite.retrieval: keyword candidates scored in Python from cached postings must give FTS5's own
bm25() scores, whether the postings were fetched word by word or preloaded, follow a new crawl,
and honour filters. Checked against FTS5 itself on the real ETOM catalog (2,375 tools, so the
common-word path runs: "get", "list", "file" are in more than 200 tools)."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from toolidx.core.filters import Filters
from toolidx.core.tokens import fts_query, query_terms
from toolidx.store import retrieval
from toolidx.store.db import open_db
from toolidx.store.sqlite import mapped, matrix
from toolidx.store.sqlite import retrieval as retrieval_sqlite


@pytest.fixture(scope="module")
def etom_kw(bench_dir, tmp_path_factory):
    from conftest import run_cli

    d = tmp_path_factory.mktemp("etom-kw")
    (d / "servers.yaml").write_text(f"mcpServers:\n  etom:\n    tools_file: {bench_dir / 'etom' / 'tools.jsonl'}\n")
    r = run_cli("crawl", "--config", d / "servers.yaml", "--db", d / "etom.db", "--model", "none")
    assert r.code == 0, r.stderr
    return d / "etom.db"


@pytest.fixture(scope="module")
def queries(bench_dir):
    qs = [
        json.loads(x)["query"]
        for f in ("etom/queries.jsonl", "livemcp/queries.jsonl")
        for x in (bench_dir / f).read_text().splitlines()
        if x.strip()
    ]
    random.Random(3).shuffle(qs)
    return qs[:150] + ["list files", "get file", "git status", "e-mail attachments", "x.y z"]


def _fresh(db):
    db.cache.clear()


def _common(db, terms):
    """Which terms take the common-word path."""
    index, scratch = retrieval_sqlite._get(db)
    cut = max(retrieval.COMMON_MIN_DF, retrieval.COMMON_SHARE * index.nrow)
    toks = scratch.cut(terms)
    return [w for w in terms if len(toks[w]) == 1 and len(index.postings(db, toks[w][0], w)) > cut]


@pytest.mark.slow
def test_scores_are_fts5_bm25_and_rankings_match_where_exact(etom_kw, queries):
    db = open_db(etom_kw)
    _fresh(db)
    shortcut = exact = same_top = 0
    for q in queries:
        terms = query_terms(q)
        ours = db.retrieval.keyword(terms, 50)
        fts = retrieval_sqlite.fts_candidates(db, fts_query(terms), 50)
        theirs = dict(fts)
        for r, s in ours:  # every score we give is FTS5's score for that tool
            if r in theirs:
                assert s == pytest.approx(theirs[r], rel=1e-9, abs=1e-9), (q, r)
        common = _common(db, terms)
        if common and len(common) < len(terms):
            shortcut += 1  # tools matching only common words may be missing: the best agree
            same_top += bool(ours) and bool(fts) and ours[0][0] == fts[0][0]
        else:  # no shortcut: the same list as FTS5's full OR query, ties by rowid
            exact += 1
            assert [r for r, _ in ours] == [r for r, _ in fts], q
    assert shortcut > 20 and exact > 10  # both paths ran
    assert same_top >= 0.9 * shortcut
    db.close()


def test_postgresql_ranks_as_the_file_common_words_split_alike(etom_kw, queries, pg_url, monkeypatch):
    """On PostgreSQL BM25 runs in SQL (store/retrieval.py) with the file's split of common words:
    the same tools with the same scores, on the queries where the split changes the answer too
    (a word the tokenizer cuts in several tokens is a phrase on the file only: left out)."""
    from conftest import run_cli

    assert run_cli("merge", etom_kw, "-o", pg_url).code == 0
    file, pg = open_db(etom_kw), open_db(pg_url)
    names = [dict(db.execute("SELECT rowid, id FROM tools").fetchall()) for db in (file, pg)]

    def ranked(db, ids, terms):
        got = [(ids[r], round(s, 6)) for r, s in db.retrieval.keyword(terms, 20)]
        return sorted(got, key=lambda x: (-x[1], x[0]))  # a tie may come in either order

    split = compared = 0
    for q in queries:
        terms = query_terms(q)
        if any(len(t) != 1 for t in (file.retrieval.stems(terms) or {}).values()):
            continue
        on_pg = ranked(pg, names[1], terms)
        assert ranked(file, names[0], terms) == on_pg, q
        with monkeypatch.context() as m:
            m.setattr(retrieval, "COMMON_SHARE", 1.0)  # no word is common: every tool that has one
            split += ranked(pg, names[1], terms) != on_pg
        compared += 1
    assert compared > 100 and split >= 10, (compared, split)  # 10 of 155 since camel-case words are searched whole too
    file.close()
    pg.close()


def test_preloaded_postings_give_the_same_answers(etom_kw, queries, monkeypatch):
    db = open_db(etom_kw)
    _fresh(db)
    lazy = {q: db.retrieval.keyword(query_terms(q), 50) for q in queries[:60]}
    _fresh(db)
    monkeypatch.setattr(retrieval_sqlite, "PRELOAD_CHUNK", 300)  # many steps; "get" alone needs a bigger one
    assert db.retrieval.warm(embeddings=False)
    index, _ = retrieval_sqlite._get(db)
    vocab = (
        db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, tools_fts, row)")
        and db.execute("SELECT count(*), sum(doc) FROM temp.v").fetchone()
    )
    assert index.complete and (len(index.cache), index.cached) == tuple(vocab)
    for q in queries[:60]:  # FTS5 scored the words one by one, preload scored them in Python
        got = db.retrieval.keyword(query_terms(q), 50)
        assert [r for r, _ in got] == [r for r, _ in lazy[q]], q
        assert [s for _, s in got] == pytest.approx([s for _, s in lazy[q]], rel=1e-9)
    assert db.retrieval.keyword(["zzqxnotaword"], 10) == []
    db.close()


def test_preloaded_terms_are_the_python_formulas_floats(etom_kw):
    """The vectorised preload gives each (word, tool) the float the plain formula gives: the
    weighted frequency added occurrence by occurrence, then fts5_aux.c's bm25 term."""
    import math

    db = open_db(etom_kw)
    _fresh(db)
    assert db.retrieval.warm(embeddings=False)
    index, _ = retrieval_sqlite._get(db)
    wcol = dict(zip(retrieval.FTS_COLUMNS, retrieval.FTS_WEIGHTS))
    checked = 0
    for word in ("file", "list", "get", "github", "markdown", "zoom", "pdf", "weather", "a"):
        rows = db.execute(f"SELECT doc, col FROM temp.{retrieval_sqlite.FTS_VOCAB} WHERE term = ?", (word,)).fetchall()
        freq: dict[int, float] = {}
        for doc, col in rows:
            freq[doc] = freq.get(doc, 0.0) + wcol[col]
        if not freq:
            continue
        idf = max(math.log((index.nrow - len(freq) + 0.5) / (len(freq) + 0.5)), 1e-6)
        k1, b = retrieval.K1, retrieval.B
        want = [
            idf * (f * (k1 + 1.0)) / (f + k1 * (1 - b) + k1 * b / index.avgdl * index.doclen[d])
            for d, f in sorted(freq.items())
        ]
        p = index.cache[word]
        assert list(p.rows) == sorted(freq) and list(p.vals) == want, word
        checked += 1
    assert checked >= 6
    db.close()


def test_numpy_sums_are_the_python_sums(etom_kw, queries, monkeypatch):
    """A process with numpy (serve, hybrid) sums postings with it, a cold keyword search in
    Python: the same tools with the same floats, filtered, weighted, lazy or preloaded."""
    import numpy  # noqa: F401 (the path under test: numpy loaded)

    assert retrieval_sqlite._numpy() is not None
    db = open_db(etom_kw)
    f = Filters(name_pattern="get|list|file")
    asks = [(query_terms(q), kw) for q in queries[:80] for kw in ({}, {"idf_power": 0.7}, {"filters": f})]
    asks += [(query_terms(q), {"term_weights": {query_terms(q)[0]: 0.25}}) for q in queries[80:100] if query_terms(q)]
    for preload in (False, True):
        _fresh(db)
        if preload:
            assert db.retrieval.warm(embeddings=False)
        with monkeypatch.context() as m:
            m.setattr(retrieval_sqlite, "_numpy", lambda: None)
            plain = [db.retrieval.keyword(terms, 30, **kw) for terms, kw in asks]
            plain_matched = [
                db.retrieval.matched_terms(terms, [r for r, _ in got]) for (terms, _), got in zip(asks, plain)
            ]
        assert [db.retrieval.keyword(terms, 30, **kw) for terms, kw in asks] == plain
        assert [db.retrieval.matched_terms(t, [r for r, _ in got]) for (t, _), got in zip(asks, plain)] == plain_matched
        assert sum(bool(x) for x in plain) > 200
    db.close()


def test_a_large_index_preloads_in_the_background(etom_kw, queries, monkeypatch):
    """Above PRELOAD_INLINE occurrences warm returns at once and the postings load in a thread:
    the same answers meanwhile (words fetched one by one) and after; a close stops it quietly."""
    import threading

    # the preload waits for the test's word: this etom index loads in a few ms, and a fast run
    # had finished it before the test looked (the py3.10 tier of a CI run: preloading() None)
    go = threading.Event()
    real = retrieval_sqlite._preload_in_background

    def held(db) -> None:
        go.wait(60)
        real(db)

    monkeypatch.setattr(retrieval_sqlite, "_preload_in_background", held)
    db = open_db(etom_kw)
    _fresh(db)
    want = {q: db.retrieval.keyword(query_terms(q), 20) for q in queries[:40]}
    _fresh(db)
    monkeypatch.setattr(retrieval_sqlite, "PRELOAD_INLINE", 0)
    monkeypatch.setattr(retrieval_sqlite, "PRELOAD_CHUNK", 2000)
    assert db.retrieval.warm(embeddings=False)
    loader = retrieval_sqlite.preloading(db)
    assert loader is not None
    during = {q: db.retrieval.keyword(query_terms(q), 20) for q in queries[:40]}
    index, _ = retrieval_sqlite._get(db)
    assert not index.complete  # these answers were made while it loads
    go.set()
    loader.join(60)
    assert index.complete and retrieval_sqlite.preloading(db) is None
    after = {q: db.retrieval.keyword(query_terms(q), 20) for q in queries[:40]}
    for got in (during, after):
        for q in want:
            assert [r for r, _ in got[q]] == [r for r, _ in want[q]], q
            assert [s for _, s in got[q]] == pytest.approx([s for _, s in want[q]], rel=1e-9)
    assert index.table is not None and len(_kw_files()) == 1  # written, then read from the file
    db.close()

    for f in _kw_files():
        f.unlink()
    go.clear()
    db = open_db(etom_kw)
    assert db.retrieval.warm(embeddings=False)
    loader = retrieval_sqlite.preloading(db)
    assert loader is not None
    db.close()  # while it loads
    go.set()
    loader.join(60)
    assert not loader.is_alive()


def _settle(db):
    """Wait for a background preload, if one is still running (a small index's may be done)."""
    loader = retrieval_sqlite.preloading(db)
    if loader is not None:
        loader.join(60)


def _kw_files():
    return sorted(mapped.cache_folder().glob("*.kw"))


def _answers(db, queries):
    return {q: db.retrieval.keyword(query_terms(q), 20) for q in queries[:60]} | {
        q: db.retrieval.matched_terms(query_terms(q), list(range(1, 400)), many=True) for q in queries[:10]
    }


def test_the_next_reader_maps_the_postings_the_first_wrote(etom_kw, queries, monkeypatch):
    """A large index's postings, once preloaded, are written to a cache file of its content; the
    next process maps every word at once (no preload) and answers with the very same floats;
    a damaged file is read as no file."""
    db = open_db(etom_kw)
    assert db.retrieval.warm(embeddings=False)  # a small index: preloaded at once, kept in memory
    want = _answers(db, queries)
    words = ["file", "git", "zzzqqq"]
    df = db.retrieval.document_frequency(words)
    db.close()
    assert not _kw_files() and df["zzzqqq"] == 0 < df["git"]

    monkeypatch.setattr(retrieval_sqlite, "PRELOAD_INLINE", 0)  # now every index is large
    db = open_db(etom_kw)
    assert db.retrieval.warm(embeddings=False)
    _settle(db)
    (path,) = _kw_files()
    assert retrieval_sqlite._get(db)[0].table is not None and _answers(db, queries) == want
    db.close()

    db = open_db(etom_kw)
    assert db.retrieval.warm(embeddings=False)
    index, _ = retrieval_sqlite._get(db)
    assert retrieval_sqlite.preloading(db) is None and index.complete and index.table is not None
    assert _answers(db, queries) == want
    assert db.retrieval.document_frequency(words) == df
    db.close()

    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 4096])  # truncated
    db = open_db(etom_kw)
    with db.snapshot(), retrieval.lock:
        index = retrieval_sqlite._from_file(db)
        assert index.key is not None and index.table is None  # looked for, read as no file
    assert db.retrieval.warm(embeddings=False)
    _settle(db)
    index, _ = retrieval_sqlite._get(db)
    assert index.table is not None and len(path.read_bytes()) == len(data)  # preloaded, written again
    assert _answers(db, queries) == want
    db.close()


def test_a_changed_index_maps_postings_of_its_own(etom_kw, queries, tmp_path, monkeypatch):
    monkeypatch.setattr(retrieval_sqlite, "PRELOAD_INLINE", 0)
    copy = tmp_path / "etom.db"
    shutil.copy(etom_kw, copy)
    db = open_db(copy)
    assert db.retrieval.warm(embeddings=False)
    _settle(db)
    with db.transaction():  # one tool's text, as a crawl that saw it change writes it
        row = db.one("SELECT rowid, name FROM tools ORDER BY rowid LIMIT 1")
        db.execute("UPDATE tools_fts SET description = 'zanzibar quokka' WHERE rowid = ?", (row["rowid"],))
    assert db.retrieval.warm(embeddings=False)
    _settle(db)
    assert len(_kw_files()) == 2
    assert [r for r, _ in db.retrieval.keyword(["quokka"], 5)] == [row["rowid"]]
    db.close()


def test_the_vector_matrix_read_from_chunks_is_the_row_by_row_one(example_db, monkeypatch):
    """The vectors read from sqlite-vec's chunk blobs (deleted slots skipped) are the ones a
    scan of the table gives, in the same order, to the bit."""
    db = open_db(example_db)
    rowids = [r for (r,) in db.execute("SELECT rowid FROM tool_vectors ORDER BY rowid")]
    with db.transaction():
        for r in rowids[1:6] + rowids[-2:-1]:  # holes in the chunk's validity bitmap
            db.execute("DELETE FROM tool_vectors WHERE rowid = ?", (r,))
    ids, m = matrix.read_unit(db)
    assert matrix._from_chunks(__import__("numpy"), db) is not None
    monkeypatch.setattr(matrix, "vec_chunks", lambda db: None)
    ids2, m2 = matrix.read_unit(db)
    assert ids.tolist() == ids2.tolist() == [r for r in rowids if r not in rowids[1:6] + rowids[-2:-1]]
    assert m.tobytes() == m2.tobytes()
    db.close()


def test_matched_terms_are_fts5_matches(etom_kw, queries):
    db = open_db(etom_kw)
    for q in queries[:80] + ["e-mail attachments"]:
        terms = query_terms(q)
        shown = [r for r, _ in retrieval_sqlite.fts_candidates(db, fts_query(terms), 10)]
        want = retrieval_sqlite.fts_matched_terms(db, terms, shown)
        assert db.retrieval.matched_terms(terms, shown) == want, q
        assert db.retrieval.matched_terms(terms, shown, many=True) == want, q  # hybrid's numpy path
        many = [r for r, _ in retrieval_sqlite.fts_candidates(db, fts_query(terms), 100)] + [10**9]  # no such tool
        assert db.retrieval.matched_terms(terms, many, many=True) == retrieval_sqlite.fts_matched_terms(
            db, terms, many
        ), q
    db.close()


def test_filters_narrow_candidates_like_fts5(etom_kw):
    db = open_db(etom_kw)
    for q in ("list files in a directory", "get the weather forecast", "send an email message"):
        terms = query_terms(q)
        top = [r for r, _ in retrieval_sqlite.fts_candidates(db, fts_query(terms), 40)]
        servers = sorted({db.scalar("SELECT server FROM tools WHERE rowid = ?", (r,)) for r in top[5:40]})
        f = Filters(servers=servers)
        ours = db.retrieval.keyword(terms, 20, f)
        if not _common(db, terms):
            fts = retrieval_sqlite.fts_candidates(db, fts_query(terms), 20, f)
            assert [r for r, _ in ours] == [r for r, _ in fts]
            assert [s for _, s in ours] == pytest.approx([s for _, s in fts], rel=1e-9)
        got = {db.scalar("SELECT server FROM tools WHERE rowid = ?", (r,)) for r, _ in ours}
        assert ours and got <= set(servers), q
    db.close()


def test_cached_postings_follow_a_new_crawl(tmp_path, cli):
    """A reader that preloaded the index sees the words of tools a later crawl added."""
    from test_search import DATA

    shutil.copy(DATA / "search_catalog.jsonl", tmp_path / "tools.jsonl")
    (tmp_path / "servers.yaml").write_text("mcpServers:\n  catalog:\n    tools_file: tools.jsonl\n")
    path = tmp_path / "s.db"
    assert cli("crawl", "--config", tmp_path / "servers.yaml", "--db", path, "--model", "none").code == 0
    db = open_db(path)
    assert db.retrieval.warm(embeddings=False)
    assert db.retrieval.keyword(["zeppelin"], 5) == []
    with open(tmp_path / "tools.jsonl", "a") as f:
        f.write(
            json.dumps(
                {
                    "id": "air/book_zeppelin_ride",
                    "server": "air",
                    "name": "book_zeppelin_ride",
                    "description": "Book a zeppelin ride.",
                    "input_schema": {"type": "object"},
                }
            )
            + "\n"
        )
    assert cli("crawl", "--config", tmp_path / "servers.yaml", "--db", path, "--model", "none").code == 0
    hits = db.retrieval.keyword(["zeppelin"], 5)
    assert len(hits) == 1
    assert db.scalar("SELECT name FROM tools WHERE rowid = ?", (hits[0][0],)) == "book_zeppelin_ride"
    db.close()


def test_query_embedder_matches_the_document_embedder(model_path, embedder):
    """Search loads the model with one ONNX thread; its vectors are the crawl's vectors."""
    import numpy as np

    from toolidx.core.embedding import QUERY_THREADS, load_embedder, resolve_model

    q = load_embedder(resolve_model(path=model_path), threads=QUERY_THREADS)
    assert q is not embedder
    text = "convert a pdf file to markdown"
    a = np.frombuffer(q.embed_query(text), dtype=np.float32)
    b = np.frombuffer(embedder.embed_query(text), dtype=np.float32)
    assert a.shape == b.shape and float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) > 0.9999


def test_single_query_path_gives_fastembeds_vectors(model_path):
    """embed_query skips fastembed's batching for one text; the vectors must be fastembed's."""
    import numpy as np

    from toolidx.core.embedding import QUERY_THREADS, load_embedder, resolve_model

    q = load_embedder(resolve_model(path=model_path), threads=QUERY_THREADS)
    assert q._one is not None  # the shortcut is on for MiniLM
    for text in ("convert a pdf file to markdown", "x", "Überprüfung 搜索 🔥 " * 30, "a " * 600):
        ours = np.frombuffer(q.embed_query(text), dtype=np.float32)
        theirs = np.asarray(next(iter(q._text_embedding().query_embed([text]))), dtype=np.float32)
        assert ours.shape == theirs.shape and float(ours @ theirs) > 0.99999, text


def test_a_search_counts_the_catalog_once_per_index_version(etom_kw, tmp_path):
    """Every search reports how many tools it considered: counted once per index version on the
    file as on PostgreSQL (a count(*) per query was about a quarter of a keyword search at 10k
    tools), and counted anew after a write."""
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    path = tmp_path / "etom.db"
    shutil.copy(etom_kw, path)
    db = open_db(path)
    try:
        first = search(db, SearchRequest("convert a pdf", mode="keyword"), embedder=None).considered
        seen: list[str] = []
        db.conn.set_trace_callback(seen.append)
        assert search(db, SearchRequest("send an email", mode="keyword"), embedder=None).considered == first
        db.conn.set_trace_callback(None)
        assert seen and not [s for s in seen if "count(*)" in s.lower()]
        with db.transaction():
            db.execute("DELETE FROM tools WHERE rowid = (SELECT max(rowid) FROM tools)")
        assert search(db, SearchRequest("send an email", mode="keyword"), embedder=None).considered == first - 1
    finally:
        db.close()
