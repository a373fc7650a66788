"""The far gate (toolidx.search.gate, issue 43 Deliver 1): measure it, fit its bound per model.

One run reads, per model, every request of every bench set and style (bench_index.labelled_sets:
ETOM, LiveMCPBench, livemcp-natural, their far / near and CLINC150's out-of-scope requests) and
of benchmarks/data/gate_dev.jsonl (written before the gate's lexicons, on the 16 real servers of
the test suite), in hybrid (the ranking and whether the calibrated gate answers it; the far gate's
reading: the subject words, those a best tool has, the best cosine), keyword and semantic (whether
a right tool is in their top 5). With the far gate's bound off, that is the code before it; each
bound is then the same rows read again, so before / after is one run. So is the rule of a task of
several steps (actions.several_steps: "create a project and then list its tools" is not lowered for
its reading step): read, never applied, while measuring; kept() applies it to the rows.

The far gate turns a request away when the idf-weighed share of its subject words that its best
tools have is under S and its best cosine under B. (S, B) (calibration.json `gate`, per model) are
those of GRID that turn away the most far requests (pooled) and
- turn away no servable request that keyword or semantic alone puts a right tool of in its top 5
  and the calibrated gate answers (issue 43: never "no good match" for those), and
- cost at most 1 point of gated R@5 (R@5 counting a turned-away request as a miss) on every
  pooled group: ETOM (L1-L4), LiveMCPBench (tasks, steps), livemcp-natural (every style), the dev
  set's servable requests.
Fit-or-refuse: a model without the key has no far gate.

    python benchmarks/gate_dev.py [--models v2,MiniLM] [--code DIR] [--json OUT] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
import time
from pathlib import Path

from _common import MODEL, PACKAGED, REPO, measure_code, servers_dir

MODELS = {"v2": PACKAGED, "MiniLM": MODEL}
DEV = REPO / "benchmarks" / "data" / "gate_dev.jsonl"
# (share, cos): share 0.1 .. 0.9, cos 0.10 .. 0.40
GRID = [(round(0.1 * i, 1), round(0.10 + 0.01 * j, 2)) for i in range(1, 10) for j in range(31)]
GROUPS = {
    "etom": ("etom L1", "etom L2", "etom L3 (all)", "etom L4 (steps)"),
    "livemcp": ("livemcp", "livemcp relaxed"),
    "natural": tuple(f"natural {s}" for s in ("plain", "terse", "typo", "long", "name")),
    "dev servable": ("dev servable",),
}
FAR = ("etom infeasible", "natural far", "clinc oos", "dev far")
NEAR = ("natural near", "dev near")


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path) if line.strip()]


def _model_id(path: str) -> str:
    from toolidx.core.embedding import resolve_model

    return resolve_model(path=path).name


def _gold(q: dict, labels: str) -> set[str]:
    return {i for s in q["steps"] for i in s} if labels == "steps" else set(q.get("relevant") or ())


def _right(ids: list[str], q: dict, labels: str) -> bool:
    return bool(_gold(q, labels) & set(ids[:5]))


def measure(db, queries: list[dict], labels: str, emb) -> list[dict]:
    """Per request: hybrid's ranking and answer with the far gate read but never applied, the far
    gate's reading, and whether keyword or semantic alone has a right tool in its top 5."""
    from toolidx.search import actions
    from toolidx.search import calibration as cal
    from toolidx.search import gate as far_gate
    from toolidx.search.eval import ranking_metrics
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    seen: list = []
    read = far_gate.read
    several = actions.several_steps
    steps: list[bool] = []

    def steps_spy(text, asked):  # read, never applied: steps() applies it to the rows
        steps.append(several(text, asked))
        return False

    def spy(text, terms, cands, scored, fit, df, n_tools):
        import heapq

        best = heapq.nlargest(far_gate.K, scored, key=scored.__getitem__)
        have = sorted({w for r in best for w in cands[r].get("matched", ())})
        cos = max((c.get("cos") or 0.0 for c in cands.values()), default=0.0)
        seen.append({"terms": list(terms), "have": have, "cos": round(cos, 4), "df": df(list(terms)), "n": n_tools})
        seen.append(_ranks(db, cands, scored, best))
        return read(text, terms, cands, scored, fit, df, n_tools)

    rows = []
    far_gate.read, actions.several_steps = spy, steps_spy
    reads_w = cal.fit_for(db.get_meta("embed_model")).action[1]
    try:
        for q in queries:
            seen.clear()
            steps.clear()
            res = search(db, SearchRequest(q["query"], mode="hybrid", limit=10, min_score=0.0), embedder=emb)
            ids = [h.id for h in res.hits]
            row = {
                "id": q.get("id"),
                "query": q["query"],
                "answered": bool(res.hits) and res.hits[0].score >= res.gate,
                "top": res.hits[0].score if res.hits else 0.0,
                "gate": res.gate,
                "hits": ids,
                "read": seen[0] if seen else None,  # None: the far gate does not judge it
                # the candidates in keyword's or semantic's top 10 within hybrid: [id, kw rank,
                # vec rank, hybrid score, reads_only, opposed, does, negated]
                "cands": seen[1] if seen else None,
                "steps": any(steps),  # a task of several steps (actions.several_steps)
                "reads_w": reads_w,
            }
            alone = False
            for mode in ("keyword", "semantic"):
                r = search(db, SearchRequest(q["query"], mode=mode, limit=10, min_score=0.0), embedder=emb)
                mids = [h.id for h in r.hits]
                alone = alone or (labels != "none" and _right(mids, q, labels))
                row[f"{mode} top"] = r.hits[0].score if r.hits else 0.0
                row[f"{mode} gate"] = r.gate
                row[f"{mode} hits"] = mids
            if labels != "none":
                gold = q["steps"] if labels == "steps" else q["relevant"]
                m = ranking_metrics(ids, gold, labels, (1, 5))
                row |= {"R@1": m["R@1"], "R@5": m["R@5"], "alone5": alone, "gold": sorted(_gold(q, labels))}
            rows.append(row)
    finally:
        far_gate.read, actions.several_steps = read, several
    return rows


