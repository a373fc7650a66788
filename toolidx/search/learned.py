"""What search learns from its own usage (issue 46). serve records, for each successful
`execute_tool`, the request of the search in the same session that had shown that tool: a *pair*
(store/usage.py's `pairs`: the request with secret-looking words masked, its embedding, the tool,
its definition hash, the caller's token). A later hybrid search finds the past requests like its
own (the cosine of the same model's embeddings at or above the model's `floor`) and lifts the
tools they led to: one more signal, added to each such tool's own logit before the score reads
the list (calibration.score_candidates).

Bounded, so it cannot be gamed or run away:
- only tools that pass the search's filters (its scope: a token's, serve's, --quarantine's
  approved tools) and whose definition is still the one that ran (tools.hash): a changed tool
  starts over;
- the lift is at most the model's `weight` (in the tool's own logit), reached at `saturate`
  similar requests (one counts whole at a cosine of `full` or more, in part between `floor` and
  `full`): beside a strong match of another tool it gains little, and no request without a
  similar past one is moved at all;
- one token's pairs count at most `saturate` toward its own searches and OTHER_CAP toward anyone
  else's (another token, serve over stdio, the CLI): however many pairs one token records, they
  weigh in anyone else's search as OTHER_CAP similar requests of their own would (a tool's own
  logit up by at most weight * OTHER_CAP / saturate);
- the constants belong to the embedding model (calibration.json's `learned`, fitted by
  benchmarks/learned_sim.py): an index embedded with a model without them is never lifted.

`TOOLIDX_NO_LEARN=1` (or `serve --no-learn`) turns it off: nothing recorded, nothing lifted.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..core.filters import Filters
from ..core.notices import warn_once
from ..store.index import Reader
from . import calibration as cal
from . import quoted

log = logging.getLogger("toolidx")

OFF_ENV = "TOOLIDX_NO_LEARN"
OTHER_CAP = 1  # how many of one token's similar requests count toward another caller's search
# the caller of the search under way: serve's HTTP token label ('' = stdio, the CLI, the library)
CALLER: ContextVar[str] = ContextVar("toolidx_learned_caller", default="")


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


AUTO: Any = _Auto()  # search's default: the usage kept beside the index (`source_for`)


@dataclass(frozen=True)
class Constants:
    floor: float  # two requests whose embeddings' cosine is at least this are "alike"
    full: float  # ... and at least this, alike enough to count whole (between: a share)
    weight: float  # the lift at saturation, in logits
    saturate: int  # alike past requests (whole) for the whole lift


@dataclass
class Evidence:
    """What past requests like a search's say of one tool."""

    requests: int = 0  # how many counted (each token's at most its cap)
    weight: float = 0.0  # their summed weights, each min(1, (cosine - floor) / (full - floor))


@dataclass(frozen=True)
class Source:
    """Where a search reads what was learned: a usage store (store.usage.UsageStore), and who asks
    (a token label; '' for the owner: stdio, the CLI, the library)."""

    store: Any
    token: str = ""


