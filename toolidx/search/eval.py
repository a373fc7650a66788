"""Retrieval quality on your own catalog: `toolidx eval QUERIES.jsonl`.

Query file: JSON lines `{"id", "query", "relevant": [tool ids]}` (the ../shared/bench format);
extra fields (e.g. "level") can group the report (`by`). `relevant: []` marks a request no tool
serves: it counts toward the abstention rate (did search say "no good match"?). With "steps"
labels each line carries `"steps": [[alternative ids], ...]` instead (ETOM level 4): the query
needs every step and any one alternative meets a step; `"steps": []` = no tool serves it.

Metrics per mode, over queries with at least one relevant tool in the index (definitions as in
../shared/bench/etom/eval_bm25.py):
- R@k: share of queries with a relevant tool in the top k ("any" labels, default), the mean
  share of the relevant tools in the top k ("all" labels: the query needs every one of them), or
  the mean share of steps met in the top k ("steps" labels);
- All@10 ("all" and "steps" labels): share of queries with every needed tool / step in the top 10;
- MRR@10: mean 1/rank of the first relevant tool (for steps: the first tool that meets any step;
  0 when none is in the top 10);
- nDCG@10: binary gains, ideal DCG over min(|relevant|, 10); for steps a tool gains 1 only when it
  meets a step not met higher up, and the ideal counts min(#steps, 10);
- R@5@threshold and answered: the same with the "no good match" threshold applied (a query the
  search abstains on counts as a miss), and the share of these queries that got any hit.
Ranking metrics are computed with the threshold off, so they measure ranking alone.
Queries whose relevant ids are all missing from the index are listed under "unresolved", not
counted as misses; ids partly missing are listed under "partly_unresolved" (for steps: missing
alternatives are dropped, and only a step left with none makes the query partly unresolved).

Per mode, "reliability" bins every shown hit's score (impossible requests' hits included) against
whether the hit serves its query, with the ECE (is the score a probability?); "abstention" is split
by an impossible request's "kind" field when it has one (livemcp-natural: far / near).
Per mode, "misses" lists the queries whose first relevant tool is not ranked first (what to read
to fix tool descriptions); with 2+ modes, "paired" compares the first mode with each other one
query by query (better / worse counts and an exact sign test), and with `by` per group too
("paired_groups").
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..core.embedding import INDEX_MODEL, QueryEmbedder
from ..core.errors import UsageError
from ..core.filters import Filters
from ..core.vocabulary import SEARCH_MODES
from ..store.index import Reader
from .request import SearchRequest

KS = (1, 5, 10)
LABELS = ("any", "all", "steps")
PAIRED = ("R@1", "R@5", "MRR@10")  # compared query by query between modes (those present)
QUERY_CUT = 200  # a miss quotes this much of its query


def _valid_steps(steps: Any) -> bool:
    return isinstance(steps, list) and all(
        isinstance(s, list) and s and all(isinstance(i, str) for i in s) for s in steps
    )


def load_queries(path: str | Path, labels: str = "any") -> list[dict]:
    """The query lines of `path`; with "steps" labels each must carry a valid "steps" list, and
    "relevant" becomes every alternative of every step (what feasibility and misses look at)."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(
            "queries file not found", where=str(p), fix='pass a JSONL file of {"id", "query", "relevant": [ids]}'
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read queries file: {e}", where=str(p)) from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(f"invalid JSON ({e.msg})", where=f"{p}:{n}", fix="one JSON object per line") from None
        if (
            not isinstance(q, dict)
            or not isinstance(q.get("query"), str)
            or not isinstance(q.get("relevant", []), list)
        ):
            raise UsageError('each line needs "query" (string) and "relevant" (list of tool ids)', where=f"{p}:{n}")
        if labels == "steps":
            if not _valid_steps(q.get("steps")):
                raise UsageError(
                    '--labels steps: each line needs "steps", a list of steps, each a '
                    'non-empty list of alternative tool ids',
                    where=f"{p}:{n}",
                    fix='e.g. "steps": [["srv/a"], ["srv/b", "other/b"]]; "steps": [] = no tool serves it',
                )
            q["relevant"] = list(dict.fromkeys(i for s in q["steps"] for i in s))
        q.setdefault("id", f"{p.stem}:{n}")
        q.setdefault("relevant", [])
        out.append(q)
    if not out:
        raise UsageError("queries file has no queries", where=str(p))
    return out


