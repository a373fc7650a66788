"""What the discovery server knows, without MCP: the index it serves (reloaded when a crawl
changes it), the model it loads in the background, the scope it may see, tool-name resolution and
argument validation, and the shape of every answer (`Answer`). The meta-tools' answers are in
`answers`, their text in `texts`; `server` wires them to MCP. Tests and benchmarks can call them
directly.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core.budget import fit_budget
from ..core.errors import (
    INVALID_ARGUMENTS,
    NOT_APPROVED,
    OUT_OF_SCOPE,
    UNKNOWN_TOOL,
    DatabaseError,
    ToolidxError,
    UsageError,
)
from ..core.filters import Filters
from ..core.schemas import compile_validator, schema_errors
from ..core.tooldoc import safe_names, server_name_parts
from ..store.catalog import ids_within
from ..store.db import open_db
from ..store.index import Reader
from ..store.tools import all_ids, filtered_rowids, get_tool, get_tools_by_rowid, known_servers, server_names
from .metatools import cut_text, instructions
from .texts import invalid_arguments_text

if TYPE_CHECKING:
    from ..catalog.listing import CatalogSummary

log = logging.getLogger("toolidx")

DEFAULT_MAX_TOKENS = 4000
MODEL_WAIT_S = 20.0  # how long a semantic or hybrid search waits for the model serve is loading
EXPOSED_NAME_MAX = 64  # Claude and most clients: ^[a-zA-Z0-9_-]{1,64}$
SERVERS_NAMED = 20  # servers an unknown --server's error names (a catalog may have 200k)


@dataclass
class Answer:
    """One meta-tool result: `payload` is the structuredContent, `text` the readable block."""

    payload: dict
    text: str
    is_error: bool = False

    def to_result(self) -> dict:
        return {
            "content": [{"type": "text", "text": self.text}],
            "structuredContent": self.payload,
            "isError": self.is_error,
        }


class LookupProblem(Exception):
    """A tool name that cannot be used here (unknown, ambiguous, outside the scope)."""

    def __init__(self, code: str, message: str, suggestions: list[str] | None = None):
        super().__init__(message)
        self.code, self.message, self.suggestions = code, message, suggestions or []

    def answer(self) -> Answer:
        payload: dict[str, Any] = {"error": self.code, "code": self.code, "message": self.message}
        text = f"Error: {self.message}"
        if self.suggestions:
            payload["suggestions"] = self.suggestions
            text += "\nClosest names: " + ", ".join(self.suggestions)
        return Answer(payload, text, is_error=True)


def _not_opposite(asked: str, suggestions: list[str]) -> list[str]:
    """The closest names to an unknown tool, less those that do its opposite: an agent that asked
    `github/delete_repository` was offered `create_repository` first (round 16), and an agent may
    run what it is offered. Read with search.actions' verbs, as search reads an opposite."""
    from ..search import actions

    action = actions.tool_action(asked.rsplit("/", 1)[-1])
    if action is None:
        return suggestions
    return [s for s in suggestions if not actions.marks((action, None), s.rsplit("/", 1)[-1])[0]]


def error_answer(error: str, message: str, fix: str | None = None, *, code: str | None = None, **extra: Any) -> Answer:
    """An error result: `error` and `code` are one of core.errors' codes (`code` differs only where
    `error` keeps an older value: a ToolidxError's class name)."""
    payload = {"error": error, "code": code or error, "message": message, **({"fix": fix} if fix else {}), **extra}
    return Answer(payload, f"Error: {message}" + (f"\nFix: {fix}" if fix else ""), is_error=True)


