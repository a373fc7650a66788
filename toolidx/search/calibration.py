"""From retrieval evidence to a score in [0, 1] that means the same thing for every query, and
the "no good match" thresholds. Constants fitted on the bench sets by benchmarks/fit_fusion.py
(docs/research/search.md has the tables); refit them there if the method changes.

Per candidate tool the evidence is:
- cos: cosine similarity of the query and tool embeddings (absolute: comparable across queries);
- bm25: FTS5 BM25 with field weights (store.retrieval.FTS_WEIGHTS); bm25_rel = bm25 / the best
  BM25 of this query (BM25 grows with query length, so only its ratio ranks well);
- fuzzy: rapidfuzz similarity of a short query to the tool name (typos, snake_case vs words);
- hybrid only: coverage (the share of the query's words the tool has) and name_words (how many of
  the tool name's words the query has).

Ranking value z, per mode; the hit's own logit l = SLOPE * z + BIAS (a Platt scaling); then the
score reads the list the hit is in: score = sigmoid(a * l + b * share + c), where share is the
hit's share of the odds of the query's best LIST_K candidates (odds_shares). A score is an estimate
of P(this tool serves the query | the candidates beside it), fitted by logistic regression over
every candidate: a first hit that clearly beats the rest reads high even when its own evidence is
modest (a natural request in the user's words), one among many alike reads low. Both steps keep
the order (a > 0, b >= 0, share grows with l), so the ranking is z's. Hybrid's weights, constants
and threshold are fitted by benchmarks/fit_fusion.py on every bench set and style
(leave-one-set-out validated); keyword's and semantic's by the same script, on the same sets, each
on its own candidates. Few parameters on purpose (a handful of weights and five constants per
mode) so the fit cannot memorise queries. All of it belongs to the model it was fitted on
(CALIBRATED_MODELS).

"No good match": a query of GATE_MIN_TERMS words or more whose best tool scores below
the threshold of its mode (calibration.json per model; KEYWORD_THRESHOLD) gets no hits.
"""

from __future__ import annotations

import heapq
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# hybrid: z = cos_w * cos + (1 - cos_w) * bm25_rel + cov_w * coverage
#             + FUZZY_WEIGHT * fuzzy_strength + name_w * [name_words >= NAME_MIN_WORDS]
# with (cos_w, cov_w, name_w) = hybrid_weights(the query's number of keyword terms, the model's fit).
# Fitted together by benchmarks/fit_fusion.py over every bench set and query style (ETOM levels
# 1-4, LiveMCPBench task prompts and steps, livemcp-natural plain / terse / typo / long / name),
# each catalog weighing the same, with leave-one-set-out validation, and kept only where no set is
# significantly worse than before, than cosine alone or than BM25 alone (docs/research/search.md).
# A short request is read mostly by meaning: bm25_rel is relative to the query's best BM25, so it
# is 1 for the best keyword match even when that tool shares one ordinary word with a paraphrase
# ("show me what's on the page" and a tool whose parameters say "page"). A long one (a task with
# ids, file names, several steps) ramps to LONG_WEIGHTS, fitted before on ETOM, whose many
# specific words are the best evidence of each step's tool.
# Per model (calibration.json, written by `benchmarks/fit_fusion.py --write`): the short-query
# weights (cos, coverage, name), the ramp, the Platt constants and thresholds of hybrid and
# semantic. An embedding model's cosines have their own scale, so every one of them belongs to the
# model it was fitted on; a model without a fit is searched uncalibrated (uncalibrated_scores).
NAME_MIN_WORDS = 2
LONG_WEIGHTS = (0.6, 0.15, 0.02)  # (cosine, coverage, name words): the weights fitted on ETOM before
FITS_FILE = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class ModelFit:
    """What benchmarks/fit_fusion.py fitted for one embedding model."""

    cos: float  # hybrid's cosine weight at ramp[0] keyword terms or fewer
    coverage: float
    name: float  # name words (0 for short queries on MiniLM; LONG_WEIGHTS' 0.02 for long ones)
    ramp: tuple[int, int] | None  # to LONG_WEIGHTS at ramp[1] terms or more, linear in between
    platt: dict[str, tuple[float, float]]  # mode -> (slope, bias): the hit's own logit l on z
    listwise: dict[str, tuple[float, float, float]]  # mode -> (a, b, c): the score's logit a*l + b*share + c
    threshold: dict[str, float]  # mode -> the "no good match" gate
    fitted: str  # on what, by what
    # hybrid's weights of the action marks (search.actions): (opposed, reads_only, writes),
    # subtracted from the score's logit after the list is read; 0 for a mark a model was fitted
    # before (a file's two weights read as writes 0)
    action: tuple[float, float, float] = (0.0, 0.0, 0.0)
    # what past requests lift (search.learned: floor, full, weight, saturate, fitted), fitted by
    # benchmarks/learned_sim.py; None for a model without them: nothing is lifted
    learned: dict[str, Any] | None = None
    # hybrid's weight of the candidate's server evidence (search.server_match: its server's cosine lead
    # over the median server's), in z; 0 for a model fitted without it: the servers move nothing
    server: float = 0.0
    # the far gate (search.gate: {"cos": the best cosine under which a request whose subject words
    # no best tool has is about nothing the catalog holds, "fitted"}), fitted by
    # benchmarks/gate_dev.py; None for a model without it: no far gate
    gate: dict[str, Any] | None = None
    # the near gate (search.near: {"cos": the best cosine under which a request naming a product no
    # tool has asks for what the catalog lacks, "action_cos": that under which a request asking an
    # action no best tool may do does, "fitted"}), fitted by benchmarks/near_dev.py; None for a
    # model without it: no near gate
    near: dict[str, Any] | None = None


