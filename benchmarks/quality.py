"""Retrieval quality on the bench sets: hybrid vs BM25-only (keyword) vs embedding-only
(semantic), all computed in this run with `toolidx.search.eval.evaluate`, against the issue's targets.

    python benchmarks/quality.py [--json OUT.json]

Sets the constants were fitted or chosen on: ETOM levels 1+2 (queries.jsonl, plus
queries_infeasible.jsonl for abstention), ETOM level 2 alone, LiveMCPBench (queries.jsonl, a
query is served by any one of its tools). Never used to fit or choose anything (held out): ETOM
level 3 (queries_multi.jsonl: every listed tool is needed), ETOM level 4 (queries_level4.jsonl:
every step, any alternative), LiveMCPBench as "every tool needed" and its relaxed superset in
steps form. Prints one table, the paired per-query comparison of hybrid with each baseline
(better / worse queries, sign test), and exits 1 if a target is missed or hybrid does not beat
both baselines on every set.
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
    from toolidx.search.eval import evaluate

    emb = embedder()
    t0 = time.time()
    etom = build("etom")
    lmb = build("livemcp")
    modes = ("hybrid", "keyword", "semantic")
    r_etom = evaluate(etom, BENCH / "etom" / "queries.jsonl", modes=modes, by="level",
                      infeasible=BENCH / "etom" / "queries_infeasible.jsonl", embedder=emb)
    r_lmb = evaluate(lmb, BENCH / "livemcp" / "queries.jsonl", modes=modes, embedder=emb)
    held = {  # set: (index, file, labels)
        "etom L3 (all)": (etom, BENCH / "etom" / "queries_multi.jsonl", "all"),
        "etom L4 (steps)": (etom, BENCH / "etom" / "queries_level4.jsonl", "steps"),
        "livemcp (all)": (lmb, BENCH / "livemcp" / "queries.jsonl", "all"),
        "livemcp relaxed": (lmb, BENCH / "livemcp" / "queries_relaxed.jsonl", "steps"),
    }
    reports = {"etom L1+L2": r_etom, "livemcp": r_lmb}
    for name, (db, path, labels) in held.items():
        reports[name] = evaluate(db, path, modes=modes, labels=labels, embedder=emb)
    rows = {}
    for mode in modes:
        e = r_etom["modes"][mode]
        rows[("etom L1+L2", mode)] = e["metrics"]
        rows[("etom L2", mode)] = e["groups"]["level=2"]
        for name in ("livemcp", *held):
            rows[(name, mode)] = reports[name]["modes"][mode]["metrics"]
    failures = []
    sets = list(dict.fromkeys(name for name, _ in rows))
    print(f"{'set':16s} {'mode':9s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'MRR@10':>7s} {'nDCG@10':>8s} {'R@5thr':>7s}")
    for s in sets:
        for mode in modes:
            m = rows[(s, mode)]
            print(f"{s:16s} {mode:9s} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['R@10']:6.3f} {m['MRR@10']:7.3f} "
                  f"{m['nDCG@10']:8.3f} {m['R@5@threshold']:7.3f}")
    for s, floors in TARGETS.items():
        h = rows[(s, "hybrid")]
        for metric, floor in floors.items():
            ok = h[metric] >= floor
            print(f"target {s} {metric} >= {floor}: {h[metric]:.3f} {'ok' if ok else 'MISSED'}")
            if not ok:
                failures.append(f"{s} {metric}")
    for s in sets:
        h = rows[(s, "hybrid")]
        for base in ("keyword", "semantic"):
            b = rows[(s, base)]
            # beating a baseline: at least as good on R@1, R@5 and MRR@10, better on one
            keys = ("R@1", "R@5", "MRR@10")
            if not (all(h[k] >= b[k] for k in keys) and any(h[k] > b[k] for k in keys)):
                failures.append(f"{s}: hybrid does not beat {base}")
                print(f"hybrid vs {base} on {s}: does NOT beat it")
    print("per query (hybrid better / worse than the baseline; exact sign test):")
    for name, r in reports.items():
        for pair in r["paired"]:
            print(f"  {name:16s} vs {pair['vs']:8s} " + ", ".join(
                f"{k} +{v['better']}/-{v['worse']} (p={v['p']:.2g})" for k, v in pair["metrics"].items()))
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
            json.dump(reports, f, indent=2)
    if failures:
        print("MISSED: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
