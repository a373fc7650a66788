"""The vector matrix of a SQLite file (store/sqlite/matrix.py): above EXACT_MAX vectors a shortlist
by sign code ranks the tools as every cosine does, from a memory-mapped cache file that is reused
by the next reader, replaced when the index changes, and never trusted when it does not match."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from toolidx.search.hybrid import search
from toolidx.search.request import SearchRequest
from toolidx.store import vectors
from toolidx.store.db import open_db
from toolidx.store.sqlite import mapped, matrix

REQUESTS = [
    "commit my staged changes",
    "show the git log of the last week",
    "read a file from disk",
    "write text into a new file",
    "list the files in a folder",
    "move a file somewhere else",
    "search files by name",
    "remember that Alice works at Acme",
    "forget an entity in the knowledge graph",
    "add an observation about a person",
    "create a branch for the feature",
    "diff the working tree against HEAD",
    "echo back a message",
    "add two numbers",
    "get the size and dates of a file",
    "undo the last commit",
    "push to the remote",
    "make a directory",
    "find relations between entities",
    "print an environment variable",
]


@pytest.fixture
def shortlisted(monkeypatch):
    """Every catalog is large: a shortlist of about half the real catalog's 76 tools."""
    monkeypatch.setattr(matrix, "EXACT_MAX", 0)
    monkeypatch.setattr(matrix, "SHORTLIST", 40)


@pytest.fixture(scope="module")
def blobs(embedder):
    return [embedder.embed_query(r) for r in REQUESTS]


def in_memory(db) -> matrix.Matrix:
    return matrix._coded(np, *matrix.read_unit(db))


def cache_files() -> list:
    return sorted(mapped.cache_folder().glob("*.vec"))


