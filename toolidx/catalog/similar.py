"""Tools like a given one: nearest by stored embedding (sqlite-vec KNN), or by words when the
index has no vectors, with likely duplicates across servers flagged (two `git_status` tools).

Duplicate rule (measured on ETOM's 491 servers and the real git servers; docs/catalog.md): a
tool on another server is a likely duplicate when
  - its normalised name is the same (`git_status`, `git-status`, `gitStatus`) and the texts are
    similar (semantic >= 0.68), or
  - its name is near-same (ratio >= 0.85), the texts are more similar (>= 0.80) and the
    parameters mostly agree (>= half of the smaller set of parameter words), or
  - one name is the other behind a prefix (`browser_take_screenshot`, `take_screenshot`: servers
    name their tools after themselves) and the texts are as similar (>= 0.80), or
  - whatever the name, text and parameters are near-identical (>= 0.93, >= 80 %).
Lexical scores (no vectors) run lower, so the lexical thresholds are lower (DUP_* below).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..core.toolcard import ToolCard
from ..core.tooldoc import first_line, split_name
from ..store import catalog as q
from ..store import vectors
from ..store.index import Reader
from ..store.tools import get_tool, get_tools_by_rowid
from .resolve import UnknownToolError, resolve_tool_id

# thresholds per method: (same name, near-same name, near-identical)
DUP_SCORE = {"semantic": (0.68, 0.80, 0.93), "lexical": (0.62, 0.70, 0.90)}
NAME_SIM = 0.85
PARAM_SIM = 0.5
PARAM_SIM_IDENTICAL = 0.8
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "with",
        "you",
        "your",
        "use",
        "used",
        "using",
        "can",
        "will",
        "if",
        "not",
    ]
)


def _words(text: str | None) -> set[str]:
    return {w for w in _WORD.findall((text or "").lower()) if w not in _STOP and len(w) > 1}


def _norm_name(name: str) -> str:
    return "_".join(split_name(name))


def _param_overlap(a: list | None, b: list | None) -> float:
    """Shared parameter words over the smaller set (`repo_path` and `path` share `path`):
    servers name the same argument differently, and one often has extra options."""
    wa = {w for p in a or () for w in split_name(p)}
    wb = {w for p in b or () for w in split_name(p)}
    if not wa or not wb:
        return 1.0 if not wa and not wb else 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def _name_sim(a: str, b: str) -> float:
    from rapidfuzz import fuzz

    return fuzz.ratio(_norm_name(a), _norm_name(b)) / 100.0


def _prefixed(a: str, b: str) -> str | None:
    """The prefix that makes one name the other (`browser_` of `browser_take_screenshot` and
    `take_screenshot`), or None."""
    wa, wb = split_name(a), split_name(b)
    short, long_ = sorted((wa, wb), key=len)
    if short and len(short) < len(long_) and long_[-len(short) :] == short:
        return "_".join(long_[: len(long_) - len(short)]) + "_"
    return None


def duplicate_reason(tool: dict, other: dict, score: float, method: str) -> str | None:
    """Why `other` is likely the same tool as `tool` on another server, or None."""
    if tool["server"] == other["server"]:
        return None
    same_at, near_at, identical_at = DUP_SCORE[method]
    params = _param_overlap(tool.get("param_names"), other.get("param_names"))
    same = _norm_name(tool["name"]) == _norm_name(other["name"])
    p = f"parameters {params:.0%} alike"
    if same and score >= same_at:
        return f"same name on another server, {method} similarity {score:.2f}, {p}"
    if params >= PARAM_SIM and score >= near_at:
        name_sim = _name_sim(tool["name"], other["name"])
        if name_sim >= NAME_SIM:
            return f"near-same name ({name_sim:.2f}) on another server, {method} similarity {score:.2f}, {p}"
    prefix = _prefixed(tool["name"], other["name"]) if score >= near_at else None
    if prefix is not None:
        return f"the same name behind a prefix ({prefix}) on another server, {method} similarity {score:.2f}, {p}"
    if params >= PARAM_SIM_IDENTICAL and score >= identical_at:
        return f"near-identical text and parameters on another server ({method} {score:.2f}, {p})"
    return None


def _semantic(db: Reader, rowid: int, tool: dict, limit: int, embedder) -> list[tuple[int, float]] | None:
    if not db.vec_available or not vectors.has_table(db):
        return None
    vec = vectors.get(db, rowid)
    if vec is None and embedder is not None and embedder.model == db.get_meta("embed_model"):
        vec = embedder.embed_documents([tool["embed_text"]])[0]
    if vec is None:
        return None
    pairs = db.retrieval.knn(vec, limit + 1)
    # cosine similarity is -1..1; clamped to the documented 0..1
    return [(r, max(0.0, min(1.0, s))) for r, s in pairs if r != rowid][:limit]


def _lexical(db: Reader, rowid: int, tool: dict, limit: int) -> list[tuple[int, float]]:
    """Word overlap of name+title+description (cosine of word sets) blended with name likeness."""
    from rapidfuzz import fuzz

    mine = _words(" ".join([*split_name(tool["name"]), tool.get("title") or "", tool.get("description") or ""]))
    my_name = _norm_name(tool["name"])
    scored = []
    for r in q.lexical_rows(db):
        if r["rowid"] == rowid:
            continue
        theirs = _words(" ".join([*split_name(r["name"]), r.get("title") or "", r.get("description") or ""]))
        text = len(mine & theirs) / math.sqrt(len(mine) * len(theirs)) if mine and theirs else 0.0
        name = fuzz.ratio(my_name, _norm_name(r["name"])) / 100.0
        score = 0.6 * text + 0.4 * name
        if score > 0:
            scored.append((int(r["rowid"]), score))
    scored.sort(key=lambda x: -x[1])
    return scored[:limit]


@dataclass
class SimilarTool(ToolCard):
    score: float
    likely_duplicate: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            **super().to_json(),
            "score": self.score,
            "likely_duplicate": self.likely_duplicate,
            "reason": self.reason,
        }


@dataclass
class SimilarTools:
    """What `similar` returns (`to_json()`: the `similar --json` document's body)."""

    tool: str
    method: str  # semantic | lexical
    similar: list[SimilarTool]

    @property
    def duplicates(self) -> int:
        return sum(1 for h in self.similar if h.likely_duplicate)

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "method": self.method,
            "similar": [h.to_json() for h in self.similar],
            "duplicates": self.duplicates,
        }


