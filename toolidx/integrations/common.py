"""What both API adapters share: the tools in scope of one index with API-safe names and a stable
map back to toolidx ids, toolidx's ranking over them, and serve's execute path to run one.

    catalog = ToolCatalog("tools.db", scope=Filters(servers=["github"]))
    hits = catalog.search("open a pull request", limit=5)     # ranked tool ids, scope applied
    result = catalog.call_sync("github/create_pull_request", {...})   # MCP CallToolResult JSON
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.embedding import INDEX_MODEL, Embedder, QueryEmbedder
from ..core.errors import UsageError
from ..core.filters import Filters
from ..serve.backends import BackendPool, SpecSource
from ..serve.discovery import Discovery
from ..serve.execute import execute
from ..serve.recorder import Usage
from ..store.tools import get_server

MAX_TOOLS = 10_000  # both APIs: at most 10,000 tools in one request
DEFAULT_TIMEOUT_S = 30.0


def field(obj: Any, key: str, default: Any = None) -> Any:
    """`obj[key]` for a dict, `obj.key` for an SDK object (the adapters take either)."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


@dataclass
class Found:
    """A ranking: tool ids best first (within the scope), and whether toolidx judged that nothing
    fits (then `ids` is empty)."""

    query: str
    ids: list[str]
    no_match: bool


class ToolCatalog:
    """The tools of one index inside a scope, named for the model APIs.

    `names[id]` is the API-safe name (`^[a-zA-Z0-9_-]{1,64}$`: `server__tool`, with a short hash
    when it had to be cut or collides), `ids[name]` maps it back; both are stable for a given set
    of tools (derived from the ids, in id order). Raises UsageError beyond `max_tools`.

    Calls are recorded in the index's usage file as serve records them (`toolidx list --sort calls`,
    `describe --metrics`, `stats`): `usage_db` picks the file, `record_usage=False` turns it off.
    `config_path` and `trust_index` are serve's --config and --trust-index: where servers are started
    from, and whether the index's own launch lines run though no crawl on this machine wrote them."""

    def __init__(
        self,
        db_path: str | Path,
        *,
        scope: Filters | None = None,
        config_path: str | None = None,
        embedder: QueryEmbedder = INDEX_MODEL,
        max_tools: int = MAX_TOOLS,
        usage_db: str | None = None,
        record_usage: bool = True,
        trust_index: bool = False,
    ):
        self.discovery = Discovery(str(db_path), scope=scope, config_path=config_path)
        self.db = self.discovery.db
        self.scope = self.discovery.scope
        self.config_path = config_path
        self.trust_index = trust_index  # run the index's launch lines though no crawl here wrote them
        tool_ids = sorted(self.discovery.scope_ids())
        if len(tool_ids) > max_tools:
            raise UsageError(
                f"{len(tool_ids)} tools in scope: the model APIs take at most {max_tools} in one request",
                fix="narrow the scope (servers, tags, categories, read-only)",
            )
        self.names: dict[str, str] = self.discovery.api_names(tool_ids)
        self.ids: dict[str, str] = {n: i for i, n in self.names.items()}
        self._embedder = embedder
        self._usage_db, self._record_usage = usage_db, record_usage
        self._usage: Usage | None = None

    @property
    def usage(self) -> Usage | None:
        """The usage file calls are recorded in, opened at the first call (None: not recorded)."""
        if self._record_usage and self._usage is None:
            self._usage = Usage(self.discovery.db_path, self._usage_db, scope=self.scope)
        return self._usage

    def __len__(self) -> int:
        return len(self.names)

    def tool(self, tool_id: str) -> dict:
        t = self.discovery.tool(tool_id)
        if t is None:
            raise UsageError(f"no tool {tool_id!r} in the index")
        return t

    def resolve(self, name: str) -> str:
        """A toolidx id from an API name or an id (raises UsageError for neither)."""
        if name in self.ids:
            return self.ids[name]
        if name in self.names:
            return name
        raise UsageError(f"no tool named {name!r} in this catalog")

    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is INDEX_MODEL:
            from ..search.hybrid import get_query_embedder

            self._embedder = get_query_embedder(self.db)
        return self._embedder

    def search(self, query: str, limit: int = 5, min_score: float | None = None) -> Found:
        """toolidx's hybrid ranking (calibrated "no good match" included), scope applied."""
        from ..search.hybrid import search
        from ..search.request import SearchRequest

        req = SearchRequest(query, "hybrid", limit, min_score, self.scope).check(cut_long=True)
        res = search(self.db, req, embedder=self.embedder)
        hits = [h for h in res.hits if h.id in self.names]
        return Found(query, [h.id for h in hits], res.no_match)

    def input_schema(self, tool_id: str) -> dict:
        schema = self.tool(tool_id).get("input_schema")
        return schema if isinstance(schema, dict) and schema else {"type": "object", "properties": {}}

    def description(self, tool_id: str) -> str:
        t = self.tool(tool_id)
        text = t.get("description") or t.get("title") or t["name"]
        return f"[{t['server']}] {text}"

    # --- running a tool -----------------------------------------------------------------------
    def _source(self) -> SpecSource:
        return SpecSource(
            server_row=lambda name: get_server(self.db, name),
            config_path=self.config_path,
            index_config_path=lambda: self.db.get_meta("config_path"),
            db_path=self.discovery.db_path,
            trust_index=self.trust_index,
        )

    @asynccontextmanager
    async def executor(self) -> AsyncIterator[Executor]:
        """Backend connections kept open for several calls:
        `async with catalog.executor() as run: await run.call(id, args)`."""
        try:
            async with BackendPool(self._source()) as pool:
                yield Executor(self, pool)
        finally:
            if self._usage is not None:  # what was queued is written before the caller goes on
                import anyio

                await anyio.to_thread.run_sync(self._usage.flush)

    def call_sync(self, tool: str, arguments: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
        """One call on a fresh connection (started and closed here): the MCP CallToolResult JSON,
        or toolidx's refusal (unknown, out of scope, invalid arguments) with isError true."""
        import anyio

        async def run() -> dict:
            async with self.executor() as ex:
                return await ex.call(tool, arguments, timeout_s)

        return anyio.run(run)


class Executor:
    """serve's execute path (toolidx.serve.execute) without MCP in front: scope and name check,
    argument validation against the stored schema, the real call with a timeout, its outcome in
    the usage file."""

    def __init__(self, catalog: ToolCatalog, pool: BackendPool):
        self.catalog, self.pool = catalog, pool

    async def call(self, tool: str, arguments: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
        return await execute(
            self.catalog.discovery,
            self.pool,
            self.catalog.ids.get(tool, tool),
            arguments,
            timeout_s,
            usage=self.catalog.usage,
        )


def result_text(result: dict) -> str:
    """A CallToolResult as one text for APIs that take a string: the text blocks, else the
    structured content as JSON, else every block as JSON."""
    texts = [c.get("text", "") for c in result.get("content") or [] if c.get("type") == "text"]
    if texts:
        return "\n".join(texts)
    if result.get("structuredContent") is not None:
        return json.dumps(result["structuredContent"], ensure_ascii=False)
    return json.dumps(result.get("content") or [], ensure_ascii=False)
