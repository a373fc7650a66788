"""What serve records about `execute_tool` calls, off the request path: a call's outcome is put on
a queue and one writer thread writes what gathered in BATCH_S to the usage store (store/usage.py:
the usage file, or a catalog in PostgreSQL's own tables, shared by every replica) in one short
transaction of its own, on a connection of its own. Usage that cannot be opened (a corrupt,
foreign or unwritable file; a catalog that refuses the connection) turns metrics off with one
warning; a write that fails is logged; neither ever fails a call or blocks a search.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.clock import now_iso
from ..core.errors import ToolidxError
from ..core.filters import Filters
from ..core.redact import redact
from ..search import learned
from ..store.usage import UsageStore, open_usage, shown, usage_path

log = logging.getLogger("toolidx")

BATCH_S = 0.25  # the writer gathers calls this long before writing them together


LABEL_CHARS = 200  # a call row's scope text is cut to this; an example's key never is


def scope_label(scope: Filters | None) -> str:
    """The text of a scope ('' = everything), whole: it keys recorded examples, and two scopes
    that only differ past a cut would see each other's callers' arguments."""
    if scope is None:
        return ""
    s = scope.to_json()
    s.pop("include_stale", None)
    return "; ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in sorted(s.items()))


def token_of(grant: Any) -> str:
    """Whose pairs a request records and reads (search.learned): its token's label (access.Grant),
    '' over stdio or without tokens."""
    from .access import ANONYMOUS

    return "" if grant is None or grant is ANONYMOUS else str(getattr(grant, "label", ""))


SEARCHES_KEPT = 8  # a session's searches a call is matched to: the newest that showed the tool


@dataclass
class _Search:
    request: str  # masked (learned.mask)
    vector: bytes  # the masked request's embedding
    model: str
    shown: frozenset[str]
    token: str


@dataclass
class _Session:
    """What one MCP session searched lately, and which (tool, request) it already taught."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    searches: deque = field(default_factory=lambda: deque(maxlen=SEARCHES_KEPT))
    taught: set = field(default_factory=set)


@dataclass(frozen=True)
class _Pair:
    row: tuple  # store.usage.UsageStore.record_pairs' row


class Usage:
    """serve's usage: `store` is None when metrics are off (`problem` says why). `path` names
    where it is kept: the usage file, or the catalog's URL (without password). `learn`: link each
    successful call to the search that showed its tool in the same session (search.learned), and
    let searches read what was learned; off with `serve --no-learn` or TOOLIDX_NO_LEARN."""

    def __init__(
        self,
        index_path: str,
        explicit: str | None = None,
        *,
        record_examples: bool = False,
        scope: Filters | None = None,
        learn: bool = True,
    ):
        target = usage_path(index_path, explicit)
        self.path: Path | str = target if isinstance(target, Path) else shown(target)
        self.record_examples = record_examples
        self.learn = learn and not learned.off()
        self._sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
        self._sessions_lock = threading.Lock()
        self._pairs_queued = False
        self.scope = scope_label(scope)
        self.store: UsageStore | None = None
        self.problem: str | None = None
        try:
            self.store = open_usage(target, create=True)
        except ToolidxError as e:
            self.problem = str(e)
            log.warning(f"usage metrics off, serving without them: {e}")
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._failed = False

    def record(
        self,
        tool_id: str,
        server: str,
        outcome: str,
        duration_ms: float,
        arguments: Any = None,
        scope: Filters | None = None,
    ) -> None:
        """Queue one call (never raises, never waits). `scope`: the one the call ran in, when
        narrower than serve's (an HTTP token's)."""
        if self.store is None:
            return
        example = arguments if (self.record_examples and outcome == "ok" and isinstance(arguments, dict)) else None
        label = self.scope if scope is None else scope_label(scope)
        self._put((tool_id, server, outcome, duration_ms, now_iso(), example, label))

    # --- learning (search.learned) ------------------------------------------------------------
    def source(self) -> learned.Source | None:
        """Where this serve's searches read what was learned, for the caller under way
        (learned.CALLER); None when learning is off."""
        if not self.learn or self.store is None:
            return None
        if self._pairs_queued:  # a call just taught something: the next search reads it (in a worker thread)
            self.flush(2.0)
        return learned.Source(self.store, learned.CALLER.get())

    def _session(self, session: Any) -> _Session:
        with self._sessions_lock:
            got = self._sessions.get(session)
            if got is None:
                got = self._sessions[session] = _Session()
            return got

    def saw_search(
        self, session: Any, token: str, query: str, shown: list[str], embedder: Any, model: str | None
    ) -> None:
        """Remember that `session` searched `query` and was shown `shown` (call in a worker
        thread: it may embed the masked request)."""
        if not self.learn or self.store is None or session is None or not shown or embedder is None or not model:
            return
        try:
            text = learned.request_text(query)
            masked = learned.mask(text)
            if not masked.strip():
                return
            from ..search.query_vector import embed_query

            vector = embed_query(embedder, masked)  # the search's own when nothing was masked
        except Exception as e:  # learning never fails a search
            log.debug(f"search not noted for learning: {type(e).__name__}: {e}")
            return
        self._session(session).searches.append(_Search(masked, vector, model, frozenset(shown), token))

    def ran(self, session: Any, tool_id: str, tool_hash: str | None) -> None:
        """A successful call of `tool_id` in `session`: queued as a pair with the newest search of
        that session that showed it; a session's repeat counts once."""
        if not self.learn or self.store is None or session is None or not tool_hash:
            return
        s = self._session(session)
        search = next((x for x in reversed(s.searches) if tool_id in x.shown), None)
        if search is None or (tool_id, search.request) in s.taught:
            return
        s.taught.add((tool_id, search.request))
        self._pairs_queued = True
        row = (tool_id, tool_hash, search.request, search.model, search.vector, search.token, s.id, now_iso())
        self._put(_Pair(row))

    def _put(self, item: Any) -> None:
        self._queue.put(item)
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._write_loop, name="toolidx-usage", daemon=True)
                    self._thread.start()

    def _write_loop(self) -> None:
        while True:
            items = [self._queue.get()]
            # gather what arrives meanwhile and write it in one go: a write per call would wake
            # this thread during the next request and make it wait for the GIL
            time.sleep(BATCH_S)
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._write(items)
            except Exception as e:  # a full disk, a file deleted under us, the database gone: log, keep serving
                if not self._failed:
                    log.warning(f"usage not recorded ({self.path}): {type(e).__name__}: {e}")
                    self._failed = True
                else:
                    log.debug(f"usage not recorded: {e}")
            finally:
                for _ in items:
                    self._queue.task_done()

    def _write(self, items: list[Any]) -> None:
        assert self.store is not None
        pairs = [i.row for i in items if isinstance(i, _Pair)]
        self._pairs_queued = False  # before the write: a pair queued meanwhile sets it again
        items = [i for i in items if not isinstance(i, _Pair)]
        if items:
            self.store.record_calls([(t, sv, o, d, label[:LABEL_CHARS], at) for t, sv, o, d, at, _, label in items])
        if pairs:
            self.store.record_pairs(pairs)
        for tool_id, _, _, _, _, example, label in items:
            if example is not None:
                clean, _ = redact(example)
                self.store.add_example(tool_id, clean, label)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued call is written (tests, shutdown). True if it was."""
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    def close(self) -> None:
        self.flush(2.0)
        if self.store is not None:
            self.store.close()