def _three(action) -> tuple[float, float, float]:
    """A file's action weights as (opposed, reads_only, writes): a mark it lacks weighs 0 (a model
    fitted before the writes mark stores two)."""
    a = (*action, 0.0, 0.0, 0.0)
    return (float(a[0]), float(a[1]), float(a[2]))


def _read_fits() -> dict[str, ModelFit]:
    raw = json.loads(FITS_FILE.read_text())
    return {
        m: ModelFit(
            f["cos"],
            f["coverage"],
            f["name"],
            tuple(f["ramp"]) if f["ramp"] else None,
            {k: (v[0], v[1]) for k, v in f["platt"].items()},
            {k: (v[0], v[1], v[2]) for k, v in f["listwise"].items()},
            dict(f["threshold"]),
            f["fitted"],
            _three(f.get("action", ())),
            f.get("learned"),
            f.get("server", 0.0),
            f.get("gate"),
            near=f.get("near"),
        )
        for m, f in raw["models"].items()
    }


FITS = _read_fits()
# an index without vectors is searched by keyword, whose constants below belong to no model; the
# fit used for a model-less hybrid score (tests, benchmarks) is MiniLM's, the first ever fitted
REFERENCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def fit_for(model: str | None) -> ModelFit:
    return FITS[model or REFERENCE_MODEL]


def hybrid_weights(n_terms: int | None, fit: ModelFit | None = None) -> tuple[float, float, float]:
    """(cosine weight, coverage weight, name-word weight) for a query of n_terms keyword terms."""
    f = fit or fit_for(None)
    short = (f.cos, f.coverage, f.name)
    if f.ramp is None or n_terms is None:
        return short
    lo, hi = f.ramp
    w = min(1.0, max(0.0, (n_terms - lo) / (hi - lo)))
    return tuple(a * (1 - w) + b * w for a, b in zip(short, LONG_WEIGHTS))  # type: ignore[return-value]


# Hybrid's BM25 weighs each query word by sqrt(idf) instead of idf (Retrieval.keyword's idf_power): in a long
# request the rarest word (an id, a place name) would otherwise outvote the several ordinary words
# that say what to do, and the embedding already rewards the rare, specific ones. Measured
# (docs/research/search.md): ETOM L1+L2 R@1 +.005, L2 +.006, LiveMCP R@5 +2 queries; idf**0.3 to idf**0.7
# all gain, so 0.5 is not a knife-edge. Quoted values weigh less too (toolidx.search.quoted). Keyword
# mode keeps plain BM25 (its own calibration).
IDF_POWER = 0.5
# fuzzy_strength = (fuzzy - FUZZY_FLOOR) / (1 - FUZZY_FLOOR), clipped to [0, 1]: only a close name
# counts. Not fittable on the bench (its queries are sentences, never names); chosen so an
# exact-but-misspelt tool name ranks first and clears the threshold.
FUZZY_FLOOR = 0.75
FUZZY_WEIGHT = 0.35

