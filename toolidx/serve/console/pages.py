"""What each console page shows, read through the library functions the CLI and the meta-tools use
(no HTTP, no HTML here): each function takes the Discovery of the visitor's grant (its scope) and
returns the plain data its template renders. Run in worker threads, as serve's answers are."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...core.errors import NotFoundError, UsageError
from ...core.redact import redact
from ...diff.snapshot import DiffResult
from ..discovery import Discovery

SIMILAR = 5
CRAWLS_LISTED = 30
SERVERS_PER_PAGE = 100
TOOL_DIFFS_SHOWN = 200  # per page: a first crawl of 10,000 tools is 10,000 "added" (the CLI has them all)
# A page stays small whatever a server sends (a 10 MB description, 4,000 parameters): texts are
# cut, lists paged; each cut says how much more there is and the CLI command that shows it all.
TEXT_SHOWN = 20_000  # characters of a description, or of a schema's JSON
CELL_SHOWN = 1_000  # characters of one table cell (a parameter's description, a default, a diff's value)
PARAMS_PER_PAGE = 100  # rows of the parameter table a page
CHANGES_SHOWN = 100  # field changes of one tool in a diff
EXAMPLES_SHOWN = 10
# past these, the tool page builds no example arguments (the generator and the schema check are
# quadratic in the parameters: minutes at 4,000): `toolidx describe --detail full` still does
HEAVY_PARAMS = 300
HEAVY_CHARS = 500_000


def _memo(d: Discovery, what: str, read: Callable[[], Any]) -> Any:
    """`read()`, kept in the open index's own cache (store.cache: dropped with the connection, and
    on any change to the index: a crawl, an approval, a replaced file) so what every page shows
    beside its answer is read once per version, not per page load (150 ms at 10,000 tools). One
    entry per kind and scope: the scopes are the token file's."""
    scope = json.dumps(d.scope.to_json(), sort_keys=True, default=str)
    return d.db.cache.get(f"console:{what}:{scope}", read)


def _categories(d: Discovery) -> dict[str, Any]:
    from ...catalog.listing import categories

    return _memo(d, "categories", lambda: categories(d.db, filters=d.within()).to_json())


def facets(d: Discovery) -> dict[str, Any]:
    """The servers, tags and categories in scope, for the search filters."""
    res = _categories(d)
    servers = [
        s for s in res.get("servers", []) if s.get("count") and (not d.scope.servers or s["name"] in d.scope.servers)
    ]
    return {
        "servers": [s["name"] for s in servers],
        "tags": [t["name"] for t in res.get("tags", [])],
        "categories": [c["name"] for c in res.get("categories", []) if c.get("count")],
        "total": res.get("total", 0),
    }


def search(d: Discovery, params: Any) -> dict[str, Any]:
    """The `/v1/search` answer (the `toolidx search --json` object) for the form's parameters."""
    from ..answers import search_payload

    return search_payload(d, params)


def tool(d: Discovery, name: str, params_page: str | None = None) -> dict[str, Any]:
    """One tool in full (catalog.describe, as `toolidx describe --detail full`), with its usage
    metrics and examples of this scope, its approval, the tools most like it in scope and the
    crawls that changed it; bounded (_bounded_tool), the parameter table PARAMS_PER_PAGE rows a
    page (`params_page`: the query's text). A heavy tool (HEAVY_PARAMS, HEAVY_CHARS) is described
    at `schema` detail: no example arguments built.
    Raises LookupProblem when it is not in scope."""
    from ...catalog.describe import describe
    from ...diff.approved import approval_json
    from ...diff.history import tool_history
    from ...store import approvals
    from ..answers import get_similar_tools
    from ..recorder import scope_label

    asked = page_number(params_page)
    row = d.resolve(name)
    schema: dict[str, Any] = row["input_schema"] if isinstance(row.get("input_schema"), dict) else {}
    heavy = (
        len(schema.get("properties") or {}) > HEAVY_PARAMS
        or len(row.get("description") or "") + len(json.dumps(schema, default=str)) > HEAVY_CHARS
    )
    out = describe(
        d.db,
        row["id"],
        "schema" if heavy else "full",
        usage=d.usage_store(),
        metrics=True,
        examples=not heavy,
        scope=scope_label(d.scope),
    ).to_json()
    if heavy:
        keys = ("input_schema", "output_schema", "annotations", "hash", "first_seen", "updated_at")
        out.update({k: row.get(k) for k in keys}, heavy=True, example_arguments=None, examples=[])
    out["approval"] = approval_json(approvals.approvals(d.db, [row["id"]]).get(row["id"]))
    out["similar"] = get_similar_tools(d, {"tool_name": row["id"], "limit": SIMILAR}).payload.get("similar", [])
    out["history"] = tool_history(d.db, row["id"], CRAWLS_LISTED)
    return _bounded_tool(out, asked)