def damaged_index_answer(what: str, e: BaseException) -> Answer | None:
    """The agent's answer when `what` met a damaged page of the index (an index_error naming neither
    the file nor a command it cannot run: it may be a token holder over HTTP); the operator's log
    gets the one line with both. None for any other exception."""
    from ..core.errors import INDEX_ERROR
    from ..store.db import damaged

    damage = damaged(e)
    if damage is None:
        return None
    log.warning(f"{what} failed: {damage}")
    return error_answer(
        INDEX_ERROR,
        f"{what} failed: the tool index is damaged ({e})",
        "tell whoever runs this server: `toolidx doctor` says what is damaged and how to rebuild it",
    )


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
    """Everything derived from one version of the index; replaced whole on reload. Only
    --expose-tools makes it grow with the catalog (every tool in scope is exposed): otherwise it
    holds the tools and validators asked for, the pins' names and a summary of a few hundred names."""

    tools: dict[str, dict] = field(default_factory=dict)
    validators: dict[str, Any] = field(default_factory=dict)
    exposed: dict[str, str] | None = None  # exposed name -> tool id
    summary: CatalogSummary | None = None  # catalog_summary()


def check_servers(db: Reader, where: str, names: list[str], what: str, sep: str = ", ") -> None:
    """Raise UsageError when the index has no server of one of `names`: "{what}{missing}: not in
    the index", naming the first SERVERS_NAMED servers it has (a look-up, not every server row)."""
    known = known_servers(db, names) if names else set()
    missing = [s for s in names if s not in known]
    if not missing:
        return
    here = server_names(db, SERVERS_NAMED + 1)
    listed = ", ".join(sorted(here[:SERVERS_NAMED]))
    if len(here) > SERVERS_NAMED:
        listed += " and more (`toolidx categories` lists them)"
    raise UsageError(
        f"{what}{sep.join(missing)}: not in the index {where}",
        fix="servers here: " + (listed or "none (crawl first)"),
    )


# the background loads of this process (see model_loading)
_loaders: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def model_loading() -> bool:
    """True while a model started by Model.start is still loading. Such a process must end with
    os._exit, not by finalizing the interpreter: CPython (before 3.14) ends a daemon thread that
    takes the GIL back during finalization with pthread_exit, and that forced unwind through ONNX
    Runtime's C++ frames calls std::terminate (serve exits -6, 'terminate called without an active
    exception'), after its backends were stopped and its usage written, but an abort all the same."""
    return any(t.is_alive() for t in list(_loaders))


class Model:
    """The query embedder serve loads in the background, shared by a server and its scoped views,
    and the one model policy of every front (search_tools over stdio and HTTP, /v1/search): the
    model starts loading when the server is built (`start`), whatever the transport, and a search
    by meaning waits for it (`query_embedder`)."""

    def __init__(self) -> None:
        self.embedder: Any = None
        self.state = "not loaded"  # loading | ready | unavailable
        self.done = threading.Event()
        self.wait_s = MODEL_WAIT_S
        self._thread: threading.Thread | None = None

    def start(self, db: Reader) -> None:
        """Load in a background thread, once: the sooner it loads, the less the first search by
        meaning waits. It costs the handshake some GIL time (importing fastembed), not the first
        answer."""
        if self.state != "not loaded":
            return
        # the search modules (numpy with them) imported here, whole, before the thread: a keyword
        # search does not wait for the model, and one importing them while the thread does was
        # handed a half-imported numpy ("partially initialized module 'numpy' has no attribute
        # 'matrix'": every first keyword search_tools of a session failed)
        import numpy  # noqa: F401  # imported lazily elsewhere: a cold keyword CLI search needs none

        from ..search import hybrid  # noqa: F401

        self.state = "loading"
        self._thread = threading.Thread(target=self.load, args=(db,), name="toolidx-model", daemon=True)
        _loaders.add(self._thread)
        self._thread.start()

    def load(self, db: Reader) -> None:
        """Load the query embedder for `db` (slow: run it in a background thread). Until it is
        ready, searches wait for it (`query_embedder`)."""
        from ..search.hybrid import get_query_embedder, warm

        self.state = "loading"
        try:
            emb = get_query_embedder(db)
        except Exception as e:  # a broken model must not take the server down
            log.warning(f"embedding model unavailable, keyword search only: {e}")
            emb = None
        try:  # the first searches then pay for nothing but themselves
            warm(db, emb)
        except Exception as e:
            log.warning(f"could not preload the search caches: {e}")
        # the embedder, the state and the event change together: a search that sees the model
        # sees it ready (a search waiting meanwhile waits for the warm caches too)
        self.embedder = emb
        self.state = "ready" if emb is not None else "unavailable"
        self.done.set()

    def query_embedder(self, mode: str) -> tuple[Any, str | None]:
        """(the embedder a search in `mode` uses, a note when it answers without one). A semantic
        or hybrid search waits for a model that is loading (at most `wait_s`): answering by
        keywords would give a one-shot client, and every agent's first question, another ranking
        than the one it asked for. Past the wait, keyword results and a note that says so."""
        if mode == "keyword":
            return None, None
        if self.embedder is None and self.state == "loading":
            self.done.wait(self.wait_s)
        if self.embedder is not None:
            return self.embedder, None
        if self.state == "loading":
            return None, (
                f"semantic model still loading after {self.wait_s:g} s: keyword results "
                "(ask again shortly for results by meaning)"
            )
        return None, f"semantic model {'not loaded' if self.state == 'not loaded' else 'unavailable'}: keyword results"


