"""The action marks on the 16 real servers of the test suite (issue 43): benchmarks/data/actions_dev.jsonl,
written before the `writes` mark was designed: requests that only read (a tool that writes must not be
first), negated ones whose rest reads, and requests phrased as a read that ask for a write ("show me how
to create a branch", "what happens if I delete the sheet": the mark must not hurt them).

    python benchmarks/actions_dev.py [--models v2,MiniLM] [--db-dir DIR] [--json OUT]

Per model and kind: the wanted tool first, in the top 5, a forbidden one first, answered at the gate;
each request that misses is listed with its first tool and `why`. `--db-dir` reuses crawls
(real-<label>.db) made before.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _common import MODEL, PACKAGED, REPO, cli, servers_dir

MODELS = {"v2": PACKAGED, "MiniLM": MODEL}
DEV = REPO / "benchmarks" / "data" / "actions_dev.jsonl"


def measure(db, emb, queries: list[dict]) -> list[dict]:
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    rows = []
    for q in queries:
        res = search(db, SearchRequest(q["query"], mode="hybrid", limit=10, min_score=0.0), embedder=emb)
        ids = [h.id for h in res.hits]
        first = ids[0] if ids else None
        rows.append(
            {
                "id": q["id"],
                "kind": q["kind"],
                "query": q["query"],
                "first": first,
                "right_first": first in q["relevant"],
                "right_top5": bool(set(ids[:5]) & set(q["relevant"])),
                "forbidden_first": first in q.get("forbidden", ()),
                "answered": bool(res.hits) and res.hits[0].score >= res.gate,
                "score": res.hits[0].score if res.hits else 0.0,
                "why": res.hits[0].why if res.hits else "",
            }
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--db-dir", help="a folder with real-<label>.db crawls to reuse (made when missing)")
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    from bench_index import embedder

    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.store.db import open_db

    queries = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.db_dir or tmp)
        for label in args.models.split(","):
            path = MODELS[label]
            dbp = work / f"real-{label}.db"
            if not dbp.exists():
                cfg = Path(servers_dir()) / "servers.json"
                code, _, err = cli("crawl", "--config", cfg, "--db", dbp, "--model-path", path)
                if code != 0:
                    sys.exit(f"crawl of the real servers failed: {err.strip()[-500:]}")
            db = open_db(dbp)
            rows = measure(db, embedder(threads=QUERY_THREADS, model=path), queries)
            db.close()
            out[label] = rows
            for kind in dict.fromkeys(q["kind"] for q in queries):
                rs = [r for r in rows if r["kind"] == kind]
                first, top5 = sum(r["right_first"] for r in rs), sum(r["right_top5"] for r in rs)
                print(
                    f"{label:7s} {kind:10s} n {len(rs):3d}  wanted first {first:3d}  top 5 {top5:3d}  "
                    f"forbidden first {sum(r['forbidden_first'] for r in rs)}  "
                    f"answered {sum(r['answered'] for r in rs):3d}"
                )
            for r in rows:
                if not r["right_first"]:
                    print(f"    {r['id']:4s} {r['query'][:58]!r} -> {r['first']} ({r['score']:.3f}; {r['why'][:70]})")
    if args.json:
        Path(args.json).write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