def _cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and how many more there are."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit:,} more characters)"


def _json_text(value: Any, limit: int, indent: int | None = None) -> str:
    return _cut(json.dumps(value, ensure_ascii=False, indent=indent, default=str), limit)


def _bounded_tool(out: dict[str, Any], page: int) -> dict[str, Any]:
    """What the tool page renders, with every text cut and the parameters paged: the JSON fields
    become `*_text` strings (the template shows them as they are)."""
    desc = out.get("description") or ""
    out["description_chars"] = len(desc)
    out["description"] = desc[:TEXT_SHOWN]
    out["title"] = _cut(out.get("title") or "", CELL_SHOWN) or None
    params = out.get("parameters") or []
    out["params_pages"] = max(1, -(-len(params) // PARAMS_PER_PAGE))
    out["params_page"] = n = min(page, out["params_pages"])
    out["params_total"] = len(params)
    shown = []
    for p in params[(n - 1) * PARAMS_PER_PAGE : n * PARAMS_PER_PAGE]:
        shown.append(
            {
                "name": _cut(str(p.get("name") or ""), CELL_SHOWN),
                "type": _cut(str(p.get("type") or ""), CELL_SHOWN),
                "required": p.get("required"),
                "default_text": None if p.get("default") is None else _json_text(p["default"], CELL_SHOWN),
                "enum_text": _json_text(p["enum"], CELL_SHOWN)[1:-1] if p.get("enum") else None,
                "constraints": _cut(str(p.get("constraints") or ""), CELL_SHOWN),
                "description": _cut(str(p.get("description") or ""), CELL_SHOWN),
            }
        )
    out["parameters"] = shown
    for k in ("input_schema", "output_schema", "annotations", "example_arguments"):
        out[k + "_text"] = None if out.get(k) is None else _json_text(out[k], TEXT_SHOWN, indent=2)
    out["examples"] = [
        {**e, "arguments_text": _json_text(e.get("arguments"), TEXT_SHOWN, indent=2)}
        for e in (out.get("examples") or [])[:EXAMPLES_SHOWN]
    ]
    if out.get("example_problem"):
        out["example_problem"] = _cut(str(out["example_problem"]), CELL_SHOWN)
    return out


def page_number(text: str | None) -> int:
    """`?page=` as a number from 1; UsageError (a 400) for anything else: `²` and a 5,000-digit
    number are not int()'s to judge (ValueError), nor a page worth a traceback."""
    text = (text or "1").strip()
    if not (text.isascii() and text.isdigit() and 0 < len(text) <= 9):
        raise UsageError(f"page {text[:20]!r}: not a page number", fix="give a whole number from 1, e.g. page=2")
    return max(1, int(text))


def servers(d: Discovery, page: str | None = None) -> dict[str, Any]:
    """Each server in scope as its last crawl left it (errors with secret-looking values
    redacted), failed ones first, SERVERS_PER_PAGE a page (`page`: the query's text); and the
    recent crawls."""
    asked = page_number(page)
    everything = _memo(d, "servers", lambda: _servers(d))
    rows = everything["servers"]
    pages = max(1, -(-len(rows) // SERVERS_PER_PAGE))
    n = min(asked, pages)
    shown = rows[(n - 1) * SERVERS_PER_PAGE : n * SERVERS_PER_PAGE]
    failed = sum(1 for r in rows if r["status"] != "ok")
    return {**everything, "servers": shown, "page": n, "pages": pages, "total": len(rows), "failed": failed}


def _servers(d: Discovery) -> dict[str, Any]:
    from ...store.tools import list_servers

    counts = _in_scope_counts(d)
    visible = _visible_servers(d)
    rows = []
    for s in list_servers(d.db):
        if visible is not None and s["name"] not in visible:
            continue
        rows.append(
            {
                "name": s["name"],
                "transport": s.get("transport"),
                "version": s.get("server_version"),
                "category": s.get("category"),
                "status": s.get("status"),
                "error": redact(s.get("error"))[0] if s.get("error") else None,
                "stderr_tail": redact(s.get("stderr_tail"))[0] if s.get("stderr_tail") else None,
                "tools": counts.get(s["name"], 0),
                "crawled_at": s.get("crawled_at"),
                "last_ok_at": s.get("last_ok_at"),
                "stale": s.get("status") != "ok" and bool(counts.get(s["name"])),
            }
        )
    rows.sort(key=lambda r: (r["status"] == "ok", r["name"]))
    return {"servers": rows, "crawls": _crawls(d)}


def _narrow(d: Discovery) -> bool:
    """The scope picks tools inside servers (tags, categories, read-only, approval), not only servers."""
    return not replace(d.scope, servers=[]).is_empty()


def _in_scope_counts(d: Discovery) -> dict[str, int]:
    return {s["name"]: s.get("count", 0) for s in _categories(d).get("servers", [])}


def _visible_servers(d: Discovery) -> set[str] | None:
    """The servers this scope may see (their status, error, stderr, crawls): every one (None)
    without a scope; a servers= scope's servers; for a narrower scope only the servers that hold a
    tool in it (a tag-scoped token learns nothing of the others, not even their names)."""
    if d.scope.is_empty():
        return None
    if not _narrow(d):
        return set(d.scope.servers)
    return {name for name, count in _in_scope_counts(d).items() if count}


def _crawls(d: Discovery) -> list[dict[str, Any]]:
    """The last crawls, counted over the visible servers only; for a scope narrower than servers
    without the tool counts (they would count the tools outside it)."""
    from ...diff.history import history

    visible = _visible_servers(d)
    if visible is not None and not visible:
        return []
    crawls = history(d.db, CRAWLS_LISTED, sorted(visible) if visible is not None else None).to_json()["crawls"]
    if _narrow(d):
        for c in crawls:
            c.update(tools=None, stale=None, added=None, removed=None, changed=None)
    return crawls


def changes(d: Discovery, from_ref: str | None, to_ref: str | None) -> dict[str, Any]:
    """The diff between two crawls (diff.history, as `toolidx diff --from --to`) inside the scope
    (_keep_in_scope), and the crawls to pick from."""
    from ...diff.history import diff_crawls

    def read() -> tuple[dict[str, Any] | None, str | None]:
        try:
            diff = diff_crawls(d.db, from_ref or None, to_ref or None, list(d.scope.servers) or None)
        except (NotFoundError, UsageError) as e:
            return None, str(e)
        _keep_in_scope(d, diff, crawls=(diff.old.get("crawl_id"), diff.new.get("crawl_id")))
        result = diff.to_json()
        _cap(result)
        return result, None

    # the page most asked for (the last crawl against the one before) is diffed once per index
    # version: a catalog's diff takes seconds (a 10 MB tool: the audit's scan of its texts)
    result, problem = _memo(d, "changes", read) if not (from_ref or to_ref) else read()
    return {"crawls": _crawls(d), "diff": result, "problem": problem, "from": from_ref or "", "to": to_ref or ""}


def quarantine(d: Discovery, server: str | None = None) -> dict[str, Any]:
    """What awaits approval in scope: per server, how many tools were never approved and how many
    changed since their approval (by definition hash); for one server (`server`, else the first
    with a changed tool, else the first with any), each tool field by field against the approved
    definition (diff.approved, as `toolidx diff --approved --server S`: a whole catalog's field
    diff takes seconds at 10,000 tools); and the approvals that can be revoked."""
    from ...diff.approved import awaiting_approval
    from ...store import approvals

    approved = approvals.approvals(d.db)
    current = _memo(d, "hashes", lambda: approvals.current_hashes(d.db, servers=list(d.scope.servers) or None))
    kept = d.in_scope(current) if not d.scope.is_empty() else set(current)
    waiting: dict[str, dict[str, int]] = {}
    for tid in sorted(kept):
        a = approved.get(tid)
        kind = "never" if a is None else "changed" if a["hash"] != current[tid] else None
        if kind:
            counts = waiting.setdefault(tid.partition("/")[0], {"never": 0, "changed": 0})
            counts[kind] += 1
    if server not in waiting:
        server = next((s for s, c in waiting.items() if c["changed"]), next(iter(waiting), None))
    result = None
    # read before the diff, as the hashes: the server's title and instructions, approved with its tools
    texts = approvals.server_texts(d.db, [server]) if server is not None else {}
    text = texts.get(server) if server is not None else None
    text_hash = approvals.text_hash(text["title"], text["instructions"]) if text else ""
    if server is not None:
        chosen = server

        def read() -> dict[str, Any]:
            diff = awaiting_approval(d.db, [chosen])
            _keep_in_scope(d, diff)
            out = diff.to_json()
            _cap(out)
            return out

        result = _memo(d, f"awaiting:{server}", read)  # once per index version: an approval changes it
    # read before the diff: an Approve button never carries a hash newer than the diff it shows
    # (a crawl in between makes the approval refused, never one of a definition not shown)
    hashes = {t["id"]: current.get(t["id"], "") for s in (result or {}).get("servers", []) for t in s["tools"]}
    rows = [{"id": tid, "by": r.get("approved_by"), "at": r.get("approved_at")} for tid, r in sorted(approved.items())]
    in_scope = set(approved) if d.scope.is_empty() else d.in_scope(approved)
    # the servers with changed tools first, then the most waiting: a page, not 2,000 rows
    ranked = sorted(waiting, key=lambda s: (-waiting[s]["changed"], -waiting[s]["never"], s))
    listed = ranked[:SERVERS_PER_PAGE] + ([server] if server in ranked[SERVERS_PER_PAGE:] else [])
    return {
        "waiting": {s: waiting[s] for s in listed},
        "more_servers": len(waiting) - len(listed),
        "server": server,
        "diff": result,
        "hashes": hashes,
        "text_hash": text_hash,
        # what an agent reads of the server, approved with its tools: shown beside them
        "server_text": {k: _cut(str(text.get(k) or ""), TEXT_SHOWN) for k in ("title", "instructions")}
        if text
        else None,
        "approved": [r for r in rows if r["id"] in in_scope],
    }


def approve(
    d: Discovery, tool_id: str, by: str, revoke: bool, shown: str | None = None, shown_text: str | None = None
) -> dict[str, Any]:
    """Approve (or revoke) one tool as `toolidx approve` does (catalog.approvals), on its own
    connection: serve's is for reading. Only a tool in scope (revoking: an approval whose tool
    left the index too). Approving needs `shown`, the hash of the definition the page showed, and
    `shown_text`, that of its server's title and instructions (approved with it): either changed
    since raises ChangedSinceShown, and nothing is approved."""
    from ...catalog.approvals import approve as record
    from ...store.db import open_db

    if not (d.in_scope([tool_id]) or (revoke and d.scope.is_empty())):
        raise NotFoundError(f"no tool {tool_id!r} in scope", fix="pick a tool from the quarantine page")
    if not revoke and not (shown and shown_text is not None):
        raise UsageError("this form does not say which definition you reviewed", fix="reload the quarantine page")
    db = open_db(d.db_path)
    try:
        if revoke:
            return record(db, [tool_id], revoke=True, by=by).to_json()
        texts = {tool_id.partition("/")[0]: str(shown_text)}
        return record(db, [tool_id], by=by, expect={tool_id: str(shown)}, expect_texts=texts).to_json()
    finally:
        db.close()


def changed_since_shown(d: Discovery, tool_id: str, shown: str) -> dict[str, Any]:
    """For an approval refused because the tool changed: what changed between the definition the
    person was shown (`shown`, kept in tool_versions by the crawl that wrote it) and the one now,
    field by field, as the diff template takes it; and the server's quarantine below it (with
    the new definition's hash on its Approve button)."""
    from ...diff.approved import changes_since_approval, current_hash
    from ...diff.snapshot import ToolDiff

    tool = d.tool(tool_id)
    server, _, name = tool_id.partition("/")
    shown_diff = None
    if tool is not None and shown != current_hash(tool):
        t = ToolDiff(tool_id, server, name, "changed", changes_since_approval(d.db, tool, {"hash": shown}))
        shown_diff = {"servers": [{"server": server, "state": "ok", "tools": [t.to_json()]}], "hidden": 0}
    return {**quarantine(d, server), "changed_id": tool_id, "shown_diff": shown_diff}


def usage(d: Discovery) -> dict[str, Any]:
    """Calls, success rate, p50/p95 and last use per tool and per server (`toolidx stats --usage`)."""
    from ...catalog.metrics import usage_report

    report = d.usage_read(lambda u: usage_report(d.db, u, d.within()), None)
    if report is None:
        report = usage_report(d.db, None)
    out = report.to_json()
    if _narrow(d):  # a server's own figures count its tools outside the scope: summed from the scope's
        out["servers"] = _servers_of(out.get("tools", []))
    top = max([t.get("calls", 0) for t in out.get("tools", [])] or [0])
    out["top"] = top
    return out


def _servers_of(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-server usage from the tools' rows: calls and success summed, the last use; no p50 or p95
    (percentiles do not add up)."""
    per: dict[str, dict[str, Any]] = {}
    for t in tools:
        s = per.setdefault(str(t["id"]).partition("/")[0], {"calls": 0, "ok": 0.0, "rated": 0, "last_used": None})
        calls = int(t.get("calls") or 0)
        s["calls"] += calls
        if t.get("success_rate") is not None:
            s["ok"] += t["success_rate"] * calls
            s["rated"] += calls
        if t.get("last_used") and (s["last_used"] is None or t["last_used"] > s["last_used"]):
            s["last_used"] = t["last_used"]
    return [
        {
            "server": name,
            "calls": s["calls"],
            "success_rate": s["ok"] / s["rated"] if s["rated"] else None,
            "p50_ms": None,
            "p95_ms": None,
            "last_used": s["last_used"],
        }
        for name, s in sorted(per.items())
    ]


def _keep_in_scope(d: Discovery, diff: DiffResult, crawls: tuple[Any, Any] = (None, None)) -> None:
    """Keep in `diff` only what the scope may see, before its summary is counted: the tools in
    scope now; a tool the index no longer has when its definition in the diff's crawls (`crawls`:
    from, to; the old one for a removed tool) would be in scope (_judged_in_scope); and the
    server entries (state, error) of the visible servers, or of a server whose kept tools show.
    A scope narrower than servers counts as unchanged only its own tools."""
    from ...store.catalog import ids_within

    if d.scope.is_empty():
        return
    listed = [t for s in diff.servers for t in s.tools]
    here = ids_within(d.db, [t.id for t in listed if t.change != "removed"], None)
    kept = d.in_scope(here)
    kept |= _judged_in_scope(d, [t for t in listed if t.change == "removed"], crawls[0])
    kept |= _judged_in_scope(d, [t for t in listed if t.change != "removed" and t.id not in here], crawls[1])
    visible = _visible_servers(d) or set()
    counts = _in_scope_counts(d)
    for s in diff.servers:
        s.tools = [t for t in s.tools if t.id in kept]
        if _narrow(d):
            s.unchanged = max(0, counts.get(s.server, 0) - sum(1 for t in s.tools if t.change != "removed"))
    diff.servers = [s for s in diff.servers if s.tools or s.server in visible]


def _judged_in_scope(d: Discovery, gone: list[Any], crawl_id: int | None) -> set[str]:
    """The ids of tools (not in the index now) whose definition in crawl `crawl_id`, read as a
    crawl reads it (core.tooldoc: the server's config tags and category as the index records them
    now, the annotations' tags, the category the taxonomy gives), is inside the scope. Without
    that crawl none is (a scope never sees what cannot be judged)."""
    from ...core.tooldoc import build_tooldoc, server_words
    from ...diff.history import load_snapshot
    from ...store import approvals
    from ...store.tools import list_servers

    scope = d.scope
    gone = [t for t in gone if not scope.servers or t.server in scope.servers]
    if not gone or crawl_id is None or scope.nothing:
        return set()
    if not _narrow(d):
        return {t.id for t in gone}
    snap = load_snapshot(d.db, crawl_id, sorted({t.server for t in gone}))
    defs = snap.load({snap.tools[t.id].hash for t in gone if t.id in snap.tools})
    servers = {s["name"]: s for s in list_servers(d.db)}
    approved = approvals.approvals(d.db, [t.id for t in gone]) if scope.approved_only else {}
    out = set()
    for t in gone:
        ref = snap.tools.get(t.id)
        definition = defs.get(ref.hash) if ref else None
        if not isinstance(definition, dict) or "name" not in definition:
            continue
        s = servers.get(t.server) or {}
        tags: list[Any] = s["tags"] if isinstance(s.get("tags"), list) else []
        try:
            doc = build_tooldoc(
                definition,
                t.server,
                config_tags=[str(x) for x in tags],
                category=s.get("category") or None,
                server_label=server_words(t.server, s.get("server_name"), s.get("server_title")),
            )
        except (TypeError, ValueError, KeyError, AttributeError):
            continue  # a definition that cannot be read as a crawl reads it: not shown
        if (
            (scope.tags and not set(scope.tags) & set(doc.tags))
            or (scope.exclude_tags and set(scope.exclude_tags) & set(doc.tags))
            or (scope.categories and doc.category not in scope.categories)
            or (scope.read_only and doc.read_only is not True)
            or (scope.no_destructive and not (doc.read_only is True or doc.destructive is False))
            or (scope.approved_only and t.id not in approved)
            or scope.name_pattern
            or scope.description_contains
            or scope.has_examples
        ):
            continue
        out.add(t.id)
    return out


def _cap(diff: dict[str, Any]) -> None:
    """Keep the first TOOL_DIFFS_SHOWN tool diffs (the most severe first within each server, as
    listed) and say in `hidden` how many more there are."""
    left, hidden = TOOL_DIFFS_SHOWN, 0
    for s in diff.get("servers", []):
        tools = s.get("tools", [])
        s["tools"], hidden = tools[:left], hidden + max(0, len(tools) - left)
        left = max(0, left - len(tools))
        if s.get("error"):
            s["error"] = _cut(str(s["error"]), CELL_SHOWN)
        for t in s["tools"]:
            _bound_tool_diff(t)
    diff["hidden"] = hidden


def _bound_tool_diff(t: dict[str, Any]) -> None:
    """One tool's diff cut to CHANGES_SHOWN changes (`more_changes` says how many more), each
    change's values and word diff to CELL_SHOWN characters (a value that is not text becomes its
    JSON, cut)."""
    changes = t.get("changes") or []
    t["more_changes"] = max(0, len(changes) - CHANGES_SHOWN)
    t["changes"] = changes[:CHANGES_SHOWN]
    if t.get("note"):
        t["note"] = _cut(str(t["note"]), CELL_SHOWN)
    for c in t["changes"]:
        c["message"] = _cut(str(c.get("message") or ""), CELL_SHOWN)
        for k in ("old", "new"):
            v = c.get(k)
            if v is not None and not isinstance(v, str):
                text = json.dumps(v, ensure_ascii=False, default=str)
                c[k] = v if len(text) <= CELL_SHOWN else _cut(text, CELL_SHOWN)
            elif isinstance(v, str):
                c[k] = _cut(v, CELL_SHOWN)
        if c.get("words"):
            left = 4 * CELL_SHOWN
            words: list[dict[str, Any]] = []
            for w in c["words"]:
                text = str(w.get("text") or "")
                if left <= 0:
                    total = sum(len(str(x.get("text") or "")) for x in c["words"])
                    rest = total - sum(len(str(x["text"])) for x in words)
                    words.append({"op": "equal", "text": f" … ({rest:,} more characters)"})
                    break
                words.append({"op": w.get("op"), "text": text[:left]})
                left -= len(text)
            c["words"] = words
