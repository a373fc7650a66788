"""Action/object matching as a verifier for hybrid's "no good match" gate (issue #22 item 5 (b)).

    python benchmarks/verifier.py        # the model: _common.MODEL (TOOLIDX_MODEL_PATH)

A request says what to do to what ("upvote the top story on Hacker News"); if no top-5 tool does
that action (Hacker News' tools only read) or names that object, abstain. Data: fusion_data's hybrid
candidates ranked and scored by toolidx.search.calibration with the model's fit; a tool's text =
server + name words + its description's first sentence (../shared/bench/<catalog>/tools.jsonl).
Signals per query (a tool "has" an action when a lexicon word is in its text):
- action mismatch: the request names a checked action and no top-5 tool has it; "lead verb": only
  the request's first content word counts (imperatives lead with their verb; "order", "shares",
  "stop at" later in a sentence are as often nouns); "coarse": make / change / run / convert as one
  action; "top-1": the best tool alone;
- object overlap: the best share of the request's content words (query_terms less actions) in a
  top-5 tool's text; object mismatch: none.
Report: AUROC of each signal (and of the best score) for served feasible requests of 3+ terms (the
ones the gate can cost) against each impossible set; rules at the gate's budget (the highest
threshold costing <= 1 point of feasible R@5 on each catalog, pooled, as in fit_fusion.py):
gate alone, gate OR a mismatch, and a logistic (logit best score, a mismatch, object overlap)
fitted and thresholded leave-one-set-out; the verifier's time per query.
Crude stemming, single words ("look up", "turn off" are their first word). Tried and dropped: tool
actions from the name + the description's first 3 words only (more false mismatches). The lexicon
and the coarse families were written with the bench's near misses and false mismatches in view, so
these figures are optimistic (nothing held out can test a hand-written lexicon).
"""

from __future__ import annotations

import json
import math
import re
import sys
import time

import numpy as np
from _common import BENCH, MODEL
from fit_fusion import CATALOGS, R5_LOSS_MAX, logistic
from fusion_data import FEASIBLE, INFEASIBLE, load, specs

from toolidx.core.tokens import STOP_WORDS, query_terms
from toolidx.core.tooldoc import split_name
from toolidx.search import calibration as cal

# canonical action -> its synonyms. Only actions with an effect are checked: a request to read, find,
# download, analyse or compare is served by read tools and the agent's own work, so its verb says
# nothing a retriever's top 5 can contradict ("download the JSON" is a fetch, "save as" a write).
LEXICON = {
    "create": "add new make generate build insert write compose draft produce save",
    "delete": "remove drop erase clear purge destroy uninstall cancel unsubscribe",
    "read": "get show fetch view open display retrieve load see inspect describe list enumerate browse "
    "search find look lookup query locate discover download export",
    "update": "edit modify rename set change replace move fix adjust patch reopen toggle enable disable turn",
    "send": "post message email mail notify publish share tweet reply comment submit announce",
    "book": "reserve schedule register",
    "buy": "order purchase pay checkout sell trade",
    "vote": "upvote downvote star favorite favourite",
    "translate": "",
    "convert": "transform",
    "upload": "push import attach",
    "run": "execute start launch invoke trigger play",
    "stop": "pause kill halt terminate mute",
    "analyze": "analyse summarize compare calculate compute evaluate scan detect",
}
CHECKED = frozenset(LEXICON) - {"read", "analyze"}
# the coarse variant: making, changing, running and converting as one action ("start a fresh Word
# file", "turn A1:F50 into a table", "add textures" served by set_texture)
COARSE = {"update": "create", "run": "create", "convert": "create"}
NO_STEM = frozenset(
    {
        "news",
        "status",
        "series",
        "analysis",
        "canvas",
        "alias",
        "process",
        "address",
        "access",
        "class",
        "https",
        "always",
        "this",
        "its",
    }
)


def stem(w: str) -> str:
    if w in NO_STEM or len(w) <= 3:
        return w
    for suf, rep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not (suf == "s" and w.endswith(("ss", "us", "is"))):
            w = w[: -len(suf)] + rep
            if suf in ("ing", "ed") and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # running, stopped
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


ACTION = {stem(w): a for a, ws in LEXICON.items() for w in (a, *ws.split())}
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?。])\s|\n")


def words(text: str) -> list[str]:
    return [w for m in _WORD.finditer(text or "") for w in split_name(m.group(0))]


def tool_text(t: dict) -> tuple[set[str], set[str]]:
    """(actions, stemmed words) of server + name + the description's first sentence"""
    first = _SENTENCE.split((t.get("description") or "").strip(), 1)[0][:300]
    ws = {stem(w) for w in words(t["id"].split("/")[0]) + words(t["name"]) + words(first)}
    return {ACTION[w] for w in ws if w in ACTION}, ws


