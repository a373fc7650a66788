"""all-MiniLM-L6-v2 and toolidx's own models (v1, and v2, the default) side by side, from one run:
every bench set and style, hybrid (each model with its own fitted constants) and plain cosine,
beside BM25, with paired sign tests of v2 against MiniLM and against v1, the "no good match" gate
(the impossible sets, CLINC150's out-of-scope requests among them), the score of a right first
answer, and the query embedding's latency.

    python benchmarks/models.py [--json OUT.json]

ETOM's levels 1-2 queries that toolidx's model was trained on (its model.json) are left out for
both models: the rest of ETOM is a held-out catalog half for it, and the LiveMCPBench catalog
(livemcp, livemcp-natural) was never trained on. Where ../shared/train/toolret exists, its two
subsets join as catalogs of another style that no constant was fitted on (toolret.py). Exits 1
when toolidx's model is significantly worse (sign test p < 0.05) than MiniLM on any set at R@1 or
R@5 in hybrid mode. Each model leaves out the ETOM queries any of them was trained on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from _common import BENCH, MODEL, PACKAGED, PACKAGED_V1
from bench_index import build, embedder, labelled_sets
from toolret import SUBSETS, convert

MODELS = {"MiniLM": MODEL, "v1": PACKAGED_V1, "v2": PACKAGED}
NEW, REFS = "v2", ("MiniLM", "v1")  # the default model, and what it is compared with
STYLES = ("plain", "terse", "typo", "long", "name")


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path) if line.strip()]


def sets() -> dict[str, tuple[str, list[dict], str]]:
    """set -> (catalog, queries, labels), with toolret's subsets where they exist"""
    toolret = {}
    for sub in SUBSETS:
        if folder := convert(sub):
            toolret[f"toolret {sub.split('-')[0]}"] = (sub, _jsonl(folder / "queries.jsonl"), "any")
    return labelled_sets(MODELS.values(), toolret)


def run_set(db, queries, labels, mode, emb) -> list[dict]:
    from toolidx.search.eval import ranking_metrics
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    rows = []
    for q in queries:
        res = search(db, SearchRequest(q["query"], mode=mode, limit=10, min_score=0.0), embedder=emb)
        ids = [h.id for h in res.hits]
        top = res.hits[0].score if res.hits else 0.0
        rel = set(q["relevant"])
        # every hit's (score, serves the query), for the reliability of the score
        row = {
            "answered": bool(res.hits) and top >= res.gate,
            "top": top,
            "hits": [(h.score, h.id in rel) for h in res.hits],
        }
        if labels != "none":
            gold = q["steps"] if labels == "steps" else q["relevant"]
            m = ranking_metrics(ids, gold, labels, (1, 5))
            row |= {"R@1": m["R@1"], "R@5": m["R@5"], "right_top": bool(ids) and ids[0] in rel}
        rows.append(row)
    return rows


def counts(a: list[dict], b: list[dict], k: str) -> tuple[int, int, float]:
    """(a better, a worse, two-sided sign test p) over paired queries"""
    from toolidx.search.eval import sign_test

    better = sum(x[k] > y[k] for x, y in zip(a, b))
    worse = sum(x[k] < y[k] for x, y in zip(a, b))
    return better, worse, sign_test(better, worse)


def sign(a: list[dict], b: list[dict], k: str) -> str:
    better, worse, p = counts(a, b, k)
    return f"+{better}/-{worse} p={p:.2g}"


