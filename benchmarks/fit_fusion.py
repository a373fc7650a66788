"""Fit hybrid's fusion weights, its Platt calibration and the "no good match" threshold with
leave-one-set-out validation, over every bench set and query style.

    python benchmarks/fit_fusion.py

Data: fusion_data.load() (each query's hybrid candidates and their evidence, as search.gather
computes them). Sets: etom L1, etom L2, livemcp (task prompts), natural plain / terse / typo /
long / name; impossible requests: etom infeasible, natural far, natural near.

1. Fusion, z = a*cos + (1-a)*bm25_rel + c*coverage + n*[name_words >= 2] + FUZZY_WEIGHT*fuzzy:
   a grid over (a, c, n). A point is admissible on some sets when no set is significantly worse
   (exact sign test p < 0.05, at R@1 or R@5) than the current constants, than cosine alone or
   than BM25 alone; among admissible points the best mean R@1+R@5 wins, each catalog (etom,
   livemcp, natural) weighing the same (so five styles of one catalog cannot outvote the others).
   Leave-one-set-out: pick on the other sets, report the held-out set.
2. Platt scaling sigmoid(s*z + b) by logistic regression over every candidate of the training
   sets (each set weighing the same), and the threshold: the highest one whose feasible R@5 loss
   is <= 1 point on every training set. Leave-one-set-out again, then the all-sets fit, whose
   constants `--write` stores in toolidx/search/calibration.json under the model's name.
3. Reliability per set: ECE of the score over all shown candidates (10 bins).
4. Keyword and semantic mode, each on its own candidates (fusion_data.load(mode=...)): their Platt
   constants (keyword: log(1 + bm25 * size factor) and bm25_rel; semantic: the cosine) and their
   thresholds by the same rules as hybrid's, leave-one-set-out likewise. Their rankings do not
   depend on these constants (both keyword weights are positive, and bm25_rel and log BM25 order a
   query's tools alike).

    python benchmarks/fit_fusion.py [--only hybrid|keyword|semantic] [--write]

The model is _common.MODEL (TOOLIDX_MODEL_PATH; toolidx's own: toolidx/models/tool-minilm-l6).
Queries the model was trained on (its model.json) are left out of every set (fusion_data).
`--write` (with no --only) stores hybrid's and semantic's all-sets fit for that model in
calibration.json; keyword's constants belong to no model and stay in calibration.py.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys

import numpy as np
from _common import MODEL
from fusion_data import FEASIBLE, INFEASIBLE, held_specs, load

from toolidx.search import calibration as cal
from toolidx.search.eval import ranking_metrics, reliability, sign_test

GRID_COS = (0.6, 0.7, 0.8, 0.85, 0.9)
GRID_COV = (0.15, 0.25, 0.3, 0.35)
GRID_NAME = (0.0, 0.02)
GRID_RAMP = (None, (4, 16), (6, 14), (8, 16), (10, 20))
BEFORE = (0.6, 0.15, 0.02)  # the constants this fit replaces (fitted on ETOM alone)
LABELS = {"etom L3 (all)": "all", "etom L4 (steps)": "steps", "livemcp relaxed": "steps"}
R5_LOSS_MAX = 0.01


def weights(cfg: tuple, n_terms: int) -> tuple[float, float, float]:
    """(cosine weight, coverage, name words) for a query of n_terms words: cfg = (a, c, n, ramp);
    ramp = (n0, n1) moves from (a, c, n) at n0 words or fewer to BEFORE at n1 or more."""
    a, c, n, ramp = cfg
    if ramp is None:
        return a, c, n
    w = min(1.0, max(0.0, (n_terms - ramp[0]) / (ramp[1] - ramp[0])))
    return tuple(h * (1 - w) + lo * w for h, lo in zip((a, c, n), BEFORE))


def z_values(ev: list, cfg: tuple, n_terms: int) -> np.ndarray:
    a, c, n = weights(cfg, n_terms)
    best = max((e["bm25"] for _, e in ev), default=0.0) or 1.0
    return np.array(
        [
            a * e["cos"]
            + (1 - a) * e["bm25"] / best
            + c * e.get("coverage", 0.0)
            + n * (e.get("name_words", 0) >= cal.NAME_MIN_WORDS)
            + cal.FUZZY_WEIGHT * cal.fuzzy_strength(e.get("fuzzy", 0.0))
            for _, e in ev
        ]
    )


def ranked(ev: list, z: np.ndarray) -> list[str]:
    return [ev[i][0] for i in sorted(range(len(ev)), key=lambda i: (-round(z[i], 6), ev[i][0]))]


def per_query(rows: list, zf, labels: str = "any") -> np.ndarray:
    """(R@1, R@5) per query (any / all / steps labels as toolidx eval defines them)."""
    out = []
    for q, ev in rows:
        top = ranked(ev, zf(ev, q["n_terms"])) if ev else []
        gold = q["steps"] if labels == "steps" else q["relevant"]
        m = ranking_metrics(top[:10], gold, labels, (1, 5))
        out.append((m["R@1"], m["R@5"]))
    return np.array(out)


def significantly_worse(a: np.ndarray, b: np.ndarray) -> bool:
    for k in (0, 1):
        better, worse = int((a[:, k] > b[:, k]).sum()), int((a[:, k] < b[:, k]).sum())
        if worse > better and sign_test(better, worse) < 0.05:
            return True
    return False


def objective(perf: dict, sets: list[str], size: dict[str, int]) -> float:
    groups: dict[str, list[str]] = {}
    for s in sets:
        groups.setdefault(s.split()[0], []).append(s)
    return float(np.mean([sum(perf[s].sum() for s in ss) / sum(size[s] for s in ss) for ss in groups.values()]))


def logistic(x: np.ndarray, y: np.ndarray, w8: np.ndarray, l2: float = 1e-3, iters: int = 40) -> np.ndarray:
    x1 = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x1.shape[1])
    for _ in range(iters):  # Newton steps
        p = 1 / (1 + np.exp(-np.clip(x1 @ w, -30, 30)))
        g = x1.T @ (w8 * (p - y)) + l2 * w
        hess = (x1 * (w8 * p * (1 - p))[:, None]).T @ x1 + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, g)
    return w


def current() -> cal.ModelFit | None:
    """What calibration.json holds for this run's model, if anything."""
    from toolidx.core.embedding import resolve_model

    return cal.FITS.get(str(resolve_model(path=MODEL).name))


