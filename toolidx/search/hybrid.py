"""Search: keyword (BM25 with field weights), semantic (the stored vectors nearest the query's
embedding), fuzzy names (rapidfuzz), and a calibrated hybrid of the three. Both retrievals are
the index's own (`db.retrieval`, one implementation per engine in store/); this module never asks
which engine it is on.

Every hit gets a score in [0, 1] that means the same thing for every query: an estimate of the
probability that the tool serves the request, from a small logistic model over absolute evidence
(cosine similarity, BM25, query-term coverage, fuzzy name match) and over how far the hit stands
out of the query's best candidates, fitted on the bench sets (`toolidx.search.calibration`,
docs/research/search.md). Below a calibrated threshold search returns nothing and
says so ("no good match") instead of the least-bad tools.

Keyword mode imports no numpy, fastembed or mcp, so a keyword search in a new process is fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..core import tooldoc
from ..core.embedding import INDEX_MODEL, Embedder, QueryEmbedder
from ..core.filters import Filters
from ..core.notices import warn_once
from ..core.tokens import STOP_WORDS, query_terms
from ..core.toolcard import ToolCard
from ..core.tooldoc import first_line, split_name
from ..store.index import Reader
from ..store.tools import filtered_rowids, unknown_servers_note
from . import actions, negation, quoted, server_match, spelling
from . import calibration as cal
from . import gate as far_gate
from . import learned as learning
from . import near as near_gate
from .query_vector import embed_query
from .request import SPELLINGS, SearchRequest, Spelling

POOL = 50  # candidates taken from each retriever before fusion
FUZZY_MAX_TERMS = 4  # fuzzy name matching is for short, name-like queries ("git_stauts")
FUZZY_CUTOFF = 75.0
# Without --min-score, a runner-up is shown only while its score is at least this share of the best
# hit's: after a 0.9 hit, 0.001 rows are noise, not alternatives. The scores are calibrated, so the
# share means the same on every catalog. A score reads the list (calibration.LIST_K), so a runner-up
# far behind a clear first hit scores low even when it serves the query too: over every bench set,
# 0.005 hides 0-1 relevant tool of a top 5 per mode and model, 0.01 1-5, 0.05 21-47
# (docs/research/search.md). --min-score X shows every hit scoring X or more instead.
RUNNER_UP_SHARE = 0.005


CLI = SPELLINGS["cli"]  # the hints name the CLI's flags by default


@dataclass
class Signals:
    """The evidence behind a hit's score, as the ranking measured it; None where the mode does not
    measure it (keyword mode has no cosine; coverage and name words are hybrid's)."""

    bm25: float = 0.0  # the tool's BM25 for the query (field-weighted, as FTS5 scores it)
    fuzzy: float = 0.0  # similarity of a short query to the tool's name as words, 0..1
    cosine: float | None = None  # cosine of the query and tool embeddings
    coverage: float | None = None  # share of the query's words the tool has (quoted values x0.25)
    name_words: int | None = None  # how many of the tool name's words the query has
    # the hit's share of the odds of the query's 10 best candidates (calibration.odds_shares): what
    # its score reads of the list beside it; None where the scores are uncalibrated
    share: float | None = None
    # hybrid: the tool's action contradicts the request's (1), or the request changes something
    # and the tool only reads (1); search.actions
    opposed: int | None = None
    reads_only: int | None = None
    # hybrid: the request only reads and the tool changes something (1); search.actions
    writes: int | None = None
    # hybrid: the tool does what the request forbids ("do not delete ..."; search.negation): it
    # ranks below every tool that does not
    negated: int | None = None
    # hybrid: the request is about nothing the catalog holds (search.gate), and the list was lowered
    far: int | None = None
    # hybrid: its server's cosine lead over the median server's (search.server_match); None without
    # server vectors
    server: float | None = None
    # hybrid: the request names a product no tool has (search.near), and the list was lowered
    near: int | None = None

    def to_json(self) -> dict[str, float]:
        out: dict[str, float] = {"bm25": self.bm25, "fuzzy": self.fuzzy}
        keys = ("cosine", "coverage", "name_words", "share", "opposed", "reads_only", "writes", "negated")
        for key in (*keys, "server", "far", "near"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass
class Hit(ToolCard):
    """A tool as search shows it (`description`: the first line)."""

    score: float  # calibrated estimate of P(relevant), in [0, 1]
    matched: list[str] = field(default_factory=list)  # query terms found in the tool's text
    why: str = ""
    signals: Signals = field(default_factory=Signals)  # the evidence behind the score
    # its server failed its last crawl: the tool is as that server last listed it, and may be gone.
    # Ranked as before, but every front-end shows `note` beside it (#36 item 5)
    stale: bool = False
    note: str = ""  # "stale: its server failed its last crawl (why)"; "" for a tool crawled fine
    # what an agent must read before it uses this tool, of `why`: the request forbids it, its
    # server retired it, it does the opposite, it only reads what the request would change, it
    # writes where the request only reads (serve's search_tools shows these, not the whole `why`)
    cautions: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            **super().to_json(),
            "score": self.score,
            "matched": self.matched,
            "why": self.why,
            "signals": self.signals.to_json(),
            "stale": self.stale,
            "note": self.note,
            "cautions": self.cautions,
        }


@dataclass
class SearchResult:
    query: str
    mode: str  # as asked
    mode_used: str  # what ran: "keyword" when the model or the vectors are missing
    hits: list[Hit]
    no_match: bool
    threshold: float  # the score below which hits are dropped
    notes: list[str] = field(default_factory=list)
    considered: int = 0  # tools that passed the filters
    gate: float = 0.0  # the calibrated "no good match" threshold for this query (min_score aside)
    corrections: dict[str, list[str]] = field(default_factory=dict)  # slip -> words searched beside it
    # the note (also in `notes`) that says why mode_used is not mode: a front-end that knows
    # better why it searched without the model says that instead (`without_model`)
    fallback: str = ""

    def without_model(self, note: str | None) -> SearchResult:
        """This result with the front-end's own note on the model (serve's, while it loads) in
        place of search's fallback note; unchanged without one."""
        if note:
            self.notes = [n for n in self.notes if n != self.fallback] + [note]
        return self

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "mode": self.mode,
            "mode_used": self.mode_used,
            "no_match": self.no_match,
            "threshold": self.threshold,
            "calibrated_threshold": self.gate,
            "count": len(self.hits),
            "considered": self.considered,
            "notes": self.notes,
            "corrections": self.corrections,
            "hits": [h.to_json() for h in self.hits],
        }


