"""Which tool a name means: the one resolver behind `describe`, `similar`, and serve's
`describe_tool`, `execute_tool` and `get_similar_tools`, so a name one of them finds, all find.

Spellings tried in order:
1. the id, `server/tool`;
2. a name the caller gave a tool (`aliases`: serve's exposed `server__tool` names);
3. `server.tool`, `server:tool`, `server__tool` and Claude's `mcp__server__tool`;
4. a bare tool name, when exactly one server (in scope) has it.
A name that matches nothing fails with the closest ids (in scope) as suggestions; a tool that
exists but lies outside the caller's scope fails as such, never as a hit.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.errors import AMBIGUOUS_TOOL, OUT_OF_SCOPE, UNKNOWN_TOOL, NotFoundError, UsageError
from ..core.filters import Filters
from ..core.tooldoc import fix_strings
from ..store import catalog as q
from ..store.index import Reader

MAX_SUGGESTIONS = 5
# A suggestion's least similarity (rapidfuzz `ratio`, 0-100, of the whole id or of the bare name).
# Fitted on obvious cases over the 2,902 ETOM + LiveMCPBench ids: 900 names one edit away from a
# tool (a letter left out, swapped or mistyped, in the id, the bare name, or the name after a right
# server) all score >= 75 (99 % >= 85.7); 14 of 16 made-up names (`nosuch/tool` 72.7, `hello_world`
# 66.7, `launch_rocket` 60.9) score below it, the other two are a real tool's bare name (`test`)
# and one letter from one (`random/thing` -> `biomcp/think`, 80). `WRatio`, used before, scored
# substrings high (`nosuch/tool` -> `.../example_tool` 90), so nonsense got 5 suggestions (#36 item 10).
SUGGEST_FLOOR = 75.0


class UnknownToolError(NotFoundError):
    """No such tool; `suggestions` holds the closest ids (also in the JSON error)."""

    code = UNKNOWN_TOOL

    def __init__(self, what: str, suggestions: list[str], *, where: str | None = None, fix: str | None = None):
        self.suggestions = suggestions
        super().__init__(what, where=where, fix=fix)

    def to_json(self) -> dict:
        return {**super().to_json(), "error": "NotFoundError", "suggestions": self.suggestions}


class AmbiguousToolError(UnknownToolError):
    """A bare tool name that several servers have; `suggestions` are their ids."""

    code = AMBIGUOUS_TOOL


class OutOfScopeError(UnknownToolError):
    """The tool exists, but outside the caller's scope; `suggestions` are in scope, `tool_id` is
    the tool that was found."""

    code = OUT_OF_SCOPE
    tool_id = ""


def spellings(text: str) -> list[str]:
    """`server.tool`, `server:tool`, `server__tool`, `mcp__server__tool` as `server/tool` candidates."""
    out = []
    if text.startswith("mcp__") and "__" in text[5:]:
        server, _, name = text[5:].partition("__")
        out.append(f"{server}/{name}")
    for i, ch in enumerate(text):
        if ch in ".:":
            out.append(text[:i] + "/" + text[i + 1 :])
    start = 0
    while (i := text.find("__", start)) > 0:
        out.append(text[:i] + "/" + text[i + 2 :])
        start = i + 1
    return out


def suggest_ids(db: Reader, text: str, limit: int = MAX_SUGGESTIONS, within: Filters | None = None) -> list[str]:
    """The ids closest to `text`, comparing it with whole ids and with bare tool names; `within`
    limits the candidates (serve's scope: never suggest a tool the caller may not use)."""
    from rapidfuzz import fuzz, process

    rows = q.id_names(db, within)
    if not rows or not text:
        return []
    ids = [r["id"] for r in rows]
    names = [r["name"] for r in rows]
    probe = text.replace(".", "/").replace(":", "/") if "/" not in text else text
    best: dict[str, float] = {}
    for choices, query in ((ids, probe), (names, text.rsplit("/", 1)[-1])):
        for _, score, i in process.extract(query, choices, scorer=fuzz.ratio, limit=limit * 3, processor=str.lower):
            best[ids[i]] = max(best.get(ids[i], 0.0), float(score))
    ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    return [i for i, s in ranked if s >= SUGGEST_FLOOR][:limit]


def resolve_tool_id(
    db: Reader, text: str, *, within: Filters | None = None, aliases: Mapping[str, str] | None = None
) -> str:
    """The id of the tool `text` names. `within`: the scope the caller may use (None: every tool),
    checked by look-ups, never by holding the ids in scope; `aliases`: extra names -> ids. Raises
    UsageError (empty), AmbiguousToolError, OutOfScopeError or UnknownToolError."""
    # looked up as a crawl would have stored it (NUL and lone surrogates as U+FFFD), both engines
    name = fix_strings(text or "").strip()
    if not name:
        raise UsageError("no tool id given", fix="name a tool as SERVER/TOOL, e.g. `git/git_status`")

    for cand in (name, (aliases or {}).get(name), *spellings(name)):
        if cand and q.tool_exists(db, cand, within):
            return cand
    if "/" not in name:
        named = q.ids_named(db, name, within)
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise AmbiguousToolError(
                f"tool name {name!r} is on {len(named)} servers", named, fix="name one: " + ", ".join(named)
            )
    suggestions = suggest_ids(db, name, within=within)
    found = next((c for c in (name, *spellings(name)) if q.tool_exists(db, c)), None) if within is not None else None
    if found is not None:
        e = OutOfScopeError(f"tool {name!r} is outside the scope", suggestions, where=db.path)
        e.tool_id = found
        raise e
    raise UnknownToolError(
        f"no tool {name!r} in the index",
        suggestions,
        where=db.path,
        fix=("did you mean " + ", ".join(suggestions) + "?") if suggestions else "list the ids with `toolidx list`",
    )