def _ranks(db, cands: dict, scored: dict, best: list) -> list:
    keep = [r for r, c in cands.items() if min(c.get("kw_rank", 99), c.get("vec_rank", 99)) < 10 or r in best]
    rows = db.retrieval.hit_rows(keep)
    return [
        [
            rows[r]["id"],
            cands[r].get("kw_rank"),
            cands[r].get("vec_rank"),
            scored.get(r, 0.0),
            *(int(cands[r].get(k) or 0) for k in ("reads_only", "opposed", "does", "negated")),
        ]
        for r in keep
        if r in rows
    ]


def collect(models: dict[str, str], work: Path) -> dict:
    from _common import cli
    from bench_index import build, embedder, labelled_sets

    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.search import calibration as cal
    from toolidx.store.db import open_db

    spec = labelled_sets(models.values())
    dev = _jsonl(DEV)
    out: dict = {}
    for label, path in models.items():
        model = _model_id(path)
        # read, never applied: the bound is chosen afterwards on these rows
        cal.FITS[model] = dataclasses.replace(cal.FITS[model], gate={"share": -1.0, "cos": -2.0})
        emb = embedder(threads=QUERY_THREADS, model=path)
        dbp = work / f"real-{label}.db"
        code, _, err = cli("crawl", "--config", Path(servers_dir()) / "servers.json", "--db", dbp, "--model-path", path)
        if code != 0:
            sys.exit(f"crawl of the real servers failed: {err.strip()[-500:]}")
        real = open_db(dbp)
        for kind in ("servable", "far", "near"):
            qs = [q for q in dev if q["kind"] == kind]
            out[f"{label}|dev {kind}"] = measure(real, qs, "any" if kind == "servable" else "none", emb)
        real.close()
        dbs = {c: build(c, model=path) for c in ("etom", "livemcp")}
        for name, (cat, qs, labels) in spec.items():
            out[f"{label}|{name}"] = measure(dbs[cat], qs, labels, emb)
            print(f"{label} {name}: {len(qs)}", file=sys.stderr, flush=True)
    return out


def far(row: dict, bound: tuple[float, float] | None) -> bool:
    """Whether the far gate turns the request away at `bound`, its subject words read as
    search.gate reads them now (the rows keep what search found, so a lexicon change needs no
    new run)."""
    from toolidx.search import gate as far_gate

    if bound is None or row["read"] is None:
        return False
    if "subjects" not in row:
        read = row["read"]
        row["subjects"] = subject = far_gate.subjects(row["query"], read["terms"])
        covered = set(read["have"]).intersection(subject)
        row["share"] = far_gate.coverage(subject, covered, read["df"], read["n"]) if subject else None
    share, cos = bound
    return bool(row["subjects"]) and row["share"] < share and row["read"]["cos"] < cos


