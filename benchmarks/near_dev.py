"""The near gate (toolidx.search.near, issue 43): measure it, fit its bound per model.

One run reads the rows benchmarks/gate_dev.py reads (every bench set and style, their far / near
and CLINC150's out-of-scope requests, benchmarks/data/gate_dev.jsonl on the 16 real servers: its
`collect`, imported), with the near gate's reading of each hybrid search beside them: the coined
names no tool has and the best cosine. The gate is read, never applied, so before / after is one
run; the far gate is applied at each model's shipped bound on both sides.

The near gate turns a request away when it names a product no tool has and its best cosine is
under B, or asks an action no tool about its object does and its best cosine is under A. B, then
A beside it (calibration.json `near`: "cos", "action_cos", per model), are each the one of GRID
that turns away the most near requests (livemcp-natural's and gate_dev.jsonl's, pooled; of
equals, the most far ones, then the lowest), within gate_dev.py's constraints:
- no servable request that keyword or semantic alone puts a right tool of in its top 5, and that
  hybrid answers, turned away;
- at most 1 point of gated R@5 on every pooled group (gate_dev.GROUPS).
Fit-or-refuse: a model without a B that turns away anything within them gets no key, and no gate.

    python benchmarks/near_dev.py [--models v2,MiniLM] [--json OUT] [--rows IN] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import gate_dev

GRID = [round(0.10 + 0.01 * j, 2) for j in range(61)]  # 0.10 .. 0.70
SETS = ("dev near", "natural near", "etom infeasible", "natural far", "clinc oos", "dev far")


def collect(models: dict[str, str], work: Path) -> dict:
    """gate_dev's rows, each with "near": the near gate's reading of its hybrid search (None: it
    names no coined product the catalog lacks)."""
    from toolidx.search import calibration as cal
    from toolidx.search import near as near_gate

    for path in models.values():
        model = gate_dev._model_id(path)
        cal.FITS[model] = dataclasses.replace(cal.FITS[model], near={"cos": -2.0})  # read, never applied
    seen: dict[str, dict] = {}
    read = near_gate.read

    def spy(text, terms, cands, scored, fit, df, rows, slips=()):
        got = read(text, terms, cands, scored, fit, df, rows, slips)
        if got is not None:
            seen[text] = {"missing": list(got.missing), "lacking": got.lacking, "cos": round(got.cosine, 4)}
        return got

    measure = gate_dev.measure

    def measured(db, queries, labels, emb):
        seen.clear()
        rows = measure(db, queries, labels, emb)
        for row in rows:
            row["near"] = seen.get(row["query"])
        return rows

    near_gate.read, gate_dev.measure = spy, measured
    try:
        return gate_dev.collect(models, work)
    finally:
        near_gate.read, gate_dev.measure = read, measure


def shipped_far(models: dict[str, str]) -> dict[str, tuple[float, float] | None]:
    """Each model's far gate as shipped (the file: collect turned the loaded one off)."""
    from toolidx.search import calibration as cal

    raw = json.loads(cal.FITS_FILE.read_text())["models"]
    out = {}
    for label, path in models.items():
        g = raw[gate_dev._model_id(path)].get("gate")
        out[label] = (float(g["share"]), float(g["cos"])) if g else None
    return out


def near(row: dict, bound: tuple[float | None, float | None] | None) -> bool:
    """Whether the near gate turns the request away at `bound`: (the product part's cosine
    bound, the action part's), None for a part that is off."""
    got = row.get("near")
    if bound is None or got is None:
        return False
    product, action = bound
    return (product is not None and bool(got["missing"]) and got["cos"] < product) or (
        action is not None and got.get("lacking") is not None and got["cos"] < action
    )


def answered(row: dict, far_bound, bound) -> bool:
    return row["answered"] and not gate_dev.far(row, far_bound) and not near(row, bound)


def summary(rows: dict, label: str, far_bound, bound) -> dict:
    """gate_dev.summary's numbers with the far gate at its shipped bound and the near gate at `bound`."""
    out: dict = {}
    for key, rs in rows.items():
        lab, name = key.split("|", 1)
        if lab != label or not rs:
            continue
        n = len(rs)
        ans = [answered(r, far_bound, bound) for r in rs]
        if "R@1" in rs[0]:
            out[name] = {
                "n": n,
                "R@1": sum(r["R@1"] for r in rs) / n,
                "R@5": sum(r["R@5"] for r in rs) / n,
                "R@5 gated": sum(r["R@5"] * a for r, a in zip(rs, ans)) / n,
                "answered": sum(ans) / n,
                "alone5 turned away": sum(r["alone5"] and not a for r, a in zip(rs, ans)),
                "alone5 near": sum(r["alone5"] and answered(r, far_bound, None) and near(r, bound) for r in rs),
            }
        else:
            out[name] = {"n": n, "turned away": 1 - sum(ans) / n}
    return out