def test_a_shortlist_ranks_as_every_cosine(catalog_real_db, blobs, monkeypatch):
    """A catalog shaped as a large one is: each real tool on 40 servers, each copy reading a
    little differently (cosine ~0.97 to the tool), 3,040 vectors; a shortlist of 200."""
    monkeypatch.setattr(matrix, "SHORTLIST", 200)
    ids, unit = matrix.read_unit(open_db(catalog_real_db, readonly=True))
    rng = np.random.default_rng(7)
    many = np.repeat(unit, 40, axis=0)
    many += rng.standard_normal(many.shape).astype(np.float32) * 0.0125
    many /= np.linalg.norm(many, axis=1)[:, None]
    rows = np.arange(len(many), dtype=np.int64)
    m, e = matrix._coded(np, rows, many), matrix.Matrix(rows, many)
    half = set(rng.choice(len(many), len(many) // 2, replace=False).tolist())
    for b in blobs:
        for allowed in (None, half):
            got, want = m.knn(b, 10, allowed), e.knn(b, 10, allowed)
            assert [r for r, _ in got] == [r for r, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
        some = list(range(0, len(many), 97)) + [10**9]  # one rowid without a vector
        assert m.cosines(b, some) == pytest.approx(e.cosines(b, some), abs=1e-6)


def test_search_answers_alike_from_the_mapped_file(catalog_real_db, embedder, monkeypatch):
    def answers():
        db = open_db(catalog_real_db, readonly=True)
        out = [
            [(h.id, h.score) for h in search(db, SearchRequest(r, min_score=0), embedder=embedder).hits]
            for r in REQUESTS
        ]
        db.close()
        return out

    want = answers()
    monkeypatch.setattr(matrix, "EXACT_MAX", 0)
    monkeypatch.setattr(matrix, "SHORTLIST", 100)  # every row: the cosines of the mapped vectors
    assert answers() == want
    assert len(cache_files()) == 1


@pytest.mark.usefixtures("shortlisted")
def test_the_mapped_file_answers_as_the_matrix_in_memory(catalog_real_db, blobs):
    db = open_db(catalog_real_db, readonly=True)
    m, mem = matrix.load(db), in_memory(db)
    assert m.codes is not None and m.path is not None and len(m) > matrix.SHORTLIST
    git = {r for (r,) in db.execute("SELECT rowid FROM tools WHERE server = 'git'")}
    for b in blobs:
        for allowed in (None, git):
            assert m.knn(b, 5, allowed) == mem.knn(b, 5, allowed)
        assert m.cosines(b, [int(r) for r in m.ids]) == mem.cosines(b, [int(r) for r in m.ids])
    db.close()


@pytest.mark.usefixtures("shortlisted")
def test_the_next_reader_maps_the_file_the_first_wrote(catalog_real_db, blobs):
    first = matrix.load(open_db(catalog_real_db, readonly=True))
    (path,) = cache_files()
    before = path.stat()
    again = matrix.load(open_db(catalog_real_db, readonly=True))
    assert again.path == path and path.stat().st_ino == before.st_ino  # mapped, not written again
    assert not again.unit.flags.writeable  # the file's pages, not a copy
    assert [again.knn(b, 5, None) for b in blobs] == [first.knn(b, 5, None) for b in blobs]


@pytest.mark.usefixtures("shortlisted")
def test_a_changed_index_gets_its_own_file(catalog_real_db, blobs, tmp_path):
    copy = tmp_path / "real.db"
    shutil.copy(catalog_real_db, copy)
    db = open_db(copy)
    old = matrix.load(db)
    row = int(old.ids[3])
    with db.transaction():  # the tool now reads like the first request
        vectors.put(db, row, blobs[0])
        db.execute("UPDATE tools SET embed_hash = 'changed' WHERE rowid = ?", (row,))
    new = matrix.load(db)
    assert new.path != old.path and len(cache_files()) == 2
    assert new.knn(blobs[0], 1, None) == [(row, pytest.approx(1.0, abs=1e-6))]
    assert new.knn(blobs[0], 5, None) == in_memory(db).knn(blobs[0], 5, None)
    db.close()


@pytest.mark.parametrize("damage", ["truncated", "not ours", "other rowids"])
@pytest.mark.usefixtures("shortlisted")
def test_a_cache_file_that_does_not_match_is_replaced(catalog_real_db, blobs, damage):
    db = open_db(catalog_real_db, readonly=True)
    want = [in_memory(db).knn(b, 5, None) for b in blobs]
    matrix.load(db)
    (path,) = cache_files()
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "not ours":
        path.write_bytes(b"\x80\x04 a pickle, say" + data[20:])
    else:  # a file of the right size whose rowids are another index's
        at = mapped.HEADER
        path.write_bytes(data[:at] + (10**6).to_bytes(8, "little") + data[at + 8 :])
    m = matrix.load(db)
    assert m.path == path and len(path.read_bytes()) == len(data)
    assert [m.knn(b, 5, None) for b in blobs] == want
    db.close()


@pytest.mark.usefixtures("shortlisted")
def test_without_a_writable_cache_folder_the_matrix_stays_in_memory(catalog_real_db, blobs, tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # its folder cannot be made
    db = open_db(catalog_real_db, readonly=True)
    m, mem = matrix.load(db), in_memory(db)
    assert m.path is None and m.codes is not None
    assert [m.knn(b, 5, None) for b in blobs] == [mem.knn(b, 5, None) for b in blobs]
    db.close()


@pytest.mark.usefixtures("shortlisted")
def test_only_the_files_used_last_are_kept(catalog_real_db, tmp_path, monkeypatch):
    monkeypatch.setattr(mapped, "KEEP_FILES", 2)
    folder = mapped.cache_folder()
    folder.mkdir(parents=True)
    for i in range(3):
        (folder / f"old{i}.vec").write_bytes(b"")
        os.utime(folder / f"old{i}.vec", (i, i))
    matrix.load(open_db(catalog_real_db, readonly=True))
    assert [p.name for p in cache_files()] == sorted(
        ["old2.vec", next(p.name for p in cache_files() if not p.name.startswith("old"))]
    )


@pytest.mark.parametrize("coded", [False, True])
def test_exact_copies_rank_by_rowid(coded, monkeypatch):
    """Copies of one tool (one server on several hosts) have one cosine; the rowid orders them,
    every copy tied with the k-th included, on the exact path and the shortlist alike."""
    monkeypatch.setattr(matrix, "SHORTLIST", 4)
    rng = np.random.default_rng(1)
    base = rng.standard_normal((50, 384)).astype(np.float32)
    unit = np.concatenate([base, np.repeat(base[:1], 6, axis=0)])  # rowid 0 and six copies of it
    unit /= np.linalg.norm(unit, axis=1)[:, None]
    ids = np.concatenate([np.arange(50) * 10, np.arange(6) + 1000]).astype(np.int64)
    order = np.argsort(ids)
    ids, unit = ids[order], unit[order]
    m = matrix._coded(np, ids, unit) if coded else matrix.Matrix(ids, unit)
    got = m.knn(unit[0].tobytes(), 4, None)
    assert [r for r, _ in got] == [0, 1000, 1001, 1002]
    assert len({s for _, s in got}) == 1


def test_a_tools_cosine_is_one_float_whichever_way_it_is_asked():
    """knn over every row, knn over a filter, a shortlist, and cosines for a few rowids give a tool
    the same float: hybrid takes one tool's cosine from knn and another's from cosines, and a
    BLAS product rounds the last bit by a row's place among the rows it multiplies."""
    rng = np.random.default_rng(7)
    unit = rng.standard_normal((3001, 384)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1)[:, None]
    ids = np.arange(3001, dtype=np.int64) * 3
    q = rng.standard_normal(384).astype(np.float32).tobytes()
    exact, coded = matrix.Matrix(ids, unit), matrix._coded(np, ids, unit)
    every = dict(exact.knn(q, 3001, None))
    assert len(every) == 3001
    for r in range(0, 3001, 7):  # few at a time: the products of small subsets round otherwise
        rows = [int(x) for x in ids[r : r + 5]]
        assert exact.cosines(q, rows) == {x: every[x] for x in rows}
        assert coded.cosines(q, rows) == {x: every[x] for x in rows}
        assert dict(exact.knn(q, 5, set(rows))) == {x: every[x] for x in rows}
    assert dict(coded.knn(q, 50, None)).items() <= every.items()


def test_a_search_makes_no_blas_product():
    """OpenBLAS's threads spin after a product, and in a host that imported numpy before toolidx
    (too late for OPENBLAS_NUM_THREADS) a hybrid search at 10k took 8.5-14 ms instead of ~5: the
    vectors are summed row by row with einsum (Matrix._dot), and nothing a search runs (store/,
    search/) multiplies matrices. This is why toolidx no longer pins OpenBLAS to one thread (#44:
    its worker thread ran 0 ticks over 660 searches and 220 document embeddings)."""
    import ast
    from pathlib import Path

    import toolidx

    root = Path(toolidx.__file__).parent
    found = []
    for path in [*(root / "store").rglob("*.py"), *(root / "search").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                found.append(f"{path.relative_to(root)}:{node.lineno} @")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"dot", "matmul", "tensordot", "inner", "vdot"}
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.func.attr}")
    assert not found