class _Served:
    """What a server and its scoped views share: the index file (reopened when a crawl replaces
    it, `generation` counting the reloads), the model, the usage file and the server's options."""

    def __init__(self, db_path: str, *, expose_tools: bool, max_tokens: int, config_path: str | None):
        self.db_path = db_path
        self.db: Reader = open_db(db_path)
        self.file_id = self.stat()
        self.data_version = self.db.data_version()
        self.generation = 0  # bumped on each reload: every view drops its caches on a change
        self.lock = threading.Lock()
        self.model = Model()
        self.usage: Any = None  # serve.recorder.Usage, set by build_server
        self.expose_tools = expose_tools
        self.pin_names: list[str] = []
        self.max_tokens = max_tokens
        self.config_path = config_path
        # why the last look at the index failed (a catalog's database down), None when it worked:
        # /healthz reads it, so a load balancer takes the replica out without a query of its own
        self.index_problem: str | None = None

    def stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def refresh(self) -> bool:
        """Reload when a crawl changed the index (or replaced the file). True if it changed.
        Raises DatabaseError when the index cannot be read (and remembers it: index_problem)."""
        try:
            changed = self._refresh()
        except DatabaseError as e:
            self.index_problem = e.what
            raise
        self.index_problem = None
        return changed

    def _refresh(self) -> bool:
        with self.lock:
            fid = self.stat()
            if fid is not None and fid != self.file_id:
                try:
                    new = open_db(self.db_path)
                except ToolidxError as e:
                    log.warning(f"index changed but cannot be reopened: {e}")
                    return False
                old, self.db, self.file_id = self.db, new, fid
                self.data_version = new.data_version()
                old.close()
            else:
                v = self.db.data_version()
                if v == self.data_version:
                    return False
                self.data_version = v
            self.generation += 1
        return True