def off() -> bool:
    return os.environ.get(OFF_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _read_constants() -> dict[str, Constants]:
    out = {}
    for model, fit in cal.FITS.items():
        c = fit.learned
        if c:
            out[model] = Constants(float(c["floor"]), float(c["full"]), float(c["weight"]), int(c["saturate"]))
    return out


CONSTANTS = _read_constants()


def constants(model: str | None) -> Constants | None:
    """The model's fitted constants; None (nothing is lifted) for a model without them."""
    return CONSTANTS.get(model or "")


def request_text(query: str) -> str:
    """The text whose embedding stands for a request: as hybrid search embeds it (quoted values
    out), so a search's own embedding is reused."""
    return quoted.strip_quoted(" ".join((query or "").split()))[:2000]


def mask(text: str) -> str:
    """`text` with each secret-looking word (a token, a key, `password=...`) masked, as recorded
    examples are (core.redact)."""
    from ..core.redact import redact

    return " ".join(str(redact(w)[0]) if w else w for w in text.split(" "))


# --- where the pairs are read --------------------------------------------------------------------
_stores: dict[str, Any] = {}
_stores_lock = threading.Lock()


def source_for(db: Reader) -> Source | None:
    """The CLI's and the library's source: the usage of the index `db` (beside a file, or in a
    catalog's own tables), read as the owner; None when learning is off or nothing was
    recorded yet."""
    if off():
        return None
    from ..store.usage import catalog_usage

    key = str(db.path)
    with _stores_lock:
        store = _stores.get(key)
        # a store on the index's own connection (usage kept in the index's own tables) follows it
        if store is None or (not store.owned and store.engine is not db):
            store = catalog_usage(db)
            if store is None:
                return None
            if len(_stores) > 8:
                for old in _stores.values():
                    old.close()
                _stores.clear()
            _stores[key] = store
    return Source(store, "")


# What a search keeps of the pairs: their ids, SIGN_BITS sign bits of each request's embedding
# against fixed random hyperplanes, and a 64-bit hash of its (tool, definition, token): 64 bytes a
# pair (20,000: 1.3 MB; their float vectors were 30.7 MB). Two vectors at an angle t have each
# bit unlike with chance t / pi, so a past request at the model's floor has, with SIGN_BITS bits,
# SIGN_BITS * t / pi of them unlike give or take sqrt of that: a search reads, from the store by
# id, the pairs within REACH standard deviations of that count, at most PER_GROUP of each (tool,
# definition, token), and scores those exactly. PER_GROUP is the store's MAX_PAIRS_PER_TOOL: no
# group of a store within its caps has more, so it bounds only what a store past them costs.
# benchmarks/learned_sim.py --recall: on 39,853 real requests, 20,000 pairs, the pairs read hold
# every pair at or above the floor that a scan of all of them finds, with either model.
SIGN_BITS = 384
REACH = 3.5
PER_GROUP = 50
_SEED = 46
_BATCH = 1000


@dataclass
class _Pairs:
    version: int  # the store's pairs_version when read
    seen: int  # the highest pair id read: a write's new pairs are those over it
    dim: int  # the vectors' dimension (of the newest pair when first read)
    ids: Any  # int64, ascending
    signs: Any  # SIGN_BITS / 64 x len(ids), uint64: one row a word, one column a pair
    groups: Any  # int64: a hash of each pair's (tool, tool hash, token)


_memo: dict[tuple[int, str], _Pairs] = {}
_memo_lock = threading.Lock()
_planes: dict[int, Any] = {}


def _signs(vectors: Any) -> Any:
    """k x dim float32 -> k x SIGN_BITS / 64 uint64: on which side of each hyperplane each lies."""
    import numpy as np

    dim = vectors.shape[1]
    planes = _planes.get(dim)
    if planes is None:  # fixed (seeded): pairs read by any process, any day, compare alike
        planes = _planes.setdefault(
            dim, np.random.default_rng(_SEED).standard_normal((dim, SIGN_BITS)).astype(np.float32)
        )
    # einsum, never a BLAS product, as everywhere a search runs (store/sqlite/matrix.py: OpenBLAS's
    # threads spin after one and cost a busy machine 30x; test_a_search_makes_no_blas_product): a
    # batch of 1,000 pairs takes ~12 ms so (2 ms by BLAS), and only the pairs new since the last read
    side = np.einsum("ij,jk->ik", vectors, planes)
    return np.packbits(side > 0, axis=1).view(np.uint64)


def _hamming(signs: Any, q: Any) -> Any:
    """How many of its sign bits each pair (a column of `signs`) has unlike `q`'s."""
    import numpy as np

    # a word at a time over all pairs: summing a pairs x words array along its rows took 50 ms at
    # 100,000 pairs (numpy 2.4), this 0.3 ms
    out = np.zeros(signs.shape[1], dtype=np.uint16)
    for w in range(signs.shape[0]):
        x = np.bitwise_xor(signs[w], q[w])
        if hasattr(np, "bitwise_count"):  # numpy 2
            out += np.bitwise_count(x)
        else:
            out += np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1, dtype=np.uint16)
    return out


def _floats(rows: list[tuple[int, str, str, str, bytes]], dim: int) -> Any:
    """The pairs' vectors (each row's last field, `dim` float32s) as one len(rows) x dim array,
    filled row by row: joining the blobs first held ~3 copies at once."""
    import numpy as np

    m = np.empty((len(rows), dim), dtype=np.float32)
    for j, r in enumerate(rows):
        m[j] = np.frombuffer(r[4], dtype=np.float32)
    return m


