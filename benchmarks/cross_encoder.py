"""A cross-encoder (training/cross_encoder.py) over hybrid's top 10: as a re-ranker and as a
verifier for the "no good match" gate (issue #22 item 5 (a)). Needs torch + transformers.

    TOOLIDX_MODEL_PATH=toolidx/models/tool-minilm-l6 python benchmarks/cross_encoder.py [--ce build/ce/checkpoint]

Candidates: fusion_data's hybrid candidates ranked and scored by toolidx.search.calibration with
the model's fit (as verifier.py); a tool's text = tooldoc.embed_text, as toolidx embeds it.
Report per set: R@1 / R@5 of hybrid, of hybrid re-ranked by the CE logit and by the mean of the
two ranks (sign test against hybrid); AUROC of -max CE logit over the top 5 (and of -hybrid's best
score) for served feasible 3+ term requests vs each impossible set; the share of impossible
requests turned away at the budget (<= 1 point of R@5 lost on etom and on natural, pooled, 3+
terms, as fit_fusion.py / verifier.py); the CE's time to score 10 candidates.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _common import BENCH, REPO
from fit_fusion import CATALOGS, R5_LOSS_MAX
from fusion_data import FEASIBLE, INFEASIBLE, load, specs
from verifier import auroc, col, jsonl, model_name

from toolidx.core.tooldoc import embed_text, param_docs
from toolidx.search import calibration as cal
from toolidx.search.eval import sign_test

TOP = 10


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ce", default=str(REPO / "build" / "ce" / "checkpoint"))
    ap.add_argument("--limit", type=int, default=0, help="queries per set (a quick check)")
    args = ap.parse_args()
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(args.ce)
    ce = AutoModelForSequenceClassification.from_pretrained(args.ce).eval()

    def score(query: str, texts: list[str]) -> np.ndarray:
        with torch.inference_mode():
            enc = tok(
                [query] * len(texts),
                texts,
                padding=True,
                truncation="longest_first",
                max_length=128,
                return_tensors="pt",
            )
            return ce(**enc).logits.squeeze(-1).numpy()

    model = model_name()
    fit_model = model if model in cal.FITS else None
    print(f"model {model} ({'its fit' if fit_model else 'NO FIT'}); cross-encoder {args.ce}")
    docs = {
        c: {
            t["id"]: embed_text(t["name"], None, t.get("description") or "", param_docs(t.get("input_schema")))
            for t in jsonl(BENCH / c / "tools.jsonl")
        }
        for c in ("etom", "livemcp")
    }
    data: dict[str, list[dict]] = {}
    ms = []
    for (s, rows), (cat, qs) in zip(load().items(), specs().values()):  # load() follows specs()' order
        data[s] = []
        for (q, ev), asked in list(zip(rows, qs, strict=True))[: args.limit or None]:
            assert q["id"] == asked["id"], "fusion data out of step with its specs: refresh the cache"
            cands = {i: e for i, (_, e) in enumerate(ev)}
            z = cal.ranking_values(cands, "hybrid", q["n_tools"], q["n_terms"], model=fit_model)
            sc = cal.score_candidates(cands, "hybrid", q["n_tools"], fit_model, q["n_terms"])
            top = [ev[i][0] for i in sorted(z, key=lambda i: (-round(z[i], 6), ev[i][0]))[:TOP]]
            t0 = time.perf_counter()
            c = score(asked["query"], [docs[cat][t] for t in top]) if top else np.zeros(0)
            ms.append(1000 * (time.perf_counter() - t0))
            n = len(top)
            by_ce = sorted(range(n), key=lambda i: (-c[i], i))
            ce_rank = {i: r for r, i in enumerate(by_ce)}
            mix = sorted(range(n), key=lambda i: (i + ce_rank[i], i))
            rel = set(q["relevant"])
            hits = {
                name: [top[i] in rel for i in order]
                for name, order in (("hybrid", range(n)), ("CE", by_ce), ("mix", mix))
            }
            data[s].append(
                {
                    "top": max(sc.values(), default=0.0),
                    "ce5": float(c[:5].max()) if n else -99.0,
                    "exempt": q["n_terms"] < cal.GATE_MIN_TERMS,
                    "gate_t": cal.threshold("hybrid", q["n_terms"], fit_model),
                    **{f"{k} R@1": float(any(h[:1])) for k, h in hits.items()},
                    **{f"{k} R@5": float(any(h[:5])) for k, h in hits.items()},
                }
            )
    print(
        f"CE: {np.median(ms):.1f} ms p50, {np.percentile(ms, 90):.1f} p90 to score a query's top {TOP} "
        f"(torch, 2 threads), {len(ms)} queries"
    )

    a = {s: {k: col(rows, k) for k in rows[0]} for s, rows in data.items()}
    print("\nre-ranking hybrid's top 10: R@1 / R@5 (better/worse queries vs hybrid, sign-test p)")
    print(
        f"  {'set':16s} {'n':>4s} {'hybrid':>11s} {'CE':>11s} {'R@1 b/w p':>15s} {'R@5 b/w p':>15s} "
        f"{'mix':>11s} {'R@1 b/w p':>15s} {'R@5 b/w p':>15s}"
    )

    def row(name: str, v: dict) -> None:
        cells = [f"{v['hybrid R@1'].mean():.3f}/{v['hybrid R@5'].mean():.3f}"]
        for k in ("CE", "mix"):
            cells.append(f"{v[k + ' R@1'].mean():.3f}/{v[k + ' R@5'].mean():.3f}")
            for m in ("R@1", "R@5"):
                b, w = int((v[f"{k} {m}"] > v[f"hybrid {m}"]).sum()), int((v[f"{k} {m}"] < v[f"hybrid {m}"]).sum())
                cells.append(f"{b:>3d}/{w:<3d} {sign_test(b, w):.3f}")
        print(
            f"  {name:16s} {len(v['top']):4d} "
            + " ".join(f"{x:>11s}" if i in (0, 1, 4) else f"{x:>15s}" for i, x in enumerate(cells))
        )

    for s in FEASIBLE:
        row(s, a[s])
    for name, ss in (*CATALOGS.items(), ("all feasible", list(FEASIBLE))):
        row(name + " (pooled)", {k: np.concatenate([a[s][k] for s in ss]) for k in a[ss[0]]})

    ok5 = {s: (v["hybrid R@5"] > 0) & (v["exempt"] == 0) for s, v in a.items()}
    pairs = (("etom infeasible", "etom"), ("natural far", "natural"), ("natural near", "natural"))
    print("\nAUROC, served feasible (3+ terms) vs impossible (3+ terms); higher = the signal is lower on impossible")
    print(f"  {'signal':30s} " + " ".join(f"{s:>15s}" for s, _ in pairs))
    for name, k in (("-hybrid best score (gate)", "top"), ("-max CE logit, top 5", "ce5")):
        au = [
            auroc(-a[s][k][a[s]["exempt"] == 0], -np.concatenate([a[f][k][ok5[f]] for f in CATALOGS[c]]))
            for s, c in pairs
        ]
        print(f"  {name:30s} " + " ".join(f"{x:15.3f}" for x in au))

    def costs(abstain: dict[str, np.ndarray]) -> list[float]:
        """pooled R@5 lost on etom, natural, livemcp; share turned away of etom infeasible, far, near"""
        return [
            float(np.mean(np.concatenate([a[s]["hybrid R@5"] * abstain[s] for s in ss]))) for ss in CATALOGS.values()
        ] + [float(abstain[s].mean()) for s in INFEASIBLE]

    def rule(tg: float | None, tc: float) -> list[float]:
        """abstain (3+ terms) when hybrid's best < tg (None: toolidx's own threshold) or max CE < tc"""
        return costs(
            {
                s: (v["exempt"] == 0) & ((v["top"] < (v["gate_t"] if tg is None else tg)) | (v["ce5"] < tc))
                for s, v in a.items()
            }
        )

    def within(c: list[float]) -> bool:
        return max(c[:2]) <= R5_LOSS_MAX + 1e-9

    allce = np.concatenate([v["ce5"] for v in a.values()])
    ce_grid = [-99.0, *np.unique(np.quantile(allce, np.linspace(0, 0.6, 301)).round(4))]
    gate_grid = [0.0, *np.arange(0.002, 0.05, 0.001).round(4)]
    print(f"\nrules at the budget (<= {R5_LOSS_MAX:.0%} R@5 lost on etom and on natural, pooled; abstain on 3+ terms)")
    print(
        f"  {'rule':40s} {'gate t':>7s} {'CE t':>7s} {'etom lost':>9s} {'nat lost':>8s} {'lmcp lost':>9s} "
        f"{'etom abst':>9s} {'far':>5s} {'near':>5s}"
    )

    def show(name: str, tg: float | None, tc: float) -> None:
        c = rule(tg, tc)
        print(
            f"  {name:40s} {'fit' if tg is None else f'{tg:.4f}':>7s} {tc:7.3f} "
            + " ".join(f"{x:{w}.3f}" for x, w in zip(c, (9, 8, 9, 9, 5, 5)))
            + ("" if within(c) else "  over budget")
        )

    best_gate = max([t for t in gate_grid if within(rule(t, -99.0))], default=0.0)
    show("gate alone", best_gate, -99.0)
    show("gate alone, toolidx's fitted threshold", None, -99.0)
    show("max CE < t alone", 0.0, max([t for t in ce_grid if within(rule(0.0, t))], default=-99.0))
    show("toolidx's gate OR max CE < t", None, max([t for t in ce_grid if within(rule(None, t))], default=-99.0))
    # both cuts free: the pair turning away the most impossible requests (mean of the three shares)
    grid2 = [(tg, tc) for tg in gate_grid for tc in ce_grid[::3] if within(rule(tg, tc))]
    tg, tc = max(grid2, key=lambda p: (sum(rule(*p)[3:]), p))
    show("gate OR max CE < t, both cuts fitted", tg, tc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
