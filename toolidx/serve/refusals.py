"""Refusals of `--http` (a wrong Host or Origin, too many connections, a console sign-in flood),
each kind logged as one line at most every 10 s: serve/http.py's, serve/limits.py's and the
console's (console/app.py), which needs nothing else of serve/http.py."""

from __future__ import annotations

import logging

log = logging.getLogger("toolidx")


class Refusals:
    """Logs a refusal (wrong Host, too many connections, ...) once per kind per `every` seconds,
    with how many were not logged since: a flood of bad requests costs a few lines, not a log
    line (or a traceback) each."""

    def __init__(self, every: float = 10.0):
        self.every = every
        self._last: dict[str, float] = {}
        self._quiet: dict[str, int] = {}

    def __call__(self, kind: str, text: str) -> None:
        import time

        now = time.monotonic()
        if now - self._last.get(kind, -self.every) < self.every:
            self._quiet[kind] = self._quiet.get(kind, 0) + 1
            return
        more = self._quiet.pop(kind, 0)
        self._last[kind] = now
        log.warning(f"{text}" + (f" (and {more} more like it since the last such line)" if more else ""))


REFUSALS = Refusals()
