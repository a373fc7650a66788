"""search/ ranks through store.retrieval's interface and never asks which engine it is on (#33):
no engine test, no engine module, and each engine's implementation picked once per open index."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEARCH = ROOT / "toolidx" / "search"
ENGINE_WORDS = re.compile(r"in_database|postgres|dialect|\bstore\.(pg|sqlite)\b|\.(pg|sqlite)\S* import")


def lines_matching(pattern: re.Pattern, folder: Path, *, lower: bool = False) -> list[str]:
    """`file:line: text` of each line of the package's modules under `folder` that `pattern`
    finds, outside store/ (the one room that may name the engines and the index's own members)."""
    return [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in sorted(folder.rglob("*.py"))
        if "store" not in p.relative_to(ROOT / "toolidx").parts[:1]
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line.lower() if lower else line)
    ]


def test_search_names_no_engine():
    found = lines_matching(ENGINE_WORDS, SEARCH, lower=True)
    assert not found, "search/ branches on the engine:\n" + "\n".join(found)


def test_no_layer_above_store_asks_which_engine_holds_the_index():
    """Only store/ branches on the engine (`db.postgres`, `db.sql`, `in_database`); the layers above
    name the Index and ask it. A URL's scheme is the user's input, not a branch on the engine."""
    asks = re.compile(r"\.postgres\b|\.sql\.|in_database|\bstore\.(pg|sqlite)\b")
    found = lines_matching(asks, ROOT / "toolidx")
    assert not found, "a layer above store/ asks which engine it is on:\n" + "\n".join(found)


def test_an_import_contract_keeps_engines_out_of_search():
    """lint-imports (scripts/check.sh) enforces it; this keeps it from being dropped."""
    text = (ROOT / "pyproject.toml").read_text()
    block = text[text.index('source_modules = ["toolidx.search"]') :].split("\n\n")[0]
    for module in ("toolidx.store.pg", "toolidx.store.sqlite"):
        assert f'"{module}"' in block


def test_each_engine_opens_with_its_own_retrieval(db_target):
    from toolidx.store.db import open_db
    from toolidx.store.pg.retrieval import PgRetrieval
    from toolidx.store.retrieval import Retrieval
    from toolidx.store.sqlite.retrieval import SqliteRetrieval

    db = open_db(db_target, create=True)
    try:
        r = db.retrieval
        assert isinstance(r, Retrieval) and r is db.retrieval  # picked once
        assert type(r) is (PgRetrieval if str(db_target).startswith("postgresql") else SqliteRetrieval)
        assert r.keyword(["weather"], 5) == [] and r.knn(b"\0" * 16, 5) == []
    finally:
        db.close()


def test_no_layer_above_store_reaches_for_the_stores_own_members():
    """The layers above store/ hold a `store.index.Reader` (mypy then refuses `db.conn`); this also
    catches a layer that names the store's `Index` or reaches a private member of an unannotated
    index (`self.db`, `s.db`, `out`)."""
    private = re.compile(
        r"\b(\w*db|index|out)\.(conn|lock|execute|query|one|scalar|rows|sql|module|writer|row_transaction)\b"
        r"|\bimport\b.*\bIndex\b|\bIndex\b(?!\s+files?\b)(?=[\]\s|,)]|$)"
    )
    found = lines_matching(private, ROOT / "toolidx")
    assert not found, "a layer above store/ reaches past store.index.Reader:\n" + "\n".join(found)