def verify(query: str, top: list[dict]) -> dict[str, float]:
    """The verifier's signals for a request and its top tools, best first (higher = impossible)."""
    raw = words(query)
    acts = {ACTION[s] for s in map(stem, raw) if s in ACTION} & CHECKED
    lead = next((w for w in raw if (len(w) > 2 and w not in STOP_WORDS) or stem(w) in ACTION), "")  # not I'm's m
    lead_act = {ACTION.get(stem(lead))} & CHECKED
    objs = {s for s in map(stem, query_terms(query)) if s not in ACTION}
    tools = [tool_text(t) for t in top] or [(set(), set())]
    has = set().union(*(t[0] for t in tools))
    overlap = max(len(objs & t[1]) / len(objs) for t in tools) if objs else 1.0

    def miss(want: set, have: set) -> float:
        return float(bool(want) and not want & have)

    def coarse(acts: set) -> set:
        return {COARSE.get(a, a) for a in acts}

    return {
        "action mismatch": miss(acts, has),
        "action mismatch, lead verb": miss(lead_act, has),
        "action mismatch, lead verb, coarse": miss(coarse(lead_act), coarse(has)),
        "action mismatch, top-1": miss(acts, tools[0][0]),
        "object mismatch": float(overlap == 0.0),
        "object overlap (1 - share)": 1.0 - overlap,
    }


def model_name() -> str:
    from toolidx.core.embedding import resolve_model

    return str(resolve_model(path=MODEL).name)