class Discovery:
    """The served index inside one scope: the server's own, or (`scoped`) an HTTP token's.
    Thread-safe: answers run in worker threads, reloads on the event loop."""

    token_view = False

    def __init__(
        self,
        db_path: str,
        *,
        scope: Filters | None = None,
        expose_tools: bool = False,
        pins: list[str] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        config_path: str | None = None,
    ):
        self._attach(
            _Served(str(db_path), expose_tools=expose_tools, max_tokens=max_tokens, config_path=config_path),
            scope or Filters(),
        )
        check_servers(self.db, self.db_path, self.scope.servers, "--server ")
        resolved = []
        for pin in pins or []:  # a pin that cannot work is a start-up error, not a silent no-op
            try:
                resolved.append(self.resolve(pin)["id"])
            except LookupProblem as e:
                raise UsageError(
                    f"--pin {pin}: {e.message}",
                    fix="pin SERVER/TOOL ids that `toolidx search` shows"
                    + (f" (closest: {', '.join(e.suggestions[:3])})" if e.suggestions else ""),
                ) from None
        self._served.pin_names = resolved
        self._own = _Cache()  # the names exposed while resolving knew no pins yet

    def _attach(self, served: _Served, scope: Filters) -> None:
        self._served = served
        self.scope = scope
        self._own = _Cache()
        self._seen = served.generation

    # --- what a server and its views share ----------------------------------------------------
    @property
    def db(self) -> Reader:
        return self._served.db

    @property
    def db_path(self) -> str:
        return self._served.db_path

    @property
    def model(self) -> Model:
        return self._served.model

    @property
    def usage(self) -> Any:
        return self._served.usage

    @usage.setter
    def usage(self, value: Any) -> None:
        self._served.usage = value

    @property
    def max_tokens(self) -> int:
        return self._served.max_tokens

    @property
    def config_path(self) -> str | None:
        return self._served.config_path

    @property
    def _cache(self) -> _Cache:
        """What this view derived from the index version it last saw; dropped on a reload."""
        if self._seen != self._served.generation:
            self._own, self._seen = _Cache(), self._served.generation
        return self._own

    # --- the index and its changes ------------------------------------------------------------
    def refresh(self) -> bool:
        """Reload when a crawl changed the index (or replaced the file). True if it changed."""
        return self._served.refresh()

    @property
    def index_problem(self) -> str | None:
        """Why the last look at the index failed; None when it worked."""
        return self._served.index_problem

    def scoped(self, scope: Filters) -> Discovery:
        """This index seen inside `scope` narrowed by this one's scope (an HTTP token's scope:
        never wider than the server's). Shares the index, the model, the usage file and reloads.
        Raises UsageError for a server the index does not have."""
        check_servers(self.db, self.db_path, scope.servers, "token scope servers=", ",")
        return _ScopedView(self._served, scope.narrowed_by(self.scope))

    def usage_store(self) -> Any:
        """The usage file's store, or None when metrics are off."""
        return self.usage.store if self.usage is not None else None

    def usage_read(self, read: Any, default: Any) -> Any:
        """`read(store)`, or `default` when the usage file cannot be read (logged, never fatal)."""
        store = self.usage_store()
        if store is None:
            return default
        try:
            return read(store)
        except Exception as e:
            log.warning(f"usage file unreadable, answering without it: {type(e).__name__}: {e}")
            return default

    # --- scope and names ----------------------------------------------------------------------
    def within(self) -> Filters | None:
        """The scope as the store's filters: None for everything (stale tools too), as the scope
        sees it."""
        return None if self.scope.is_empty() else self.scope

    def scope_ids(self) -> set[str]:
        """Every tool id in scope, read now: for a caller that lists them all (the integrations'
        bounded tool lists, --expose-tools). Serve's own checks look ids up (`in_scope`)."""
        rowids = filtered_rowids(self.db, self.scope)
        if rowids is None:
            return set(all_ids(self.db))
        return {r["id"] for r in get_tools_by_rowid(self.db, sorted(rowids), "id").values()}

    def in_scope(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` that are tools in scope (one look-up, whatever the catalog's size)."""
        return ids_within(self.db, list(ids), self.within())

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
        (catalog.resolve) plus the exposed `server__tool` names. Raises LookupProblem. For a token
        (`token_view`), a tool outside its scope is answered exactly as an unknown one (the same
        code, message and in-scope suggestions) by every meta-tool: no id outside it is confirmed."""
        try:
            return self._resolve(name)
        except LookupProblem as e:
            if not self.token_view or e.code not in (OUT_OF_SCOPE, NOT_APPROVED):
                raise
            if e.code == NOT_APPROVED and self._in_scope_but_for_approval(name):
                raise  # serve --quarantine's own refusal, of a tool the token may otherwise see
            raise LookupProblem(UNKNOWN_TOOL, f"no tool {(name or '').strip()!r} in the index", e.suggestions) from None

    def _in_scope_but_for_approval(self, name: str) -> bool:
        from ..catalog.resolve import resolve_tool_id

        try:
            resolve_tool_id(self.db, name, within=replace(self.scope, approved_only=False))
        except ToolidxError:
            return False
        return True

    def _resolve(self, name: str) -> dict:
        from ..catalog.resolve import AmbiguousToolError, OutOfScopeError, UnknownToolError, resolve_tool_id

        name = (name or "").strip()
        try:
            tool_id = resolve_tool_id(self.db, name, within=self.within(), aliases=self.exposed())
        except AmbiguousToolError as e:
            raise LookupProblem(
                e.code,
                f"{name!r} is a tool of several servers: use its full id, one of {', '.join(e.suggestions)}",
                e.suggestions,
            ) from None
        except OutOfScopeError as e:
            if self.scope.approved_only:
                from .quarantine import FIX, not_approved

                hidden = e.tool_id
                if not_approved(self.db, hidden):
                    raise LookupProblem(
                        NOT_APPROVED,
                        f"tool {hidden!r} is quarantined: no one approved it (fix: {FIX.format(id=hidden)})",
                        e.suggestions,
                    ) from None
            raise LookupProblem(
                e.code, f"tool {name!r} is outside what this server may use ({self.scope_text()})", e.suggestions
            ) from None
        except UnknownToolError as e:
            raise LookupProblem(e.code, f"no tool {name!r} in the index", _not_opposite(name, e.suggestions)) from None
        except UsageError:
            raise LookupProblem(UNKNOWN_TOOL, "no tool name given", []) from None
        tool = self.tool(tool_id)
        if tool is None:  # a crawl removed it between the look-up and the read
            raise LookupProblem(UNKNOWN_TOOL, f"tool {name!r} was removed from the index", [])
        return tool

    def scope_text(self) -> str:
        s = self.scope.to_json()
        s.pop("include_stale", None)
        return "scope: " + (", ".join(f"{k}={v}" for k, v in s.items()) or "everything")

    def exposed(self) -> dict[str, str]:
        """Tools listed directly (with --expose-tools, or pinned): exposed name -> id."""
        c = self._cache
        if c.exposed is None:
            ids = sorted(self.scope_ids()) if self._served.expose_tools else []
            pins = self._served.pin_names
            present = self.in_scope(pins) if pins else set()
            pinned = [p for p in pins if p in present]
            for p in pins:
                if p not in present:
                    log.warning(f"pinned tool {p!r} is no longer in the index")
            every = [*pinned, *ids]
            named = self.api_names(every) if every else {}
            c.exposed = {named[i]: i for i in dict.fromkeys(every)}
        return c.exposed

    def api_names(self, ids: Iterable[str]) -> dict[str, str]:
        """`api_names` with this index's servers."""
        return api_names(ids, server_names(self.db))

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

    def catalog_summary(self) -> CatalogSummary:
        """What the server instructions and search_tools' description say this scope holds
        (catalog.listing.CatalogSummary): counted by the database when first asked, kept until the
        next reload."""
        c = self._cache
        if c.summary is None:
            from .stats import catalog_of

            c.summary = catalog_of(self.db, self.within())
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
        return [
            {"path": "/".join(str(p) for p in e.absolute_path) or "(root)", "message": e.message[:300]}
            for e in errs[:10]
        ]

    def invalid_arguments(self, tool: dict, errors: list[dict]) -> Answer:
        from ..catalog.examples import generated_arguments

        schema = tool.get("input_schema") or {}
        payload = {
            "error": INVALID_ARGUMENTS,
            "code": INVALID_ARGUMENTS,
            "tool": tool["id"],
            "errors": errors,
            "input_schema": schema,
            "example_arguments": generated_arguments(tool),
        }
        payload = fit_budget(payload, None, self.max_tokens)
        return Answer(payload, invalid_arguments_text(tool["id"], errors, payload), is_error=True)

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
    """A Discovery inside a narrower scope, on its server's shared state: a reload or the model
    loading shows in every view; only the scope and what is derived from it are its own."""

    token_view = True  # a token's: which ids exist outside its scope is not its business

    def __init__(self, served: _Served, scope: Filters):  # no Discovery.__init__: the index is open
        self._attach(served, scope)


def _validator(schema: dict) -> Any:
    """A compiled validator, or False when the schema itself is broken (the server decides)."""
    v = compile_validator(schema)
    if v is None:
        log.warning("input schema not usable for validation; passing arguments through")
        return False
    return v