def hybrid() -> dict:
    data = load()
    data.update(load(held=True))  # the multi-tool sets take part in leave-one-set-out too
    fit_sets = [*FEASIBLE, *held_specs()]
    lab = {s: LABELS.get(s, "any") for s in fit_sets}
    size = {s: len(rows) for s, rows in data.items()}
    # single modes as references
    cos_only = {s: per_query(data[s], lambda ev, n: np.array([e["cos"] for _, e in ev]), lab[s]) for s in fit_sets}
    bm_only = {s: per_query(data[s], lambda ev, n: np.array([e["bm25"] for _, e in ev]), lab[s]) for s in fit_sets}
    grid = [(a, c, n, r) for a, c, n in itertools.product(GRID_COS, GRID_COV, GRID_NAME) for r in GRID_RAMP]
    grid.append((*BEFORE, None))
    perf = {k: {s: per_query(data[s], lambda ev, nt, k=k: z_values(ev, k, nt), lab[s]) for s in fit_sets} for k in grid}
    before = perf[(*BEFORE, None)]

    def admissible(k, sets):
        return not any(significantly_worse(perf[k][s], ref[s]) for s in sets for ref in (before, cos_only, bm_only))

    def pick(sets):
        ok = [k for k in grid if admissible(k, sets)] or grid
        return max(ok, key=lambda k: objective(perf[k], sets, size))

    print(
        "1. fusion (a = cosine weight, c = coverage, n = name words, ramp to the old weights by query length), "
        "leave-one-set-out"
    )
    print(
        f"  {'held out':16s} {'picked':28s} {'R@1':>6s} {'R@5':>6s}   {'before':>13s}   {'cosine':>13s}   {'bm25':>13s}"
    )
    for s in fit_sets:
        k = pick([t for t in fit_sets if t != s])
        m, b, c, w = (x[s].mean(0) for x in (perf[k], before, cos_only, bm_only))
        print(
            f"  {s:16s} {str(k):28s} {m[0]:6.3f} {m[1]:6.3f}   {b[0]:.3f} / {b[1]:.3f}   "
            f"{c[0]:.3f} / {c[1]:.3f}   {w[0]:.3f} / {w[1]:.3f}",
            flush=True,
        )
    final = pick(fit_sets)
    known = current()
    print(
        f"  all sets -> {final} (calibration.json holds "
        f"{(known.cos, known.coverage, known.name, known.ramp) if known else None})"
    )
    for s in fit_sets:
        m = perf[final][s].mean(0)
        d = perf[final][s] - before[s]
        print(
            f"    {s:16s} {m[0]:.3f} / {m[1]:.3f}  vs before R@1 +{(d[:, 0] > 0).sum()}/-{(d[:, 0] < 0).sum()}"
            f" R@5 +{(d[:, 1] > 0).sum()}/-{(d[:, 1] < 0).sum()}"
        )

    # 2. calibration and threshold on the chosen z
    zs = {
        s: [(q, ev, z_values(ev, final, q["n_terms"]) if ev else np.zeros(0)) for q, ev in rows]
        for s, rows in data.items()
    }

    def platt(sets):
        xs, ys, ws = [], [], []
        for s in sets:
            for q, ev, z in zs[s]:
                rel = set(q["relevant"])
                xs.extend(z)
                ys.extend(t in rel for t, _ in ev)
                ws.extend([1.0 / size[s]] * len(ev))
        w = logistic(np.array(xs)[:, None], np.array(ys, float), np.array(ws) * 1000)
        return float(w[0]), float(w[1])

    def ece(s, slope, bias):  # toolidx eval's reliability, over every candidate
        pairs: list[tuple[float, bool]] = []
        for q, ev, z in zs[s]:
            rel = set(q["relevant"])
            pairs += zip((1 / (1 + np.exp(-(slope * z + bias)))).tolist(), (tid in rel for tid, _ in ev))
        return reliability(pairs)["ece"]

    def top_scores(s, slope, bias):
        return np.array([1 / (1 + math.exp(-(slope * z.max() + bias))) if len(z) else 0.0 for _, _, z in zs[s]])

    thresholds = [round(x, 4) for x in np.arange(0.002, 0.05, 0.001)]
    catalogs = {"etom": ["etom L1", "etom L2"], "natural": [s for s in FEASIBLE if s.startswith("natural")]}

    def exempt(s):  # a query of fewer than GATE_MIN_TERMS words is a deliberate lookup: not gated
        return np.array([q["n_terms"] < cal.GATE_MIN_TERMS for q, _ in data[s]])

    def pooled_loss(sets, slope, bias, t):
        hit5 = np.concatenate([perf[final][s][:, 1] for s in sets])  # any-label sets: 0 or 1
        kept = np.concatenate([(top_scores(s, slope, bias) >= t) | exempt(s) for s in sets])
        return float(hit5.mean() - (hit5 * kept).mean())

    def abstains(s, slope, bias, t):
        return float(((top_scores(s, slope, bias) < t) & ~exempt(s)).mean())

    def pick_threshold(cats, slope, bias):
        ok = [t for t in thresholds if all(pooled_loss(catalogs[c], slope, bias, t) <= R5_LOSS_MAX for c in cats)]
        return max(ok) if ok else thresholds[0]

    print("\n2. calibration, leave-one-set-out: Platt fitted without the set, its ECE on the set")
    everything = list(FEASIBLE) + list(INFEASIBLE)
    for s in everything:
        slope, bias = platt([t for t in everything if t != s])
        print(f"  {s:16s} Platt ({slope:7.3f}, {bias:7.3f}) held-out ECE {ece(s, slope, bias):.3f}")
    slope, bias = platt(everything)
    print(
        f"  all sets -> Platt ({slope:.3f}, {bias:.3f}) (calibration.json holds "
        f"{known.platt['hybrid'] if known else None})"
    )
    print(
        "  threshold: the highest whose feasible R@5 loss is <= 1 point on each catalog (pooled), held out by catalog"
    )
    for held, other in (("etom", "natural"), ("natural", "etom")):
        t = pick_threshold([other], slope, bias)
        print(f"    picked on {other}: {t:.3f}; on {held}: R@5 loss {pooled_loss(catalogs[held], slope, bias, t):.3f}")
    t = pick_threshold(list(catalogs), slope, bias)
    print(f"  both catalogs -> threshold {t} (calibration.json holds {known.threshold['hybrid'] if known else None})")
    print(
        f"  {'threshold':>9s} {'etom loss':>9s} {'natural loss':>12s} {'livemcp loss':>12s} "
        f"{'etom abst':>9s} {'far abst':>8s} {'near abst':>9s}"
    )
    for tt in sorted({0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, t}):
        print(
            f"  {tt:9.4f} {pooled_loss(catalogs['etom'], slope, bias, tt):9.3f} "
            f"{pooled_loss(catalogs['natural'], slope, bias, tt):12.3f} "
            f"{pooled_loss(['livemcp'], slope, bias, tt):12.3f} "
            f"{abstains('etom infeasible', slope, bias, tt):9.3f} {abstains('natural far', slope, bias, tt):8.3f} "
            f"{abstains('natural near', slope, bias, tt):9.3f}" + ("  <-" if tt == t else "")
        )

    print("\n3. reliability of the all-sets fit: ECE over every candidate (10 equal-width bins)")
    for s in everything:
        print(f"  {s:16s} ECE {ece(s, slope, bias):.3f}")
    a, c, n, ramp = final
    return {
        "cos": a,
        "coverage": c,
        "name": n,
        "ramp": list(ramp) if ramp else None,
        "platt": [round(slope, 3), round(bias, 3)],
        "threshold": t,
    }