def _group(tool: str, tool_hash: str, token: str) -> int:
    import hashlib

    h = hashlib.blake2b(f"{tool}\0{tool_hash}\0{token}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little", signed=True)


def _pairs(store: Any, model: str) -> _Pairs | None:
    """The ids, sign bits and groups of the store's pairs of `model`, brought up to date when a
    write moved the store's generation (one row read per search otherwise): the ids kept are read
    (an index, no vectors) to drop what was deleted, and only the pairs written since the last
    read are read whole. None when there are none."""
    import numpy as np

    version = store.pairs_version()
    key = (id(store), model)
    with _memo_lock:
        got = _memo.get(key)
    if got is None or got.version != version:
        kept = np.asarray(store.pair_ids(model), dtype=np.int64)
        if got is None:
            words = SIGN_BITS // 64
            got = _Pairs(version, 0, 0, np.empty(0, np.int64), np.empty((words, 0), np.uint64), np.empty(0, np.int64))
        dim = got.dim
        if not dim and kept.size:  # the newest pair's size; a pair of another is never read
            newest = store.pairs_by_id([int(kept[-1])])
            if not newest:  # deleted since: read again at the next search
                return None
            dim = len(newest[0][4]) // 4
        still = np.isin(got.ids, kept, assume_unique=True)
        ids, signs, groups, seen = [got.ids[still]], [got.signs[:, still]], [got.groups[still]], got.seen
        # a batch at a time: 20,000 vectors read at once stayed in the process's heap (+30 MB)
        while dim:
            batch = store.pair_vectors(model, seen, limit=_BATCH)
            if batch:
                seen = batch[-1][0]
                rows = [r for r in batch if len(r[4]) == dim * 4]
                m = _floats(rows, dim)
                ids.append(np.asarray([r[0] for r in rows], dtype=np.int64))
                signs.append(_signs(m).T if rows else got.signs[:, :0])
                groups.append(np.asarray([_group(*r[1:4]) for r in rows], dtype=np.int64))
            if len(batch) < _BATCH:
                break
        got = _Pairs(version, seen, dim, np.concatenate(ids), np.concatenate(signs, axis=1), np.concatenate(groups))
        with _memo_lock:
            if len(_memo) > 8:
                _memo.clear()
            _memo[key] = got
    return got if got.ids.size else None


def _reach(floor: float) -> int:
    """How many unlike sign bits a pair may have and still be read: the count expected of a past
    request at the floor's cosine, plus REACH standard deviations."""
    import math

    p = math.acos(max(-1.0, min(1.0, floor))) / math.pi
    return int(SIGN_BITS * p + REACH * math.sqrt(SIGN_BITS * p * (1 - p)))


def _shortlist(got: _Pairs, q: Any, floor: float) -> list[int]:
    """The ids of the pairs a search scores exactly: those within `_reach(floor)` sign bits of
    the request `q`, the PER_GROUP nearest of each group."""
    import numpy as np

    near = _hamming(got.signs, _signs(q[None, :])[0])
    within = np.nonzero(near <= _reach(floor))[0]
    if within.size > PER_GROUP:
        order = np.lexsort((near[within], got.groups[within]))  # by group, nearest first
        g = got.groups[within][order]
        starts = np.r_[0, np.nonzero(g[1:] != g[:-1])[0] + 1]
        rank = np.arange(g.size) - np.repeat(starts, np.diff(np.r_[starts, g.size]))
        within = within[order[rank < PER_GROUP]]
    return got.ids[within].tolist()


