"""Warnings the library raises for the user (no model, no sqlite-vec), each said once per process.

The library never prints: it logs to the `toolidx` logger; the CLI and serve send that to stderr.
"""

from __future__ import annotations

import logging

log = logging.getLogger("toolidx")
_said: set[str] = set()


def warn_once(key: str, message: str) -> None:
    if key not in _said:
        _said.add(key)
        log.warning(message)


def said_elsewhere(key: str) -> None:
    """Count `key` as said: the caller reports that problem in its own result (doctor)."""
    _said.add(key)


def reset() -> None:
    """For tests: forget what was said."""
    _said.clear()