def ranking_metrics(
    ranked: list[str], relevant: list, labels: str = "any", ks: tuple[int, ...] = KS
) -> dict[str, float]:
    """Metrics of one ranked list of tool ids against its relevant ids (non-empty); with "steps"
    labels `relevant` is the list of steps (each a list of alternative ids)."""
    if labels == "steps":
        return _steps_metrics(ranked, relevant, ks)
    rel = set(relevant)
    top = ranked[: max(max(ks), 10)]
    hits = [1 if d in rel else 0 for d in top]
    out: dict[str, float] = {}
    for k in ks:
        found = sum(hits[:k])
        out[f"R@{k}"] = found / len(rel) if labels == "all" else float(found > 0)
    if labels == "all":  # with "any" labels it would only repeat R@10
        out["All@10"] = float(sum(hits[:10]) == len(rel))
    first = next((i for i, h in enumerate(hits[:10]) if h), None)
    out["MRR@10"] = 0.0 if first is None else 1.0 / (first + 1)
    dcg = sum(h / math.log2(i + 2) for i, h in enumerate(hits[:10]))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), 10)))
    out["nDCG@10"] = dcg / ideal
    return out


def _steps_metrics(ranked: list[str], steps: list[list[str]], ks: tuple[int, ...]) -> dict[str, float]:
    # a tool named in several steps meets all of them (the plan may call it twice); on sets where
    # no tool repeats (all of ETOM L4) this is exactly eval_bm25.py's step_of mapping
    steps_of: dict[str, set[int]] = {}
    for si, alts in enumerate(steps):
        for a in alts:
            steps_of.setdefault(a, set()).add(si)
    top = ranked[: max(max(ks), 10)]
    out: dict[str, float] = {}
    for k in ks:
        met_k = set().union(*(steps_of.get(d, set()) for d in top[:k]))
        out[f"R@{k}"] = len(met_k) / len(steps)
    met: set[int] = set()
    gains = []
    for d in top[:10]:
        new = steps_of.get(d, set()) - met
        gains.append(1 if new else 0)  # a tool that only meets steps already met gains nothing
        met |= new
    out["All@10"] = float(len(met) == len(steps))
    first = next((i for i, d in enumerate(top[:10]) if d in steps_of), None)
    out["MRR@10"] = 0.0 if first is None else 1.0 / (first + 1)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(steps), 10)))
    out["nDCG@10"] = dcg / ideal
    return out


def first_rank(ranked: list[str], relevant: list[str]) -> int | None:
    """1-based rank of the first relevant tool in `ranked`, None when none is there."""
    rel = set(relevant)
    return next((i + 1 for i, d in enumerate(ranked) if d in rel), None)


def miss_entry(q: dict, ranked: list[str]) -> dict | None:
    """What a user needs to fix a query that did not rank its tool first; None when it did."""
    rank = first_rank(ranked, q["relevant"])
    if rank == 1:
        return None
    return {
        "id": q["id"],
        "query": q["query"][:QUERY_CUT],
        "rank": rank,
        "top": ranked[:3],
        "found": ranked[rank - 1] if rank else None,
        "relevant": q["relevant"][:5],
    }


def _miss_order(m: dict) -> tuple:
    return (m["rank"] is None, m["rank"] or 0, str(m["id"]))  # not found at all: last


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign test: the chance of a split at least this lopsided when each differing
    query is a fair coin (binomial, p = 1/2; ties are left out before calling)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1))
    return min(1.0, 2 * tail / 2**n)  # exact int arithmetic: no overflow for thousands of queries


def paired_comparison(
    a: list[dict[str, float]], b: list[dict[str, float]], keys: tuple[str, ...] = PAIRED
) -> dict[str, dict]:
    """Per metric: on how many queries `a` scores higher / lower than `b` (same queries, same
    order), the ties, and the sign-test p-value. A mean hides whether a gain is a few queries."""
    out = {}
    for key in keys:
        if not a or key not in a[0]:
            continue
        better = sum(1 for x, y in zip(a, b) if x[key] > y[key])
        worse = sum(1 for x, y in zip(a, b) if x[key] < y[key])
        out[key] = {"better": better, "worse": worse, "ties": len(a) - better - worse, "p": sign_test(better, worse)}
    return out


def _resolve(q: dict, known: set[str], labels: str) -> tuple[str, dict, list[str]]:
    """Keep the ids the index has: ("infeasible" | "unresolved" | "partly" | "ok", the query with
    only indexed ids, the missing ids)."""
    rel = [r for r in q["relevant"] if isinstance(r, str)]
    if not rel:
        return "infeasible", q, []
    missing = [r for r in rel if r not in known]
    if labels == "steps":
        steps = [[a for a in s if a in known] for s in q["steps"]]
        kept = [s for s in steps if s]
        # an alternative gone is harmless while the step has another; a step gone is not
        status = "unresolved" if not kept else "partly" if len(kept) < len(steps) else "ok"
        return status, {**q, "steps": kept, "relevant": [r for r in rel if r in known]}, missing
    present = [r for r in rel if r in known]
    status = "unresolved" if not present else "partly" if missing else "ok"
    return status, {**q, "relevant": present}, missing


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]}


