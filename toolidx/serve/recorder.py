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
from pathlib import Path
from typing import Any

from ..core.clock import now_iso
from ..core.errors import ToolidxError
from ..core.filters import Filters
from ..core.redact import redact
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


class Usage:
    """serve's usage: `store` is None when metrics are off (`problem` says why). `path` names
    where it is kept: the usage file, or the catalog's URL (without password)."""

    def __init__(
        self,
        index_path: str,
        explicit: str | None = None,
        *,
        record_examples: bool = False,
        scope: Filters | None = None,
    ):
        target = usage_path(index_path, explicit)
        self.path: Path | str = target if isinstance(target, Path) else shown(target)
        self.record_examples = record_examples
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
        self._queue.put((tool_id, server, outcome, duration_ms, now_iso(), example, label))
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

    def _write(self, items: list[tuple]) -> None:
        assert self.store is not None
        self.store.record_calls([(t, sv, o, d, label[:LABEL_CHARS], at) for t, sv, o, d, at, _, label in items])
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
