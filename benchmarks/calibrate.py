"""Refit the score calibration (toolidx/calibration.py) and print the threshold trade-off tables.

    python benchmarks/calibrate.py

Runs every ETOM level 1-2 and infeasible query through `search.gather` (the candidates and their
evidence), fits the Platt constants per mode by logistic regression (label: the candidate is a
relevant tool), and prints, for a grid of thresholds, the share of infeasible queries that get no
answer against R@5 of the feasible queries when the best hit must clear the threshold, plus
LiveMCPBench (not used for fitting) as a check. Copy the constants into calibration.py by hand.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from bench_index import BENCH, build, embedder

GRID = {"hybrid": [0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.05, 0.06],
        "keyword": [0.2, 0.3, 0.35, 0.4, 0.41, 0.45, 0.5],
        "semantic": [0.002, 0.004, 0.006, 0.01, 0.02]}


def _logistic(X, y, l2=1e-3, iters=60):
    import numpy as np

    X1 = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(X1.shape[1])
    for _ in range(iters):  # Newton steps
        p = 1 / (1 + np.exp(-np.clip(X1 @ w, -30, 30)))
        g = X1.T @ (p - y) + l2 * w
        H = (X1 * (p * (1 - p))[:, None]).T @ X1 + l2 * np.eye(len(w))
        w -= np.linalg.solve(H, g)
    return w


def _rows(db, path, emb, mode):
    from toolidx.search.hybrid import gather

    ids = {r["rowid"]: r["id"] for r in db.query("SELECT rowid, id FROM tools")}
    out = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            q = json.loads(line)
            cands, terms, _ = gather(db, q["query"], mode=mode, filters=None, embedder=emb)
            out.append((q, terms, {ids[r]: c for r, c in cands.items()}))
    return out


def main() -> int:
    import numpy as np

    from toolidx.search import calibration as cal

    emb = embedder()
    etom, lmb = build("etom"), build("livemcp")
    n_etom, n_lmb = (int(d.scalar("SELECT count(*) FROM tools")) for d in (etom, lmb))
    for mode in ("hybrid", "keyword", "semantic"):
        feas = _rows(etom, BENCH / "etom" / "queries.jsonl", emb, mode)
        inf = _rows(etom, BENCH / "etom" / "queries_infeasible.jsonl", emb, mode)
        live = _rows(lmb, BENCH / "livemcp" / "queries.jsonl", emb, mode)
        # fit: hybrid/semantic on z (one feature); keyword on log1p(bm25) and bm25_rel
        xs, ys = [], []
        for q, _, c in feas + inf:
            rel = set(q["relevant"])
            best = max((v["bm25"] for v in c.values()), default=0) or 1
            # z of the whole candidate set: bm25_rel is relative to this query's best BM25
            z = cal.ranking_values(c, mode) if mode != "keyword" else {}
            for tid, v in c.items():
                if mode == "keyword":
                    if v["bm25"] > 0:
                        xs.append([math.log1p(v["bm25"]), v["bm25"] / best])
                        ys.append(tid in rel)
                else:
                    xs.append([z[tid]])
                    ys.append(tid in rel)
        w = _logistic(np.array(xs), np.array(ys, float))
        print(f"{mode}: fitted {np.round(w, 3).tolist()} (calibration.py holds "
              f"{cal.PLATT[mode] if mode != 'keyword' else (cal.KW_LOG, cal.KW_REL, cal.KW_BIAS)})")

        def tops(rows, n_tools):
            res = []
            for _q, terms, c in rows:
                sc = cal.score_candidates(c, mode, n_tools)
                order = sorted(sc, key=lambda t: (-round(sc[t], 4), t))
                gate = cal.threshold(cal.effective_mode(c, mode), len(terms))
                res.append((sc[order[0]] if order else 0.0, order[:5], gate > 0))
            return res

        tf, ti, tl = tops(feas, n_etom), tops(inf, n_etom), tops(live, n_lmb)

        def r5(t, T, rows):
            return sum((s >= t or not gated) and bool(set(q["relevant"]) & set(top))
                       for (s, top, gated), (q, _, _) in zip(T, rows)) / len(rows)

        print(f"  {'threshold':>9s} {'abstain':>8s} {'R@5':>6s} {'drop':>6s} {'livemcp R@5':>11s}")
        for t in GRID[mode]:
            ab = sum(s < t and g for s, _, g in ti) / len(ti)
            print(f"  {t:9.4f} {ab:8.3f} {r5(t, tf, feas):6.3f} {r5(0, tf, feas) - r5(t, tf, feas):6.3f} "
                  f"{r5(t, tl, live):11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