def similar(db: Reader, tool_id: str, limit: int = 10, embedder=None) -> SimilarTools:
    """The tools most like `tool_id`, best first (score, then id), by stored embedding
    ("semantic") or by words ("lexical") without vectors."""
    limit = max(1, int(limit))
    tid = resolve_tool_id(db, tool_id)
    with db.snapshot():
        tool = get_tool(db, tid)
        rowid = q.tool_rowid(db, tid)
        if tool is None or rowid is None:  # removed between the look-up and the read (as in describe)
            raise UnknownToolError(f"no tool {tool_id!r} in the index", [], where=db.path)
        pairs = _semantic(db, rowid, tool, limit, embedder)
        method = "semantic"
        if pairs is None:
            pairs, method = _lexical(db, rowid, tool, limit), "lexical"
        rows = get_tools_by_rowid(db, [r for r, _ in pairs], "id, server, name, title, description, param_names")
    items: list[SimilarTool] = []
    for r, score in pairs:
        other = rows.get(r)
        if other is None:
            continue
        reason = duplicate_reason(tool, other, score, method)
        items.append(
            SimilarTool(
                id=other["id"],
                server=other["server"],
                name=other["name"],
                title=other.get("title"),
                description=first_line(other.get("description")),
                score=round(score, 4),
                likely_duplicate=reason is not None,
                reason=reason or f"{method} similarity {score:.2f}",
            )
        )
    items.sort(key=lambda h: (-h.score, h.id))
    return SimilarTools(tool=tid, method=method, similar=items)
