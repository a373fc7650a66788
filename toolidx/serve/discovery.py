"""What the discovery server knows and answers, without MCP: the index it serves (reloaded when a
crawl changes it), the scope it may see, tool-name resolution, argument validation, and the
meta-tools' answers (a structured payload within the token budget plus a compact text block).

serve.py wires this to MCP; tests and benchmarks can call it directly.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.budget import fit_budget
from ..core.counts import plural
from ..core.errors import ToolidxError, UsageError
from ..core.filters import Filters, compile_pattern
from ..core.schemas import compile_validator, schema_errors
from ..core.tooldoc import compact_json, safe_names, server_name_parts
from ..store.db import Database, open_db
from ..store.tools import all_ids, filtered_rowids, get_tool, get_tools_by_rowid, list_servers
from .metatools import DEFAULT_TIMEOUT_MS, META_TOOLS, cut_text, instructions
from .usage import scope_label

log = logging.getLogger("toolidx")

DEFAULT_MAX_TOKENS = 4000
MODEL_WAIT_S = 20.0  # how long a semantic or hybrid search waits for the model serve is loading
EXPOSED_NAME_MAX = 64  # Claude and most clients: ^[a-zA-Z0-9_-]{1,64}$
HIT_KEYS = ("id", "title", "description", "score", "matched")


@dataclass
class Answer:
    """One meta-tool result: `payload` is the structuredContent, `text` the readable block."""

    payload: dict
    text: str
    is_error: bool = False

    def to_result(self) -> dict:
        return {"content": [{"type": "text", "text": self.text}], "structuredContent": self.payload,
                "isError": self.is_error}


class LookupProblem(Exception):
    """A tool name that cannot be used here (unknown, ambiguous, outside the scope)."""

    def __init__(self, code: str, message: str, suggestions: list[str] | None = None):
        super().__init__(message)
        self.code, self.message, self.suggestions = code, message, suggestions or []

    def answer(self) -> Answer:
        payload: dict[str, Any] = {"error": self.code, "message": self.message}
        text = f"Error: {self.message}"
        if self.suggestions:
            payload["suggestions"] = self.suggestions
            text += "\nClosest names: " + ", ".join(self.suggestions)
        return Answer(payload, text, is_error=True)


def error_answer(code: str, message: str, fix: str | None = None, **extra: Any) -> Answer:
    payload = {"error": code, "message": message, **({"fix": fix} if fix else {}), **extra}
    return Answer(payload, f"Error: {message}" + (f"\nFix: {fix}" if fix else ""), is_error=True)


def api_names(ids: Iterable[str], servers: Iterable[str] = ()) -> dict[str, str]:
    """{tool id: its API-safe name}, `server__tool` within clients' tool-name rules
    (`^[A-Za-z0-9_-]{1,64}$`): serve's exposed tools and the integrations' names. A name depends on
    the tool's own id and the index's server names (`servers`) only, never on which other tools
    exist: a look-alike a server adds later (`del.ete` beside `del_ete`) gets a hashed name and
    never takes over the one agents already call (`core.tooldoc.safe_names`, as export's wrappers)."""
    ids = list(ids)
    every = sorted({*servers, *(i.partition("/")[0] for i in ids)})
    return safe_names(ids, server_name_parts(every, keep="-"), keep="_-", max_len=EXPOSED_NAME_MAX)


@dataclass
class _Cache:
    """Everything derived from one version of the index; replaced whole on reload."""

    scope_ids: set[str] | None = None
    tools: dict[str, dict] = field(default_factory=dict)
    validators: dict[str, Any] = field(default_factory=dict)
    exposed: dict[str, str] | None = None  # exposed name -> tool id
    summary: tuple[int, list[tuple[str, int]], list[str]] | None = None  # catalog_summary()


class Discovery:
    """The served index. Thread-safe: answers run in worker threads, reloads on the event loop."""

    def __init__(self, db_path: str, *, scope: Filters | None = None, expose_tools: bool = False,
                 pins: list[str] | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 config_path: str | None = None):
        self.db_path = str(db_path)
        self.scope = scope or Filters()
        self.expose_tools = expose_tools
        self.pin_names = list(pins or [])
        self.max_tokens = max_tokens
        self.config_path = config_path
        self.db: Database = open_db(self.db_path)
        self._file_id = self._stat()
        self._data_version = self.db.data_version()
        self._cache = _Cache()
        self._generation = 0  # bumped on each reload; scoped views drop their caches on a change
        self._lock = threading.Lock()
        self.embedder: Any = None
        self.usage: Any = None  # serve.usage.Usage, set by build_server
        self.model_state = "not loaded"  # loading | ready | unavailable
        self.model_done = threading.Event()
        self.model_wait_s = MODEL_WAIT_S
        known = {s["name"] for s in list_servers(self.db)}
        unknown = [s for s in self.scope.servers if s not in known]
        if unknown:
            raise UsageError(f"--server {', '.join(unknown)}: not in the index {self.db_path}",
                             fix="servers here: " + (", ".join(sorted(known)) or "none (crawl first)"))
        resolved, asked, self.pin_names = [], self.pin_names, []
        for pin in asked:  # a pin that cannot work is a start-up error, not a silent no-op
            try:
                resolved.append(self.resolve(pin)["id"])
            except LookupProblem as e:
                raise UsageError(f"--pin {pin}: {e.message}",
                                 fix="pin SERVER/TOOL ids that `toolidx search` shows"
                                     + (f" (closest: {', '.join(e.suggestions[:3])})" if e.suggestions else "")
                                 ) from None
        self.pin_names = resolved
        self._cache = _Cache()

    # --- the index and its changes ------------------------------------------------------------
    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def refresh(self) -> bool:
        """Reload when a crawl changed the index (or replaced the file). True if it changed."""
        with self._lock:
            fid = self._stat()
            if fid is not None and fid != self._file_id:
                try:
                    new = open_db(self.db_path)
                except ToolidxError as e:
                    log.warning(f"index changed but cannot be reopened: {e}")
                    return False
                old, self.db, self._file_id = self.db, new, fid
                self._data_version = new.data_version()
                old.close()
            else:
                v = self.db.data_version()
                if v == self._data_version:
                    return False
                self._data_version = v
            self._cache = _Cache()
            self._generation += 1
        return True

    def scoped(self, scope: Filters) -> Discovery:
        """This index seen inside `scope` narrowed by this server's own scope (an HTTP token's
        scope: never wider than the server's). Shares the database, the model and reloads.
        Raises UsageError for a server the index does not have."""
        known = {s["name"] for s in list_servers(self.db)}
        unknown = [s for s in scope.servers if s not in known]
        if unknown:
            raise UsageError(f"token scope servers={','.join(unknown)}: not in the index {self.db_path}",
                             fix="servers here: " + (", ".join(sorted(known)) or "none (crawl first)"))
        return _ScopedView(self, scope.narrowed_by(self.scope))

    def load_model(self) -> None:
        """Load the query embedder (slow: run it in a background thread). Until it is ready,
        search answers with keywords."""
        from ..search.hybrid import get_query_embedder, warm

        self.model_state = "loading"
        try:
            emb = get_query_embedder(self.db)
        except Exception as e:  # a broken model must not take the server down
            log.warning(f"embedding model unavailable, keyword search only: {e}")
            emb = None
        try:  # the first searches then pay for nothing but themselves
            warm(self.db, emb)
        except Exception as e:
            log.warning(f"could not preload the search caches: {e}")
        # the embedder, the state and the event change together: a search that sees the model
        # sees it ready (a search waiting meanwhile waits for the warm caches too)
        self.embedder = emb
        self.model_state = "ready" if emb is not None else "unavailable"
        self.model_done.set()

    def query_embedder(self, mode: str) -> tuple[Any, str | None]:
        """(the embedder a search in `mode` uses, a note when it answers without one): the one
        model policy of every front (search_tools over stdio and HTTP, /v1/search). A semantic or
        hybrid search waits for a model that is loading (at most `model_wait_s`): answering by
        keywords would give a one-shot client, and every agent's first question, another ranking
        than the one it asked for. Past the wait, keyword results and a note that says so."""
        if mode == "keyword":
            return None, None
        if self.embedder is None and self.model_state == "loading":
            self.model_done.wait(self.model_wait_s)
        if self.embedder is not None:
            return self.embedder, None
        if self.model_state == "loading":
            return None, (f"semantic model still loading after {self.model_wait_s:g} s: keyword results "
                          "(ask again shortly for results by meaning)")
        return None, f"semantic model {'not loaded' if self.model_state == 'not loaded' else 'unavailable'}: " \
                     "keyword results"

    # --- scope and names ----------------------------------------------------------------------
    def scope_ids(self) -> set[str]:
        c = self._cache
        if c.scope_ids is None:
            rowids = filtered_rowids(self.db, self.scope)
            if rowids is None:
                ids = set(all_ids(self.db))
            else:
                ids = {r["id"] for r in get_tools_by_rowid(self.db, sorted(rowids), "id").values()}
            c.scope_ids = ids
        return c.scope_ids

    def tool(self, tool_id: str) -> dict | None:
        c = self._cache
        t = c.tools.get(tool_id)
        if t is None:
            t = get_tool(self.db, tool_id)
            if t is not None:
                c.tools[tool_id] = t
        return t

    def resolve(self, name: str) -> dict:
        """The tool row for `name`, inside the scope, by the same rules as `toolidx describe`
        (catalog.resolve) plus the exposed `server__tool` names. Raises LookupProblem."""
        from ..catalog.resolve import AmbiguousToolError, OutOfScopeError, UnknownToolError, resolve_tool_id

        name = (name or "").strip()
        try:
            tool_id = resolve_tool_id(self.db, name, within=self.scope_ids(), aliases=self.exposed())
        except AmbiguousToolError as e:
            raise LookupProblem(e.kind, f"{name!r} is a tool of several servers: "
                                f"use its full id, one of {', '.join(e.suggestions)}", e.suggestions) from None
        except OutOfScopeError as e:
            if self.scope.approved_only:
                from .quarantine import FIX, not_approved

                hidden = e.tool_id
                if not_approved(self.db, hidden):
                    raise LookupProblem("not_approved", f"tool {hidden!r} is quarantined: no one approved it "
                                        f"(fix: {FIX.format(id=hidden)})", e.suggestions) from None
            raise LookupProblem(e.kind, f"tool {name!r} is outside what this server may "
                                f"use ({self.scope_text()})", e.suggestions) from None
        except UnknownToolError as e:
            raise LookupProblem(e.kind, f"no tool {name!r} in the index", e.suggestions) from None
        except UsageError:
            raise LookupProblem("unknown_tool", "no tool name given", []) from None
        tool = self.tool(tool_id)
        if tool is None:  # a crawl removed it between the look-up and the read
            raise LookupProblem("unknown_tool", f"tool {name!r} was removed from the index", [])
        return tool

    def scope_text(self) -> str:
        s = self.scope.to_json()
        s.pop("include_stale", None)
        return "scope: " + (", ".join(f"{k}={v}" for k, v in s.items()) or "everything")

    def exposed(self) -> dict[str, str]:
        """Tools listed directly (with --expose-tools, or pinned): exposed name -> id."""
        c = self._cache
        if c.exposed is None:
            ids = sorted(self.scope_ids()) if self.expose_tools else []
            pinned = [p for p in self.pin_names if p in self.scope_ids()]
            for p in self.pin_names:
                if p not in self.scope_ids():
                    log.warning(f"pinned tool {p!r} is no longer in the index")
            named = self.api_names([*pinned, *ids])
            c.exposed = {named[i]: i for i in dict.fromkeys([*pinned, *ids])}
        return c.exposed

    def api_names(self, ids: Iterable[str]) -> dict[str, str]:
        """`api_names` with this index's servers."""
        return api_names(ids, (r["name"] for r in list_servers(self.db)))

    def exposed_definitions(self) -> list[dict]:
        out = []
        for n, i in self.exposed().items():
            t = self.tool(i)
            if t is None:
                continue
            d = dict(t["definition"])
            d["name"] = n
            if isinstance(d.get("description"), str):  # clients cut longer ones without a word
                d["description"] = cut_text(d["description"])
            d.pop("execution", None)  # task-augmented execution is not proxied
            meta = dict(d.get("_meta") or {})
            meta["toolidx/id"] = i
            d["_meta"] = meta
            out.append(d)
        return out

    def catalog_summary(self) -> tuple[int, list[tuple[str, int]], list[str]]:
        """(tools in scope, [(server, tools)], categories by size): what the server instructions
        and search_tools' description say this server searches. Rebuilt after each reload."""
        c = self._cache
        if c.summary is None:
            from ..catalog.listing import categories

            res = categories(self.db, filters=self.scope if not self.scope.is_empty() else None)
            servers = [(s["name"], s["count"]) for s in res.get("servers", [])
                       if s.get("count") and (not self.scope.servers or s.get("name") in self.scope.servers)]
            cats = [x["name"] for x in res.get("categories", []) if x.get("name")]
            c.summary = (len(self.scope_ids()), servers, cats)
        return c.summary

    def instructions(self) -> str:
        """The server instructions: what this scope holds and the workflow, within 2 KB."""
        return instructions(*self.catalog_summary())

    # --- arguments ----------------------------------------------------------------------------
    def validation_errors(self, tool: dict, arguments: Any) -> list[dict]:
        """What is wrong with `arguments` for `tool` ([] when valid, or when its schema is itself
        unusable: then the server judges)."""
        if not isinstance(arguments, dict):
            return [{"path": "(root)", "message": f"arguments must be an object, not {type(arguments).__name__}"}]
        c = self._cache
        v = c.validators.get(tool["id"])
        if v is None:
            v = c.validators[tool["id"]] = _validator(tool.get("input_schema") or {"type": "object"})
        errs = schema_errors(v, arguments) if v is not False else None
        if errs is None:
            return []
        errs.sort(key=lambda e: [str(p) for p in e.absolute_path])
        return [{"path": "/".join(str(p) for p in e.absolute_path) or "(root)", "message": e.message[:300]}
                for e in errs[:10]]

    def invalid_arguments(self, tool: dict, errors: list[dict]) -> Answer:
        from ..core.schemas import example_arguments

        schema = tool.get("input_schema") or {}
        payload = {"error": "invalid_arguments", "tool": tool["id"], "errors": errors,
                   "input_schema": schema, "example_arguments": example_arguments(schema)}
        payload = fit_budget(payload, None, self.max_tokens)
        lines = [f"Not run: the arguments do not fit the input schema of {tool['id']}:"]
        lines += [f"- {e['path']}: {e['message']}" for e in errors]
        if "example_arguments" in payload:
            lines.append(f"Example arguments: {compact_json(payload['example_arguments'])}")
        if "input_schema" in payload:
            lines.append(f"Input schema: {compact_json(payload['input_schema'])}")
        return Answer(payload, "\n".join(lines), is_error=True)

    # --- meta-tools ---------------------------------------------------------------------------
    def answer(self, name: str, args: dict) -> Answer:
        """Run one meta-tool (not execute_tool, which needs a backend: see `prepare_call`)."""
        problem = check_arguments(name, args)
        if problem:
            return problem
        try:
            return getattr(self, "_" + name)(args)
        except LookupProblem as e:
            return e.answer()
        except ToolidxError as e:
            suggestions = getattr(e, "suggestions", None)
            extra = {"suggestions": suggestions} if suggestions else {}
            return error_answer(type(e).__name__, e.what, e.fix, **extra)

    def _filters(self, args: dict) -> Filters:
        f = dict(args.get("filters") or {})
        f.pop("min_score", None)
        if f.get("name_pattern"):  # checked before Filters does, to name it as the agent wrote it
            compile_pattern(f["name_pattern"], _spelling().name("name_pattern"))
        if f.get("has_examples"):
            from ..catalog.examples import example_tool_ids

            label = scope_label(self.scope)  # recorded examples of this very scope only
            ids = self._usage_read(lambda u: example_tool_ids(self.db, u, label), None)
            f["example_ids"] = ids if ids is not None else example_tool_ids(self.db)
        return Filters(**f).narrowed_by(self.scope)

    def usage_store(self) -> Any:
        """The usage file's store, or None when metrics are off."""
        return self.usage.store if self.usage is not None else None

    def _usage_read(self, read: Any, default: Any) -> Any:
        """`read(store)`, or `default` when the usage file cannot be read (logged, never fatal)."""
        store = self.usage_store()
        if store is None:
            return default
        try:
            return read(store)
        except Exception as e:
            log.warning(f"usage file unreadable, answering without it: {type(e).__name__}: {e}")
            return default

    def _schemas_for(self, items: list[dict], key: str = "id") -> None:
        for it in items:
            t = self.tool(it[key])
            if t is not None:
                it["input_schema"] = t.get("input_schema")

    def _search_tools(self, args: dict) -> Answer:
        from ..search.hybrid import search

        query, limit = args["query"], args.get("limit", 5)
        mode = args.get("search_type", "hybrid")
        min_score = (args.get("filters") or {}).get("min_score")
        filters = self._filters(args)
        embedder, without_model = self.query_embedder(mode)
        res = search(self.db, query, mode=mode, limit=limit, filters=filters, min_score=min_score,
                     embedder=embedder, spelling=_spelling())
        full = res.to_json()
        hits = [{k: h[k] for k in HIT_KEYS if h.get(k) not in (None, "", [])} for h in full.get("hits", [])]
        for h in hits:
            if isinstance(h.get("score"), float):
                h["score"] = round(h["score"], 3)
        if args.get("include_schemas"):
            self._schemas_for(hits)
        notes = list(full.get("notes") or [])
        if without_model:
            notes = [n for n in notes if "needs embeddings" not in n]
            notes.append(without_model)
        payload: dict[str, Any] = {"query": query, "mode_used": full.get("mode_used"),
                                   "no_match": bool(full.get("no_match")), "hits": hits}
        if payload["no_match"]:
            payload["message"] = ("No good match: no indexed tool fits this request well. Rephrase it, "
                                  "or tell the user that no available tool does this.")
        if notes:
            payload["notes"] = notes
        payload = fit_budget(payload, "hits", self.max_tokens)
        return Answer(payload, _search_text(payload))

    def _list_tools(self, args: dict) -> Answer:
        from ..catalog.listing import list_tools
        from .metatools import USAGE_SORTS

        sort_by = args.get("sort_by", "name")
        res = list_tools(self.db, page=args.get("page", 1), page_size=args.get("page_size", 20),
                         sort=USAGE_SORTS.get(sort_by, sort_by), order=args.get("sort_order"),
                         filters=self._filters(args), usage=self.usage_store())
        items = [_compact_tool(t) for t in res.get("items", [])]
        if args.get("include_schemas"):
            self._schemas_for(items)
        payload = {"total": res.get("total"), "page": res.get("page"), "pages": res.get("pages"),
                   "page_size": res.get("page_size"), "next_page": res.get("next_page"), "items": items}
        payload = fit_budget(payload, "items", self.max_tokens)
        return Answer(payload, _list_text(payload, sort_by, str(res.get("order"))))

    def _describe_tool(self, args: dict) -> Answer:
        from ..catalog.describe import describe
        from ..core.schemas import example_arguments

        tool = self.resolve(args["tool_name"])
        detail = args.get("detail", "schema")
        described: dict[str, Any] = dict(describe(self.db, tool["id"], detail))
        if self.scope.approved_only:  # serve --quarantine: the server's text only as approved
            from .quarantine import hide_server_text

            hide_server_text(self.db, tool, described)
        if detail == "schema":  # what a caller needs, without the full dump's server details
            schema = tool.get("input_schema") or {"type": "object"}
            described.update(input_schema=schema, annotations=tool.get("annotations"),
                             example_arguments=example_arguments(schema))
        payload = {k: v for k, v in described.items() if v not in (None, [], {}, "")}
        if args.get("include_metrics"):
            from ..catalog.usage import NEVER_CALLED, tool_usage

            payload["metrics"] = self._usage_read(lambda u: tool_usage(u, tool["id"]), dict(NEVER_CALLED))
            if self.usage_store() is None:
                payload["metrics_note"] = "usage metrics are off on this server (see its log)"
        if args.get("include_examples"):
            from ..catalog.examples import tool_examples

            label = scope_label(self.scope)  # only the examples callers of this very scope sent
            payload["examples"] = self._usage_read(lambda u: tool_examples(tool, u, label), None) \
                or tool_examples(tool, None)
        payload = fit_budget(payload, None, self.max_tokens)
        answer = Answer(payload, _describe_text(payload))
        if self.scope.approved_only:  # serve --quarantine: say whether execute_tool will run it
            from .quarantine import annotate

            annotate(self.db, tool, answer)
        return answer

    def _get_tool_categories(self, args: dict) -> Answer:
        from ..catalog.listing import categories

        res = categories(self.db, filters=self.scope if not self.scope.is_empty() else None)
        payload: dict[str, Any] = {"categories": res.get("categories", [])}
        if args.get("include_tags", True):
            payload["tags"] = res.get("tags", [])
        if args.get("include_servers", True):
            servers = res.get("servers", [])
            if self.scope.servers:
                servers = [s for s in servers if s.get("name") in self.scope.servers]
            payload["servers"] = [{k: s.get(k) for k in ("name", "count", "status") if k in s}
                                  for s in servers if s.get("count")]
        payload["total_tools"] = len(self.scope_ids())
        payload = fit_budget(payload, "tags" if "tags" in payload else None, self.max_tokens)
        return Answer(payload, _categories_text(payload))

    def _get_similar_tools(self, args: dict) -> Answer:
        from ..catalog.similar import similar

        tool = self.resolve(args["tool_name"])
        limit = args.get("limit", 5)
        res = similar(self.db, tool["id"], limit=limit * 3 + 5, embedder=self.embedder)
        ids = self.scope_ids()
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
        payload = fit_budget(payload, "similar", self.max_tokens)
        return Answer(payload, _similar_text(payload))

    # --- execute_tool, the part before the backend --------------------------------------------
    def prepare_call(self, tool_name: str, arguments: Any) -> tuple[dict | None, Answer | None]:
        """(tool row, None) when the call may go to its server; (None, refusal) otherwise."""
        try:
            tool = self.resolve(tool_name)
        except LookupProblem as e:
            return None, e.answer()
        if self.scope.approved_only:  # serve --quarantine: only the definition a person approved runs
            from .quarantine import refusal

            refused = refusal(self.db, tool, self.max_tokens)
            if refused is not None:
                return None, refused
        errors = self.validation_errors(tool, arguments)
        if errors:
            return None, self.invalid_arguments(tool, errors)
        return tool, None


class _ScopedView(Discovery):
    """A Discovery inside a narrower scope. Everything but the scope and its caches is the
    parent's (read through `__getattr__`), so a reload or the model loading shows in every view."""

    def __init__(self, parent: Discovery, scope: Filters):  # no super().__init__(): the parent opened the index
        self._parent = parent
        self.scope = scope
        self._own = _Cache()
        self._seen = parent._generation

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_parent"], name)

    @property
    def _cache(self) -> _Cache:
        if self._seen != self._parent._generation:
            self._own, self._seen = _Cache(), self._parent._generation
        return self._own

    @_cache.setter
    def _cache(self, value: _Cache) -> None:
        self._own = value

    def refresh(self) -> bool:
        return self._parent.refresh()

    def scoped(self, scope: Filters) -> Discovery:
        return self._parent.scoped(scope.narrowed_by(self.scope))


def _validator(schema: dict) -> Any:
    """A compiled validator, or False when the schema itself is broken (the server decides)."""
    v = compile_validator(schema)
    if v is None:
        log.warning("input schema not usable for validation; passing arguments through")
        return False
    return v


_META_VALIDATORS: dict[str, Any] = {}  # compiled on first use: jsonschema is slow to import


def _spelling() -> Any:
    """search's `Spelling` for agents: its options as search_tools' arguments name them."""
    from ..search.hybrid import Spelling

    return Spelling((("min_score", "filters.min_score"), ("name_pattern", "filters.name_pattern")), ": ")


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
    lines = [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message[:200]}" for e in errs[:5]]
    return Answer({"error": "invalid_arguments", "tool": name, "errors": lines},
                  f"Error: invalid arguments for {name}:\n- " + "\n- ".join(lines), is_error=True)


def call_timeout(args: dict) -> float:
    return float(args.get("timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000.0


# --- compact text blocks ----------------------------------------------------------------------------
def _compact_tool(t: Mapping[str, Any]) -> dict:
    keep = ("id", "title", "description", "params", "read_only", "destructive", "stale", "usage")
    return {k: t[k] for k in keep if t.get(k) not in (None, "", False)}


def _trunc_note(payload: dict) -> str:
    t = payload.get("truncated")
    if not t:
        return ""
    parts = []
    if t.get("items_dropped"):
        parts.append(f"{t['items_dropped']} items dropped")
    if t.get("schemas_dropped"):
        parts.append("schemas dropped")
    if t.get("details_dropped"):
        parts.append("match details dropped")
    if t.get("descriptions_shortened"):
        parts.append("descriptions shortened")
    return f"\n(Shortened to fit {t.get('max_tokens')} tokens: {', '.join(parts)}.)"


def _search_text(p: dict) -> str:
    if p["no_match"]:
        lines = [f"No good match for {p['query']!r}. {p.get('message', '')}"]
        if p["hits"]:
            lines.append("Weak candidates: " + ", ".join(f"{h['id']} ({h.get('score')})" for h in p["hits"][:3]))
    else:
        lines = [f"{len(p['hits'])} match(es) for {p['query']!r} ({p.get('mode_used')}):"]
        for n, h in enumerate(p["hits"], 1):
            lines.append(f"{n}. {h['id']} ({h.get('score')}) — {h.get('description', '')}")
            if "input_schema" in h:
                lines.append(f"   input schema: {compact_json(h['input_schema'])}")
        lines.append("Next: describe_tool for the arguments, then execute_tool.")
    for n in p.get("notes", []):
        lines.append(f"Note: {n}")
    return "\n".join(lines) + _trunc_note(p)


def _list_text(p: dict, sort: str, order: str) -> str:
    items = p["items"]
    first = ((p.get("page") or 1) - 1) * (p.get("page_size") or len(items)) + 1
    head = (f"Tools {first}-{first + len(items) - 1} of {p['total']} (page {p['page']}/{p['pages']}, "
            f"by {sort} {order}); next_page: {p['next_page']}") if items \
        else f"No tools on page {p.get('page')} (total {p['total']})."
    lines = [head]
    for t in items:
        flags = "".join(f" [{f}]" for f in ("read_only", "destructive", "stale") if t.get(f))
        u = t.get("usage")
        rate = f", {u['success_rate']:.0%} ok" if u and u.get("success_rate") is not None else ""
        used = f" ({plural(u['calls'], 'call')}{rate})" if u else ""
        lines.append(f"- {t['id']}{flags}{used} — {t.get('description', '')}")
        if "input_schema" in t:
            lines.append(f"  input schema: {compact_json(t['input_schema'])}")
    return "\n".join(lines) + _trunc_note(p)


def _describe_text(p: dict) -> str:
    lines = []
    head = p.get("id") or p.get("tool") or ""
    title = p.get("title")
    lines.append(f"{head}" + (f" — {title}" if title else ""))
    if p.get("description"):
        lines.append(str(p["description"]))
    ann = p.get("annotations")
    if ann:
        lines.append(f"Annotations: {compact_json(ann)}")
    params = p.get("parameters")
    if isinstance(params, list) and params:
        lines.append("Parameters:")
        for r in params:
            bits = [str(r.get("type") or "any"), "required" if r.get("required") else "optional"]
            if r.get("default") is not None:
                bits.append(f"default {compact_json(r['default'])}")
            if r.get("enum"):
                bits.append("one of " + compact_json(r["enum"]))
            desc = f": {r['description']}" if r.get("description") else ""
            lines.append(f"- {r.get('name')} ({', '.join(bits)}){desc}")
    elif isinstance(params, list):
        lines.append("Parameters: none")
    elif p.get("params"):
        req = set(p.get("required") or [])
        lines.append("Parameters: " + ", ".join(f"{n}{' (required)' if n in req else ''}" for n in p["params"])
                     + " (describe_tool with detail \"schema\" for types)")
    if p.get("hints"):
        lines.append("Hints: " + ", ".join(p["hints"]))
    if "example_arguments" in p:
        lines.append(f"Example arguments: {compact_json(p['example_arguments'])}")
    if "input_schema" in p:
        lines.append(f"Input schema: {compact_json(p['input_schema'])}")
    for e in p.get("examples") or []:
        lines.append(f"Example ({e.get('source')}): {compact_json(e.get('arguments'))}")
    m = p.get("metrics")
    if m:
        rate = "n/a" if m.get("success_rate") is None else f"{m['success_rate']:.0%}"
        lines.append(f"Usage: {plural(m.get('calls', 0), 'call')}, {rate} ok, p50 {m.get('p50_ms')} ms, "
                     f"p95 {m.get('p95_ms')} ms, last used {m.get('last_used') or 'never'}")
    if p.get("output_schema"):
        lines.append(f"Output schema: {compact_json(p['output_schema'])}")
    return "\n".join(lines) + _trunc_note(p)


def _categories_text(p: dict) -> str:
    def fmt(rows: list[dict], status: bool = False) -> str:
        return ", ".join(f"{r.get('name') or '(none)'} ({r.get('count')}"
                         + (f", {r['status']}" if status and r.get("status") not in (None, "ok") else "") + ")"
                         for r in rows) or "none"

    lines = [f"{plural(p['total_tools'], 'tool')}.", f"Categories: {fmt(p['categories'])}"]
    if "tags" in p:
        lines.append(f"Tags: {fmt(p['tags'])}")
    if "servers" in p:
        lines.append(f"Servers: {fmt(p['servers'], status=True)}")
    return "\n".join(lines) + _trunc_note(p)


def _similar_text(p: dict) -> str:
    if not p["similar"]:
        return f"No similar tools to {p['tool']} here."
    lines = [f"Similar to {p['tool']} ({p.get('method')}):"]
    for n, s in enumerate(p["similar"], 1):
        dup = ", likely duplicate" if s.get("likely_duplicate") else ""
        why = f" — {s['reason']}" if s.get("reason") else ""
        lines.append(f"{n}. {s['id']} ({s.get('score')}{dup}){why}")
    return "\n".join(lines) + _trunc_note(p)