# --- query embedding ----------------------------------------------------------------------------
def get_query_embedder(db: Reader) -> Embedder | None:
    """The embedder for the model named in the index, or None with a one-time warning when the
    index has no vectors or the model cannot be loaded offline. Loaded once per process: by
    `load_embedder`, whose cache is the only one."""
    from ..store import vectors

    model = db.get_meta("embed_model")
    if not model or not db.vec_available or not vectors.has_table(db):
        if not db.vec_available:
            warn_once("vec", f"{db.vec_error}: search is keyword-only")
        else:
            warn_once(
                "no-vectors",
                "the index has no embeddings: search is keyword-only (run `toolidx embed` with a model to add them)",
            )
        return None
    from ..core.embedding import QUERY_THREADS, load_embedder, resolve_model
    from ..core.errors import ModelError

    try:
        emb = load_embedder(
            resolve_model(name=model, remembered_path=db.get_meta("embed_model_path")), threads=QUERY_THREADS
        )
    except ModelError as e:
        warn_once("model", f"{e}: search is keyword-only")
        emb = None
    if emb is not None and str(emb.dim) != (db.get_meta("embed_dim") or str(emb.dim)):
        warn_once(
            "model-dim",
            f"the model loaded for {model!r} has {emb.dim} dimensions, the index "
            f"{db.get_meta('embed_dim')}: search is keyword-only",
        )
        emb = None
    return emb