def jsonl(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def records(model: str | None) -> dict[str, list[dict]]:
    tools = {c: {t["id"]: t for t in jsonl(BENCH / c / "tools.jsonl")} for c in ("etom", "livemcp")}
    out: dict[str, list[dict]] = {}
    spent = 0.0
    for (s, rows), (cat, qs) in zip(load().items(), specs().values()):  # load() follows specs()' order
        out[s] = []
        for (q, ev), asked in zip(rows, qs, strict=True):
            assert q["id"] == asked["id"], "fusion data out of step with its specs: refresh the cache"
            cands = {i: e for i, (_, e) in enumerate(ev)}
            z = cal.ranking_values(cands, "hybrid", q["n_tools"], q["n_terms"], model)
            sc = cal.score_candidates(cands, "hybrid", q["n_tools"], model, q["n_terms"])
            top5 = [ev[i][0] for i in sorted(z, key=lambda i: (-round(z[i], 6), ev[i][0]))[:5]]
            t0 = time.perf_counter()
            sig = verify(asked["query"], [tools[cat][t] for t in top5])
            spent += time.perf_counter() - t0
            out[s].append(
                {
                    "top": max(sc.values(), default=0.0),
                    "exempt": q["n_terms"] < cal.GATE_MIN_TERMS,
                    "hit5": bool(set(q["relevant"]) & set(top5)),
                    **sig,
                }
            )
    n = sum(map(len, out.values()))
    print(f"verifier: {1000 * spent / n:.3f} ms per query (top 5 tools' text read and matched each time), {n} queries")
    return out


def auroc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(an impossible request's signal > a served one's), ties half."""
    if not (len(pos) and len(neg)):
        return math.nan
    neg = np.sort(neg)
    lo, hi = np.searchsorted(neg, pos, "left"), np.searchsorted(neg, pos, "right")
    return float(np.mean(lo + 0.5 * (hi - lo)) / len(neg))


def col(recs: list[dict], key: str) -> np.ndarray:
    return np.array([r[key] for r in recs], float)


def main() -> int:
    model = model_name()
    fit_model = model if model in cal.FITS else None
    print(f"model {model}; scored with {'its own fit' if fit_model else 'MiniLM fit (no fit for this model!)'}")
    data = records(fit_model)
    sigs = [k for k in data["livemcp"][0] if k.startswith(("action", "object"))]
    a = {s: {k: col(rows, k) for k in ("top", "hit5", *sigs)} for s, rows in data.items()}
    for s, v in a.items():
        v["exempt"] = col(data[s], "exempt").astype(bool)
        v["-best score (gate)"] = -v["top"]
        v["logit"] = np.log(np.clip(v["top"], 1e-9, 1) / np.clip(1 - v["top"], 1e-9, 1))
    ok5 = {s: (v["hit5"] > 0) & ~v["exempt"] for s, v in a.items()}  # served, gated: what a cut can cost
    pairs = (("etom infeasible", "etom"), ("natural far", "natural"), ("natural near", "natural"))
    print(
        f"\nAUROC, served feasible (3+ terms; etom {sum(ok5[s].sum() for s in CATALOGS['etom'])}, natural "
        f"{sum(ok5[s].sum() for s in CATALOGS['natural'])}) vs impossible (3+ terms); share of each set flagged"
    )
    print(
        f"  {'signal':36s} "
        + " ".join(f"{s:>15s}" for s, _ in pairs)
        + "  flagged: "
        + " ".join(f"{s.split()[-1][:6]:>6s}" for s in (*FEASIBLE, *INFEASIBLE))
    )
    for k in ("-best score (gate)", *sigs):
        au = [auroc(a[s][k][~a[s]["exempt"]], np.concatenate([a[f][k][ok5[f]] for f in CATALOGS[c]])) for s, c in pairs]
        fl = " ".join(f"{a[s][k].mean():6.2f}" for s in (*FEASIBLE, *INFEASIBLE)) if "mismatch" in k else ""
        print(f"  {k:36s} " + " ".join(f"{x:15.3f}" for x in au) + ("  " + " " * 9 + fl if fl else ""))

    def costs(abstain: dict[str, np.ndarray]) -> list[float]:
        """pooled R@5 loss on etom, natural, livemcp; abstention on etom infeasible, far, near"""
        return [float(np.mean(np.concatenate([a[s]["hit5"] * abstain[s] for s in ss]))) for ss in CATALOGS.values()] + [
            float(abstain[s].mean()) for s in INFEASIBLE
        ]

    def show(name: str, t: float, c: list[float], note: str = "") -> None:
        print(f"  {name:44s} {t:7.4f} " + " ".join(f"{x:{w}.3f}" for x, w in zip(c, (9, 8, 9, 9, 5, 5))) + note)

    # fit_fusion's thresholds; a model without a fit is scored on MiniLM's scale: a wider grid
    grid = [0.0, *(np.arange(0.002, 0.05, 0.001).round(4) if fit_model else np.geomspace(1e-4, 0.5, 120))]
    print(f"\nrules at the budget (<= {R5_LOSS_MAX:.0%} R@5 lost on each catalog, pooled; abstain on 3+ terms)")
    print(
        f"  {'rule':44s} {'thresh':>7s} {'etom lost':>9s} {'nat lost':>8s} {'lmcp lost':>9s} "
        f"{'etom abst':>9s} {'far':>5s} {'near':>5s}"
    )
    for flag in (None, *(k for k in sigs if "mismatch" in k)):

        def rule(t: float, flag: str | None = flag) -> list[float]:
            return costs({s: ~v["exempt"] & ((v["top"] < t) | (v[flag] > 0 if flag else False)) for s, v in a.items()})

        ok = [t for t in grid if max(rule(t)[:2]) <= R5_LOSS_MAX + 1e-9]
        t = max(ok) if ok else 0.0
        show("gate" + (" OR " + flag if flag else " alone"), t, rule(t), "" if ok else "  over budget")

    sets = [*FEASIBLE, *INFEASIBLE]
    for flag in ("action mismatch", "action mismatch, lead verb, coarse"):
        feats = ("logit", flag, "object overlap (1 - share)")
        x = {s: np.stack([v[f] for f in feats], 1) for s, v in a.items()}

        def fit(train: list[str]) -> np.ndarray:
            keep = {s: ~a[s]["exempt"] & ((s in INFEASIBLE) | (a[s]["hit5"] > 0)) for s in train}
            return logistic(
                np.vstack([x[s][keep[s]] for s in train]),
                np.concatenate([np.full(keep[s].sum(), s not in INFEASIBLE, float) for s in train]),
                np.concatenate([np.full(keep[s].sum(), 1000 / max(keep[s].sum(), 1)) for s in train]),
            )

        def p(w: np.ndarray, s: str) -> np.ndarray:
            return 1 / (1 + np.exp(-np.clip(x[s] @ w[:-1] + w[-1], -30, 30)))

        def threshold(w: np.ndarray, train: list[str]) -> float:
            """the highest cut on p within budget on each catalog's training sets (the loss grows with it)"""
            ps = {s: p(w, s) for s in train}
            cuts = sorted({0.0, *np.concatenate(list(ps.values())).round(6)})
            lo, hi = 0, len(cuts) - 1  # cuts[lo] is within budget
            while lo < hi:
                mid = (lo + hi + 1) // 2
                ok = all(
                    np.mean(
                        np.concatenate([a[s]["hit5"] * (ps[s] < cuts[mid]) * ~a[s]["exempt"] for s in ss if s in train])
                    )
                    <= R5_LOSS_MAX + 1e-9
                    for ss in CATALOGS.values()
                    if any(s in train for s in ss)  # a catalog held out whole (livemcp) sets no budget
                )
                lo, hi = (mid, hi) if ok else (lo, mid - 1)
            return cuts[lo]

        held = {}
        for s in sets:  # leave-one-set-out: each set's decisions come from a fit and a cut made without it
            w = fit([t for t in sets if t != s])
            held[s] = (p(w, s) < threshold(w, [t for t in sets if t != s])) & ~a[s]["exempt"]
        w = fit(sets)
        cut = threshold(w, sets)
        show(f"logistic, {flag.split(', ', 1)[-1] if ',' in flag else 'all words'}, held out", math.nan, costs(held))
        show(
            "  same, all sets (in-sample)",
            cut,
            costs({s: (p(w, s) < cut) & ~a[s]["exempt"] for s in a}),
            f"  w {np.round(w, 2).tolist()}",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
