"""Errors a user can act on. The CLI turns each into one line and an exit code (see README)."""

from __future__ import annotations

import sys

# Python 3.10 has no BaseExceptionGroup; anyio depends on the backport there.
if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup as BaseExceptionGroup
else:  # pragma: no cover - Python 3.10
    from exceptiongroup import BaseExceptionGroup as BaseExceptionGroup

# Exit codes, documented in the README.
EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran but found a failure (a server failed, a gate matched)
EXIT_USAGE = 2  # bad arguments, bad config, unusable database: nothing was changed


class ToolidxError(Exception):
    """A problem with a clear cause and a fix. `str()` is the one line shown to the user."""

    exit_code = EXIT_USAGE

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None):
        self.what, self.where, self.fix = what, where, fix
        super().__init__(self.line())

    def line(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(self.fix)
        return " — ".join(parts)

    def to_json(self) -> dict:
        return {"error": type(self).__name__, "message": self.what, "where": self.where, "fix": self.fix}


class ConfigError(ToolidxError):
    """The config file cannot be used (syntax, unknown key value, missing command/url, duplicates)."""


class DatabaseError(ToolidxError):
    """The index file is missing, foreign, corrupt, or from a newer toolidx."""


class NotFoundError(ToolidxError):
    """A tool, server or crawl named by the user does not exist (message carries suggestions)."""


class UsageError(ToolidxError):
    """Arguments that cannot work together, an invalid regex, and the like."""


class ModelError(ToolidxError):
    """The embedding model was asked for explicitly and cannot be loaded."""