def warm(db: Reader, embedder: QueryEmbedder = INDEX_MODEL) -> None:
    """Load now what the first searches would load: every word's keyword postings, the vectors
    and the model (a long-lived process: `toolidx serve`, benchmarks). The engine may go on
    loading a large catalog's postings in a thread after it returns (`Retrieval.warm`). Tool names
    are read as searches show them, not all ahead: at 100k tools every name and its words' stems
    held 70 MB and 2.2 s of a replica's start, and a search reads its ~100 candidates' in ~0.2 ms."""
    if embedder is INDEX_MODEL:
        embedder = get_query_embedder(db)
    db.retrieval.warm(embeddings=embedder is not None)
    if embedder is not None:
        server_match.warm(db)
        embedder.embed_query("warm up")  # ONNX Runtime's first run allocates its buffers


# --- fuzzy names --------------------------------------------------------------------------------
def _all_names(db: Reader) -> tuple[list[int], list[str]]:
    """(rowids, names as words) of every tool, once per index version."""

    def build() -> tuple[list[int], list[str]]:
        rows = db.retrieval.tool_names()
        return [r for r, _ in rows], [" ".join(split_name(n)) for _, n in rows]

    return db.cache.get("names", build, size=lambda entry: len(entry[0]))


def _fuzzy(db: Reader, terms: list[str], pool: int, filters: Filters | None, candidates: list[int]) -> dict[int, float]:
    """rowid -> similarity in [0, 1] of a short query to the tool name (both as words). Scored on
    the keyword/vector candidates (a misspelt name still shares a word or its meaning with the
    tool); only when they are empty on every name in the index."""
    if not terms or len(terms) > FUZZY_MAX_TERMS:
        return {}
    from rapidfuzz import fuzz, process

    if candidates:
        known = _names_of(db, candidates)
        rowids = sorted(r for r in candidates if r in known)
        names = [" ".join(split_name(known[r])) for r in rowids]
        allowed = None  # candidates already passed the filters
    else:
        rowids, names = _all_names(db)
        allowed = filtered_rowids(db, filters)
    q = " ".join(terms)
    out: dict[int, float] = {}
    for _, score, i in process.extract(q, names, scorer=fuzz.ratio, limit=pool * 4, score_cutoff=FUZZY_CUTOFF):
        r = rowids[i]
        if allowed is None or r in allowed:
            out[r] = score / 100.0
            if len(out) >= pool:
                break
    return out


# --- search -------------------------------------------------------------------------------------
def _prepare(query: str) -> str:
    return " ".join((query or "").split())


def gather(
    db: Reader, query: str, *, mode: str, filters: Filters | None, embedder: Embedder | None, pool: int = POOL
) -> tuple[dict[int, dict], list[str], str, dict[str, list[str]]]:
    """Candidates with their evidence: {rowid: {"bm25", "cos", "fuzzy", "kw_rank", "vec_rank"}},
    the keyword terms, the mode that actually ran, and the typing slips searched also as other
    words (spelling.corrections)."""
    text = _prepare(query)
    mode_used = mode
    if mode in ("hybrid", "semantic") and embedder is None:
        mode_used = "keyword"
    # "do not delete my files, just list them": searched as what is asked, the forbidden verb
    # out (search.negation); hybrid only, like the action marks
    neg = negation.read(text) if mode_used == "hybrid" else None
    if neg is not None and neg.text:
        text = neg.text
    fixes = spelling.corrections(db, text)
    # the name-like match reads what was typed, as a name's words: a slip is its evidence
    typed = query_terms(text, whole=False)
    text = spelling.expand(text, fixes)
    terms = query_terms(text)
    # "remember ..." is searched also as "memory", the name of a server of its family, by keyword
    # only: the embedding reads the verb's own meaning, and "memory" beside it drew a browser's
    # heap snapshot (search.server_match.kin)
    kin = server_match.kin(db, text) if mode_used == "hybrid" else {}
    terms = terms + [n for ns in kin.values() for n in ns if n not in terms]
    cands: dict[int, dict] = {}

    def slot(r: int) -> dict:
        return cands.setdefault(r, {"bm25": 0.0, "cos": None, "fuzzy": 0.0})

    hybrid = mode_used == "hybrid"  # reads quoted values and rare words differently (docs/research/search.md)
    tw = _places_weigh_nothing(terms, quoted.term_weights(text, terms)) if hybrid else None
    if mode_used in ("hybrid", "keyword"):
        for rank, (r, s) in enumerate(
            db.retrieval.keyword(terms, pool, filters, idf_power=cal.IDF_POWER if hybrid else 1.0, term_weights=tw)
        ):
            c = slot(r)
            c["bm25"], c["kw_rank"] = s, rank
    if mode_used in ("hybrid", "semantic") and text:
        # in this thread, after the keyword half: the model's threads take every core of a small
        # machine, and one beside them only slowed both (docs/research/search.md, round 12)
        qv = embed_query(embedder, (quoted.strip_quoted(text) if hybrid else text)[:2000])
        for rank, (r, s) in enumerate(db.retrieval.knn(qv, pool, filters)):
            c = slot(r)
            c["cos"], c["vec_rank"] = s, rank
        missing = [r for r, c in cands.items() if c["cos"] is None]
        for r, s in db.retrieval.cosines(qv, missing).items():
            cands[r]["cos"] = s
        if hybrid:  # what each candidate's server is about (search.server_match)
            server_match.add(db, qv, cands, filters, server_match.kin_servers(db, kin))
    if mode_used in ("hybrid", "keyword"):
        for r, s in _fuzzy(db, typed, pool, filters, list(cands)).items():
            slot(r)["fuzzy"] = s
    if hybrid:
        _cover(db, terms, tw, cands)
        _mark_actions(db, text, cands, neg)
        for c in cands.values():  # what a server's name of a request word's family matched (`why`)
            if said := [f"{w} ~ {n}" for w, ns in kin.items() for n in ns if n in c.get("matched", ())]:
                c["kin"] = ", ".join(said)
    for c in cands.values():
        if c["cos"] is None:
            c["cos"] = 0.0
    return cands, terms, mode_used, fixes