def kept(row: dict) -> bool:
    """Whether actions.several_steps keeps an answer the rows' code turned away: a task of several
    steps whose list a reading tool led was lowered by the model's reads_only weight, and scores at
    the calibrated gate without it (the lowering moves the whole list alike)."""
    if row["answered"] or not row.get("steps") or not row.get("cands") or not row["hits"]:
        return False
    marks = {c[0]: c for c in row["cands"]}
    top = marks.get(row["hits"][0])
    if top is None or not top[4] or any(marks[i][6] for i in row["hits"][:5] if i in marks):
        return False
    x = min(max(top[3], 1e-300), 1 - 1e-16)
    return 1 / (1 + math.exp(-(math.log(x / (1 - x)) + row["reads_w"]))) >= row["gate"]


def answered(row: dict, bound: tuple[float, float] | None, steps: bool = True) -> bool:
    return (row["answered"] or (steps and kept(row))) and not far(row, bound)


def summary(rows: dict, label: str, bound: tuple[float, float] | None, steps: bool = True) -> dict:
    """Per set: R@1, R@5, gated R@5, answered share; far / near turned away; the servable
    requests keyword or semantic alone found (top 5) that hybrid turns away."""
    out: dict = {}
    for key, rs in rows.items():
        lab, name = key.split("|", 1)
        if lab != label or not rs:
            continue
        n = len(rs)
        ans = sum(answered(r, bound, steps) for r in rs) / n
        if "R@1" in rs[0]:
            out[name] = {
                "n": n,
                "R@1": sum(r["R@1"] for r in rs) / n,
                "R@5": sum(r["R@5"] for r in rs) / n,
                "R@5 gated": sum(r["R@5"] * answered(r, bound, steps) for r in rs) / n,
                "answered": ans,
                "alone5 turned away": sum(r["alone5"] and not answered(r, bound, steps) for r in rs),
                "alone5 far": sum(r["alone5"] and answered(r, None, steps) and far(r, bound) for r in rs),
            }
        else:
            out[name] = {"n": n, "turned away": 1 - ans}
    return out


def fit(rows: dict, label: str) -> tuple[tuple[float, float] | None, str]:
    """The (share, cos) bounds of GRID that turn away the most far requests (pooled) within the
    constraints (module doc); of equals, the lowest: the least that reaches it."""
    base = summary(rows, label, None)
    best: tuple[float, tuple[float, float]] | None = None
    for b in GRID:
        s = summary(rows, label, b)
        if any(v.get("alone5 far", 0) for v in s.values()):
            continue
        if any(_cost(base, s, sets) > 0.01 for sets in GROUPS.values()):
            continue
        got = pooled(s, FAR, "turned away")
        if best is None or got > best[0] + 1e-9:
            best = (got, b)
    how = (
        "the (share, cos) that turn away the most far requests (ETOM's infeasible, livemcp-natural's far, "
        "CLINC150's out-of-scope, gate_dev.jsonl's) and no servable request keyword or semantic alone "
        "has a right tool of in its top 5, at most 1 point of gated R@5 on each pooled catalog"
    )
    return (best[1] if best else None), how


def _cost(base: dict, s: dict, sets: tuple[str, ...]) -> float:
    n = sum(base[x]["n"] for x in sets if x in base)
    return sum((base[x]["R@5 gated"] - s[x]["R@5 gated"]) * base[x]["n"] for x in sets if x in base) / n if n else 0.0


def pooled(s: dict, sets: tuple[str, ...], key: str) -> float:
    n = sum(s[x]["n"] for x in sets if x in s)
    return sum(s[x][key] * s[x]["n"] for x in sets if x in s) / n if n else 0.0


def rows_for(args, models: dict[str, str], measure=None) -> dict:
    """The rows of `--rows` (an earlier `--json`), or of a new run of `measure` (this script's
    collect unless given) written to `--json`."""
    if args.rows:
        return json.loads(Path(args.rows).read_text())
    with tempfile.TemporaryDirectory() as work:
        rows = (measure or collect)(models, Path(work))
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    return rows