def fit(rows: dict, label: str, far_bound) -> tuple[tuple[float | None, float | None] | None, str]:
    """The product part's bound first (the action part off), then the action part's beside it:
    each the best of GRID within the constraints, None where none turns a near request away."""
    product = _fit(rows, label, far_bound, lambda b: (b, None))
    action = _fit(rows, label, far_bound, lambda b: (product, b))
    how = (
        "the best cosine bounds (a product no tool names; then an action none of the best tools may do) "
        "that turn away the most near requests (livemcp-natural's, gate_dev.jsonl's), with no servable "
        "request keyword or semantic alone has a right tool of in its top 5 turned away, at most 1 point "
        "of gated R@5 on each pooled catalog"
    )
    return ((product, action) if product is not None or action is not None else None), how


def _fit(rows: dict, label: str, far_bound, bounds) -> float | None:
    base = summary(rows, label, far_bound, bounds(None))
    best: tuple[tuple[float, float, float], float] | None = None
    for b in GRID:
        s = summary(rows, label, far_bound, bounds(b))
        if any(v.get("alone5 near", 0) for v in s.values()):
            continue
        if any(gate_dev._cost(base, s, sets) > 0.01 for sets in gate_dev.GROUPS.values()):
            continue
        got = gate_dev.pooled(s, gate_dev.NEAR, "turned away") - gate_dev.pooled(base, gate_dev.NEAR, "turned away")
        key = (round(got, 9), round(gate_dev.pooled(s, gate_dev.FAR, "turned away"), 9), -b)
        if got > 0 and (best is None or key > best[0]):
            best = (key, b)
    return best[1] if best else None


Bound = tuple[float | None, float | None] | None


def report(rows: dict, bounds: dict[str, Bound], far_bounds: dict) -> None:
    for label, b in bounds.items():
        fb = far_bounds[label]
        before, after = summary(rows, label, fb, None), summary(rows, label, fb, b)
        print(f"\n{label}: near at (product, action) cosine bounds {b} (far gate at {fb})")
        gate_dev.table(before, after)
        for tag, sets in (("far", gate_dev.FAR), ("near", gate_dev.NEAR)):
            print(
                f"  {tag} turned away (pooled): {gate_dev.pooled(before, sets, 'turned away'):.3f} -> "
                f"{gate_dev.pooled(after, sets, 'turned away'):.3f}"
            )
        for key, rs in rows.items():  # what the gate reads, for the impossible sets and what it turns away
            lab, name = key.split("|", 1)
            if lab != label:
                continue
            hit = [r for r in rs if near(r, b) and answered(r, fb, None)]
            if hit:
                print(
                    f"  {name}: turned away {len(hit)}: "
                    + "; ".join(f"{r['query'][:60]!r} {r['near']}" for r in hit[:6])
                )


def write(bounds: dict[str, Bound], models: dict[str, str], how: str) -> None:
    """Each model's key `near` in calibration.json, read afresh: the file's other keys are others'."""
    from toolidx.search import calibration as cal

    raw = json.loads(cal.FITS_FILE.read_text())
    for label, b in bounds.items():
        model = gate_dev._model_id(models[label])
        if b is None:
            raw["models"][model].pop("near", None)
        else:
            fitted = {"cos": b[0], "action_cos": b[1]}
            raw["models"][model]["near"] = {k: v for k, v in fitted.items() if v is not None} | {
                "fitted": f"benchmarks/near_dev.py: {how}"
            }
    cal.FITS_FILE.write_text(json.dumps(raw, indent=2) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(gate_dev.MODELS))
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--rows", help="read the rows of an earlier --json instead of measuring")
    ap.add_argument("--write", action="store_true", help="store the fitted bounds in calibration.json")
    args = ap.parse_args()
    models = {m: gate_dev.MODELS[m] for m in args.models.split(",")}
    t0 = time.time()
    rows = gate_dev.rows_for(args, models, collect)
    far_bounds = shipped_far(models)
    bounds: dict[str, Bound] = {}
    how = ""
    for label in models:
        bounds[label], how = fit(rows, label, far_bounds[label])
    report(rows, bounds, far_bounds)
    if args.write:
        write(bounds, models, how)
    print(f"total {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