def _places_weigh_nothing(terms: list[str], tw: dict[str, float]) -> dict[str, float]:
    """The keyword weights `tw` with a place's name at 0 (search.gate.places): a match on a place
    alone is no evidence (issue 43: "weather in London tomorrow" found `get_current_time`, whose
    parameter's example says Europe/London, at 0.59). A request of places only keeps them."""
    places = [t for t in terms if t in far_gate.places()]
    if not places or len(places) == len(terms):
        return tw
    return {**tw, **dict.fromkeys(places, 0.0)}


def _cover(db: Reader, terms: list[str], tw: dict[str, float] | None, cands: dict[int, dict]) -> None:
    """Each candidate's query words ("matched") and the share of the query they make up
    ("coverage"; quoted values weigh QUOTED_WEIGHT): hybrid's evidence that a tool does what the
    whole request says, not just its rarest part (the coverage weight of the model's fit, calibration.ModelFit)."""
    todo = list(cands)
    if not todo:
        return
    tw = tw or {}
    total = sum(tw.get(w, 1.0) for w in terms)
    for r, words in db.retrieval.matched_terms(terms, todo, many=True).items():
        c = cands[r]
        c["matched"] = words
        c["coverage"] = sum(tw.get(w, 1.0) for w in words) / total if total else 0.0
    for r, n in _name_words(db, terms, todo).items():
        cands[r]["name_words"] = n