@dataclass
class ModeEval:
    """One mode's part of an eval report (see the module doc)."""

    mode_used: str
    threshold: float | None
    metrics: dict[str, float]
    abstention: dict[str, Any] | None  # None without impossible requests
    reliability: dict[str, Any] | None
    latency_ms: dict[str, float] | None
    misses: list[dict[str, Any]]
    groups: dict[str, dict[str, float]] | None = None  # with `by`: "level=2" -> its n and metrics

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.groups is None:  # only with `by`
            del out["groups"]
        return out


@dataclass
class EvalReport:
    """What `evaluate` returns (`to_json()`: the `eval --json` document's body)."""

    queries_path: str
    infeasible_path: str | None
    index: str
    labels: str
    k: list[int]
    depth: int
    queries: int
    evaluated: int  # queries with a relevant tool in the index
    infeasible: int  # queries no tool serves
    unresolved: dict[str, Any]  # {"count", "queries": the first 20}: every relevant tool missing
    partly_unresolved: dict[str, Any]
    modes: dict[str, ModeEval]
    paired: list[dict[str, Any]]  # the first mode against each other one, query by query
    paired_groups: dict[str, list[dict[str, Any]]]

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["modes"] = {mode: e.to_json() for mode, e in self.modes.items()}
        return out


def evaluate(
    db: Reader,
    queries_path: str | Path,
    *,
    modes: list[str] | tuple[str, ...] = SEARCH_MODES,
    k: tuple[int, ...] = KS,
    labels: str = "any",
    infeasible: str | Path | None = None,
    by: str | None = None,
    filters: Filters | None = None,
    embedder: QueryEmbedder = INDEX_MODEL,
    min_score: float | None = None,
) -> EvalReport:
    """Run every query in every mode and report the metrics (see the module doc)."""
    from ..core.vocabulary import SEARCH_MODES as MODES
    from ..store.tools import all_ids
    from .hybrid import get_query_embedder, search, warm

    if labels not in LABELS:
        raise UsageError(f"unknown labels {labels!r}", fix="use any, all or steps")
    for md in modes:
        if md not in MODES:
            raise UsageError(f"unknown mode {md!r}", fix=f"use all or one of: {', '.join(MODES)}")
    ks = tuple(sorted(set(int(x) for x in k)))
    if not ks or ks[0] < 1:
        raise UsageError("--k values must be positive integers")
    queries = load_queries(queries_path, labels)
    if infeasible:  # no steps needed there: every line is a request no tool serves
        queries += [{**q, "relevant": []} for q in load_queries(infeasible)]
    known = set(all_ids(db))
    if not known:
        raise UsageError("the index has no tools", where=db.path, fix="crawl first: toolidx crawl --config FILE")
    if embedder is INDEX_MODEL:
        embedder = get_query_embedder(db) if any(md != "keyword" for md in modes) else None
    warm(db, embedder)  # the reported latencies are a warm process's, as `toolidx serve` runs

    unresolved, partly, feasible, infeasible_q = [], [], [], []
    for q in queries:
        status, rq, missing = _resolve(q, known, labels)
        if status == "infeasible":
            infeasible_q.append(q)
        elif status == "unresolved":
            unresolved.append({"id": q["id"], "missing": missing[:5]})
        else:
            if status == "partly":
                partly.append({"id": q["id"], "missing": missing[:5]})
            feasible.append(rq)

    def gold(q: dict) -> list:
        return q["steps"] if labels == "steps" else q["relevant"]

    depth = max(max(ks), 10)
    report_modes: dict[str, ModeEval] = {}
    rows_by_mode: dict[str, list[dict[str, float]]] = {}
    group_rows: dict[str, dict[str, list[dict[str, float]]]] = {}
    for mode in modes:
        per_q: list[tuple[dict, dict[str, float]]] = []
        misses: list[dict] = []
        abstained = 0
        mode_used = mode
        threshold = None
        lat: list[float] = []
        shown: list[tuple[float, bool]] = []  # every hit's score and whether it serves the query
        abstained_by: dict[str, list[int]] = {}
        for q in feasible + infeasible_q:
            req = SearchRequest(q["query"], mode, depth, 0.0, filters or Filters()).check(cut_long=True)
            t0 = time.perf_counter()
            res = search(db, req, embedder=embedder)
            lat.append((time.perf_counter() - t0) * 1000)
            mode_used = res.mode_used
            threshold = res.gate if min_score is None else min_score
            # what a default search answers: nothing when the best hit is below the threshold
            kept = res.hits if res.hits and res.hits[0].score >= threshold else []
            if min_score is not None:
                kept = [h for h in res.hits if h.score >= threshold]
            rel_ids = {i for step in gold(q) for i in step} if labels == "steps" else set(q["relevant"])
            shown.extend((h.score, h.id in rel_ids) for h in res.hits)
            if not q["relevant"]:
                abstained += not kept
                if q.get("kind") is not None:
                    abstained_by.setdefault(str(q["kind"]), []).append(int(not kept))
                continue
            ranked = [h.id for h in res.hits]
            m = ranking_metrics(ranked, gold(q), labels, ks)
            kept_ids = [h.id for h in kept]
            at5 = ranking_metrics(kept_ids, gold(q), labels, (5,))["R@5"] if kept_ids else 0.0
            m["R@5@threshold"] = at5
            m["answered"] = float(bool(kept))
            per_q.append((q, m))
            miss = miss_entry(q, ranked)
            if miss:
                misses.append(miss)
        lat.sort()
        rows_by_mode[mode] = [m for _, m in per_q]
        entry = ModeEval(
            mode_used=mode_used,
            threshold=threshold,
            metrics=_mean(rows_by_mode[mode]),
            abstention=(
                {
                    "n": len(infeasible_q),
                    "rate": round(abstained / len(infeasible_q), 4),
                    "by_kind": {
                        k: {"n": len(v), "rate": round(sum(v) / len(v), 4)} for k, v in sorted(abstained_by.items())
                    },
                }
                if infeasible_q
                else None
            ),
            reliability=reliability(shown),
            latency_ms={
                "p50": round(lat[len(lat) // 2], 2),
                "p95": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 2),
            }
            if lat
            else None,
            misses=sorted(misses, key=_miss_order),
        )
        if by:
            groups: dict[str, list[dict[str, float]]] = {}
            for q, m in per_q:
                groups.setdefault(f"{by}={q.get(by)}", []).append(m)
            entry.groups = {g: {"n": len(ms), **_mean(ms)} for g, ms in sorted(groups.items())}
            group_rows[mode] = groups
        report_modes[mode] = entry
    # the first mode (hybrid by default) against each other one, over the same feasible queries
    names = list(report_modes)
    paired = [
        {
            "mode": names[0],
            "vs": o,
            "queries": len(feasible),
            "metrics": paired_comparison(rows_by_mode[names[0]], rows_by_mode[o]),
        }
        for o in names[1:]
    ]
    paired_groups = {}
    if by and len(names) > 1:
        first = group_rows[names[0]]
        paired_groups = {
            g: [
                {"mode": names[0], "vs": o, "queries": len(rows), "metrics": paired_comparison(rows, group_rows[o][g])}
                for o in names[1:]
            ]
            for g, rows in first.items()
        }
    return EvalReport(
        queries_path=str(queries_path),
        infeasible_path=str(infeasible) if infeasible else None,
        index=db.path,
        labels=labels,
        k=list(ks),
        depth=depth,
        queries=len(queries),
        evaluated=len(feasible),
        infeasible=len(infeasible_q),
        unresolved={"count": len(unresolved), "queries": unresolved[:20]},
        partly_unresolved={"count": len(partly), "queries": partly[:20]},
        modes=report_modes,
        paired=paired,
        paired_groups=paired_groups,
    )


def reliability(shown: list[tuple[float, bool]], bins: int = 10) -> dict | None:
    """Is the score a probability? Over every shown hit (of every query, impossible ones included):
    10 equal-width score bins, each with its mean score, the share of its hits that serve their
    query, and its count; ECE = the count-weighted mean gap between the two."""
    if not shown:
        return None
    cells: list[list[float]] = [[0.0, 0.0, 0] for _ in range(bins)]
    for score, ok in shown:
        c = cells[min(int(score * bins), bins - 1)]
        c[0] += score
        c[1] += ok
        c[2] += 1
    n = len(shown)
    out = [[round(c[0] / c[2], 4), round(c[1] / c[2], 4), int(c[2])] for c in cells if c[2]]
    return {"ece": round(sum(abs(m - r) * k for m, r, k in out) / n, 4), "bins": out}
