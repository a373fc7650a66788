"""toolidx's Python API (version `API_VERSION`): a catalog of MCP tools to search and describe,
opened from an index file or built in memory from a server's own tool definitions. No CLI, no SQL.

    from toolidx.integrations.catalog import Catalog

    catalog = Catalog.from_tools(tools, cache="~/.cache/my-server/tools.db")  # tools/list dicts or mcp Tools
    result = catalog.search("convert a pdf to text", limit=5)   # SearchResult: hits, scores, no_match
    for hit in result.hits:
        print(hit.name, hit.score, hit.why)
    print(catalog.describe("convert_pdf", detail="schema").to_json())

    catalog = Catalog.open("tools.db")   # an index `toolidx crawl` wrote

`search` is the CLI's search (`toolidx.search.hybrid.search`: the same ranking, filters, calibrated
scores and "no good match"), `describe` the CLI's describe. A catalog built from tools is embedded
once; with `cache` its vectors are kept in that file by each tool's embedded text, so a restart with
the same tools embeds nothing and `update` embeds only the tools that changed. That file is believed
only as sealed by this user's key (`cache_key`): one changed or swapped since is embedded anew.

Compatibility: within one `API_VERSION` the names and parameters below only grow (new keyword
arguments with defaults, new result fields); the results' `to_json()` are the CLI's `--json` bodies.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..catalog.describe import Description, describe
from ..core.clock import now_iso
from ..core.embedding import QUERY_THREADS, Embedder, load_embedder, resolve_model
from ..core.errors import ModelError, UsageError
from ..core.files import open_regular, private_dir, writable_by_others
from ..core.filters import Filters
from ..core.notices import warn_once
from ..core.servers import ServerResult, ServerSpec, server_name_problem
from ..core.tooldoc import fix_strings, validate_tool
from ..crawl.write import store_crawl
from ..search.hybrid import SearchResult, Spelling, get_query_embedder, search, warm
from ..search.request import CLI, LIMITS, META, SearchRequest, filters_of
from ..store.db import open_db
from ..store.health import content_digest
from ..store.index import Reader
from ..store.trust import state_dir

__all__ = [
    "API_VERSION",
    "Catalog",
    "Description",
    "Filters",
    "LiveCatalog",
    "SearchResult",
    "agent_answer",
    "tool_dict",
]

API_VERSION = 1
DEFAULT_SERVER = "server"  # the server part of ids (`server/tool`) in a catalog built from tools
SOURCE_KEY, SOURCE_SKIPPED = "api_tools_key", "api_tools_skipped"  # meta: the tools a catalog was last built from
SEAL = "api_cache_seal"  # meta: the keyed digest of everything else in a cache file (store.health.content_digest)
KEY_FILE = "catalog-cache.key"  # in the user's state folder: the key caches are sealed with
T = TypeVar("T")
MAX_LIMIT = int(LIMITS[META][1] or 0)  # the most tools search_tools answers at once: serve's, from the table
PYTHON = Spelling((), "=")  # hints name the keyword arguments: "min_score=0 shows it anyway"
# An agent calling search_tools cannot set min_score (the server author does): its "no good match"
# note says what it can do instead.
AGENT = Spelling((), "=", "; describe the task in other words, or call a tool you already know by its name")


def tool_dict(tool: Any) -> dict:
    """A tool definition as `tools/list` sends it (camelCase keys), from a dict in that shape (or
    the bench shape: `input_schema`), an mcp `Tool`, or a FastMCP `Tool`."""
    if hasattr(tool, "to_mcp_tool"):  # FastMCP's Tool
        tool = tool.to_mcp_tool()
    if hasattr(tool, "model_dump"):  # the SDK's Tool (pydantic, snake_case attributes)
        tool = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    if not isinstance(tool, dict):
        raise UsageError(f"a tool must be a dict or an MCP Tool, not {type(tool).__name__}")
    out = {k: v for k, v in tool.items() if k not in ("id", "server", "server_title")}
    if "inputSchema" not in out and isinstance(out.get("input_schema"), dict):
        out["inputSchema"] = out.pop("input_schema")
    if "outputSchema" not in out and isinstance(out.get("output_schema"), dict):
        out["outputSchema"] = out.pop("output_schema")
    if out.get("description") is None:
        out.pop("description", None)
    return fix_strings(out)


def limit_problem(limit: Any) -> str | None:
    """Why an agent's `limit` (search_tools) is refused, None when it is fine: out of range is an
    error the agent reads, never silently changed to another number."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        return f"limit must be an integer from 1 to {MAX_LIMIT}"
    return None


