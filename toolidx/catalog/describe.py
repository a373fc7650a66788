"""One tool in detail: `summary`, `schema` (a readable parameter table) or `full` (raw schemas,
annotations, server info and an example `arguments` object that validates against the schema).

Tool ids are forgiving: `server/tool`, `server.tool`, `server:tool`, `mcp__server__tool`, or a bare
tool name when only one server has it. An unknown id fails with the closest ids as suggestions.
"""

from __future__ import annotations

from ..core.errors import NotFoundError, UsageError
from ..core.schemas import example_arguments, parameter_table, required_params, validate
from ..core.tooldoc import annotation_tags
from ..store import catalog as q
from ..store.db import Database
from ..store.tools import get_server, get_tool

__all__ = ["describe", "example_arguments", "parameter_table", "resolve_tool_id", "UnknownToolError",
           "DETAILS"]

DETAILS = ("summary", "schema", "full")
MAX_SUGGESTIONS = 5


class UnknownToolError(NotFoundError):
    """No such tool; `suggestions` holds the closest ids (also in the JSON error)."""

    def __init__(self, what: str, suggestions: list[str], *, where: str | None = None,
                 fix: str | None = None):
        self.suggestions = suggestions
        super().__init__(what, where=where, fix=fix)

    def to_json(self) -> dict:
        return {**super().to_json(), "error": "NotFoundError", "suggestions": self.suggestions}


def _spellings(text: str) -> list[str]:
    """`server.tool`, `server:tool`, `mcp__server__tool` as `server/tool` candidates."""
    out = []
    if text.startswith("mcp__") and "__" in text[5:]:
        server, _, name = text[5:].partition("__")
        out.append(f"{server}/{name}")
    for i, ch in enumerate(text):
        if ch in ".:":
            out.append(text[:i] + "/" + text[i + 1:])
    return out


def suggest_ids(db: Database, text: str, limit: int = MAX_SUGGESTIONS,
                within: set[str] | None = None) -> list[str]:
    """The ids closest to `text`, comparing it with whole ids and with bare tool names; `within`
    limits the candidates (serve's scope: never suggest a tool the caller may not use)."""
    from rapidfuzz import fuzz, process

    rows = q.id_names(db)
    if within is not None:
        rows = [r for r in rows if r["id"] in within]
    if not rows or not text:
        return []
    ids = [r["id"] for r in rows]
    names = [r["name"] for r in rows]
    probe = text.replace(".", "/").replace(":", "/") if "/" not in text else text
    best: dict[str, float] = {}
    for choices, query in ((ids, probe), (names, text.rsplit("/", 1)[-1])):
        for _, score, i in process.extract(query, choices, scorer=fuzz.WRatio, limit=limit * 3,
                                           processor=str.lower):
            best[ids[i]] = max(best.get(ids[i], 0.0), float(score))
    ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    return [i for i, s in ranked if s >= 50][:limit]


def resolve_tool_id(db: Database, text: str) -> str:
    """The id of the tool `text` names, or UnknownToolError with the closest ids."""
    t = (text or "").strip()
    if not t:
        raise UsageError("no tool id given", fix="name a tool as SERVER/TOOL, e.g. `git/git_status`")
    if q.tool_exists(db, t):
        return t
    for cand in _spellings(t):
        if q.tool_exists(db, cand):
            return cand
    if "/" not in t:
        named = q.ids_named(db, t)
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise UnknownToolError(f"tool name {t!r} is on {len(named)} servers", named,
                                   fix="name one: " + ", ".join(named))
    suggestions = suggest_ids(db, t)
    raise UnknownToolError(f"no tool {t!r} in the index", suggestions, where=db.path,
                           fix=("did you mean " + ", ".join(suggestions) + "?") if suggestions
                           else "list the ids with `toolidx list`")


def _server_info(db: Database, name: str) -> dict | None:
    s = get_server(db, name)
    if s is None:
        return None
    keys = ("name", "server_name", "server_title", "server_version", "protocol_version", "transport",
            "status", "error", "crawled_at", "last_ok_at", "instructions", "capabilities", "category",
            "tags")
    return {k: s.get(k) for k in keys}


def describe(db: Database, tool_id: str, detail: str = "summary", *,
             max_tokens: int | None = None) -> dict:
    """A JSON-able description of one tool at `detail` (summary | schema | full). With
    `max_tokens`, descriptions are shortened and schemas dropped until it fits (see budget)."""
    if detail not in DETAILS:
        raise UsageError(f"unknown detail level {detail!r}", fix="use one of: " + ", ".join(DETAILS))
    tid = resolve_tool_id(db, tool_id)
    t = get_tool(db, tid)
    if t is None:  # removed between the look-up and the read (a crawl committed meanwhile)
        raise UnknownToolError(f"no tool {tool_id!r} in the index", [], where=db.path)
    schema = t.get("input_schema") or {}
    out: dict = {
        "id": t["id"], "server": t["server"], "name": t["name"], "title": t.get("title"),
        "description": t.get("description") or "", "tags": t.get("tags") or [],
        "category": t.get("category"), "hints": annotation_tags(t.get("annotations")),
        "read_only": t.get("read_only"), "destructive": t.get("destructive"),
        "required": required_params(schema), "params": t.get("param_names") or [],
        "stale": bool(t.get("stale")), "stale_reason": t.get("stale_reason"), "detail": detail,
    }
    if detail in ("schema", "full"):
        out["parameters"] = parameter_table(schema, t.get("param_names"))
    if detail == "full":
        example = example_arguments(schema)
        problem = validate(example, schema)
        out.update({
            "input_schema": t.get("input_schema"), "output_schema": t.get("output_schema"),
            "annotations": t.get("annotations"), "icons": t.get("icons"), "_meta": t.get("meta"),
            "server_info": _server_info(db, t["server"]),
            "example_arguments": example, "example_valid": problem is None,
            "hash": t.get("hash"), "first_seen": t.get("first_seen"), "updated_at": t.get("updated_at"),
        })
        if problem:
            out["example_problem"] = problem
    if max_tokens is not None:
        from ..core.budget import fit_budget

        out = fit_budget(out, None, max_tokens)
    return out
