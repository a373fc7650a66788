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
2. The score, in two steps, each a logistic regression over every candidate of the training sets
   (each set weighing the same): the hit's own logit l = s*z + b (Platt scaling), then
   sigmoid(a*l + b'*share + c) where share is the hit's share of the odds exp(l) of the query's
   best calibration.LIST_K candidates (the list beside it). The threshold: the highest one whose
   feasible R@5 loss is <= 1 point on each catalog, pooled (etom L1+L2, natural's five styles,
   livemcp's task prompts). Leave-one-set-out again (ECE over every candidate and over first hits,
   the median score of a right first hit, abstention on each impossible set with the score and
   threshold fitted without it), then the all-sets fit, whose constants `--write` stores in
   toolidx/search/calibration.json under the model's name. Every table shows the score from the
   hit's own evidence alone (the score before issue 22) beside it.
3. Reliability per set: ECE of the all-sets fit over every candidate and over first hits (10 bins),
   and how many relevant tools of a top 5 the runner-up rule (hybrid.RUNNER_UP_SHARE) would hide.
4. Keyword and semantic mode, each on its own candidates (fusion_data.load(mode=...)), the same two
   steps (keyword's own logit: log(1 + bm25 * size factor) and bm25_rel, plus KW_FUZZY * the fuzzy
   name; semantic's: the cosine) and their thresholds by the same rules as hybrid's,
   leave-one-set-out likewise. Their rankings do not depend on these constants (both keyword
   weights are positive, and bm25_rel and log BM25 order a query's tools alike; the second step
   keeps any order).

    python benchmarks/fit_fusion.py [--only hybrid|keyword|semantic] [--write]

The model is _common.MODEL (TOOLIDX_MODEL_PATH; toolidx's own: toolidx/models/tool-minilm-l6).
Queries the model was trained on (its model.json) are left out of every set (fusion_data).
`--keep-fusion` keeps the model's fusion weights and server weight (calibration.json) and refits
hybrid's Platt, listwise, threshold and the action marks (opposed, reads_only, writes: a grid,
the pick on the impossible sets' abstention, then R@1); with `--write` it keeps semantic's
constants as they are (they read no mark).
`--write` (with no --only) stores hybrid's and semantic's all-sets fit for that model in
calibration.json; keyword's constants belong to no model and stay in calibration.py (KW_*, from
the fit with all-MiniLM-L6-v2, whose sets keep every query).
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
# the server evidence's weight (search.server_match), fitted with the model's fusion kept (--server)
GRID_SERVER = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
BEFORE = cal.LONG_WEIGHTS  # the constants this fit replaces (fitted on ETOM alone), where a long query ramps to
LABELS = {"etom L3 (all)": "all", "etom L4 (steps)": "steps", "livemcp relaxed": "steps"}
R5_LOSS_MAX = 0.01
KEEP_FUSION = False
SERVER = False


def weights(cfg: tuple, n_terms: int) -> tuple[float, float, float]:
    """(cosine weight, coverage, name words) for a query of n_terms words: cfg = (a, c, n, ramp[,
    server]); ramp = (n0, n1) moves from (a, c, n) at n0 words or fewer to BEFORE at n1 or more."""
    a, c, n, ramp = cfg[:4]
    if ramp is None:
        return a, c, n
    w = min(1.0, max(0.0, (n_terms - ramp[0]) / (ramp[1] - ramp[0])))
    return tuple(h * (1 - w) + lo * w for h, lo in zip((a, c, n), BEFORE))


def z_values(ev: list, cfg: tuple, n_terms: int) -> np.ndarray:
    a, c, n = weights(cfg, n_terms)
    srv = cfg[4] if len(cfg) > 4 else 0.0  # search.server_match' evidence (calibration.ModelFit.server)
    best = max((e["bm25"] for _, e in ev), default=0.0) or 1.0
    return np.array(
        [
            a * e["cos"]
            + (1 - a) * e["bm25"] / best
            + c * e.get("coverage", 0.0)
            + n * (e.get("name_words", 0) >= cal.NAME_MIN_WORDS)
            + cal.FUZZY_WEIGHT * cal.fuzzy_strength(e.get("fuzzy", 0.0))
            + srv * e.get("server", 0.0)
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
    known = current()
    if KEEP_FUSION and known:  # --keep-fusion: this model's fusion as calibration.json holds it
        # with its server evidence's weight: a fit without it would write server 0
        grid = [(known.cos, known.coverage, known.name, known.ramp, known.server), (*BEFORE, None)]
    if SERVER and known:  # --server: the server evidence's weight, the model's fusion kept
        grid = [(known.cos, known.coverage, known.name, known.ramp, w) for w in GRID_SERVER] + [(*BEFORE, None)]
        before_fit = (known.cos, known.coverage, known.name, known.ramp, 0.0)
    perf = {k: {s: per_query(data[s], lambda ev, nt, k=k: z_values(ev, k, nt), lab[s]) for s in fit_sets} for k in grid}
    before = perf[before_fit] if SERVER and known else perf[(*BEFORE, None)]

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

    # 2.-3. calibration, threshold and reliability on the chosen z
    items = {
        s: [
            (
                q,
                [t for t, _ in ev],
                z_values(ev, final, q["n_terms"])[:, None] if ev else np.zeros((0, 1)),
                np.zeros(len(ev)),
                np.array([t in set(q["relevant"]) for t, _ in ev], bool),
            )
            for q, ev in rows
        ]
        for s, rows in data.items()
        if s in FEASIBLE or s in INFEASIBLE
    }
    known = current()
    own, lw, t = calibrate(
        items,
        "hybrid",
        known.platt["hybrid"] if known else None,
        known.listwise["hybrid"] if known else None,
        known.threshold["hybrid"] if known else None,
    )
    marks, t = actions(data, final, Calibration(np.array(own), tuple(lw)), fit_sets, lab)
    a, c, n, ramp = final[:4]
    return {
        "server": final[4] if len(final) > 4 else 0.0,
        "cos": a,
        "coverage": c,
        "name": n,
        "ramp": list(ramp) if ramp else None,
        "platt": own,
        "listwise": lw,
        "threshold": t,
        "action": list(marks),
    }


GRID_MARKS = (0.0, 1.0, 2.0, 4.0, 6.0, 10.0)  # in the score's logit (calibration.score_candidates)
GRID_WRITES = (0.0, 0.5, 1.0, 2.0, 4.0, 6.0)  # the writes mark's, likewise


def hybrid_item(q: dict, ev: list, fusion: tuple) -> tuple:
    """One query's hybrid candidates as the fit reads them: (query, tool ids, z (a column), a fixed
    offset (none), relevant, opposed, reads only, does what is asked, negated, writes, contrary)."""
    return (
        q,
        [t for t, _ in ev],
        z_values(ev, fusion, q["n_terms"])[:, None],
        np.zeros(len(ev)),
        np.array([t in set(q["relevant"]) for t, _ in ev], bool),
        np.array([e.get("opposed", 0) for _, e in ev], float),
        np.array([e.get("reads_only", 0) for _, e in ev], float),
        np.array([e.get("does", 0) for _, e in ev], float),
        np.array([e.get("negated", 0) for _, e in ev], float),
        np.array([e.get("writes", 0) for _, e in ev], float),
        np.array([e.get("contrary", 0) for _, e in ev], float),
    )


def _below(x: np.ndarray, which: np.ndarray, ceiling: float) -> np.ndarray:
    """calibration._below: the tools of `which` moved down together until BELOW under `ceiling`."""
    if not which.any():
        return x
    shift = float(x[which].max()) - ceiling + cal.BELOW
    return x - shift * which if shift > 0 else x


def _under(x: np.ndarray, which: np.ndarray, ceiling: float) -> np.ndarray:
    """calibration._under: each of `which` not BELOW under `ceiling` placed under it, BELOW apart."""
    over = [i for i in which if x[i] > ceiling - cal.BELOW]
    if not over:
        return x
    x = x.copy()
    for j, i in enumerate(sorted(over, key=lambda i: -x[i]), 1):
        x[i] = min(x[i], ceiling - cal.BELOW * j)
    return x


def marked_scores(it, cal_, marks: tuple[float, ...]) -> np.ndarray:
    """calibration.score_candidates with the action marks (it[5]: opposed, it[6]: reads only,
    it[9]: writes) weighed by `marks`, a tool that does what is asked (it[7]), the antonym of
    what is asked (it[10], under a doer as a reading tool is) and the negated ones (it[8])."""
    if not len(it[1]):
        return np.zeros(0)
    lg = cal_.logits(it)
    a, b, c = cal_.lw
    negated = it[8].astype(bool) if len(it) > 8 else np.zeros(len(lg), bool)
    share = np.zeros(len(lg))
    if (~negated).any():
        share[~negated] = odds_shares(lg[~negated])
    x = a * lg + b * share + c
    if marks[0]:
        x = x - marks[0] * it[5]
    if len(marks) > 2 and marks[2] and len(it) > 9:
        x = x - marks[2] * it[9]
    answers = np.flatnonzero(~negated)
    if len(answers):
        # the best DOER_K answers, as score_candidates orders them (heapq.nlargest: ties by position)
        top = answers[np.argsort(-x[answers], kind="stable")][: cal.DOER_K]
        doers = [i for i in top if len(it) > 7 and it[7][i]]
        if doers:
            below = it[6] + (it[10] if len(it) > 10 else 0)
            x = _under(x, np.flatnonzero(below), float(x[doers[0]]))
        elif marks[1] and it[6][top[0]]:  # a list led by a tool that only reads: all of it, order kept
            x = x - marks[1]
        if len(marks) > 2 and marks[2] and len(it) > 9:  # a request that only reads: writers under a reader
            writers = answers[it[9][answers] > 0]
            readers = [i for i in top if not it[9][i]]
            if len(writers) and readers:
                x = _under(x, writers, float(x[readers[0]]))
        if negated.any():
            x = _below(x, negated, float(x[answers].min()))
    return 1 / (1 + np.exp(-np.clip(x, -40, 40)))


def first_hits(items_s: list, cal_, marks: tuple[float, ...]) -> np.ndarray:
    """Per query: (first hit's score, it serves, a relevant tool in the top 5, exempt from the gate)."""
    out = []
    for it in items_s:
        p = marked_scores(it, cal_, marks)
        order = sorted(range(len(p)), key=lambda i: (-p[i], it[1][i]))
        out.append(
            (
                float(p[order[0]]) if order else 0.0,
                bool(order) and bool(it[4][order[0]]),
                bool(it[4][order[:5]].any()) if order else False,
                it[0]["n_terms"] < cal.GATE_MIN_TERMS,
            )
        )
    return np.array(out, float).reshape(-1, 4)


def gate_threshold(tops: dict) -> float:
    """The highest threshold whose feasible R@5 loss is <= 1 point on each catalog (pooled)."""
    best = THRESHOLDS[0]
    for t in THRESHOLDS:
        if all(
            ((r[:, 2] > 0) & (r[:, 0] < t) & (r[:, 3] == 0)).sum() / len(r) <= R5_LOSS_MAX
            for r in (np.vstack([tops[s] for s in sets]) for sets in CATALOGS.values())
        ):
            best = t
    return best


def actions(data: dict, fusion: tuple, cal_, fit_sets: list[str], lab: dict):
    """The action marks' weights (search.actions), in the score's logit, with the fusion and the
    calibration fixed: a grid over (opposed, reads_only, writes). A point's ranking (by the marked score)
    must be no more than 1 point of R@5 below the unmarked one on any set, multi-tool sets
    included, and not significantly worse; its threshold is re-picked on the feasible sets alone
    (feasible R@5 within 1 point per catalog), so what it turns away of each impossible set is
    measured on data the threshold never saw, and it may turn away no more feasible requests whose
    right tool hybrid's keyword or vector half ranks in its top 5 than the model's shipped weights
    do (issue 43: never "no good match" for those). The pick: the best mean abstention over the
    impossible sets, each weighing the same, then the best mean R@1 (each catalog weighing the
    same: a mark that only reorders, as `writes` mostly does, is picked for its ranking), then the
    lightest; leave-one-set-out over the impossible sets shows the pick held out.
    Returns (weights, threshold)."""
    marked = {s: [hybrid_item(q, ev, fusion) for q, ev in rows] for s, rows in data.items()}  # multi-tool sets too

    def ranking(s, marks):
        out = []
        for it in marked[s]:
            p = marked_scores(it, cal_, marks) if len(it[1]) else np.zeros(0)
            top = [it[1][i] for i in sorted(range(len(p)), key=lambda i: (-p[i], it[1][i]))][:10]
            gold = it[0]["steps"] if lab[s] == "steps" else it[0]["relevant"]
            m = ranking_metrics(top, gold, lab[s], (1, 5))
            out.append((m["R@1"], m["R@5"]))
        return np.array(out)

    none = (0.0, 0.0, 0.0)
    base_rank = {s: ranking(s, none) for s in fit_sets}
    size = {s: len(marked[s]) for s in fit_sets}
    # issue 43: a servable request whose right tool keyword or semantic alone ranks in its top 5
    # (read here as hybrid's own keyword and vector ranks) is never turned away; no point may turn
    # away more of them than the model's shipped weights do
    alone5 = {
        s: np.array(
            [
                any(t in set(q["relevant"]) and min(e.get("kw_rank", 99), e.get("vec_rank", 99)) < 5 for t, e in ev)
                for q, ev in data[s]
            ],
            bool,
        )
        for s in fit_sets
    }

    def away5(marks) -> int:
        tops = {s: first_hits(marked[s], cal_, marks) for s in fit_sets}
        th = gate_threshold({s: first_hits(marked[s], cal_, marks) for s in [*FEASIBLE, *INFEASIBLE]})
        return int(sum(((tops[s][:, 0] < th) & (tops[s][:, 3] == 0) & alone5[s]).sum() for s in fit_sets))

    known = current()
    shipped = known.action if known else (0.0, 0.0, 0.0)
    limit = away5(shipped)
    print(f"\n  servable, a right tool in keyword's or semantic's top 5, turned away at the shipped {shipped}: {limit}")
    table = {}
    print("\n1b. action marks (opposed, reads_only, writes) in the score's logit; abstention per impossible set")
    head = " ".join(f"{s:>16s}" for s in INFEASIBLE)
    print(f"  {'weights':16s} {'ok':>3s} {'threshold':>9s} {head}   R@1 (catalogs)   worst R@5 change")
    for marks in itertools.product(GRID_MARKS, GRID_MARKS, GRID_WRITES):
        perf = {s: ranking(s, marks) for s in fit_sets}
        r1 = objective({s: perf[s][:, :1] for s in fit_sets}, fit_sets, size)
        drop = {s: float(perf[s][:, 1].mean() - base_rank[s][:, 1].mean()) for s in fit_sets}
        worse = [s for s in fit_sets if drop[s] < -R5_LOSS_MAX or significantly_worse(perf[s], base_rank[s])]
        tops = {s: first_hits(marked[s], cal_, marks) for s in [*FEASIBLE, *INFEASIBLE]}
        th = gate_threshold(tops)
        held = {s: float(((tops[s][:, 0] < th) & (tops[s][:, 3] == 0)).mean()) for s in INFEASIBLE}
        away = away5(marks)
        if away > limit:
            worse.append(f"{away} servable ones turned away")
        table[marks] = (not worse, held, th, r1)
        w = min(drop, key=drop.get)
        print(
            f"  {str(marks):16s} {'no' if worse else 'yes':>3s} {th:9.4f} "
            + " ".join(f"{held[s]:16.3f}" for s in INFEASIBLE)
            + f"   {r1:.4f}   {drop[w]:+.3f} ({w}) away5 {away}"
            + (f"  worse: {', '.join(worse)}" if worse else ""),
            flush=True,
        )

    def pick(sets):
        ok = [k for k, v in table.items() if v[0]] or [none]
        return max(
            ok, key=lambda k: (round(float(np.mean([table[k][1][s] for s in sets])), 4), round(table[k][3], 4), -sum(k))
        )

    for s in INFEASIBLE:
        k = pick([t for t in INFEASIBLE if t != s])
        print(f"  picked without {s}: {k}; {s} turned away {table[k][1][s]:.3f} (no marks: {table[none][1][s]:.3f})")
    final = pick(list(INFEASIBLE))
    print(f"  all impossible sets -> {final}, threshold {table[final][2]}")
    return final, table[final][2]


CATALOGS = {
    "etom": ["etom L1", "etom L2"],
    "natural": [s for s in FEASIBLE if s.startswith("natural")],
    "livemcp": ["livemcp"],
}
NATURAL = CATALOGS["natural"]
THRESHOLDS = sorted({round(float(x), 4) for x in (*np.arange(0.001, 0.05, 0.0005), *np.arange(0.05, 0.6, 0.005))})
OWN = (1.0, 0.0, 0.0)  # listwise constants that leave the hit's own logit: the score before issue 22


def odds_shares(logit: np.ndarray) -> np.ndarray:
    """calibration.odds_shares over one query's candidates."""
    if not len(logit):
        return logit
    best = -np.sort(-logit)[: cal.LIST_K]
    total = np.exp(best - best[0]).sum() + (cal.LIST_K - len(best)) * np.exp(best[-1] - best[0])
    return np.exp(np.maximum(logit - best[0], -700.0)) / total


class Calibration:
    """One mode's two steps (calibration.score_candidates): the hit's own logit l = x @ w[:-1] + w[-1]
    + off (off: evidence with a fixed weight, keyword's fuzzy name), then sigmoid(a*l + b*share + c)."""

    def __init__(self, w: np.ndarray, lw: tuple = OWN):
        self.w, self.lw = w, lw

    def logits(self, item) -> np.ndarray:
        x, off = item[2], item[3]
        return x @ self.w[:-1] + self.w[-1] + off

    def scores(self, item) -> np.ndarray:
        if not len(item[1]):
            return np.zeros(0)
        lg = self.logits(item)
        a, b, c = self.lw
        return 1 / (1 + np.exp(-np.clip(a * lg + b * odds_shares(lg) + c, -40, 40)))


def fit_calibration(items: dict, sets: list[str], listwise: bool = True) -> Calibration:
    """Both steps by logistic regression over every candidate of `sets`, each set weighing the same."""
    its = [(s, it) for s in sets for it in items[s] if len(it[1])]
    y = np.concatenate([it[4] for _, it in its]).astype(float)
    w8 = np.concatenate([np.full(len(it[1]), 1000.0 / len(items[s])) for s, it in its])
    own = Calibration(logistic(np.vstack([it[2] for _, it in its]), y, w8))
    if not listwise:
        return own
    lg = [own.logits(it) for _, it in its]
    a, b, c = logistic(np.column_stack([np.concatenate(lg), np.concatenate([odds_shares(x) for x in lg])]), y, w8)
    if a <= 0 or b < 0:  # the score must keep the ranking: increasing in l and in the share
        sys.exit(f"listwise fit ({a:.3f}, {b:.3f}, {c:.3f}) would reorder the hits")
    return Calibration(own.w, (float(a), float(b), float(c)))


def calibrate(items: dict, mode: str, held_platt, held_lw, held_t) -> tuple[list[float], list[float], float]:
    """Fit, validate and report one mode's calibration and threshold; returns (Platt w, listwise
    (a, b, c), threshold) of the all-sets fit. Every table shows the score from the hit's own
    evidence alone ("own", the score before issue 22) beside the listwise one."""
    everything = [*FEASIBLE, *INFEASIBLE]

    def top(s, cal_):  # (first hit's score, it serves, a relevant tool in the top 5, exempt from the gate)
        return [(float(p), bool(ok), bool(h), bool(ex)) for p, ok, h, ex in first_hits(items[s], cal_, (0.0, 0.0))]

    def ece(s, cal_, first_only=False):  # toolidx eval's reliability
        pairs = []
        for it, (p1, ok, _, _) in zip(items[s], top(s, cal_)):
            if first_only:
                pairs += [(p1, ok)] if len(it[1]) else []
            else:
                pairs += zip(cal_.scores(it).tolist(), it[4].tolist())
        return reliability(pairs)["ece"] if pairs else 0.0

    def median_right(sets, cal_):
        v = [p for s in sets for p, ok, _, _ in top(s, cal_) if ok]
        return float(np.median(v)) if v else 0.0

    def loss(sets, cal_, t):
        rows = [r for s in sets for r in top(s, cal_)]
        return sum(h and not (p >= t or ex) for p, _, h, ex in rows) / len(rows)

    def abstains(s, cal_, t):
        rows = top(s, cal_)
        return sum(p < t and not ex for p, _, _, ex in rows) / len(rows)

    def pick(cal_, cats):
        ok = [t for t in THRESHOLDS if all(loss(CATALOGS[c], cal_, t) <= R5_LOSS_MAX for c in cats)]
        return max(ok) if ok else THRESHOLDS[0]

    print(
        f"\n{mode}: calibration, leave-one-set-out (fitted without the set, its ECE on the set: over every "
        "candidate, and over first hits; median score of a right first hit), own evidence -> listwise"
    )
    print(f"  {'held out':16s} {'ECE every':>15s} {'ECE first':>15s} {'median right 1st':>17s}  listwise (a, b, c)")
    held_fits = {}
    for s in everything:
        rest = [t for t in everything if t != s]
        o, li = fit_calibration(items, rest, listwise=False), fit_calibration(items, rest)
        held_fits[s] = (o, li)
        med = f"{median_right([s], o):.3f} -> {median_right([s], li):.3f}" if s in FEASIBLE else ""
        print(
            f"  {s:16s} {ece(s, o):.3f} -> {ece(s, li):.3f} {ece(s, o, True):6.3f} -> {ece(s, li, True):.3f} "
            f"{med:>17s}  {np.round(li.lw, 3).tolist()}"
        )
    nat_o = [p for s in NATURAL for p, ok, _, _ in top(s, held_fits[s][0]) if ok]
    nat_l = [p for s in NATURAL for p, ok, _, _ in top(s, held_fits[s][1]) if ok]
    print(
        "  natural, each style held out: median score of a right first hit "
        f"{np.median(nat_o):.3f} -> {np.median(nat_l):.3f}"
    )
    o, li = fit_calibration(items, everything, listwise=False), fit_calibration(items, everything)
    print(
        f"  all sets -> Platt {np.round(li.w, 3).tolist()}, listwise {np.round(li.lw, 3).tolist()} "
        f"(calibration holds {held_platt}, {held_lw})"
    )
    print(
        "  natural, all-sets fit: median score of a right first hit "
        f"{median_right(NATURAL, o):.3f} -> {median_right(NATURAL, li):.3f}"
    )

    print(
        "  threshold: the highest whose feasible R@5 loss is <= 1 point on each catalog (pooled), held out by catalog"
    )
    for held in CATALOGS:
        rest = [c for c in CATALOGS if c != held]
        t_ = pick(li, rest)
        print(f"    picked on {' + '.join(rest)}: {t_:.4f}; on {held}: R@5 loss {loss(CATALOGS[held], li, t_):.3f}")
    t_own, t = pick(o, list(CATALOGS)), pick(li, list(CATALOGS))
    print(f"  every catalog -> threshold {t} (own evidence: {t_own}; calibration holds {held_t})")
    print("  abstention on each impossible set with the score and threshold fitted without it (held out):")
    for s in INFEASIBLE:
        ho, hl = held_fits[s]
        print(
            f"    {s:16s} own {abstains(s, ho, pick(ho, list(CATALOGS))):.3f} -> listwise "
            f"{abstains(s, hl, pick(hl, list(CATALOGS))):.3f}"
        )
    print(
        f"  {'score':8s} {'threshold':>9s} {'etom loss':>9s} {'natural loss':>12s} {'livemcp loss':>12s} "
        f"{'etom abst':>9s} {'far abst':>8s} {'near abst':>9s}"
    )
    rows = [("own", o, t_own), *(("listwise", li, x) for x in sorted({0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, t}))]
    for label, cal_, tt in rows:
        print(
            f"  {label:8s} {tt:9.4f} {loss(CATALOGS['etom'], cal_, tt):9.3f} {loss(NATURAL, cal_, tt):12.3f} "
            f"{loss(['livemcp'], cal_, tt):12.3f} {abstains('etom infeasible', cal_, tt):9.3f} "
            f"{abstains('natural far', cal_, tt):8.3f} {abstains('natural near', cal_, tt):9.3f}"
            + ("  <-" if label == "listwise" and tt == t else "")
        )

    # hybrid.RUNNER_UP_SHARE: runners-up shown while they score this share of the best hit's score
    def hidden(cal_, share):
        n = 0
        for s in FEASIBLE:
            for it in items[s]:
                p = cal_.scores(it)
                order = sorted(range(len(p)), key=lambda i: (-p[i], it[1][i]))[:5]
                n += sum(bool(it[4][i]) and p[i] < share * p[order[0]] for i in order[1:])
        return n

    print(
        "  relevant tools of a top 5 the runner-up rule would hide, by share of the best hit's score: own "
        + ", ".join(f"{k}: {hidden(o, k)}" for k in (0.05, 0.1))
        + "; listwise "
        + ", ".join(f"{k}: {hidden(li, k)}" for k in (0.002, 0.005, 0.01, 0.02, 0.05))
    )
    print("  reliability of the all-sets fit per set: ECE over every candidate / over first hits, own -> listwise")
    for s in everything:
        print(f"    {s:16s} {ece(s, o):.3f} -> {ece(s, li):.3f}   {ece(s, o, True):.3f} -> {ece(s, li, True):.3f}")
    return [round(float(x), 3) for x in li.w], [round(x, 3) for x in li.lw], float(t)


def mode_item(mode: str, q: dict, ev: list) -> tuple:
    """One query's keyword or semantic candidates as the fit reads them: (query, tool ids, the
    features, a fixed offset, relevant)."""
    best = max((e["bm25"] for _, e in ev), default=0.0) or 1.0
    scale = cal.size_factor(q["n_tools"])
    if mode == "semantic":  # the candidates the calibration applies to, and their evidence
        kept = [(t, e) for t, e in ev if e.get("cos") is not None]
        x = [[e["cos"]] for _, e in kept]
        off = [0.0] * len(kept)
    else:
        kept = [(t, e) for t, e in ev if e["bm25"] > 0 or cal.fuzzy_strength(e.get("fuzzy", 0.0)) > 0]
        x = [[math.log1p(e["bm25"] * scale), e["bm25"] / best] for _, e in kept]
        # the fuzzy name's weight is not fitted (the bench's queries are sentences, see FUZZY_FLOOR)
        off = [cal.KW_FUZZY * cal.fuzzy_strength(e.get("fuzzy", 0.0)) for _, e in kept]
    rel = set(q["relevant"])
    return (
        q,
        [t for t, _ in kept],
        np.array(x, float).reshape(len(kept), 1 if mode == "semantic" else 2),
        np.array(off, float),
        np.array([t in rel for t, _ in kept], bool),
    )


def single_mode(mode: str) -> tuple[list[float], list[float], float]:
    """Platt constants, listwise constants and threshold of keyword or semantic mode, fitted like hybrid's."""
    data = load(mode=mode)
    items = {}
    for s in [*FEASIBLE, *INFEASIBLE]:
        items[s] = [mode_item(mode, q, ev) for q, ev in data[s]]
    known = current()
    if mode == "keyword":
        held = (cal.KW_LOG, cal.KW_REL, cal.KW_BIAS), cal.KW_LISTWISE, cal.KEYWORD_THRESHOLD
    else:
        held = (
            (known.platt["semantic"], known.listwise["semantic"], known.threshold["semantic"]) if known else (None,) * 3
        )
    return calibrate(items, mode, *held)


def write(model: str, hyb: dict, sem: tuple[list[float], list[float], float]) -> None:
    import json

    doc = json.loads(cal.FITS_FILE.read_text())
    # what this fit does not fit (the learned signal's constants are benchmarks/learned_sim.py's,
    # the far gate's benchmarks/gate_dev.py's, ...): kept as it is
    ours = ("cos", "coverage", "name", "ramp", "action", "server", "platt", "listwise", "threshold", "fitted")
    kept = {k: v for k, v in doc["models"].get(model, {}).items() if k not in ours}
    doc["models"][model] = {
        **kept,
        **{k: hyb[k] for k in ("cos", "coverage", "name", "ramp", "action")},
        "server": hyb.get("server", 0.0),
        "platt": {"hybrid": hyb["platt"], "semantic": sem[0]},
        "listwise": {"hybrid": hyb["listwise"], "semantic": sem[1]},
        "threshold": {"hybrid": hyb["threshold"], "semantic": round(sem[2], 4)},
        "fitted": "benchmarks/fit_fusion.py on every bench set (ETOM L1-L4, LiveMCPBench, "
        "livemcp-natural) less the queries the model was trained on, and CLINC150's out-of-scope "
        "requests as impossible ones; the action marks with the rest, leave-one-set-out"
        + ("; the server evidence's weight by --server, this model's fusion kept" if SERVER else "")
        + (
            "; by --keep-fusion: this model's fusion and server weight kept, hybrid's Platt, listwise, "
            "threshold and action marks (opposed, reads_only, writes) refitted"
            if KEEP_FUSION
            else ""
        ),
    }
    cal.FITS_FILE.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\nwrote {model}'s fit to {cal.FITS_FILE}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("hybrid", "keyword", "semantic"))
    ap.add_argument("--write", action="store_true", help="store the fit in toolidx/search/calibration.json")
    ap.add_argument(
        "--keep-fusion", action="store_true", help="keep this model's fusion weights (calibration.json); fit the rest"
    )
    ap.add_argument(
        "--server", action="store_true", help="fit the server evidence's weight; keep this model's fusion weights"
    )
    args = ap.parse_args()
    global KEEP_FUSION, SERVER
    KEEP_FUSION, SERVER = args.keep_fusion, args.server
    if args.write and args.only:
        ap.error("--write needs every mode's fit (no --only)")
    out: dict = {}
    known = current()
    for mode in ("hybrid", "keyword", "semantic"):
        if KEEP_FUSION and known and mode != "hybrid" and args.only is None:
            # hybrid's refit: the other modes' constants, which read no action mark, as they are
            if mode == "semantic":
                sem = known.platt["semantic"], known.listwise["semantic"], known.threshold["semantic"]
                out[mode] = (list(sem[0]), list(sem[1]), sem[2])
            continue
        if args.only in (None, mode):
            out[mode] = hybrid() if mode == "hybrid" else single_mode(mode)
    if args.write:
        from toolidx.core.embedding import resolve_model

        write(str(resolve_model(path=MODEL).name), out["hybrid"], out["semantic"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
