"""From retrieval evidence to a score in [0, 1] that means the same thing for every query, and
the "no good match" thresholds. Constants fitted on the bench sets by benchmarks/fit_fusion.py
(docs/search-research.md has the tables); refit them there if the method changes.

Per candidate tool the evidence is:
- cos: cosine similarity of the query and tool embeddings (absolute: comparable across queries);
- bm25: FTS5 BM25 with field weights (store.retrieval.FTS_WEIGHTS); bm25_rel = bm25 / the best
  BM25 of this query (BM25 grows with query length, so only its ratio ranks well);
- fuzzy: rapidfuzz similarity of a short query to the tool name (typos, snake_case vs words);
- hybrid only: coverage (the share of the query's words the tool has) and name_words (how many of
  the tool name's words the query has).

Ranking value z, per mode, then score = sigmoid(SLOPE * z + BIAS): a Platt scaling fitted by
logistic regression, so a score is an estimate of P(this tool serves the query). Hybrid's
weights, Platt constants and threshold are fitted by benchmarks/fit_fusion.py on every bench set
and style (leave-one-set-out validated); keyword's and semantic's by the same script, on the same
sets, each on its own candidates. Few parameters on purpose (a handful of weights and two or three
Platt constants per mode) so the fit cannot memorise queries. All of it belongs to the model it
was fitted on (CALIBRATED_MODELS).

"No good match": a query of GATE_MIN_TERMS words or more whose best tool scores below
THRESHOLD[mode] gets no hits.
"""

from __future__ import annotations

import math

# hybrid: z = cos_w * cos + (1 - cos_w) * bm25_rel + cov_w * coverage
#             + FUZZY_WEIGHT * fuzzy_strength + name_w * [name_words >= NAME_MIN_WORDS]
# with (cos_w, cov_w, name_w) = hybrid_weights(the query's number of keyword terms).
# Fitted together by benchmarks/fit_fusion.py over every bench set and query style (ETOM levels
# 1-4, LiveMCPBench task prompts and steps, livemcp-natural plain / terse / typo / long / name),
# each catalog weighing the same, with leave-one-set-out validation, and kept only where no set is
# significantly worse than before, than cosine alone or than BM25 alone (docs/search-research.md).
# A short request is read mostly by meaning: bm25_rel is relative to the query's best BM25, so it
# is 1 for the best keyword match even when that tool shares one ordinary word with a paraphrase
# ("show me what's on the page" and a tool whose parameters say "page"). A long one (a task with
# ids, file names, several steps) keeps the weights fitted before on ETOM, whose many specific
# words are the best evidence of each step's tool. Measured (held out): natural plain R@5 .786 ->
# .857, typo .733 -> .867, LiveMCP R@1 .386 -> .429; ETOM L1-L4 unchanged (+-2 queries).
HYBRID_COS = 0.9  # at LENGTH_RAMP[0] terms or fewer
COVERAGE_WEIGHT = 0.15
# name words ("plot a bar chart" and generate_bar_chart): 0 for short queries (fitted), 0.02 for
# long ones (LONG_WEIGHTS); the evidence stays in `signals.name_words`.
NAME_WEIGHT = 0.0
NAME_MIN_WORDS = 2
# Query-dependent weights: from (HYBRID_COS, COVERAGE_WEIGHT, NAME_WEIGHT) at LENGTH_RAMP[0] keyword
# terms or fewer to LONG_WEIGHTS at LENGTH_RAMP[1] or more, linear in between (fit_fusion.py tried
# no ramp and 4-16, 6-14, 8-16, 10-20; all ramps alike, no ramp costs ETOM L1 and L4, LiveMCP steps).
LENGTH_RAMP: tuple[int, int] | None = (4, 16)
LONG_WEIGHTS = (0.6, 0.15, 0.02)  # (cosine, coverage, name words): the weights fitted on ETOM before


def hybrid_weights(n_terms: int | None) -> tuple[float, float, float]:
    """(cosine weight, coverage weight, name-word weight) for a query of n_terms keyword terms."""
    short = (HYBRID_COS, COVERAGE_WEIGHT, NAME_WEIGHT)
    if LENGTH_RAMP is None or n_terms is None:
        return short
    lo, hi = LENGTH_RAMP
    w = min(1.0, max(0.0, (n_terms - lo) / (hi - lo)))
    return tuple(a * (1 - w) + b * w for a, b in zip(short, LONG_WEIGHTS))  # type: ignore[return-value]
# Hybrid's BM25 weighs each query word by sqrt(idf) instead of idf (bm25.candidates): in a long
# request the rarest word (an id, a place name) would otherwise outvote the several ordinary words
# that say what to do, and the embedding already rewards the rare, specific ones. Measured
# (docs/search-research.md): ETOM L1+L2 R@1 +.005, L2 +.006, LiveMCP R@5 +2 queries; idf**0.3 to idf**0.7
# all gain, so 0.5 is not a knife-edge. Quoted values weigh less too (toolidx.search.quoted). Keyword
# mode keeps plain BM25 (its own calibration).
IDF_POWER = 0.5
# fuzzy_strength = (fuzzy - FUZZY_FLOOR) / (1 - FUZZY_FLOOR), clipped to [0, 1]: only a close name
# counts. Not fittable on the bench (its queries are sentences, never names); chosen so an
# exact-but-misspelt tool name ranks first and clears the threshold.
FUZZY_FLOOR = 0.75
FUZZY_WEIGHT = 0.35