CATALOGS = {"etom": ["etom L1", "etom L2"], "natural": [s for s in FEASIBLE if s.startswith("natural")]}


def single_mode(mode: str) -> tuple[list[float], float]:
    """Platt constants and threshold of keyword or semantic mode, fitted like hybrid's."""
    data = load(mode=mode)
    everything = [*FEASIBLE, *INFEASIBLE]

    def features(q, ev):  # the candidates the calibration applies to, and their features
        if mode == "semantic":
            return [(t, e, [e["cos"]]) for t, e in ev if e.get("cos") is not None]
        best = max((e["bm25"] for _, e in ev), default=0.0) or 1.0
        scale = cal.size_factor(q["n_tools"])
        return [(t, e, [math.log1p(e["bm25"] * scale), e["bm25"] / best]) for t, e in ev if e["bm25"] > 0]

    def fit(sets):
        xs, ys, ws = [], [], []
        for s in sets:
            for q, ev in data[s]:
                rel = set(q["relevant"])
                for t, _, x in features(q, ev):
                    xs.append(x)
                    ys.append(t in rel)
                    ws.append(1.0 / len(data[s]))
        return logistic(np.array(xs), np.array(ys, float), np.array(ws) * 1000)

    def scored(q, ev, w):
        """[(tool, score)] best first, as toolidx.search.calibration scores them (fuzzy included)."""
        out = []
        best = max((e["bm25"] for _, e in ev), default=0.0) or 1.0
        for t, e in ev:
            fz = cal.fuzzy_strength(e.get("fuzzy", 0.0))
            if mode == "semantic":
                if e.get("cos") is None:
                    continue
                logit = w[0] * e["cos"] + w[1]
            else:
                if e["bm25"] <= 0 and fz <= 0:
                    continue
                logit = (
                    w[0] * math.log1p(e["bm25"] * cal.size_factor(q["n_tools"]))
                    + w[1] * e["bm25"] / best
                    + w[2]
                    + cal.KW_FUZZY * fz
                )
            out.append((t, 1 / (1 + math.exp(-max(-40.0, min(40.0, logit))))))
        return sorted(out, key=lambda x: (-round(x[1], 4), -x[1], x[0]))

    def per_set(s, w):
        """(top score, relevant in the top 5, exempt from the gate) per query"""
        rows = []
        for q, ev in data[s]:
            sc = scored(q, ev, w)
            rows.append(
                (
                    sc[0][1] if sc else 0.0,
                    bool(set(q["relevant"]) & {t for t, _ in sc[:5]}),
                    q["n_terms"] < cal.GATE_MIN_TERMS,
                )
            )
        return rows

    def loss(rows, t):
        return sum(h and not (top >= t or ex) for top, h, ex in rows) / len(rows)

    def abstains(rows, t):
        return sum(top < t and not ex for top, _, ex in rows) / len(rows)

    def pick(w, cats):
        tables = {c: [r for s in CATALOGS[c] for r in per_set(s, w)] for c in cats}
        cands = sorted({top for rows in tables.values() for top, _, _ in rows} | {0.0})
        return max(t for t in cands if all(loss(rows, t) <= R5_LOSS_MAX for rows in tables.values()))

    def ece(s, w):  # toolidx eval's reliability, over every candidate
        return reliability([(p, t in set(q["relevant"])) for q, ev in data[s] for t, p in scored(q, ev, w)])["ece"]

    known = current()
    held = (cal.KW_LOG, cal.KW_REL, cal.KW_BIAS) if mode == "keyword" else known.platt["semantic"] if known else None
    held_t = cal.KEYWORD_THRESHOLD if mode == "keyword" else known.threshold["semantic"] if known else None
    print(f"\n4. {mode} mode: calibration leave-one-set-out (fitted without the set, its ECE on the set)")
    for s in everything:
        w = list(fit([t for t in everything if t != s]))
        print(f"  {s:16s} Platt {np.round(w, 3).tolist()} held-out ECE {ece(s, w):.3f}")
    w = list(fit(everything))
    print(f"  all sets -> {np.round(w, 3).tolist()} (calibration holds {held})")
    for held_cat, other in (("etom", "natural"), ("natural", "etom")):
        t = pick(w, [other])
        rows = [r for s in CATALOGS[held_cat] for r in per_set(s, w)]
        print(f"    threshold picked on {other}: {t:.4f}; on {held_cat}: R@5 loss {loss(rows, t):.3f}")
    t = pick(w, list(CATALOGS))
    print(f"  both catalogs -> threshold {t:.4f} (calibration holds {held_t})")
    tables = {c: [r for s in CATALOGS[c] for r in per_set(s, w)] for c in CATALOGS}
    tables["livemcp"] = per_set("livemcp", w)
    print(
        f"  {'threshold':>9s} {'etom loss':>9s} {'natural loss':>12s} {'livemcp loss':>12s} "
        f"{'etom abst':>9s} {'far abst':>8s} {'near abst':>9s}"
    )
    inf = {s: per_set(s, w) for s in INFEASIBLE}
    for tt in sorted(
        {
            t,
            *([] if held_t is None else [held_t]),
            *np.quantile([r[0] for r in inf["etom infeasible"]], [0.25, 0.5, 0.75, 0.85]).round(4),
        }
    ):
        print(
            f"  {tt:9.4f} {loss(tables['etom'], tt):9.3f} {loss(tables['natural'], tt):12.3f} "
            f"{loss(tables['livemcp'], tt):12.3f} {abstains(inf['etom infeasible'], tt):9.3f} "
            f"{abstains(inf['natural far'], tt):8.3f} {abstains(inf['natural near'], tt):9.3f}"
            + ("  <-" if tt == t else "")
        )
    print("  reliability of the all-sets fit (ECE over every candidate):")
    for s in everything:
        print(f"    {s:16s} ECE {ece(s, w):.3f}")
    return [round(float(x), 3) for x in w], float(t)


