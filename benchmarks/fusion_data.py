"""The fitting data of the hybrid fusion and calibration: every bench query's hybrid candidates
with their evidence, as `search.gather` computes it, grouped by set.

    from fusion_data import load
    sets = load()   # {set name: [(query dict, [(tool id, evidence dict), ...]), ...]}

Cached in $TOOLIDX_BENCH_CACHE (outside the repository: the bench data stay in ../shared), keyed
by the index fingerprint and the search code, so a change to gathering refreshes it.
The sets (one per style or kind, so leave-one-set-out can hold out each):
etom L1, etom L2, etom infeasible, livemcp (task prompts), natural plain / terse / typo / long /
name, natural far / near (impossible requests), clinc oos (CLINC150's out-of-scope requests,
written by people, against LiveMCPBench's catalog: impossible there too; ../shared/train/clinc150,
CC BY 3.0, never trained on).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import random

from _common import BENCH, CACHE, REPO, SHARED
from bench_index import build, embedder, fingerprint, model_tag, trained_queries

FEASIBLE = (
    "etom L1",
    "etom L2",
    "livemcp",
    "natural plain",
    "natural terse",
    "natural typo",
    "natural long",
    "natural name",
)
INFEASIBLE = ("etom infeasible", "natural far", "natural near", "clinc oos")
CLINC_OOS = 300  # of CLINC150's 1,000 oos_test requests (seeded sample): as many as the largest other set


def _key() -> str:
    h = hashlib.sha256((fingerprint() + model_tag()).encode())
    for f in (
        "toolidx/search/hybrid.py",
        "toolidx/store/retrieval.py",
        "toolidx/store/sqlite/retrieval.py",
        "toolidx/core/tokens.py",
        "toolidx/search/quoted.py",
        "toolidx/search/actions.py",
        "toolidx/search/negation.py",
        "toolidx/search/server_match.py",
        "toolidx/search/spelling.py",
        "toolidx/search/words.txt",
        "benchmarks/fusion_data.py",
    ):
        h.update((REPO / f).read_bytes())
    return h.hexdigest()[:12]


def _queries(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def specs():
    """set name -> (catalog, queries)"""
    nat = _queries(BENCH / "livemcp-natural" / "queries.jsonl")
    nat_x = _queries(BENCH / "livemcp-natural" / "queries_infeasible.jsonl")
    trained = trained_queries("etom/queries.jsonl")  # fitted on what the model never saw
    etom = [q for q in _queries(BENCH / "etom" / "queries.jsonl") if q["id"] not in trained]
    out = {
        "etom L1": ("etom", [q for q in etom if q.get("level") == 1]),
        "etom L2": ("etom", [q for q in etom if q.get("level") == 2]),
        "etom infeasible": ("etom", _queries(BENCH / "etom" / "queries_infeasible.jsonl")),
        "livemcp": ("livemcp", _queries(BENCH / "livemcp" / "queries.jsonl")),
    }
    for style in ("plain", "terse", "typo", "long", "name"):
        out[f"natural {style}"] = ("livemcp", [q for q in nat if q["style"] == style])
    for kind in ("far", "near"):
        out[f"natural {kind}"] = ("livemcp", [q for q in nat_x if q["kind"] == kind])
    out["clinc oos"] = ("livemcp", clinc_oos())
    return out


def clinc_oos() -> list[dict]:
    """CLINC_OOS of CLINC150's out-of-scope test requests, a seeded sample, as impossible queries."""
    oos = [
        {"id": q["qid"], "query": q["query"], "relevant": []}
        for q in _queries(SHARED / "train" / "clinc150" / "queries_no_tool.jsonl")
        if q["split"] == "oos_test"
    ]
    random.Random(5).shuffle(oos)
    return oos[:CLINC_OOS]


def held_specs():
    """The multi-tool sets quality.py reports as held out: "all" labels (every tool needed) as
    `relevant`, steps (any alternative meets a step) as `steps`."""

    def steps(path):
        return [q | {"relevant": [i for s in q["steps"] for i in s]} for q in _queries(path)]

    return {
        "etom L3 (all)": ("etom", _queries(BENCH / "etom" / "queries_multi.jsonl")),
        "etom L4 (steps)": ("etom", steps(BENCH / "etom" / "queries_level4.jsonl")),
        "livemcp relaxed": ("livemcp", steps(BENCH / "livemcp" / "queries_relaxed.jsonl")),
    }


def load(refresh: bool = False, held: bool = False, mode: str = "hybrid") -> dict[str, list]:
    """mode: whose candidates and evidence (keyword and semantic mode read the query plainly and
    rank by their own evidence, so their calibration is fitted on their own candidates)."""
    tag = ("-held" if held else "") + ("" if mode == "hybrid" else f"-{mode}")
    path = CACHE / f"fusion-{_key()}{tag}.pkl"
    if path.exists() and not refresh:
        with open(path, "rb") as f:
            return pickle.load(f)
    from toolidx.search import hybrid

    emb = embedder() if mode != "keyword" else None
    dbs = {name: build(name) for name in ("etom", "livemcp")}
    info = {}
    for name, db in dbs.items():
        info[name] = {r["rowid"]: (r["id"], r["server"]) for r in db.query("SELECT rowid, id, server FROM tools")}
        hybrid.warm(db, emb)
    out: dict[str, list] = {}
    for set_name, (cat, qs) in (held_specs() if held else specs()).items():
        db, ids = dbs[cat], info[cat]
        rows = []
        for q in qs:
            cands, terms, _, _ = hybrid.gather(db, q["query"], mode=mode, filters=None, embedder=emb)
            ev = [
                (ids[r][0], {k: v for k, v in c.items() if k != "matched"} | {"n_matched": len(c.get("matched", ()))})
                for r, c in cands.items()
            ]
            rows.append(
                (
                    {
                        "id": q["id"],
                        "query": q["query"],
                        "relevant": q["relevant"],
                        "steps": q.get("steps"),
                        "n_terms": len(terms),
                        "terms": terms,
                        "n_tools": len(ids),
                    },
                    ev,
                )
            )
        out[set_name] = rows
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(out, f)
    return out


if __name__ == "__main__":
    d = load(refresh=True)
    print({k: len(v) for k, v in d.items()})