# --- the signal ----------------------------------------------------------------------------------
def recall(
    db: Any, query: str, embedder: Any, filters: Filters | None, model: str | None, source: Source
) -> tuple[dict[int, Evidence], bytes | None]:
    """tool rowid -> what past requests like `query` say of it: the pairs whose tool is in scope
    and defined as when it ran, each token's strongest `saturate` (the caller's own) or OTHER_CAP
    (another's) counted; and the request's embedding."""
    import numpy as np

    c = constants(model)
    if c is None or model is None:
        return {}, None
    got = _pairs(source.store, model)
    if got is None:
        return {}, None
    from .query_vector import embed_query, last_query_vector

    # the search's own embedding (gather's, just made in this thread), else the request's
    blob = last_query_vector(embedder) or embed_query(embedder, request_text(query))
    q = np.frombuffer(blob, dtype=np.float32)
    if q.shape[0] != got.dim:
        return {}, None
    q = q / (float(np.linalg.norm(q)) or 1.0)
    rows = sorted(r for r in source.store.pairs_by_id(_shortlist(got, q, c.floor)) if len(r[4]) == got.dim * 4)
    if not rows:
        return {}, blob
    m = _floats(rows, got.dim)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    m /= np.where(norms == 0, 1.0, norms)
    # einsum, not a BLAS product: as store/sqlite/matrix.py found, numpy's OpenBLAS threads made
    # it 30x slower on a busy 2-core machine
    sims = np.einsum("ij,j->i", m, q)
    alike = np.nonzero(sims >= c.floor)[0]
    if alike.size == 0:
        return {}, blob
    from ..store.catalog import rowids_and_hashes

    now = rowids_and_hashes(db, sorted({rows[i][1] for i in alike}), filters)
    # each alike past request weighs (cosine - floor) / (full - floor), at most 1: a paraphrase
    # counts whole, one just over the floor (a neighbouring intent, often) next to nothing
    per: dict[tuple[str, str], list[float]] = {}
    for i in alike:
        _, tool, tool_hash, token, _ = rows[i]
        if tool in now and now[tool][1] == tool_hash:
            share = min(1.0, (float(sims[i]) - c.floor) / max(c.full - c.floor, 1e-6))
            per.setdefault((tool, token), []).append(share)
    out: dict[int, Evidence] = {}
    for (tool, token), weights in per.items():
        cap = c.saturate if token == source.token else OTHER_CAP
        kept = sorted(weights, reverse=True)[:cap]  # a token's strongest `cap` only
        e = out.setdefault(now[tool][0], Evidence())
        e.requests += len(kept)
        e.weight += sum(kept)
    return out, blob


def rescore(
    db: Any,
    query: str,
    cands: dict[int, dict],
    *,
    mode: str,
    embedder: Any,
    filters: Filters | None,
    model: str | None,
    source: Any,
    score: Callable[[dict[int, float]], dict[int, float]],
) -> dict[int, float]:
    """`score(lift)`: the calibrated scores of `cands`, where each tool that past requests like
    `query` led to has its own logit lifted, before the list is read, by the model's `weight` *
    min(w, saturate) / saturate (w: the summed weights of those requests, Evidence), and is marked
    in its evidence (`learned`: how many). Lifted there, a tool among weak matches comes to stand
    out of the list, while one beside a strong match gains little. Such a tool that no retriever
    found joins the candidates with its cosine. Hybrid mode only; reading usage never fails a
    search."""
    found: dict[int, Evidence] = {}
    c = constants(model)
    if mode == "hybrid" and embedder is not None and c is not None and source is not None:
        try:
            src = source_for(db) if source is AUTO else source
            if src is not None:
                found, blob = recall(db, query, embedder, filters, model, src)
                if found:
                    _join(db, found, cands, blob)
        except Exception as e:  # a usage file being replaced, a catalog gone: search without it
            warn_once("learned", f"what was learned from usage is not used: {type(e).__name__}: {e}")
            found = {}
    if not found or c is None:
        return score({})
    for r, ev in found.items():
        cands[r]["learned"] = ev.requests
    return score({r: c.weight * min(ev.weight, c.saturate) / c.saturate for r, ev in found.items()})


def _join(db: Reader, found: dict[int, Evidence], cands: dict[int, dict], blob: bytes | None) -> None:
    missing = [r for r in found if r not in cands]
    if not missing or blob is None:
        return
    cos = db.retrieval.cosines(blob, missing)
    for r in missing:
        cands[r] = {"bm25": 0.0, "cos": cos.get(r, 0.0), "fuzzy": 0.0, "coverage": 0.0, "name_words": 0}


def why(ev: dict) -> str | None:
    """The hit's `why` part for what was learned: "chosen after 3 similar requests"."""
    n = ev.get("learned")
    if not n:
        return None
    return f"chosen after {n} similar request{'s' if n != 1 else ''}"