# keyword: logit = KW_LOG * log(1 + bm25 * size_factor) + KW_REL * bm25_rel + KW_BIAS
#                  + KW_FUZZY * fuzzy_strength (fit_fusion.py --only keyword; KW_FUZZY is not fitted:
#                  the bench's queries are sentences, see FUZZY_FLOOR)
KW_LOG, KW_REL, KW_BIAS, KW_FUZZY = 1.616, 5.619, -11.08, 6.0
KW_LISTWISE = (0.625, 3.537, -1.712)  # keyword's (a, b, c), see LIST_K (fit_fusion.py --only keyword)

# The score reads the list (issue 22): a hit's own evidence says how well it matches, not whether
# a better tool stands beside it. share = exp(l) / sum of exp(l) over the query's LIST_K best
# candidates (l: each candidate's own logit, so the temperature is the mode's Platt slope): near 1
# for a first hit that clearly beats the rest, about 1/2 each for two alike (a tool on two servers),
# small for a flat list (an impossible request matches many tools a little). Over the best 10 only,
# so it does not depend on how many candidates a catalog yields; 5 and 20 measured alike
# (docs/research/search.md). Fewer than 10 (a catalog or a scope of a few tools) are padded with
# the weakest: among 3 tools an impossible request's best would otherwise hold a third of the odds
# and read as an answer ("book a table" among 3 unrelated tools: 0.09, over the gate; now 0.006).
LIST_K = 10

# Keyword mode's threshold, the same rule as every model's gate (calibration.json): the highest
# that costs at most 1 point of feasible R@5 on ETOM, on livemcp-natural and on LiveMCPBench's task
# prompts (each pooled; fit_fusion.py). The served natural requests with the least evidence (a
# typo, a paraphrase sharing no word with the tool) score as low as many impossible requests, so
# the gate abstains on few of them: the score of the best hit, a calibrated P(relevant), says how
# sure the answer is (docs/research/search.md has the tables).
KEYWORD_THRESHOLD = 0.1


# A one- or two-word query ("status", "guava versions", "AAPL dividends") is a deliberate lookup:
# its evidence is small in absolute terms even when exact (a short BM25, a short embedding), and
# every threshold was fitted on sentences. Such queries are not gated in any mode: the best tools
# are shown with their own scores.
GATE_MIN_TERMS = 3


def threshold(mode: str, n_terms: int | None = None, model: str | None = None) -> float:
    if n_terms is not None and n_terms < GATE_MIN_TERMS:
        return 0.0
    return KEYWORD_THRESHOLD if mode == "keyword" else fit_for(model).threshold[mode]


def _sigmoid(x: float) -> float:
    if x < -40:
        return 0.0
    if x > 40:
        return 1.0
    return 1.0 / (1.0 + math.exp(-x))


def fuzzy_strength(fuzzy: float) -> float:
    return min(1.0, max(0.0, (fuzzy - FUZZY_FLOOR) / (1.0 - FUZZY_FLOOR)))


# BM25's IDF grows with log(catalog size), so an absolute BM25 means more in a big catalog; keyword
# scores rescale it to the catalog the constants were fitted on (ETOM, 2,375 tools).
REFERENCE_TOOLS = 2375


def size_factor(n_tools: int) -> float:
    return math.log(REFERENCE_TOOLS + 1) / math.log(max(n_tools, 3) + 1)


