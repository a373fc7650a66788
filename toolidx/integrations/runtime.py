"""The small runtime the modules of `toolidx export --format python` import: a client bound to an
index and a scope that runs one tool through serve's execute path (scope, argument validation
against the stored schema, timeout; the backend started from the crawl config).

    from toolidx.integrations.runtime import Client
    notes = Client("tools.db", scope={"servers": ["notes"]})
    notes.call("notes/add_note", {"title": "a", "text": "b"})   # structuredContent, else the text
"""

from __future__ import annotations

import atexit
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

from ..core.filters import Filters
from .common import DEFAULT_TIMEOUT_S, Executor, ToolCatalog, result_text


class ToolError(RuntimeError):
    """The tool answered isError, or toolidx refused the call (unknown tool, out of scope, invalid
    arguments, backend unavailable). `result` is the whole CallToolResult."""

    def __init__(self, tool_id: str, result: dict):
        self.tool_id, self.result = tool_id, result
        text = " ".join(result_text(result).split())
        super().__init__(f"{tool_id}: {text[:2000] or 'the tool failed'}")


def unwrap(tool_id: str, result: dict, structured: bool = False) -> Any:
    """structuredContent when the tool sent some, else its text blocks joined; ToolError on isError,
    and when `structured` (the tool declares an output schema, so the caller expects its object)
    and no structuredContent came."""
    if result.get("isError"):
        raise ToolError(tool_id, result)
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    if structured:
        note = {"type": "text", "text": "the tool declares an output schema but sent no structuredContent"}
        raise ToolError(tool_id, {**result, "isError": True, "content": [note, *(result.get("content") or [])]})
    return result_text(result)


class Client:
    """Tools of one index inside a scope (a Filters or its dict form). The servers are started on
    first use and kept for later calls (an event loop in a background thread) until `close()`
    (also run at exit, or by `with Client(...) as c:`)."""

    def __init__(
        self, db_path: str | Path, *, scope: Filters | dict | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
    ):
        if isinstance(scope, dict):
            scope = Filters(**scope)
        self.catalog = ToolCatalog(db_path, scope=scope, embedder=None)
        self.timeout_s = timeout_s
        self._stack: ExitStack | None = None
        self._portal: Any = None
        self._executor: Executor | None = None
        self._lock = threading.Lock()

    def _open(self) -> tuple[Any, Executor]:
        with self._lock:
            if self._executor is None:
                from anyio.from_thread import start_blocking_portal

                stack = ExitStack()
                portal = stack.enter_context(start_blocking_portal())
                self._executor = stack.enter_context(portal.wrap_async_context_manager(self.catalog.executor()))
                self._stack, self._portal = stack, portal
                atexit.register(self.close)
            return self._portal, self._executor

    def call_result(self, tool_id: str, arguments: dict[str, Any]) -> dict:
        """The whole CallToolResult (refusals included, as isError results)."""
        portal, ex = self._open()
        return cast(dict, portal.call(ex.call, tool_id, arguments, self.timeout_s))

    def call(self, tool_id: str, arguments: dict[str, Any], *, structured: bool = False) -> Any:
        return unwrap(tool_id, self.call_result(tool_id, arguments), structured)

    def close(self) -> None:
        """Stop the servers this client started (a later call starts them again)."""
        with self._lock:
            stack, self._stack, self._executor, self._portal = self._stack, None, None, None
        if stack is not None:
            atexit.unregister(self.close)
            stack.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
