"""Retrieval quality on every bench set and query style, hybrid beside its two single modes: BM25
alone (keyword) and plain MiniLM cosine (semantic), all computed in this run with
`toolidx.search.eval.evaluate`, paired query by query.

    python benchmarks/quality.py [--json OUT.json]

Sets: ETOM levels 1+2 and level 2 alone, with ETOM's impossible requests; LiveMCPBench task
prompts; livemcp-natural (short requests typed the way people look for a tool) per style (plain,
terse, typo, long, name) and its impossible requests per kind (far, near). These are the sets
benchmarks/fit_fusion.py fits hybrid's constants on, leave-one-set-out (its held-out numbers are
in docs/research/search.md). Never used to fit or choose anything (held out): ETOM level 3 (every listed
tool needed), ETOM level 4 (every step, any alternative), LiveMCPBench as "every tool needed" and
its relaxed superset in steps form.

Prints one table (R@1, R@5, R@10, MRR@10, R@5 with the "no good match" gate), the paired
comparisons (hybrid better / worse than each single mode, exact sign test), abstention on the
impossible requests, reliability (ECE of the score) per set, and exits 1 if hybrid is
significantly worse (p < 0.05) than a single mode on a set at R@1 or R@5.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from _common import BENCH
from bench_index import build, embedder

MODES = ("hybrid", "keyword", "semantic")
LABEL = {"hybrid": "hybrid", "keyword": "bm25", "semantic": "cosine"}
STYLES = ("plain", "terse", "typo", "long", "name")


HELD = ("etom L3 (all)", "etom L4 (steps)", "livemcp (all)", "livemcp relaxed")  # never used to fit anything


def evaluate_sets(etom, lmb, emb) -> tuple[dict, dict]:
    """Every bench set's report (by set name: the reports of `evaluate`) and the table's rows
    ((set, mode) -> metrics; ETOM level 2 and each natural style are groups of their set), on the
    ETOM and LiveMCP indexes `etom` and `lmb`."""
    from toolidx.search.eval import evaluate

    nat = BENCH / "livemcp-natural"
    reports = {
        "etom L1+L2": evaluate(
            etom,
            BENCH / "etom" / "queries.jsonl",
            modes=MODES,
            by="level",
            infeasible=BENCH / "etom" / "queries_infeasible.jsonl",
            embedder=emb,
        ),
        "livemcp": evaluate(lmb, BENCH / "livemcp" / "queries.jsonl", modes=MODES, embedder=emb),
        # same 527 tools (tools.jsonl is byte-identical to livemcp's)
        "natural": evaluate(
            lmb,
            nat / "queries.jsonl",
            modes=MODES,
            by="style",
            infeasible=nat / "queries_infeasible.jsonl",
            embedder=emb,
        ),
    }
    held = {  # set: (index, file, labels)
        "etom L3 (all)": (etom, BENCH / "etom" / "queries_multi.jsonl", "all"),
        "etom L4 (steps)": (etom, BENCH / "etom" / "queries_level4.jsonl", "steps"),
        "livemcp (all)": (lmb, BENCH / "livemcp" / "queries.jsonl", "all"),
        "livemcp relaxed": (lmb, BENCH / "livemcp" / "queries_relaxed.jsonl", "steps"),
    }
    for name in HELD:
        db, path, labels = held[name]
        reports[name] = evaluate(db, path, modes=MODES, labels=labels, embedder=emb)
    reports = {name: rep.to_json() for name, rep in reports.items()}  # the --json document's shape

    rows: dict[tuple[str, str], dict] = {}  # (set, mode) -> metrics
    for mode in MODES:
        e = reports["etom L1+L2"]["modes"][mode]
        rows[("etom L1+L2", mode)] = e["metrics"]
        rows[("etom L2", mode)] = e["groups"]["level=2"]
        rows[("livemcp", mode)] = reports["livemcp"]["modes"][mode]["metrics"]
        n = reports["natural"]["modes"][mode]
        rows[("natural (all)", mode)] = n["metrics"]
        for st in STYLES:
            rows[(f"natural {st}", mode)] = n["groups"][f"style={st}"]
        for name in HELD:
            rows[(name, mode)] = reports[name]["modes"][mode]["metrics"]
    return reports, rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="also write the full reports here")
    args = ap.parse_args()

    emb = embedder()
    t0 = time.time()
    reports, rows = evaluate_sets(build("etom"), build("livemcp"), emb)
    paired: dict[str, list] = {}  # set -> [{"vs", "metrics"}]
    paired["etom L1+L2"] = reports["etom L1+L2"]["paired"]
    paired["etom L2"] = reports["etom L1+L2"]["paired_groups"]["level=2"]
    paired["livemcp"] = reports["livemcp"]["paired"]
    paired["natural (all)"] = reports["natural"]["paired"]
    for st in STYLES:
        paired[f"natural {st}"] = reports["natural"]["paired_groups"][f"style={st}"]
    for name in HELD:
        paired[name] = reports[name]["paired"]

    sets = list(dict.fromkeys(s for s, _ in rows))
    print(f"{'set':18s} {'mode':7s} {'n':>5s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'MRR@10':>7s} {'R@5gate':>8s}")
    for s in sets:
        for mode in MODES:
            m = rows[(s, mode)]
            n = m.get("n", "")
            print(
                f"{s:18s} {LABEL[mode]:7s} {n!s:>5s} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['R@10']:6.3f} "
                f"{m['MRR@10']:7.3f} {m['R@5@threshold']:8.3f}"
            )

    failures = []
    print("\nper query, hybrid better / worse than each single mode (exact two-sided sign test):")
    for s in sets:
        for pair in paired[s]:
            cells = []
            for k, v in pair["metrics"].items():
                cells.append(f"{k} +{v['better']}/-{v['worse']} (p={v['p']:.2g})")
                if k in ("R@1", "R@5") and v["worse"] > v["better"] and v["p"] < 0.05:
                    failures.append(f"{s}: hybrid significantly worse than {LABEL[pair['vs']]} at {k}")
            print(f"  {s:18s} vs {LABEL[pair['vs']]:6s} " + ", ".join(cells))

    print("\nabstention (share of impossible requests with no answer) and the gate's cost:")
    for name, rep in (("etom", reports["etom L1+L2"]), ("natural", reports["natural"])):
        for mode in MODES:
            e = rep["modes"][mode]
            ab = e["abstention"]
            kinds = "".join(f", {k} {v['rate']:.3f} (n={v['n']})" for k, v in ab["by_kind"].items())
            m = e["metrics"]
            print(
                f"  {name:8s} {LABEL[mode]:7s} threshold {e['threshold']}: abstains {ab['rate']:.3f} "
                f"(n={ab['n']}){kinds}; feasible R@5 {m['R@5']:.3f} -> {m['R@5@threshold']:.3f} "
                f"(lost {m['R@5'] - m['R@5@threshold']:.3f})"
            )
    lm = reports["livemcp"]["modes"]["hybrid"]["metrics"]
    print(
        f"  livemcp  hybrid: R@5 {lm['R@5']:.3f} -> {lm['R@5@threshold']:.3f} with the gate "
        f"(answered {lm['answered']:.3f})"
    )

    print("\nreliability of hybrid's score (every shown hit of the top 10, impossible requests included):")
    for name in ("etom L1+L2", "livemcp", "natural", *HELD):
        r = reports[name]["modes"]["hybrid"]["reliability"]
        bins = " ".join(f"{m:.2f}:{o:.2f}({k})" for m, o, k in r["bins"])
        print(f"  {name:16s} ECE {r['ece']:.3f}  mean score:share relevant(count) {bins}")

    e = reports["etom L1+L2"]["modes"]["hybrid"]
    print(
        f"\nlatency p50 (hybrid, etom, incl. query embedding): {e['latency_ms']['p50']} ms; "
        f"total {time.time() - t0:.0f} s"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(reports, f, indent=2)
    if failures:
        print("MISSED: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
