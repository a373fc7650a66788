"""From retrieval evidence to a score in [0, 1] that means the same thing for every query, and
the "no good match" thresholds. Constants fitted on the bench sets by benchmarks/calibrate.py
(docs/search.md has the tables); refit them there if the method changes.

Per candidate tool the evidence is:
- cos: cosine similarity of the query and tool embeddings (absolute: comparable across queries);
- bm25: FTS5 BM25 with field weights (store.retrieval.FTS_WEIGHTS); bm25_rel = bm25 / the best
  BM25 of this query (BM25 grows with query length, so only its ratio ranks well);
- fuzzy: rapidfuzz similarity of a short query to the tool name (typos, snake_case vs words);
- hybrid only: coverage (the share of the query's words the tool has) and name_words (how many of
  the tool name's words the query has).

Ranking value z, per mode, then score = sigmoid(SLOPE * z + BIAS): a Platt scaling fitted by
logistic regression on every candidate of ETOM levels 1-2 plus its infeasible queries, so a
score is an estimate of P(this tool serves the query). Few parameters on purpose (a handful of
weights and two Platt constants per mode) so the fit cannot memorise queries; LiveMCPBench, not
used for fitting, checks that it carries over.

"No good match": a query whose best tool scores below THRESHOLD[mode] gets no hits. Chosen so
>= 80 % of ETOM's infeasible queries abstain while R@5 of the feasible queries drops <= 1 point.
"""

from __future__ import annotations

import math

# hybrid: z = HYBRID_COS * cos + (1 - HYBRID_COS) * bm25_rel + COVERAGE_WEIGHT * coverage
#             + FUZZY_WEIGHT * fuzzy_strength + NAME_WEIGHT * [name_words >= NAME_MIN_WORDS]
HYBRID_COS = 0.6
# coverage: the share of the query's words (quoted values x0.25) a tool contains. bm25_rel says how
# well a tool matches the query's rare words; coverage says it matches the whole request ("list the
# boards" vs a tool that only shares "boards"): it separates sibling tools of one server. Measured
# (docs/search.md): ETOM L2 R@1 .846 -> .851; weight 0.15-0.2 alike on ETOM, 2-fold CV over it and
# the fusion weight L2 .849-.854; at 0.2 LiveMCP loses one query (R@5 .743), at 0.15 none.
COVERAGE_WEIGHT = 0.15
# name words: + NAME_WEIGHT when the query has at least NAME_MIN_WORDS of the tool name's words
# ("plot a bar chart" and generate_bar_chart; "comments on story 4449" and getStoryWithComments). A
# name is its server's shortest account of what a tool does; BM25 already weighs the name field,
# but a long description elsewhere can outvote it, and a description that never names its service
# ("Get a story with its comments") can lose the cosine to a sibling's. Measured (docs/search.md):
# ETOM flat (2-fold CV picks 0 or 0.02 alike), LiveMCP R@1 +2 queries, held-out ETOM level 3 R@5
# +.004 and LiveMCP relaxed R@1 +2; 0.03-0.05 gain the same on LiveMCP but cost ETOM L2 1-2 queries.
NAME_WEIGHT = 0.02
NAME_MIN_WORDS = 2
# Hybrid's BM25 weighs each query word by sqrt(idf) instead of idf (bm25.candidates): in a long
# request the rarest word (an id, a place name) would otherwise outvote the several ordinary words
# that say what to do, and the embedding already rewards the rare, specific ones. Measured
# (docs/search.md): ETOM L1+L2 R@1 +.005, L2 +.006, LiveMCP R@5 +2 queries; idf**0.3 to idf**0.7
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
    "hybrid": (13.808, -11.867),
    "semantic": (15.192, -10.664),  # z = cos
    "keyword": (1.0, 0.0),  # z is already a logit, see ranking_values
}
# keyword: logit = KW_LOG * log(1 + bm25) + KW_REL * bm25_rel + KW_BIAS + KW_FUZZY * fuzzy_strength
KW_LOG, KW_REL, KW_BIAS, KW_FUZZY = 1.408, 11.105, -15.294, 6.0

THRESHOLD = {"hybrid": 0.02, "keyword": 0.41, "semantic": 0.004}


# Keyword evidence for a one- or two-word query is small in absolute terms even when it is exact
# ("status"), and the keyword threshold was fitted on sentence-like requests (ETOM's infeasible
# queries have ~10 terms). Such short lookups are deliberate searches: keyword mode does not gate them.
KW_GATE_MIN_TERMS = 3


def threshold(mode: str, n_terms: int | None = None) -> float:
    if mode == "keyword" and n_terms is not None and n_terms < KW_GATE_MIN_TERMS:
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


def ranking_values(cands: dict[int, dict], mode: str, n_tools: int = REFERENCE_TOOLS) -> dict[int, float]:
    """z per candidate (higher is better); the score is a monotone map of it."""
    best = max((c["bm25"] for c in cands.values()), default=0.0) or 1.0
    scale = size_factor(n_tools)
    out: dict[int, float] = {}
    for r, c in cands.items():
        fz = fuzzy_strength(c.get("fuzzy", 0.0))
        rel = c["bm25"] / best
        if mode == "hybrid":
            out[r] = (HYBRID_COS * c["cos"] + (1 - HYBRID_COS) * rel
                      + COVERAGE_WEIGHT * c.get("coverage", 0.0) + FUZZY_WEIGHT * fz
                      + NAME_WEIGHT * (c.get("name_words", 0) >= NAME_MIN_WORDS))
        elif mode == "semantic":
            out[r] = c["cos"]
        else:
            if c["bm25"] <= 0 and fz <= 0:
                continue
            out[r] = KW_LOG * math.log1p(c["bm25"] * scale) + KW_REL * rel + KW_BIAS + KW_FUZZY * fz
    return out


def effective_mode(cands: dict[int, dict], mode: str) -> str:
    """The calibration that applies: a hybrid query none of whose words is in the index (a pure
    paraphrase) has only semantic evidence, and is judged as a semantic query. Otherwise the
    missing keyword half would cap every score below the threshold."""
    if mode == "hybrid" and not any(c["bm25"] > 0 for c in cands.values()):
        return "semantic"
    return mode


def score_candidates(cands: dict[int, dict], mode: str,
                     n_tools: int = REFERENCE_TOOLS) -> dict[int, float]:
    """Calibrated score in [0, 1] per candidate."""
    mode = effective_mode(cands, mode)
    slope, bias = PLATT[mode]
    return {r: _sigmoid(slope * z + bias) for r, z in ranking_values(cands, mode, n_tools).items()}