def ranking_values(
    cands: dict[int, dict],
    mode: str,
    n_tools: int = REFERENCE_TOOLS,
    n_terms: int | None = None,
    model: str | None = None,
) -> dict[int, float]:
    """z per candidate (higher is better); the score is a monotone map of it."""
    best = max((c["bm25"] for c in cands.values()), default=0.0) or 1.0
    scale = size_factor(n_tools)
    cos_w, cov_w, name_w = hybrid_weights(n_terms, fit_for(model) if mode == "hybrid" else None)
    server_w = fit_for(model).server if mode == "hybrid" else 0.0
    out: dict[int, float] = {}
    for r, c in cands.items():
        fz = fuzzy_strength(c.get("fuzzy", 0.0))
        rel = c["bm25"] / best
        if mode == "hybrid":
            out[r] = (
                cos_w * c["cos"]
                + (1 - cos_w) * rel
                + cov_w * c.get("coverage", 0.0)
                + FUZZY_WEIGHT * fz
                + name_w * (c.get("name_words", 0) >= NAME_MIN_WORDS)
                + server_w * c.get("server", 0.0)
            )
        elif mode == "semantic":
            out[r] = c["cos"]
        else:
            if c["bm25"] <= 0 and fz <= 0:
                continue
            out[r] = KW_LOG * math.log1p(c["bm25"] * scale) + KW_REL * rel + KW_BIAS + KW_FUZZY * fz
    return out


# model id (the index's embed_model) -> what was fitted on it
CALIBRATED_MODELS = {m: f.fitted for m, f in FITS.items()}
RRF_K = 60


def is_calibrated(model: str | None) -> bool:
    return model is None or model in CALIBRATED_MODELS


def uncalibrated_scores(cands: dict[int, dict], mode: str) -> dict[int, float]:
    """For an index embedded with a model the constants were not fitted on: no absolute scale is
    assumed. Hybrid ranks by reciprocal rank fusion of the keyword and vector ranks (plus a close
    fuzzy name), scaled to [0, 1] (1 = first in both lists); semantic by the cosine itself. These
    scores are orders, not probabilities, and no "no good match" gate applies."""
    if mode == "semantic":
        return {r: max(0.0, min(1.0, c["cos"])) for r, c in cands.items()}
    top = 2.0 / (RRF_K + 1)
    out = {}
    for r, c in cands.items():
        v = sum(1.0 / (RRF_K + 1 + c[k]) for k in ("kw_rank", "vec_rank") if c.get(k) is not None)
        out[r] = min(1.0, v / top + 0.5 * fuzzy_strength(c.get("fuzzy", 0.0)))
    return out


def odds_shares(logits: dict[int, float]) -> dict[int, float]:
    """Each candidate's exp(l) over the sum of exp(l) of the LIST_K best (LIST_K); a list shorter
    than that (a catalog or a scope of a few tools) counts its weakest as often as needed."""
    if not logits:
        return {}
    best = heapq.nlargest(LIST_K, logits.values())
    total = sum(math.exp(x - best[0]) for x in best) + (LIST_K - len(best)) * math.exp(best[-1] - best[0])
    return {r: math.exp(max(x - best[0], -700.0)) / total for r, x in logits.items()}