PLATT = {
    # mode: (slope, bias) applied to z
    "hybrid": (10.087, -7.694),  # fit_fusion.py: every candidate of every set, each set weighing the same
    "semantic": (11.15, -7.436),  # z = cos; fit_fusion.py --only semantic, every set alike
    "keyword": (1.0, 0.0),  # z is already a logit, see ranking_values
}
# keyword: logit = KW_LOG * log(1 + bm25 * size_factor) + KW_REL * bm25_rel + KW_BIAS
#                  + KW_FUZZY * fuzzy_strength (fit_fusion.py --only keyword; KW_FUZZY is not fitted:
#                  the bench's queries are sentences, see FUZZY_FLOOR)
KW_LOG, KW_REL, KW_BIAS, KW_FUZZY = 1.638, 5.513, -11.056, 6.0

# Every mode's threshold: the highest that costs at most 1 point of feasible R@5 on ETOM and on
# livemcp-natural (each pooled; fit_fusion.py). Natural requests score low even when served, so
# the gate abstains on few impossible requests (hybrid: ETOM .06, natural far .13, near 0): the
# score of the best hit, a calibrated P(relevant), says how sure the answer is. Hybrid at 0.02
# would abstain on 48 % of ETOM's but hide 6 % of the natural requests' right answers; keyword's
# and semantic's former ETOM-only thresholds (0.41 and 0.004, on constants fitted there) hid 21 % and 13 %
# (docs/search-research.md has the tables).
THRESHOLD = {"hybrid": 0.005, "keyword": 0.09, "semantic": 0.007}


# A one- or two-word query ("status", "guava versions", "AAPL dividends") is a deliberate lookup:
# its evidence is small in absolute terms even when exact (a short BM25, a short embedding), and
# every threshold was fitted on sentences. Such queries are not gated in any mode: the best tools
# are shown with their own scores.
GATE_MIN_TERMS = 3


def threshold(mode: str, n_terms: int | None = None) -> float:
    if n_terms is not None and n_terms < GATE_MIN_TERMS:
        return 0.0
    return THRESHOLD[mode]


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


def ranking_values(cands: dict[int, dict], mode: str, n_tools: int = REFERENCE_TOOLS,
                   n_terms: int | None = None) -> dict[int, float]:
    """z per candidate (higher is better); the score is a monotone map of it."""
    best = max((c["bm25"] for c in cands.values()), default=0.0) or 1.0
    scale = size_factor(n_tools)
    cos_w, cov_w, name_w = hybrid_weights(n_terms)
    out: dict[int, float] = {}
    for r, c in cands.items():
        fz = fuzzy_strength(c.get("fuzzy", 0.0))
        rel = c["bm25"] / best
        if mode == "hybrid":
            out[r] = (cos_w * c["cos"] + (1 - cos_w) * rel
                      + cov_w * c.get("coverage", 0.0) + FUZZY_WEIGHT * fz
                      + name_w * (c.get("name_words", 0) >= NAME_MIN_WORDS))
        elif mode == "semantic":
            out[r] = c["cos"]
        else:
            if c["bm25"] <= 0 and fz <= 0:
                continue
            out[r] = KW_LOG * math.log1p(c["bm25"] * scale) + KW_REL * rel + KW_BIAS + KW_FUZZY * fz
    return out


def effective_mode(cands: dict[int, dict], mode: str) -> str:
    """The calibration that applies. Hybrid's is fitted on every candidate, those of queries none of
    whose words is in the index (pure paraphrases) included, so it is hybrid's own for every query
    (before fit_fusion.py such a query fell back on the semantic calibration)."""
    return mode


# The fusion weights, Platt constants and thresholds above are those of one embedding model: its
# cosines have their own scale (MiniLM's unrelated pairs sit near 0.1, other models' near 0.5 or
# 0.8). They are applied only to an index embedded with a model named here; any other model gets
# uncalibrated instead (fit_fusion.py refits them for a model given its vectors of the bench sets).
CALIBRATED_MODELS = {
    # model id (the index's embed_model): what was fitted on it
    "sentence-transformers/all-MiniLM-L6-v2": "fusion, Platt and thresholds of hybrid and semantic "
                                              "(benchmarks/fit_fusion.py)",
}
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


def score_candidates(cands: dict[int, dict], mode: str, n_tools: int = REFERENCE_TOOLS,
                     model: str | None = None, n_terms: int | None = None) -> dict[int, float]:
    """Calibrated score in [0, 1] per candidate (for a model not in CALIBRATED_MODELS, in hybrid
    and semantic mode: uncalibrated_scores)."""
    if mode != "keyword" and not is_calibrated(model):
        return uncalibrated_scores(cands, mode)
    mode = effective_mode(cands, mode)
    slope, bias = PLATT[mode]
    return {r: _sigmoid(slope * z + bias) for r, z in ranking_values(cands, mode, n_tools, n_terms).items()}
