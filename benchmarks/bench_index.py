"""Shared by the search benchmarks: build (or reuse) an index of a bench set's tools.jsonl.

Indexes live in $TOOLIDX_BENCH_CACHE (default /tmp/toolidx-bench), keyed by a fingerprint of
the code that decides what is indexed (tooldoc, migrations, sources), so a stale index is never
reused after the FTS schema or the embedded text changes.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("TOOLIDX_BENCH_DIR", REPO.parent / "shared" / "bench"))
MODEL = os.environ.get("TOOLIDX_MODEL_PATH") or str(REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8")
CACHE = Path(os.environ.get("TOOLIDX_BENCH_CACHE", "/tmp/toolidx-bench"))
sys.path.insert(0, str(REPO))


def fingerprint() -> str:
    h = hashlib.sha256()
    for f in ("toolidx/core/tooldoc.py", "toolidx/store/migrations.py", "toolidx/crawl/sources.py",
              "toolidx/store/crawls.py"):
        h.update((REPO / f).read_bytes())
    return h.hexdigest()[:12]


def embedder(threads: int | None = None):
    """The model for documents (all cores), or with threads=embed.QUERY_THREADS the one search
    loads for queries."""
    from toolidx.core.embedding import load_embedder, resolve_model

    e = load_embedder(resolve_model(path=MODEL), threads=threads)
    if e is None:
        sys.exit(f"no embedding model at {MODEL} (set TOOLIDX_MODEL_PATH)")
    return e


def build(set_name: str, *, embed: bool = True):
    """An open Database with `BENCH/set_name/tools.jsonl` indexed (rows keep their own server)."""
    from toolidx.crawl.config import build_config
    from toolidx.crawl.run import run_crawl
    from toolidx.store.db import open_db

    tools = BENCH / set_name / "tools.jsonl"
    if not tools.is_file():
        sys.exit(f"bench set missing: {tools}")
    path = CACHE / f"{set_name}-{fingerprint()}{'' if embed else '-kw'}.db"
    if path.exists():
        return open_db(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    for p in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
        p.unlink(missing_ok=True)
    print(f"indexing {tools} -> {path} ...", file=sys.stderr, flush=True)
    cfg = build_config({"mcpServers": {set_name: {"tools_file": str(tools)}}}, None)
    db = open_db(tmp, create=True)
    run_crawl(cfg, db, embedder=embedder() if embed else None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    tmp.rename(path)
    return open_db(path)
