"""What makes an answer trustworthy (issue 43 Deliver 1, issue 42 item 10), per model, in one run:

- every bench set and style (ETOM L1, L2, L3, L4, LiveMCPBench and its relaxed steps,
  livemcp-natural per style; ETOM's, natural's far / near and CLINC150's impossible requests),
  hybrid: R@1, R@5, and how many are answered at the gate; with `--before OLD.json` (this script's
  `--json` from older code: `--code DIR`), each set before -> after, and how many first answers
  changed;
- the negated requests of tests/data/negation_heldout.jsonl (written before the negation rule,
  never tuned on) on the 16 real servers: how many put a forbidden tool first, how many the
  wanted one, how many are answered;
- the gate's examples of issue 43 on the same servers (the `memory` server's writes).

    python benchmarks/trust.py [--models v2,MiniLM] [--json OUT.json] [--before OLD.json]
                               [--code DIR]

`--code DIR` measures the toolidx package in DIR instead of this checkout's (`git archive COMMIT
toolidx | tar -x -C DIR`), for a before / after from one script. ETOM's level 1-2 queries that a
model was trained on are left out for every model, as models.py does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from _common import MODEL, PACKAGED, REPO, measure_code, servers_dir

MODELS = {"v2": PACKAGED, "MiniLM": MODEL}
HELDOUT = REPO / "tests" / "data" / "negation_heldout.jsonl"
# issue 43's gate examples on the real servers: (request, what should be first, or None: turned away)
GATE = [
    ("save a fact to the knowledge graph", "memory/"),
    ("add an observation about Alice to the knowledge graph", "memory/add_observations"),
    ("create entities for Alice and Bob in the knowledge graph", "memory/create_entities"),
    ("store in the graph that Alice works at Acme", "memory/"),
    ("remember that Alice likes tea", "memory/"),
    ("book a flight to Paris next tuesday", None),
    ("delete a directory on the file system", None),
]


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path) if line.strip()]


def sets(models: dict[str, str]) -> dict[str, tuple[str, list[dict], str]]:
    """set -> (catalog, queries, labels)"""
    from bench_index import labelled_sets

    return labelled_sets(models.values())


def ask(db, query: str, emb) -> dict:
    """The ranking (min_score 0) and whether the gate answers it."""
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    res = search(db, SearchRequest(query, mode="hybrid", limit=10, min_score=0.0), embedder=emb)
    top = res.hits[0].score if res.hits else 0.0
    return {
        "ids": [h.id for h in res.hits],
        "answered": bool(res.hits) and top >= res.gate,
        "top": top,
        "why": res.hits[0].why if res.hits else "",
    }


def bench(models: dict[str, str]) -> dict:
    from bench_index import build, embedder

    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.search.eval import ranking_metrics

    spec = sets(models)
    out: dict = {}
    for label, path in models.items():
        dbs = {c: build(c, model=path) for c in ("etom", "livemcp")}
        emb = embedder(threads=QUERY_THREADS, model=path)
        for name, (cat, qs, labels) in spec.items():
            rows = []
            for q in qs:
                a = ask(dbs[cat], q["query"], emb)
                row = {"id": q.get("id"), "first": a["ids"][0] if a["ids"] else None, "answered": a["answered"]}
                if labels != "none":
                    gold = q["steps"] if labels == "steps" else q["relevant"]
                    m = ranking_metrics(a["ids"], gold, labels, (1, 5))
                    row |= {"R@1": m["R@1"], "R@5": m["R@5"]}
                rows.append(row)
            out[f"{label}|{name}"] = rows
        print(f"{label}: bench sets measured", file=sys.stderr, flush=True)
    return out


def real_servers(models: dict[str, str], work: Path) -> dict:
    """The held-out negated requests and the gate's examples, on the 16 real servers."""
    from _common import cli
    from bench_index import embedder

    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.store.db import open_db

    cfg = Path(servers_dir()) / "servers.json"
    out: dict = {}
    for label, path in models.items():
        dbp = work / f"real-{label}.db"
        code, _, err = cli("crawl", "--config", cfg, "--db", dbp, "--model-path", path)
        if code != 0:
            sys.exit(f"crawl of the real servers failed: {err.strip()[-500:]}")
        db = open_db(dbp)
        emb = embedder(threads=QUERY_THREADS, model=path)
        neg = []
        for q in _jsonl(HELDOUT):
            a = ask(db, q["query"], emb)
            first = a["ids"][0] if a["ids"] else None
            neg.append(
                {
                    "id": q["id"],
                    "query": q["query"],
                    "first": first,
                    "forbidden_first": first in q["forbidden"],
                    "right_first": first in q["relevant"],
                    "right_top5": bool(set(a["ids"][:5]) & set(q["relevant"])),
                    "answered": a["answered"],
                    "score": round(a["top"], 3),
                    "why": a["why"],
                }
            )
        out[f"{label}|negation"] = neg
        gate = []
        for query, want in GATE:
            a = ask(db, query, emb)
            gate.append(
                {"query": query, "want": want, "top3": a["ids"][:3], "answered": a["answered"], "score": a["top"]}
            )
        out[f"{label}|gate"] = gate
        db.close()
    return out