def write(model: str, hyb: dict, sem: tuple[list[float], float]) -> None:
    import json

    doc = json.loads(cal.FITS_FILE.read_text())
    doc["models"][model] = {
        **{k: hyb[k] for k in ("cos", "coverage", "name", "ramp")},
        "platt": {"hybrid": hyb["platt"], "semantic": sem[0]},
        "threshold": {"hybrid": hyb["threshold"], "semantic": round(sem[1], 4)},
        "fitted": "benchmarks/fit_fusion.py on every bench set (ETOM L1-L4, LiveMCPBench, "
        "livemcp-natural) less the queries the model was trained on, "
        "leave-one-set-out",
    }
    cal.FITS_FILE.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\nwrote {model}'s fit to {cal.FITS_FILE}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("hybrid", "keyword", "semantic"))
    ap.add_argument("--write", action="store_true", help="store the fit in toolidx/search/calibration.json")
    args = ap.parse_args()
    if args.write and args.only:
        ap.error("--write needs every mode's fit (no --only)")
    out: dict = {}
    for mode in ("hybrid", "keyword", "semantic"):
        if args.only in (None, mode):
            out[mode] = hybrid() if mode == "hybrid" else single_mode(mode)
    if args.write:
        from toolidx.core.embedding import resolve_model

        write(str(resolve_model(path=MODEL).name), out["hybrid"], out["semantic"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
