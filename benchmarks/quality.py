"""Retrieval quality on the bench sets: hybrid vs BM25-only (keyword) vs embedding-only
(semantic), all computed in this run with `toolidx.eval.evaluate`, against the issue's targets.

    python benchmarks/quality.py [--json OUT.json]

Sets: ETOM levels 1+2 (queries.jsonl, plus queries_infeasible.jsonl for abstention), ETOM level 2
alone, LiveMCPBench (queries.jsonl, a query is served by any one of its tools). Prints one table
and exits 1 if a target is missed or hybrid does not beat both baselines on every set.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from bench_index import BENCH, build, embedder

TARGETS = {  # set: {metric: minimum}
    "etom L1+L2": {"R@1": 0.88, "R@5": 0.97},
    "etom L2": {"R@1": 0.85},
    "livemcp": {"R@5": 0.75},
}
ABSTAIN_MIN, R5_DROP_MAX = 0.80, 0.01


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="also write the full reports here")
    args = ap.parse_args()
    from toolidx.eval import evaluate

    emb = embedder()
    t0 = time.time()
    etom = build("etom")
    lmb = build("livemcp")
    modes = ("hybrid", "keyword", "semantic")
    r_etom = evaluate(etom, BENCH / "etom" / "queries.jsonl", modes=modes, by="level",
                      infeasible=BENCH / "etom" / "queries_infeasible.jsonl", embedder=emb)
    r_lmb = evaluate(lmb, BENCH / "livemcp" / "queries.jsonl", modes=modes, embedder=emb)
    rows = {}
    for mode in modes:
        e = r_etom["modes"][mode]
        rows[("etom L1+L2", mode)] = e["metrics"]
        rows[("etom L2", mode)] = e["groups"]["level=2"]
        rows[("livemcp", mode)] = r_lmb["modes"][mode]["metrics"]
    failures = []
    print(f"{'set':12s} {'mode':9s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'MRR@10':>7s} {'nDCG@10':>8s} {'R@5thr':>7s}")
    for (s, mode), m in rows.items():
        print(f"{s:12s} {mode:9s} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['R@10']:6.3f} {m['MRR@10']:7.3f} "
              f"{m['nDCG@10']:8.3f} {m['R@5@threshold']:7.3f}")
    for s in TARGETS:
        h = rows[(s, "hybrid")]
        for metric, floor in TARGETS[s].items():
            ok = h[metric] >= floor
            print(f"target {s} {metric} >= {floor}: {h[metric]:.3f} {'ok' if ok else 'MISSED'}")
            if not ok:
                failures.append(f"{s} {metric}")
        for base in ("keyword", "semantic"):
            b = rows[(s, base)]
            # beating a baseline: at least as good on R@1, R@5 and MRR@10, better on one
            keys = ("R@1", "R@5", "MRR@10")
            if not (all(h[k] >= b[k] for k in keys) and any(h[k] > b[k] for k in keys)):
                failures.append(f"{s}: hybrid does not beat {base}")
                print(f"hybrid vs {base} on {s}: does NOT beat it")
    e = r_etom["modes"]["hybrid"]
    ab = e["abstention"]["rate"]
    drop = e["metrics"]["R@5"] - e["metrics"]["R@5@threshold"]
    print(f"abstention (hybrid, threshold {e['threshold']}): {ab:.3f} of {e['abstention']['n']} infeasible "
          f"queries return nothing; feasible R@5 {e['metrics']['R@5']:.3f} -> {e['metrics']['R@5@threshold']:.3f} "
          f"(drop {drop:.3f}) {'ok' if ab >= ABSTAIN_MIN and drop <= R5_DROP_MAX else 'MISSED'}")
    if ab < ABSTAIN_MIN or drop > R5_DROP_MAX:
        failures.append("abstention")
    for mode in ("keyword", "semantic"):
        em = r_etom["modes"][mode]
        print(f"abstention ({mode}, threshold {em['threshold']}): {em['abstention']['rate']:.3f}; "
              f"R@5 {em['metrics']['R@5']:.3f} -> {em['metrics']['R@5@threshold']:.3f}")
    lm = r_lmb["modes"]["hybrid"]["metrics"]
    print(f"livemcp hybrid R@5 with the default threshold: {lm['R@5@threshold']:.3f} "
          f"(answered {lm['answered']:.3f} of queries)")
    print(f"latency p50 (hybrid, etom, incl. query embedding): {e['latency_ms']['p50']} ms; "
          f"total {time.time() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"etom": r_etom, "livemcp": r_lmb}, f, indent=2)
    if failures:
        print("MISSED: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
