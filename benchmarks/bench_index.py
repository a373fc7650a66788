"""Shared by the search benchmarks: build (or reuse) an index of a bench set's tools.jsonl.

Indexes live in $TOOLIDX_BENCH_CACHE (default /tmp/toolidx-bench), keyed by a fingerprint of
the code that decides what is indexed (tooldoc, migrations, sources) and of the model, so a stale
index is never reused after the FTS schema, the embedded text or the model changes.

The model: _common.MODEL (TOOLIDX_MODEL_PATH); toolidx's own is _common.PACKAGED.
"""

from __future__ import annotations

import hashlib
import json
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


def labelled_sets(models, between: dict | None = None) -> dict[str, tuple[str, list[dict], str]]:
    """Every bench set and style, as models.py and trust.py report them: set -> (catalog, queries,
    labels: any / all / steps / none). ETOM's level 1-2 queries that any of `models` (paths) was
    trained on are left out. `between`: more sets, put after the natural styles."""
    from fusion_data import clinc_oos

    def jsonl(path) -> list[dict]:
        return [json.loads(line) for line in open(path) if line.strip()]

    trained = set().union(*(trained_queries("etom/queries.jsonl", m) for m in models))
    etom = [q for q in jsonl(BENCH / "etom" / "queries.jsonl") if q["id"] not in trained]
    nat = jsonl(BENCH / "livemcp-natural" / "queries.jsonl")
    nat_x = jsonl(BENCH / "livemcp-natural" / "queries_infeasible.jsonl")
    out = {
        "etom L1": ("etom", [q for q in etom if q.get("level") == 1], "any"),
        "etom L2": ("etom", [q for q in etom if q.get("level") == 2], "any"),
        "livemcp": ("livemcp", jsonl(BENCH / "livemcp" / "queries.jsonl"), "any"),
    }
    for st in ("plain", "terse", "typo", "long", "name"):
        out[f"natural {st}"] = ("livemcp", [q for q in nat if q["style"] == st], "any")
    out |= between or {}
    out["etom L3 (all)"] = ("etom", jsonl(BENCH / "etom" / "queries_multi.jsonl"), "all")
    out["etom L4 (steps)"] = ("etom", jsonl(BENCH / "etom" / "queries_level4.jsonl"), "steps")
    out["livemcp relaxed"] = ("livemcp", jsonl(BENCH / "livemcp" / "queries_relaxed.jsonl"), "steps")
    out["etom infeasible"] = ("etom", jsonl(BENCH / "etom" / "queries_infeasible.jsonl"), "none")
    out["natural far"] = ("livemcp", [q for q in nat_x if q["kind"] == "far"], "none")
    out["natural near"] = ("livemcp", [q for q in nat_x if q["kind"] == "near"], "none")
    out["clinc oos"] = ("livemcp", clinc_oos(), "none")
    return out