def _whole(tool: Any) -> str:
    """A tool's whole definition as one string: every field, every schema keyword at any depth.
    Equal definitions may spell differently (key order): that only refreshes a catalog for nothing."""
    if hasattr(tool, "to_mcp_tool"):  # FastMCP's Tool
        tool = tool.to_mcp_tool()
    if hasattr(tool, "model_dump_json"):  # pydantic's own serializer: ~6x faster than model_dump + json
        return str(tool.model_dump_json(by_alias=True, exclude_none=True))
    return json.dumps(tool, sort_keys=True, ensure_ascii=False, default=repr)


def tools_key(tools: Sequence[Any]) -> str:
    """Equal for equal tool lists, whatever their order: when a catalog must be refreshed. Each
    tool counts whole (`default`, `const`, nested schemas, outputSchema, `_meta`): a server whose
    list differs by caller, or a default that changed, must never be answered from another list's
    definitions (#42). Read at every search: 1,000 SDK tools take 5-10 ms on a busy 2-core machine."""
    digests = sorted(hashlib.sha256(_whole(t).encode()).digest() for t in tools)
    return hashlib.sha256(b"".join(digests)).hexdigest()


def cache_key() -> bytes | None:
    """The key this user's caches are sealed with: 32 random bytes in `KEY_FILE` in the user's
    state folder (store/trust.py's; 0600 in 0700), made at first use. None, said once, where it
    cannot be kept there or others could write it: caches are then never believed."""
    folder = state_dir()
    path = folder / KEY_FILE
    try:
        private_dir(folder)
        who = writable_by_others(folder) or writable_by_others(path)
        if who:
            raise OSError(f"{who} may write it")
        if not path.exists():
            tmp = folder / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                os.write(fd, secrets.token_hex(32).encode())
                os.fsync(fd)
                os.close(fd)
                with contextlib.suppress(FileExistsError):  # a concurrent first use made it: one key
                    os.link(tmp, path)  # whole or not at all
            finally:
                tmp.unlink(missing_ok=True)
        with open_regular(path, "rb") as f:
            text = f.read(65).decode("ascii", "replace")
        if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
            raise OSError("it does not hold a key toolidx wrote")
        return bytes.fromhex(text)
    except OSError as e:
        warn_once(
            "catalog-cache-key",
            f"{path}: cannot keep the key vector caches are sealed with ({e}): every cache file is "
            f"embedded again at each start; set TOOLIDX_STATE_DIR to a folder of yours",
        )
        return None


def _cache_problem(db: Reader, key: bytes | None) -> str | None:
    """Why the cache file `db` may not be believed (None: it holds what a catalog of this user's
    wrote and sealed, unchanged since). A file with tools that no catalog wrote (an index `crawl`
    made) is refused, not discarded: it may be the user's own."""
    if db.get_meta(SOURCE_KEY) is None:
        if db.retrieval.tool_count():
            raise UsageError(
                f"{db.path} is an index of crawled servers, not a catalog's cache",
                fix="pass cache= a file of its own (made if missing)",
            )
        return None  # new or empty: nothing in it to believe
    stored = db.get_meta(SEAL)
    if key is None:
        return "no key to check it with"
    if not stored:
        return "it carries no seal (written by an older toolidx, or not by toolidx)"
    if not hmac.compare_digest(stored, content_digest(db, key, [SEAL])):
        return "it changed since it was written, or another user or machine wrote it"
    return None


def _open_cache(path: str, key: bytes | None) -> Reader:
    """The cache file at `path`, checked against its seal; one that fails is discarded (removed and
    made anew, its tools embedded again) and the reason said once: its vectors, definitions or
    keyword index could otherwise rank `drop_database` first for "create a backup" (#42)."""
    db = open_db(path, create=True)
    try:
        problem = _cache_problem(db, key)
    except BaseException:
        db.close()
        raise
    if problem is None:
        return db
    db.close()
    warn_once(f"catalog-cache:{path}", f"{path}: vector cache not used, {problem}: its tools are embedded again")
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(path + suffix).unlink(missing_ok=True)
    return open_db(path, create=True)


def _embedder(model: str | None, model_path: str | None, indexed: str | None = None) -> Embedder | None:
    choice = resolve_model(model, model_path, indexed=indexed)
    emb = load_embedder(choice, threads=QUERY_THREADS)
    if emb is None and choice.explicit:
        raise ModelError(f"the embedding model {choice.name!r} cannot be loaded", fix="check model_path")
    return emb


