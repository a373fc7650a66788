"""The meta-tools' answers, one function per meta-tool (execute_tool aside: it needs a backend,
see `execute`): a structured payload within the server's token budget plus the compact text
(`texts`). Each reads the index through a `Discovery`, inside its scope; no MCP here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.budget import fit_budget
from ..core.errors import INVALID_ARGUMENTS, ToolidxError
from ..core.filters import Filters
from ..core.schemas import compile_validator
from ..core.toolcard import compact
from .discovery import Answer, Discovery, LookupProblem, error_answer
from .metatools import DEFAULT_TIMEOUT_MS, META_TOOLS
from .recorder import scope_label
from .texts import categories_text, describe_text, list_text, search_text, similar_text

if TYPE_CHECKING:
    from ..search.hybrid import SearchResult
    from ..search.request import SearchRequest

HIT_KEYS = ("id", "title", "description", "score", "matched", "note", "cautions")


def answer(d: Discovery, name: str, args: dict) -> Answer:
    """Run one meta-tool (not execute_tool, which needs a backend: see `Discovery.prepare_call`)."""
    problem = check_arguments(name, args)
    if problem:
        return problem
    try:
        return ANSWERS[name](d, args)
    except LookupProblem as e:
        return e.answer()
    except ToolidxError as e:
        suggestions = getattr(e, "suggestions", None)
        extra = {"suggestions": suggestions} if suggestions else {}
        return error_answer(type(e).__name__, e.what, e.fix, code=e.code, **extra)


_META_VALIDATORS: dict[str, Any] = {}  # compiled on first use: jsonschema is slow to import


def check_arguments(name: str, args: Any) -> Answer | None:
    """A meta-tool's own arguments against its published schema (the low-level server does not)."""
    v = _META_VALIDATORS.get(name)
    if v is None:
        schema = next(t["inputSchema"] for t in META_TOOLS if t["name"] == name)
        v = _META_VALIDATORS[name] = compile_validator(schema)
        assert v is not None, f"the published schema of {name} is broken"
    errs = sorted(v.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
    if not errs:
        return None
    lines = [_argument_problem(e) for e in errs[:5]]
    return Answer(
        {"error": INVALID_ARGUMENTS, "code": INVALID_ARGUMENTS, "tool": name, "errors": lines},
        f"Error: invalid arguments for {name}:\n- " + "\n- ".join(lines),
        is_error=True,
    )


def call_timeout(args: dict) -> float:
    return float(args.get("timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000.0


def _filters(d: Discovery, args: dict) -> Filters:
    from ..search.request import META, filters_of

    f = dict(args.get("filters") or {})
    f.pop("min_score", None)
    return with_examples(d, filters_of(f, META)).narrowed_by(d.scope)


def with_examples(d: Discovery, f: Filters) -> Filters:
    """`f` with the ids of the tools that have examples, when it asks only for those: recorded
    examples of this very scope only."""
    if not f.has_examples:
        return f
    from ..catalog.examples import example_tool_ids

    label = scope_label(d.scope)
    ids = d.usage_read(lambda u: example_tool_ids(d.db, u, label), None)
    return replace(f, example_ids=ids if ids is not None else example_tool_ids(d.db))


def _schemas_for(d: Discovery, items: list[dict], key: str = "id") -> None:
    for it in items:
        t = d.tool(it[key])
        if t is not None:
            it["input_schema"] = t.get("input_schema")


def _argument_problem(e: Any) -> str:
    """One schema error as a line: the length and the limit first, the value quoted short (the
    validator's own message quotes all of a 5,000-character query before it says what is wrong)."""
    where = "/".join(str(p) for p in e.absolute_path) or "(root)"
    value, bound = e.instance, e.validator_value
    edge = "limit" if e.validator in ("maxLength", "maxItems") else "least"
    if e.validator in ("maxLength", "minLength") and isinstance(value, str):
        return f"{where}: {len(value):,} characters, the {edge} is {bound:,} ({_quote(value)})"
    if e.validator in ("maxItems", "minItems") and isinstance(value, list):
        return f"{where}: {len(value):,} items, the {edge} is {bound:,}"
    if e.validator == "type" and bound == "object" and isinstance(value, str):  # JSON text for the object
        return f"{where}: a string ({_quote(value)}); pass the object itself, not its JSON text"
    shown = repr(value)
    message = e.message.replace(shown, _quote(value)) if len(shown) > 60 else e.message
    return f"{where}: {message[:200]}"


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "…"


def run_search(d: Discovery, req: SearchRequest, front: str) -> SearchResult:
    """`req` (checked by its front-end) searched inside `d`'s scope, as serve's every front-end
    searches (search_tools, /v1/search, the web console): recorded examples of this very scope,
    the scope's filters, search_tools' model policy (waits for a loading model, and says so when it
    answers without it), what serve learned from usage, hints named as `front` spells them."""
    from ..search.hybrid import search
    from ..search.request import SPELLINGS

    req.filters = with_examples(d, req.filters).narrowed_by(d.scope)
    embedder, without_model = d.model.query_embedder(req.mode)
    learned = d.usage.source() if d.usage is not None else None  # the caller: learned.CALLER
    return search(d.db, req, embedder=embedder, spelling=SPELLINGS[front], learned=learned).without_model(without_model)


def search_payload(d: Discovery, params: Any) -> dict:
    """The `toolidx search --json` object for `/v1/search`'s query parameters `params` (a
    multi-dict: `getlist`, `get`), inside `d`'s scope: /v1/search's and the web console's answer.
    Raises UsageError for bad parameters."""
    from ..core.vocabulary import JSON_VERSION
    from ..search.request import HTTP, from_http

    return {"toolidx": JSON_VERSION, "command": "search", **run_search(d, from_http(params), HTTP).to_json()}


def search_tools(d: Discovery, args: dict) -> Answer:
    from ..search.request import META, from_meta

    req = from_meta(args)
    res = run_search(d, req, META)
    full = res.to_json()
    hits = [{k: h[k] for k in HIT_KEYS if h.get(k) not in (None, "", [])} for h in full.get("hits", [])]
    for h in hits:
        if isinstance(h.get("score"), float):
            h["score"] = round(h["score"], 3)
    if args.get("include_schemas"):
        _schemas_for(d, hits)
    notes = list(full.get("notes") or [])
    payload: dict[str, Any] = {
        "query": req.query,
        "mode_used": full.get("mode_used"),
        "no_match": bool(full.get("no_match")),
        "hits": hits,
    }
    if payload["no_match"] and not full.get("considered"):  # the filters kept every tool out, not the request
        payload["message"] = (
            "No indexed tool passes these filters. Check them (get_tool_categories lists the servers, "
            "categories and tags), or search without them."
        )
    elif payload["no_match"]:
        payload["message"] = (  # search_text starts "No good match for QUERY." before it
            "No indexed tool fits this request well. Rephrase it, or tell the user that no available tool does this."
        )
    if notes:
        payload["notes"] = notes
    payload = fit_budget(payload, "hits", d.max_tokens)
    return Answer(payload, search_text(payload))


def list_tools(d: Discovery, args: dict) -> Answer:
    from ..catalog.listing import list_tools as listing
    from .metatools import USAGE_SORTS

    sort_by = args.get("sort_by", "name")
    filters = _filters(d, args)

    def page(number: int, size: int) -> tuple[dict, str]:
        res = listing(
            d.db,
            page=number,
            page_size=size,
            sort=USAGE_SORTS.get(sort_by, sort_by),
            order=args.get("sort_order"),
            filters=filters,
            usage=d.usage_store(),
        )
        items = [compact(t.to_json()) for t in res.items]
        if args.get("include_schemas"):
            _schemas_for(d, items)
        payload = {
            "total": res.total,
            "page": res.page,
            "pages": res.pages,
            "page_size": res.page_size,
            "next_page": res.next_page,
            "items": items,
        }
        return fit_budget(payload, "items", d.max_tokens), res.order

    number, size = args.get("page", 1), args.get("page_size", 20)
    payload, order = page(number, size)
    cut = payload.get("truncated") or {}
    kept = cut.get("items_kept", 0)
    if cut.get("items_dropped") and kept:
        # the budget cut the page: pages as long as what fits, one of them starting where this
        # one starts, so that following next_page reaches every tool (the cut page's next_page
        # skipped the tools it dropped). The answer's page_size says the length to ask with.
        start = (number - 1) * size
        fit = next(n for n in range(kept, 0, -1) if start % n == 0)
        payload, order = page(start // fit + 1, fit)
        payload["page_size_asked"] = size
    return Answer(payload, list_text(payload, sort_by, order))


def describe_tool(d: Discovery, args: dict) -> Answer:
    from ..catalog.describe import describe
    from ..catalog.examples import generated_arguments

    tool = d.resolve(args["tool_name"])
    detail = args.get("detail", "schema")
    # the usage figures and examples come after the tool's own fields, whatever is empty there
    described = describe(
        d.db,
        tool["id"],
        detail,
        usage=d.usage_store(),
        metrics=bool(args.get("include_metrics")),
        examples=bool(args.get("include_examples")),
        scope=scope_label(d.scope),
    ).to_json()  # only the examples callers of this very scope sent
    used = {k: described.pop(k) for k in ("metrics", "examples") if k in described}
    if d.scope.approved_only:  # serve --quarantine: the server's text only as approved
        from .quarantine import hide_server_text

        hide_server_text(d.db, tool, described)
    if detail == "schema":  # what a caller needs, without the full dump's server details
        schema = tool.get("input_schema") or {"type": "object"}
        described.update(
            input_schema=schema, annotations=tool.get("annotations"), example_arguments=generated_arguments(tool)
        )
    payload = {k: v for k, v in described.items() if v not in (None, [], {}, "")}
    if "metrics" in used:
        payload["metrics"] = used["metrics"]
        if d.usage_store() is None:
            payload["metrics_note"] = "usage metrics are off on this server (see its log)"
    if "examples" in used:
        payload["examples"] = used["examples"]
    payload = fit_budget(payload, None, d.max_tokens)
    described_answer = Answer(payload, describe_text(payload))
    if d.scope.approved_only:  # serve --quarantine: say whether execute_tool will run it
        from .quarantine import annotate

        annotate(d.db, tool, described_answer)
    return described_answer


def get_tool_categories(d: Discovery, args: dict) -> Answer:
    from ..catalog.listing import categories

    res = categories(d.db, filters=d.within()).to_json()
    payload: dict[str, Any] = {"categories": res.get("categories", [])}
    if args.get("include_tags", True):
        payload["tags"] = res.get("tags", [])
    if args.get("include_servers", True):
        servers = res.get("servers", [])
        if d.scope.servers:
            servers = [s for s in servers if s.get("name") in d.scope.servers]
        payload["servers"] = [
            {k: s.get(k) for k in ("name", "count", "status") if k in s} for s in servers if s.get("count")
        ]
    payload["total_tools"] = res["total"]
    payload = fit_budget(payload, "tags" if "tags" in payload else None, d.max_tokens)
    return Answer(payload, categories_text(payload))


def get_similar_tools(d: Discovery, args: dict) -> Answer:
    from ..catalog.similar import similar

    tool = d.resolve(args["tool_name"])
    limit = args.get("limit", 5)
    res = similar(d.db, tool["id"], limit=limit * 3 + 5, embedder=d.model.embedder).to_json()
    ids = d.in_scope(s["id"] for s in res["similar"])
    alts: list[dict[str, Any]] = []
    for s in res["similar"]:
        if s["id"] not in ids or len(alts) == limit:
            continue
        alt = {k: v for k, v in s.items() if k not in ("server", "name", "title")}
        if not s["likely_duplicate"]:
            alt.pop("reason", None)  # says no more than the score
        alt["score"] = round(s["score"], 3)
        alts.append(alt)
    payload = {"tool": tool["id"], "method": res["method"], "similar": alts}
    payload = fit_budget(payload, "similar", d.max_tokens)
    return Answer(payload, similar_text(payload))


# meta-tool name -> its answer; execute_tool is not here (server.call_tool runs it on a backend)
ANSWERS: dict[str, Callable[[Discovery, dict], Answer]] = {
    "search_tools": search_tools,
    "list_tools": list_tools,
    "describe_tool": describe_tool,
    "get_tool_categories": get_tool_categories,
    "get_similar_tools": get_similar_tools,
}