def _mark_actions(db: Reader, text: str, cands: dict[int, dict], neg: negation.Negation | None = None) -> None:
    """Each candidate's action marks (search.actions): "opposed" when the tool does the opposite
    of what the request asks, "reads_only" when the request changes something and the tool only
    reads, "does" when it does just what the request asks, and "negated" when it does what the
    request forbids (search.negation; "forbidden": the verbs, for `why`). In a task of several
    steps a tool that reads is one of them ("step"), not one that "only reads": the list a reading
    step leads is not lowered (issue 43: ETOM's "create ... and then list ..." were turned away)."""
    request = neg.request if neg is not None else actions.read_request(text)
    if request[1] is None and neg is None:
        return
    names = _names_of(db, list(cands))
    said = ", ".join(neg.said) if neg is not None else ""
    one = actions.asks_one_thing(text, request[0])  # a task of several steps lifts none of them
    reads = request[0] == actions.READ and actions.only_reads(text)
    steps = actions.several_steps(text, request[0])
    for r, c in cands.items():
        name = names.get(r, "")
        c["opposed"], c["reads_only"] = actions.marks(request, name)
        c["writes"] = actions.writes(request, name, reads)
        # the antonym of the request's verb ("remember ..." and `delete_relations`), not an update
        # asked of a tool that creates or deletes (ETOM's "update the graph by removing ..." wants
        # `delete_observations`): it ranks under a tool that does what was asked, as one that reads
        c["contrary"] = int(c["opposed"] and (request[0], actions.tool_action(name)) not in actions.ASKED_NOT_DONE)
        if steps and c["reads_only"]:
            c["reads_only"], c["step"] = 0, 1
        # and on what the request is about: a word of it besides the verb ("create a Next.js
        # middleware ..." and `create_directory` share only "create")
        about = any(actions.VERBS.get(w) != request[0] for w in c.get("matched", ()))
        c["does"] = actions.does(request, name) if one and about else 0
        if neg is not None and neg.forbids(name):
            c["negated"], c["forbidden"] = 1, said


def _replaced_first(
    db: Reader, scored: dict[int, float], cands: dict[int, dict], rows: dict[int, dict], shown: list[int]
) -> None:
    """A tool shown whose own text says it is deprecated and names its replacement ("DEPRECATED:
    Use read_text_file instead": the filesystem server's `read_file`) trades scores with that tool
    when it ranks above it, and both say so in `why`: an agent is not handed a tool its server
    retired. Only a tool of the same server, among this search's candidates (its filters kept), is
    a replacement: a server reorders its own tools only, as its own descriptions could anyway.
    `rows` gains the replacement's row when it was not among them."""
    named = {r: tooldoc.replacement(rows[r].get("description"), rows[r].get("title")) for r in shown if r in rows}
    named = {r: n for r, n in named.items() if n}
    if not named:
        return
    names = _names_of(db, list(cands))
    for r, name in named.items():
        cands[r]["deprecated"] = name
        rivals = [c for c in cands if c != r and names.get(c) == name]
        found = {c: row for c, row in db.retrieval.hit_rows(rivals).items() if row["server"] == rows[r]["server"]}
        if not found:
            continue
        new = next(iter(found))
        cands[new]["replaces"] = rows[r]["id"]
        if scored[r] > scored[new]:
            scored[r], scored[new] = scored[new], scored[r]
        rows.setdefault(new, found[new])


# a verb a tool's own text says it does not do: "It is only read, never run", "does not modify",
# "without deleting the source"; not a passive ("if the file cannot be read": what may fail)
_DISCLAIMS = re.compile(
    r"\b(?:never|not|cannot|can't|won't|doesn't|does\s+not|do\s+not|don't|without)\s+([a-z]+)",
    re.IGNORECASE,
)


def _disclaimed(query: str, cands: dict[int, dict], rows: dict[int, dict], shown: list[int]) -> None:
    """A tool shown whose own description says it does not do the request's verb ("run a VBA
    macro" and `read_vba`: "It is only read, never run", which the keyword match on "run" put
    first at 0.99) says so in its cautions; its rank stays (a server's words are read, not trusted
    to move it)."""
    verb = actions.read_request(query)[1]
    if not verb:
        return
    asked = actions.forms(verb)
    for r in shown:
        text = (rows.get(r) or {}).get("description") or ""
        if any(asked & actions.forms(m.group(1)) for m in _DISCLAIMS.finditer(text[:2000])):
            cands[r]["disclaims"] = verb


def _names_of(db: Reader, rowids: list[int]) -> dict[int, str]:
    """rowid -> name, for at least the given tools: each read once per index version (fuzzy names,
    name words and action marks all ask for their candidates' names)."""
    known: dict[int, str] = db.cache.get("names_by_rowid", dict, size=len)
    todo = [r for r in rowids if r not in known]
    if todo:
        known.update(db.retrieval.names_for(todo))
    return known


