"""Retrieval quality on your own catalog: `toolidx eval QUERIES.jsonl`.

Query file: JSON lines `{"id", "query", "relevant": [tool ids]}` (the ../shared/bench format);
extra fields (e.g. "level") can group the report (`by`). `relevant: []` marks a request no tool
serves: it counts toward the abstention rate (did search say "no good match"?).

Metrics per mode, over queries with at least one relevant tool in the index:
- R@k: share of queries with a relevant tool in the top k ("any" labels, default), or the mean
  share of the relevant tools in the top k ("all" labels: the query needs every one of them);
- MRR@10: mean 1/rank of the first relevant tool (0 when none is in the top 10);
- nDCG@10: binary gains, ideal DCG over min(|relevant|, 10);
- R@5@threshold and answered: the same with the "no good match" threshold applied (a query the
  search abstains on counts as a miss), and the share of these queries that got any hit.
Ranking metrics are computed with the threshold off, so they measure ranking alone.
Queries whose relevant ids are all missing from the index are listed under "unresolved", not
counted as misses; ids partly missing are listed under "partly_unresolved".
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from .errors import UsageError
from .filters import Filters

KS = (1, 5, 10)
LABELS = ("any", "all")


def load_queries(path: str | Path) -> list[dict]:
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError("queries file not found", where=str(p),
                         fix='pass a JSONL file of {"id", "query", "relevant": [ids]}') from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read queries file: {e}", where=str(p)) from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(f"invalid JSON ({e.msg})", where=f"{p}:{n}",
                             fix="one JSON object per line") from None
        if not isinstance(q, dict) or not isinstance(q.get("query"), str) \
                or not isinstance(q.get("relevant", []), list):
            raise UsageError('each line needs "query" (string) and "relevant" (list of tool ids)',
                             where=f"{p}:{n}")
        q.setdefault("id", f"{p.stem}:{n}")
        q.setdefault("relevant", [])
        out.append(q)
    if not out:
        raise UsageError("queries file has no queries", where=str(p))
    return out


def ranking_metrics(ranked: list[str], relevant: list[str], labels: str = "any",
                    ks: tuple[int, ...] = KS) -> dict[str, float]:
    """Metrics of one ranked list of tool ids against its relevant ids (non-empty)."""
    rel = set(relevant)
    top = ranked[:max(max(ks), 10)]
    hits = [1 if d in rel else 0 for d in top]
    out: dict[str, float] = {}
    for k in ks:
        found = sum(hits[:k])
        out[f"R@{k}"] = found / len(rel) if labels == "all" else float(found > 0)
    first = next((i for i, h in enumerate(hits[:10]) if h), None)
    out["MRR@10"] = 0.0 if first is None else 1.0 / (first + 1)
    dcg = sum(h / math.log2(i + 2) for i, h in enumerate(hits[:10]))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), 10)))
    out["nDCG@10"] = dcg / ideal
    return out


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]}


def evaluate(db, queries_path: str | Path, *, modes: list[str] | tuple[str, ...] = ("hybrid", "keyword", "semantic"),
             k: tuple[int, ...] = KS, labels: str = "any", infeasible: str | Path | None = None,
             by: str | None = None, filters: Filters | None = None, embedder: Any = "auto",
             min_score: float | None = None) -> dict:
    """Run every query in every mode and report the metrics (see the module doc)."""
    from .search import MODES, get_query_embedder, search, warm
    from .store.tools import all_ids

    if labels not in LABELS:
        raise UsageError(f"unknown labels {labels!r}", fix="use any or all")
    for m in modes:
        if m not in MODES:
            raise UsageError(f"unknown mode {m!r}", fix=f"use all or one of: {', '.join(MODES)}")
    ks = tuple(sorted(set(int(x) for x in k)))
    if not ks or ks[0] < 1:
        raise UsageError("--k values must be positive integers")
    queries = load_queries(queries_path)
    if infeasible:
        queries += [{**q, "relevant": []} for q in load_queries(infeasible)]
    known = set(all_ids(db))
    if not known:
        raise UsageError("the index has no tools", where=db.path,
                         fix="crawl first: toolidx crawl --config FILE")
    if embedder == "auto":
        embedder = get_query_embedder(db) if any(m != "keyword" for m in modes) else None
    warm(db, embedder)  # the reported latencies are a warm process's, as `toolidx serve` runs

    unresolved, partly, feasible, infeasible_q = [], [], [], []
    for q in queries:
        rel = [r for r in q["relevant"] if isinstance(r, str)]
        present = [r for r in rel if r in known]
        if not rel:
            infeasible_q.append(q)
        elif not present:
            unresolved.append({"id": q["id"], "missing": rel[:5]})
        else:
            if len(present) < len(rel):
                partly.append({"id": q["id"], "missing": [r for r in rel if r not in known][:5]})
            feasible.append({**q, "relevant": present})

    depth = max(max(ks), 10)
    report_modes: dict[str, dict] = {}
    for mode in modes:
        per_q: list[tuple[dict, dict[str, float], bool, bool]] = []
        abstained = 0
        mode_used = mode
        threshold = None
        lat: list[float] = []
        for q in feasible + infeasible_q:
            t0 = time.perf_counter()
            res = search(db, q["query"], mode=mode, limit=depth, filters=filters, min_score=0.0,
                         embedder=embedder)
            lat.append((time.perf_counter() - t0) * 1000)
            mode_used = res.mode_used
            threshold = res.gate if min_score is None else min_score
            # what a default search answers: nothing when the best hit is below the threshold
            kept = res.hits if res.hits and res.hits[0].score >= threshold else []
            if min_score is not None:
                kept = [h for h in res.hits if h.score >= threshold]
            if not q["relevant"]:
                abstained += not kept
                continue
            ranked = [h.id for h in res.hits]
            m = ranking_metrics(ranked, q["relevant"], labels, ks)
            kept_ids = [h.id for h in kept]
            at5 = ranking_metrics(kept_ids, q["relevant"], labels, (5,))["R@5"] if kept_ids else 0.0
            m["R@5@threshold"] = at5
            m["answered"] = float(bool(kept))
            per_q.append((q, m, bool(kept), True))
        lat.sort()
        entry: dict[str, Any] = {
            "mode_used": mode_used,
            "threshold": threshold,
            "metrics": _mean([m for _, m, _, _ in per_q]),
            "abstention": ({"n": len(infeasible_q), "rate": round(abstained / len(infeasible_q), 4)}
                           if infeasible_q else None),
            "latency_ms": {"p50": round(lat[len(lat) // 2], 2),
                           "p95": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 2)} if lat else None,
        }
        if by:
            groups: dict[str, list[dict[str, float]]] = {}
            for q, m, _, _ in per_q:
                groups.setdefault(f"{by}={q.get(by)}", []).append(m)
            entry["groups"] = {g: {"n": len(ms), **_mean(ms)} for g, ms in sorted(groups.items())}
        report_modes[mode] = entry
    return {
        "queries_path": str(queries_path),
        "infeasible_path": str(infeasible) if infeasible else None,
        "index": db.path,
        "labels": labels,
        "k": list(ks),
        "queries": len(queries),
        "evaluated": len(feasible),
        "infeasible": len(infeasible_q),
        "unresolved": {"count": len(unresolved), "queries": unresolved[:20]},
        "partly_unresolved": {"count": len(partly), "queries": partly[:20]},
        "modes": report_modes,
    }