def score_candidates(
    cands: dict[int, dict],
    mode: str,
    n_tools: int = REFERENCE_TOOLS,
    model: str | None = None,
    n_terms: int | None = None,
    lift: dict[int, float] | None = None,
) -> dict[int, float]:
    """Calibrated score in [0, 1] per candidate (for a model not in CALIBRATED_MODELS, in hybrid
    and semantic mode: uncalibrated_scores). Records each scored candidate's odds share in its
    evidence (cands[r]["share"], shown as signals.share). `lift`: added to a candidate's own logit
    before the list is read (search.learned)."""
    if mode != "keyword" and not is_calibrated(model):
        out = uncalibrated_scores(cands, mode)
        forbidden = [r for r in out if cands[r].get("negated")]
        others = [out[r] for r in out if not cands[r].get("negated")]
        high = max((out[r] for r in forbidden), default=0.0)
        if others and high >= min(others) and high > 0:
            # an order, not a probability: the forbidden tools scaled under every other
            scale = 0.5 * min(others) / high
            out.update({r: out[r] * scale for r in forbidden})
        return out
    opposed_w = reads_w = writes_w = 0.0
    if mode == "keyword":  # its z is a logit already, and its constants belong to no model
        (slope, bias), (a, b, c) = (1.0, 0.0), KW_LISTWISE
    else:
        fit = fit_for(model)
        (slope, bias), (a, b, c) = fit.platt[mode], fit.listwise[mode]
        if mode == "hybrid":
            opposed_w, reads_w, writes_w = fit.action
    logits = {r: slope * z + bias for r, z in ranking_values(cands, mode, n_tools, n_terms, model).items()}
    for r, up in (lift or {}).items():  # what past requests like this one led to (search.learned)
        if r in logits:
            logits[r] += up
    # a tool the request forbids ("do not delete ...", search.negation) is no answer: the list's
    # odds are shared among the others
    negated = {r for r in logits if cands[r].get("negated")} if mode == "hybrid" else set()
    shares = odds_shares({r: x for r, x in logits.items() if r not in negated} if negated else logits)
    for r in logits:
        cands[r]["share"] = shares.get(r, 0.0)
    # The action marks count after the list is read (the share says how far a hit stands out
    # among the tools found, whatever they do). A tool that does the opposite of the request falls
    # below its neighbours. When a tool of the best DOER_K does just what the request asks (it
    # writes, the request writes), every tool that only reads ranks below it, and the list keeps
    # its scores (issue 43: "save a fact to the knowledge graph" and `read_graph`, then
    # `add_observations`). Else a best tool that only reads what the request would change lowers
    # the whole list alike, its order kept: a task may need that tool as a step (find, then book),
    # but a list led by it does not do what was asked (fit_fusion.py measured both ways).
    # The other way round, a request that only reads: a tool that changes something falls by its
    # own weight, and under the best of the DOER_K that does not ("list the entities in my
    # knowledge graph": `create_entities` under `read_graph`); with none, the list falls.
    final = {
        r: (
            a * x
            + b * shares.get(r, 0.0)
            + c
            - opposed_w * cands[r].get("opposed", 0)
            - writes_w * cands[r].get("writes", 0)
        )
        for r, x in logits.items()
    }
    if mode == "hybrid" and final:
        answers = [r for r in final if r not in negated]
        top = heapq.nlargest(DOER_K, answers, key=final.__getitem__)
        doer = next((r for r in top if cands[r].get("does")), None)
        if doer is not None:
            # and so does a tool that does the opposite ("remember ..." and `delete_relations`;
            # search.hybrid's "contrary")
            below = [r for r in final if cands[r].get("reads_only") or cands[r].get("contrary")]
            final = _under(final, below, final[doer])
        elif reads_w and top and cands[top[0]].get("reads_only"):
            final = {r: x - reads_w for r, x in final.items()}
        writers = [r for r in answers if cands[r].get("writes")] if writes_w else []
        reader = next((r for r in top if not cands[r].get("writes")), None)
        if writers and reader is not None:
            final = _under(final, writers, final[reader])
        if negated and answers:
            final = _below(final, negated, min(final[r] for r in answers))
    return {r: _sigmoid(x) for r, x in final.items()}


# how many of a hybrid list's best tools are read for one that does what the request asks (see
# score_candidates): the five an agent is shown by default, where R@5 counts
DOER_K = 5
# how far (in the score's logit) a tool moved below another ends up below it: whatever their
# scores, the order shows at 4 decimals
BELOW = 1.0


def _under(final: dict[int, float], which: list[int], ceiling: float) -> dict[int, float]:
    """`final` with each tool of `which` that is not BELOW under `ceiling` placed under it, one
    BELOW apart in their order; the others where they are (a task's reading step, further down,
    stays among the best five: ETOM L3 and L4 lost R@5 when every reading tool moved)."""
    over = sorted((r for r in which if final[r] > ceiling - BELOW), key=lambda r: -final[r])
    if not over:
        return final
    out = dict(final)
    for j, r in enumerate(over, 1):
        out[r] = min(out[r], ceiling - BELOW * j)
    return out


def _below(final: dict[int, float], which: set[int], ceiling: float) -> dict[int, float]:
    """`final` with the tools of `which` moved down together, their order kept, until the best of
    them is BELOW under `ceiling`; unchanged when it already is."""
    if not which:
        return final
    shift = max(final[r] for r in which) - ceiling + BELOW
    if shift <= 0:
        return final
    return {r: x - shift if r in which else x for r, x in final.items()}