def table(before: dict, after: dict) -> None:
    """Each set's summary before -> after (near_dev.py prints its gate's so too)."""
    print(f"  {'set':17s} {'n':>4s}  {'R@1':>5s} {'R@5':>5s}  {'R@5 gated':>13s}  {'answered':>13s}  alone5 away")
    for name, v in after.items():
        w = before[name]
        if "R@1" in v:
            print(
                f"  {name:17s} {v['n']:4d}  {v['R@1']:.3f} {v['R@5']:.3f}"
                f"  {w['R@5 gated']:.3f}->{v['R@5 gated']:.3f}"
                f"  {w['answered']:.3f}->{v['answered']:.3f}  {w['alone5 turned away']}->{v['alone5 turned away']}"
            )
        else:
            print(f"  {name:17s} {v['n']:4d}  turned away {w['turned away']:.3f}->{v['turned away']:.3f}")


def report(rows: dict, bounds: dict[str, tuple[float, float] | None]) -> None:
    for label, b in bounds.items():
        before, after = summary(rows, label, None, steps=False), summary(rows, label, b)
        print(f"\n{label}: far when the subject's covered share < {b and b[0]} and the best cosine < {b and b[1]}")
        table(before, after)
        for tag, sets in (("far", FAR), ("near", NEAR), ("bench far", FAR[:3]), ("bench near", NEAR[:1])):
            print(
                f"  {tag} turned away (pooled): {pooled(before, sets, 'turned away'):.3f} -> "
                f"{pooled(after, sets, 'turned away'):.3f}"
            )
        print(
            "  servable with a right tool in keyword's or semantic's top 5, turned away: "
            f"{sum(v.get('alone5 turned away', 0) for v in before.values())} -> "
            f"{sum(v.get('alone5 turned away', 0) for v in after.values())}"
        )
        off = summary(rows, label, b, steps=False)
        print("  a task of several steps (actions.several_steps), at that bound: off -> on")
        for name, v in after.items():
            w = off[name]
            if "R@1" in v:
                print(
                    f"    {name:17s} R@5 gated {w['R@5 gated']:.3f}->{v['R@5 gated']:.3f}"
                    f"  alone5 away {w['alone5 turned away']}->{v['alone5 turned away']}"
                )
            else:
                print(f"    {name:17s} turned away {w['turned away']:.3f}->{v['turned away']:.3f}")


def write(bounds: dict[str, tuple[float, float] | None], models: dict[str, str], how: str) -> None:
    from toolidx.search import calibration as cal

    raw = json.loads(cal.FITS_FILE.read_text())
    for label, b in bounds.items():
        model = _model_id(models[label])
        if b is None:
            raw["models"][model].pop("gate", None)
        else:
            raw["models"][model]["gate"] = {"share": b[0], "cos": b[1], "fitted": f"benchmarks/gate_dev.py: {how}"}
    cal.FITS_FILE.write_text(json.dumps(raw, indent=2) + "\n")


def _index_from(code: Path) -> None:
    """Bench indexes keyed by the measured code's files, not this checkout's (bench_index.fingerprint):
    another change in progress here must neither rebuild them nor share them."""
    import hashlib

    import bench_index

    def fingerprint() -> str:
        h = hashlib.sha256()
        for f in ("core/tooldoc.py", "store/sqlite/migrations.py", "crawl/sources.py", "store/crawls.py"):
            h.update((code / "toolidx" / f).read_bytes())
        return h.hexdigest()[:12]

    bench_index.fingerprint = fingerprint


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--rows", help="read the rows of an earlier --json instead of measuring")
    ap.add_argument("--code", help="measure the toolidx package in this folder")
    ap.add_argument("--write", action="store_true", help="store the fitted bounds in calibration.json")
    args = ap.parse_args()
    if args.code:
        measure_code(args.code, {})
        _index_from(Path(args.code))
    models = {m: MODELS[m] for m in args.models.split(",")}
    t0 = time.time()
    rows = rows_for(args, models)
    bounds: dict[str, tuple[float, float] | None] = {}
    how = ""
    for label in models:
        bounds[label], how = fit(rows, label)
    report(rows, bounds)
    if args.write:
        write(bounds, models, how)
    print(f"total {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