def _name_stems_for(db: Reader, rowids: list[int]) -> dict[int, frozenset[str]]:
    """rowid -> the stems of its name's words (stop words aside), for at least the given tools,
    each cut once per index version."""
    known: dict[int, frozenset[str]] = db.cache.get("name_stems", dict, size=len)
    todo = [r for r in rowids if r not in known]
    read = _names_of(db, todo) if todo else {}
    words = {r: split_name(read[r]) for r in todo if r in read}
    if words:
        names = {r: [w for w in ws if w not in STOP_WORDS] for r, ws in words.items()}
        cut = db.retrieval.stems(list({w for ws in names.values() for w in ws}))
        if cut is not None:
            for r, ws in names.items():
                known[r] = frozenset(t for w in ws for t in cut[w])
    return known


def _name_words(db: Reader, terms: list[str], rowids: list[int]) -> dict[int, int]:
    """How many of each tool name's words the query has ("bar" and "chart" of generate_bar_chart),
    compared as the keyword index stems them."""
    known = _name_stems_for(db, rowids)
    cut = db.retrieval.stems(terms) or {}
    said = {t for w in terms for t in cut.get(w, ())}
    return {r: len(known[r] & said) for r in rowids if r in known}


def search(
    db: Reader,
    req: SearchRequest,
    *,
    embedder: QueryEmbedder = INDEX_MODEL,
    spelling: Spelling = CLI,
    learned: Any = learning.AUTO,
) -> SearchResult:
    """Find the tools that serve `req`, a request its front-end built and checked
    (`SearchRequest.check`: the library's callers with `cut_long=True`). `req.min_score` overrides
    the calibrated "no good match" threshold (0 returns the best tools whatever their score).
    `embedder=INDEX_MODEL` loads the index's model (see get_query_embedder); None searches without
    one. `spelling`: how the caller names the options in hints and errors (the CLI's flags by
    default). `learned`: where to read what serve learned from usage (search.learned: AUTO, the
    usage beside the index; a Source; None: nothing). The one search of every front-end: the CLI,
    serve's search_tools, /v1/search and the console (serve.answers.run_search), `Catalog`,
    `ToolCatalog` and `eval`."""
    query, mode, limit, min_score = req.query, req.mode, req.limit, req.min_score
    filters = None if req.filters.is_empty() else req.filters
    notes: list[str] = []
    fallback = ""
    if embedder is INDEX_MODEL:
        embedder = get_query_embedder(db) if mode != "keyword" else None
    with db.snapshot():
        cands, terms, mode_used, fixes = gather(
            db, query, mode=mode, filters=filters, embedder=embedder, pool=max(POOL, limit)
        )
        if mode_used != mode:
            fallback = f"{mode} search needs embeddings; ran keyword search instead"
            notes.append(fallback)
        if fixes:
            notes.append(
                "also searched for " + "; ".join(f"{', '.join(words)} (for {slip!r})" for slip, words in fixes.items())
            )
        model = db.get_meta("embed_model") if mode_used != "keyword" else None
        calibrated = cal.is_calibrated(model)
        if not calibrated:
            warn_once(
                f"uncalibrated:{model}",
                f"the index is embedded with {model}, and toolidx's fusion "
                "and score calibration were fitted on another model: hybrid ranks by reciprocal "
                "rank fusion, scores are not probabilities and no \"no good match\" gate applies",
            )
            notes.append(
                f"scores are uncalibrated for {model} (fitted on "
                f"{', '.join(cal.CALIBRATED_MODELS)}): ranked by rank fusion, not gated"
            )
        # hybrid's calibration is fitted on every candidate, pure paraphrases included: its own for every query
        gate = cal.threshold(mode_used, len(terms), model) if calibrated else 0.0
        threshold = gate if min_score is None else float(min_score)
        total = db.retrieval.filtered_count(None)
        scored = learning.rescore(  # what past requests like this one led to (search.learned)
            db,
            query,
            cands,
            mode=mode_used,
            embedder=embedder,
            filters=filters,
            model=model,
            source=learned,
            score=lambda lift: cal.score_candidates(
                cands, mode_used, total, model=model, n_terms=len(terms), lift=lift
            ),
        )
        fit = cal.fit_for(model) if calibrated and mode_used == "hybrid" else None  # the far gate, server evidence
        # the far and near gates read a request the calibrated gate judges, with a model fitted
        # for them; a request that past usage lifted a tool for (search.learned) is about
        # something the catalog holds
        judged = gate > 0 and not any(c.get("learned") for c in cands.values())
        about = near = None
        if judged and fit is not None and fit.gate is not None:
            df = db.retrieval.document_frequency
            about = far_gate.read(query, terms, cands, scored, fit.gate, df, total)
        if about is not None and about.far:  # about nothing the catalog holds (search.gate)
            scored = far_gate.lower(scored, gate, cal.BELOW)
            for c in cands.values():
                c["far"] = about.why()
        elif judged and fit is not None and fit.near is not None:  # and what the far gate let through
            df, rows_of = db.retrieval.document_frequency, db.retrieval.hit_rows
            near = near_gate.read(query, terms, cands, scored, fit.near, df, rows_of, fixes)
        if near is not None and near.near:  # names a product the catalog lacks (search.near)
            scored = far_gate.lower(scored, gate, cal.BELOW)
            for c in cands.values():
                c["near"] = near.why()
        order = sorted(scored, key=lambda r: -scored[r])[: limit * 2 + 10]
        if len(order) > limit:  # the rows that can be shown: a score that rounds as the limit-th's or above
            edge = round(scored[order[limit - 1]], 4)
            order = [r for r in order if round(scored[r], 4) >= edge]
        rows = db.retrieval.hit_rows(order)
        _replaced_first(db, scored, cands, rows, order[:limit])
        _disclaimed(query, cands, rows, order[:limit])
        # as shown (4 decimals), ties by the unrounded score: low scores round alike
        ranked = sorted(rows, key=lambda r: (-round(scored[r], 4), -scored[r], rows[r]["id"]))
        if min_score is None:
            # the calibrated threshold judges the query (is any tool good enough?); once one is,
            # the runners-up are shown with their own scores, as alternatives
            kept = ranked[:limit] if ranked and scored[ranked[0]] >= threshold else []
            if kept and calibrated:  # runners-up while plausible next to the best (RUNNER_UP_SHARE)
                floor = RUNNER_UP_SHARE * scored[kept[0]]
                kept = [r for r in kept if scored[r] >= floor]
        else:
            kept = [r for r in ranked if scored[r] >= threshold][:limit]
        if mode_used == "hybrid":
            matched = {r: cands[r].get("matched", []) for r in kept}
        else:
            matched = db.retrieval.matched_terms(terms, kept) if mode_used != "semantic" else {}
        considered = total if filters is None or filters.is_empty() else db.retrieval.filtered_count(filters)
    if not terms and mode_used == "keyword":
        notes.append("the query has no searchable words (only stop words, bare numbers or symbols)")
    server_w = fit.server if fit else 0.0
    hits = [_hit(rows[r], scored[r], matched.get(r, []), cands[r], mode_used, server_w) for r in kept]
    no_match = not hits
    if no_match and ranked and about is not None and about.far:
        notes.append(
            f"no good match: {about.why()} (no tool has the words, and the nearest by meaning, "
            f"{rows[ranked[0]]['id']}, is far){spelling.below_threshold()}"
        )
    elif no_match and ranked and near is not None and near.near:
        lacks = "names it" if near.missing else "does it"
        notes.append(
            f"no good match: {near.why()} (no tool {lacks}, and the nearest by meaning, "
            f"{rows[ranked[0]]['id']}, is far){spelling.below_threshold()}"
        )
    elif no_match and ranked:
        best = scored[ranked[0]]
        notes.append(
            f"no good match: the best tool ({rows[ranked[0]]['id']}) scored {best:.3f}, "
            f"below the threshold {threshold:.3f}{spelling.below_threshold()}"
        )
    elif no_match and considered == 0:
        notes.append("no tools pass the filters")
        if filters is not None and filters.servers and (said := unknown_servers_note(db, filters.servers)):
            notes.append(said)
    elif no_match and terms:  # keyword search found no tool with any of the words: say which words
        meaning = "; --mode hybrid or semantic reads the meaning too" if mode_used == "keyword" else ""
        notes.append(f"no good match: no tool has any of the words {', '.join(terms[:8])}{meaning}")
    return SearchResult(
        query=query,
        mode=mode,
        mode_used=mode_used,
        hits=hits,
        no_match=no_match,
        threshold=threshold,
        notes=notes,
        considered=considered,
        gate=gate,
        corrections=fixes,
        fallback=fallback,
    )