def worse_than(a: list[dict], b: list[dict], k: str) -> bool:
    better, worse, p = counts(a, b, k)
    return worse > better and p < 0.05


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="also write every row here")
    args = ap.parse_args()
    from toolidx.core.embedding import QUERY_THREADS

    t0 = time.time()
    spec = sets()
    res: dict = {}  # (model or "bm25", mode, set) -> rows
    latency = {}
    for label, path in MODELS.items():
        dbs = {c: build(c, model=path) for c in ("etom", "livemcp")}
        dbs |= {sub: build(sub, model=path, root=folder.parent) for sub in SUBSETS if (folder := convert(sub))}
        emb = embedder(threads=QUERY_THREADS, model=path)
        nat = [q["query"] for q in _jsonl(BENCH / "livemcp-natural" / "queries.jsonl")]
        emb.embed_query("warm up")
        lat = []
        for q in nat:
            s = time.perf_counter()
            emb.embed_query(q)
            lat.append((time.perf_counter() - s) * 1000)
        latency[label] = statistics.median(lat)
        modes = ("hybrid", "semantic", "keyword") if label == "MiniLM" else ("hybrid", "semantic")
        for mode in modes:
            for name, (cat, qs, labels) in spec.items():
                res[("bm25" if mode == "keyword" else label, mode, name)] = run_set(dbs[cat], qs, labels, mode, emb)
        print(f"{label}: measured ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)

    def mean(rows, k):
        return sum(r[k] for r in rows) / len(rows) if rows else 0.0

    feasible = [s for s, (_, _, lab) in spec.items() if lab != "none"]
    columns = [("bm25", "keyword")] + [(m, mode) for mode in ("semantic", "hybrid") for m in MODELS]
    heads = ["bm25"] + [f"{m} {'cos' if mode == 'semantic' else 'hyb'}" for m, mode in columns[1:]]
    print(
        f"{'set':17s} {'n':>4s}  "
        + "  ".join(f"{h:>11s}" for h in heads)
        + "   "
        + "; ".join(f"{NEW} vs {r}, hybrid (R@1; R@5)" for r in REFS)
    )
    failures = []
    for s in feasible:
        cells = []
        for key in columns:
            rows = res[(*key, s)]
            cells.append(f"{mean(rows, 'R@1'):.3f}/{mean(rows, 'R@5'):.3f}")
        a = res[(NEW, "hybrid", s)]
        tests = []
        for ref in REFS:
            b = res[(ref, "hybrid", s)]
            failures += [f"{s} {k} (vs {ref})" for k in ("R@1", "R@5") if ref == "MiniLM" and worse_than(a, b, k)]
            tests.append(f"{sign(a, b, 'R@1')}; {sign(a, b, 'R@5')}")
        print(f"{s:17s} {len(a):4d}  " + "  ".join(f"{c:>11s}" for c in cells) + "   " + " | ".join(tests))
    nat_sets = [f"natural {st}" for st in STYLES]
    print("\nhybrid, each model at its own gate:")
    for label in MODELS:

        def loss(names, label=label):
            rows = [r for n in names for r in res[(label, "hybrid", n)]]
            return mean(rows, "R@5") - sum(r["R@5"] * r["answered"] for r in rows) / len(rows)

        ab = {
            s: 1 - mean(res[(label, "hybrid", s)], "answered")
            for s in ("etom infeasible", "natural far", "natural near", "clinc oos")
        }
        right = [r["top"] for n in nat_sets for r in res[(label, "hybrid", n)] if r["right_top"]]
        print(
            f"  {label:8s} turned away: etom {ab['etom infeasible']:.3f}, natural far {ab['natural far']:.3f}, "
            f"near {ab['natural near']:.3f}, clinc oos {ab['clinc oos']:.3f}; "
            f"feasible R@5 lost: etom {loss(['etom L1', 'etom L2']):.3f}, "
            f"natural {loss(nat_sets):.3f}, livemcp {loss(['livemcp']):.3f}"
            + "".join(f", {s} {loss([s]):.3f}" for s in feasible if s.startswith("toolret"))
            + "; median score of a right "
            f"first answer (natural) {statistics.median(right) if right else 0:.3f}"
        )
    from toolidx.search.eval import reliability

    print(
        "\nhybrid's score per set, each model (median score of a right first answer; ECE of the first hit's "
        "score, and of every hit of the top 10, impossible requests' hits included):"
    )
    print(f"  {'set':17s} " + "  ".join(f"{label + ' median / ECE top1 / top10':>34s}" for label in MODELS))
    for s in spec:
        cells = []
        for label in MODELS:
            rows = res[(label, "hybrid", s)]
            right = [r["top"] for r in rows if r.get("right_top")]
            top1 = [r["hits"][0] for r in rows if r["hits"]]
            top10 = [h for r in rows for h in r["hits"]]
            med = f"{statistics.median(right):.3f}" if right else "  -  "
            e1, e10 = (reliability(x)["ece"] if x else 0.0 for x in (top1, top10))
            cells.append(f"{med} / {e1:.3f} / {e10:.3f}")
        print(f"  {s:17s} " + "  ".join(f"{c:>34s}" for c in cells))
    print(
        "\nquery embedding p50 (ms, natural queries, "
        + ", ".join(f"{k} {v:.2f}" for k, v in latency.items())
        + f"); total {time.time() - t0:.0f} s"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"|".join(k): v for k, v in res.items()} | {"latency_ms": latency}, f)
    if failures:
        print("WORSE: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