def report(now: dict, before: dict | None, models: dict[str, str]) -> None:
    def mean(rows, k):
        return sum(r[k] for r in rows) / len(rows) if rows else 0.0

    def cell(rows, feasible):
        if feasible:
            return f"{mean(rows, 'R@1'):.3f}/{mean(rows, 'R@5'):.3f} ans {mean(rows, 'answered'):.3f}"
        return f"turned away {1 - mean(rows, 'answered'):.3f}"

    print(f"{'model':7s} {'set':17s} {'n':>4s}  {'before':>26s}  {'after':>26s}  first changed")
    for key, rows in now.items():
        label, name = key.split("|", 1)
        if name in ("negation", "gate"):
            continue
        feasible = "R@1" in rows[0] if rows else False
        old = (before or {}).get(key)
        changed = sum(a["first"] != b["first"] for a, b in zip(rows, old)) if old else ""
        was = cell(old, feasible) if old else "-"
        print(f"{label:7s} {name:17s} {len(rows):4d}  {was:>26s}  {cell(rows, feasible):>26s}  {changed}")
    for label in models:
        neg = now.get(f"{label}|negation")
        if not neg:
            continue
        old = (before or {}).get(f"{label}|negation")
        for tag, rows in (("before", old), ("after", neg)):
            if rows:
                print(
                    f"{label} negated ({len(rows)}), {tag}: forbidden first {sum(r['forbidden_first'] for r in rows)}, "
                    f"wanted first {sum(r['right_first'] for r in rows)}, wanted in top 5 "
                    f"{sum(r['right_top5'] for r in rows)}, answered {sum(r['answered'] for r in rows)}"
                )
        for r in neg:
            if r["forbidden_first"] or not r["right_first"]:
                print(f"    {r['id']} {r['query'][:60]!r} -> {r['first']} ({r['score']}; {r['why'][:80]})")
        for g in now[f"{label}|gate"]:
            said = "answered" if g["answered"] else "no good match"
            print(f"  {label} {g['query']!r}: {said} {g['score']:.3f} {g['top3']}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--before", help="a --json file of an earlier run to compare with")
    ap.add_argument("--code", help="measure the toolidx package in this folder")
    ap.add_argument("--skip-bench", action="store_true", help="the real servers only")
    args = ap.parse_args()
    if args.code:
        measure_code(args.code, {})
    models = {m: MODELS[m] for m in args.models.split(",")}
    t0 = time.time()
    now: dict = {}
    with tempfile.TemporaryDirectory() as work:
        now |= real_servers(models, Path(work))
    if not args.skip_bench:
        now |= bench(models)
    before = json.loads(Path(args.before).read_text()) if args.before else None
    report(now, before, models)
    print(f"total {time.time() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(now))
    return 0


if __name__ == "__main__":
    sys.exit(main())