def _hit(row: dict, score: float, matched: list[str], ev: dict, mode_used: str, server_w: float = 0.0) -> Hit:
    reasons = []
    if matched:
        reasons.append("terms: " + ", ".join(matched[:8]))
    if ev.get("fuzzy", 0) >= FUZZY_CUTOFF / 100:
        reasons.append(f"fuzzy name ({ev['fuzzy']:.2f})")
    if mode_used != "keyword" and ev.get("cos", 0) > 0:
        reasons.append(f"semantic ({ev['cos']:.2f})")
    if server_w and ev.get("server", 0.0) >= server_match.JOIN_LEAD:  # its server is what the request is about
        reasons.append(f"server: {ev['server_name']}")
    if ev.get("kin"):
        reasons.append(f"words of one family: {ev['kin']}")
    if ev.get("learned"):
        reasons.append(learning.why(ev) or "")
    if ev.get("near"):  # the list was lowered for it, as for "far"
        reasons.insert(0, ev["near"])
    if ev.get("far"):  # the list was lowered for it: said before the evidence it outweighed
        reasons.insert(0, ev["far"])
    if ev.get("negated"):  # first: what an agent must read before anything else
        reasons.insert(0, f"negated: {ev.get('forbidden', '')}")
    cautions = [f"negated: {ev.get('forbidden', '')}"] if ev.get("negated") else []
    if ev.get("deprecated"):  # its server retired it: said first, as a negation is
        cautions.append(f"deprecated: its server says use {ev['deprecated']} instead")
        reasons.insert(0, cautions[-1])
    if ev.get("replaces"):
        reasons.append(f"replaces {ev['replaces']} (deprecated)")
    said_last = []  # cautions said after the evidence, in `why` as in `cautions`
    if ev.get("disclaims"):
        said_last.append(f"its description says it does not {ev['disclaims']}")
    if ev.get("opposed"):
        said_last.append("its action is the opposite of the request's")
    elif ev.get("reads_only"):
        said_last.append("it only reads; the request changes something")
    elif ev.get("writes"):
        said_last.append("action: writes; the request only reads")
    elif ev.get("step"):
        reasons.append("it reads: a step of the request's task")
    cautions += said_last
    reasons += said_last
    signals = Signals(bm25=round(ev.get("bm25", 0.0), 3), fuzzy=round(ev.get("fuzzy", 0.0), 3))
    if mode_used != "keyword":
        signals.cosine = round(ev.get("cos", 0.0), 4)
    if mode_used == "hybrid":
        signals.coverage = round(ev.get("coverage", 0.0), 3)
        signals.name_words = ev.get("name_words", 0)
        signals.opposed, signals.reads_only = ev.get("opposed", 0), ev.get("reads_only", 0)
        signals.writes = ev.get("writes", 0)
        signals.negated = ev.get("negated", 0)
        signals.far = 1 if ev.get("far") else 0
        signals.near = 1 if ev.get("near") else 0
        if "server" in ev:
            signals.server = round(ev["server"], 3)
    if "share" in ev:
        signals.share = round(ev["share"], 3)
    return Hit(
        id=row["id"],
        server=row["server"],
        name=row["name"],
        title=row["title"],
        description=first_line(row["description"]),
        score=round(score, 4),
        matched=matched,
        why="; ".join(reasons) or "semantic",
        signals=signals,
        stale=bool(row.get("stale")),
        note=stale_note(row.get("stale_reason")) if row.get("stale") else "",
        cautions=cautions,
    )


def stale_note(reason: str | None) -> str:
    """What a stale hit says: why its server failed (the crawl's error, first line, cut)."""
    why = first_line(reason, 120) if reason else ""
    return "stale: its server failed its last crawl" + (f" ({why})" if why else "")
