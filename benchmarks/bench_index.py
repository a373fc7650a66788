"""Shared by the search benchmarks: build (or reuse) an index of a bench set's tools.jsonl.

Indexes live in $TOOLIDX_BENCH_CACHE (default /tmp/toolidx-bench), keyed by a fingerprint of
the code that decides what is indexed (tooldoc, migrations, sources) and of the model, so a stale
index is never reused after the FTS schema, the embedded text or the model changes.

The model: _common.MODEL (TOOLIDX_MODEL_PATH); toolidx's own is _common.PACKAGED.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from _common import BENCH, CACHE, MODEL, REPO


def fingerprint() -> str:
    h = hashlib.sha256()
    for f in (
        "toolidx/core/tooldoc.py",
        "toolidx/store/sqlite/migrations.py",
        "toolidx/crawl/sources.py",
        "toolidx/store/crawls.py",
    ):
        h.update((REPO / f).read_bytes())
    return h.hexdigest()[:12]


def embedder(threads: int | None = None, model: str = MODEL):
    """The model (a folder) for documents (all cores), or with threads=embed.QUERY_THREADS the one
    search loads for queries."""
    from toolidx.core.embedding import load_embedder, resolve_model

    e = load_embedder(resolve_model(path=model), threads=threads)
    if e is None:
        sys.exit(f"no embedding model at {model} (set TOOLIDX_MODEL_PATH)")
    return e


def model_tag(model: str = MODEL) -> str:
    """The model's name and file, for cache keys."""
    from toolidx.core.embedding import resolve_model

    c = resolve_model(path=model)
    h = hashlib.sha256(f"{c.name}\n{c.sha256 or ''}".encode())
    onnx = Path(model) / "model.onnx"
    if not c.sha256 and onnx.is_file():
        h.update(str(onnx.stat().st_size).encode())
    return h.hexdigest()[:8]


def trained_queries(queries_file: str, model: str = MODEL) -> set[str]:
    """Ids of the queries of a bench file ("etom/queries.jsonl") the model was trained on (its
    model.json `trained_on`): a set used for training is no test of that model, so comparisons
    leave these out."""
    import json

    card = Path(model) / "model.json"
    if not card.is_file():
        return set()
    return set(json.loads(card.read_text()).get("trained_on", {}).get(queries_file, []))


def build(set_name: str, *, embed: bool = True, model: str = MODEL, root: Path = BENCH):
    """An open Database with `root/set_name/tools.jsonl` indexed (rows keep their own server)."""
    from toolidx.crawl.config import build_config
    from toolidx.crawl.run import run_crawl
    from toolidx.store.db import open_db

    tools = root / set_name / "tools.jsonl"
    if not tools.is_file():
        sys.exit(f"bench set missing: {tools}")
    key = fingerprint()
    if root != BENCH:  # a converted set (toolret.py): its tools are part of the key
        key += "-" + hashlib.sha256(tools.read_bytes()).hexdigest()[:8]
    path = CACHE / f"{set_name}-{key}{'-' + model_tag(model) if embed else '-kw'}.db"
    if path.exists():
        return open_db(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    for p in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
        p.unlink(missing_ok=True)
    print(f"indexing {tools} -> {path} ...", file=sys.stderr, flush=True)
    cfg = build_config({"mcpServers": {set_name: {"tools_file": str(tools)}}}, None)
    db = open_db(tmp, create=True)
    run_crawl(cfg, db, embedder=embedder(model=model) if embed else None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    tmp.rename(path)
    return open_db(path)