class Catalog:
    """The tools of one index, to search and describe. Make one with `Catalog.open` (an index file)
    or `Catalog.from_tools` (tool definitions, in memory or in a cache file). Thread-safe."""

    def __init__(
        self, db: Reader, embedder: Embedder | None, *, server: str | None = None, seal_key: bytes | None = None
    ):
        self.db = db
        self._seal_key = seal_key  # a cache file: sealed after each write
        self.embedder = embedder
        self.server = server  # the server part of ids when built from tools
        self.skipped: list[dict[str, Any]] = []  # [{"name", "reason"}]: tools left out at the last build
        self.embedded = 0  # tools embedded at the last build or update (0: every vector was cached)
        self._lock = threading.Lock()

    # --- making one --------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, *, model: str | None = None, model_path: str | None = None) -> Catalog:
        """The index at `path` (what `toolidx crawl` wrote), read-only, with the model it was
        embedded with (or `model` / `model_path`). Raises DatabaseError for a missing or foreign file."""
        db = open_db(path, readonly=True)
        if model or model_path:
            emb = _embedder(model, model_path, db.get_meta("embed_model"))
        else:
            emb = get_query_embedder(db)
        return cls(db, emb)

    @classmethod
    def from_tools(
        cls,
        tools: Iterable[Any],
        *,
        server: str = DEFAULT_SERVER,
        cache: str | Path | None = None,
        model: str | None = None,
        model_path: str | None = None,
        embedder: Embedder | None = None,
    ) -> Catalog:
        """A catalog of `tools` (dicts in `tools/list` shape, mcp or FastMCP `Tool`s) under the
        server name `server` (ids `server/tool`). In memory, or in the file `cache` (made if
        missing; one file per catalog): there the vectors are kept by tool text, so the next start
        with the same tools embeds nothing; a file whose seal does not match is discarded, said
        once in the log (`_open_cache`). The model: `embedder`, else `model` / `model_path`,
        else the usual order (TOOLIDX_MODEL_PATH, toolidx's own). Invalid tools are left out and
        listed in `skipped`."""
        problem = server_name_problem(server)
        if problem:
            raise UsageError(problem, fix="pass server= a name without '/'")
        key = None
        if cache is None:
            db = open_db(":memory:", create=True)
        else:
            key = cache_key()
            db = _open_cache(str(Path(cache).expanduser()), key)
        emb = embedder if embedder is not None else _embedder(model, model_path, db.get_meta("embed_model"))
        catalog = cls(db, emb, server=server, seal_key=key)
        catalog.update(tools)
        return catalog

    def update(self, tools: Iterable[Any]) -> int:
        """Make the catalog hold exactly `tools` (a catalog built from tools): changed and new tools
        are embedded, removed ones dropped. Returns how many tools were embedded."""
        if self.server is None:
            raise UsageError("this catalog was opened from an index file", fix="crawl the index again instead")
        tools = list(tools)
        # what the file holds already, written from these very tools with this model: a restart
        # of an unchanged server reads its cache and writes nothing
        key = f"{self.server}:{self.embedder.model if self.embedder else None}:{tools_key(tools)}"
        with self._lock:
            if self.db.get_meta(SOURCE_KEY) == key:
                self.skipped, self.embedded = json.loads(self.db.get_meta(SOURCE_SKIPPED) or "[]"), 0
                return 0
        spec = ServerSpec(name=self.server, transport="tools_file")
        res = ServerResult(spec, "ok", now_iso(), server_name=self.server)
        seen: set[str] = set()
        skipped: list[dict[str, Any]] = []
        for raw in tools:
            t = tool_dict(raw)
            reason = validate_tool(t) or ("duplicate name" if t["name"] in seen else None)
            if reason:
                skipped.append({"name": t.get("name"), "reason": reason})
                continue
            seen.add(t["name"])
            res.tools.append(t)
        with self._lock:
            summary = store_crawl(self.db, [res], embedder=self.embedder, config_path=None, prune=True, vouch=False)
            with self.db.transaction():
                self.db.set_meta(SOURCE_KEY, key)
                self.db.set_meta(SOURCE_SKIPPED, json.dumps(skipped))
                if self._seal_key is not None:  # what this write left, whole, under this user's key
                    self.db.set_meta(SEAL, content_digest(self.db, self._seal_key, [SEAL]))
            self.skipped, self.embedded = skipped, summary.embedded
        return summary.embedded

    def warm(self) -> None:
        """Load now what the first search would (postings, vectors, the model's buffers)."""
        with self._lock:
            warm(self.db, self.embedder)

    # --- reading it ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.db.retrieval.filtered_count(None)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        min_score: float | None = None,
        mode: str = "hybrid",
        filters: Filters | None = None,
        servers: Sequence[str] = (),
        tags: Sequence[str] = (),
        exclude_tags: Sequence[str] = (),
        categories: Sequence[str] = (),
        name_pattern: str | None = None,
        description_contains: str | None = None,
        read_only: bool = False,
        no_destructive: bool = False,
        spelling: Spelling = PYTHON,
    ) -> SearchResult:
        """`toolidx search`: the tools that serve `query`, best first, each with a calibrated score
        in [0, 1] and why it matched; `no_match` (and no hits) when none is good enough.
        `min_score` replaces that threshold (0: the best tools whatever their score). The keyword
        filters are the CLI's options; `filters` a whole `Filters` (they are combined). `spelling`:
        what the notes tell the reader to do (keyword arguments; AGENT: an agent's own words)."""
        f = filters_of(
            {
                "servers": list(servers),
                "tags": list(tags),
                "exclude_tags": list(exclude_tags),
                "categories": list(categories),
                "name_pattern": name_pattern,
                "description_contains": description_contains,
                "read_only": read_only,
                "no_destructive": no_destructive,
            },
            CLI,  # a bad name_pattern is named `--name-pattern`, as it always was here
        )
        if filters is not None:  # both: the keyword filters inside `filters`
            f = filters if f.is_empty() else f.narrowed_by(filters)
        req = SearchRequest(query, mode, limit, min_score, f).check(cut_long=True)
        with self._lock:
            return search(self.db, req, embedder=self.embedder, spelling=spelling)

    def describe(self, tool: str, detail: str = "summary") -> Description:
        """`toolidx describe`: one tool (its id, or its bare name) at `detail` (summary | schema |
        full: the schemas and an example of valid arguments)."""
        with self._lock:
            return describe(self.db, tool, detail)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LiveCatalog:
    """A catalog that follows a server's changing tool list: `current(tools)` returns the catalog
    of exactly these tools, refreshed (changed tools embedded) only when the list changed. What the
    FastMCP transform and the SDK helper search."""

    def __init__(
        self,
        *,
        server: str = DEFAULT_SERVER,
        cache: str | Path | None = None,
        model: str | None = None,
        model_path: str | None = None,
    ):
        self._args = {"server": server, "cache": cache, "model": model, "model_path": model_path}
        self.catalog: Catalog | None = None  # built at the first `current`
        self._key: str | None = None
        self._lock = threading.Lock()
        self._loading: threading.Thread | None = None
        self._loaded: tuple[Embedder | None, BaseException | None] | None = None

    def preload(self) -> None:
        """Start loading the model in a background thread, so that the first `current` (a
        server's first search) finds it loaded: what the server integrations do when they are made,
        while the server starts and its client connects (0.6-1 s on a busy 2-core machine)."""
        if self._loading is None and self.catalog is None:
            self._loading = threading.Thread(target=self._load, name="toolidx-model", daemon=True)
            self._loading.start()

    def _load(self) -> None:
        try:
            cache = self._args["cache"]
            indexed = None
            if cache is not None and Path(str(cache)).expanduser().is_file():  # the model the cache was embedded with
                db = open_db(Path(str(cache)).expanduser(), readonly=True)
                try:  # believed only when sealed: a file's model name could make this load (or fetch) another
                    if _cache_problem(db, cache_key()) is None:
                        indexed = db.get_meta("embed_model")
                finally:
                    db.close()
            self._loaded = (_embedder(self._args["model"], self._args["model_path"], indexed), None)  # type: ignore[arg-type]
        except BaseException as e:  # raised by the first `current`, as a load there would
            self._loaded = (None, e)

    def current(self, tools: Sequence[Any]) -> Catalog:
        with self._lock:
            return self._refresh(tools)

    def using(self, tools: Sequence[Any], read: Callable[[Catalog], T]) -> T:
        """`read(catalog)` of exactly `tools`, no other list's refresh in between: where the list
        differs by caller (per-user tools), another caller's search would otherwise replace the
        catalog between this caller's refresh and its read, and answer with that caller's tools."""
        with self._lock:
            return read(self._refresh(tools))

    def _refresh(self, tools: Sequence[Any]) -> Catalog:
        key = tools_key(tools)
        if self.catalog is None:
            embedder = None
            if self._loading is not None:
                self._loading.join()
                embedder, error = self._loaded or (None, None)
                if error is not None:
                    raise error
            self.catalog = Catalog.from_tools(tools, embedder=embedder, **self._args)  # type: ignore[arg-type]
            self.catalog.warm()
        elif key != self._key:
            self.catalog.update(tools)
        self._key = key
        return self.catalog


def agent_answer(catalog: Catalog, tools: Sequence[Any], query: str, limit: int, min_score: float | None) -> dict:
    """`search_tools`' answer to an agent over MCP: the best of `tools` (the server's live
    definitions, as `tools/list` has them) each with its score and why it matched, `no_match`, and
    the notes in words an agent can act on."""
    by_name = {t.name if hasattr(t, "name") else t["name"]: t for t in tools}
    res = catalog.search(query, limit=limit, min_score=min_score, spelling=AGENT)
    found = [{**tool_dict(by_name[h.name]), "score": h.score, "why": h.why} for h in res.hits if h.name in by_name]
    out: dict[str, Any] = {"tools": found, "no_match": res.no_match}
    if res.notes:
        out["notes"] = list(res.notes)
    return out
