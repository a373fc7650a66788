"""Errors a user can act on. The CLI turns each into one line and an exit code (see README)."""

from __future__ import annotations

import sys
from typing import Any

# Python 3.10 has no BaseExceptionGroup; anyio depends on the backport there.
if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup as BaseExceptionGroup
else:  # pragma: no cover - Python 3.10
    from exceptiongroup import BaseExceptionGroup as BaseExceptionGroup

# Exit codes, documented in the README.
EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran but found a failure (a server failed, a gate matched)
EXIT_USAGE = 2  # bad arguments, bad config, unusable database: nothing was changed


# The error codes an agent or a script reads: serve's error answers carry one as "error" and
# "code", the CLI's and /v1/search's JSON errors as "code" (their "error" keeps the exception's
# class name, as before the codes). One vocabulary, defined here only.
USAGE_ERROR = "usage_error"  # bad arguments: fix the call
CONFIG_ERROR = "config_error"
INDEX_ERROR = "index_error"  # the index file is missing, foreign, corrupt or newer
NOT_FOUND = "not_found"  # a server or crawl named by the caller does not exist
MODEL_ERROR = "model_error"
UNKNOWN_TOOL = "unknown_tool"
AMBIGUOUS_TOOL = "ambiguous_tool"  # a bare name several servers have
OUT_OF_SCOPE = "out_of_scope"  # the tool exists, outside what the caller may use
NOT_APPROVED = "not_approved"  # serve --quarantine: no one approved the tool
CHANGED_SINCE_APPROVAL = "changed_since_approval"  # serve --quarantine: the definition changed
INVALID_ARGUMENTS = "invalid_arguments"  # arguments that do not fit the input schema
BACKEND_UNAVAILABLE = "backend_unavailable"  # the tool's server could not be started or reached
INTERNAL_ERROR = "internal_error"  # a bug: the message says where


class ToolidxError(Exception):
    """A problem with a clear cause and a fix. `str()` is the one line shown to the user; `code`
    names the kind of problem for programs (the vocabulary above)."""

    exit_code = EXIT_USAGE
    code = USAGE_ERROR

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None):
        self.what, self.where, self.fix = what, where, fix
        super().__init__(self.line())

    def line(self) -> str:
        parts = [f"{self.where}: {self.what}" if self.where else self.what]
        if self.fix:
            parts.append(self.fix)
        return " — ".join(parts)

    def to_json(self) -> dict:
        return {
            "error": type(self).__name__,
            "code": self.code,
            "message": self.what,
            "where": self.where,
            "fix": self.fix,
        }


class ConfigError(ToolidxError):
    """The config file cannot be used (syntax, unknown key value, missing command/url, duplicates)."""

    code = CONFIG_ERROR


class DatabaseError(ToolidxError):
    """The index file is missing, foreign, corrupt, or from a newer toolidx."""

    code = INDEX_ERROR


class NotFoundError(ToolidxError):
    """A tool, server or crawl named by the user does not exist (message carries suggestions)."""

    code = NOT_FOUND


class UsageError(ToolidxError):
    """Arguments that cannot work together, an invalid regex, and the like."""


class ModelError(ToolidxError):
    """The embedding model was asked for explicitly and cannot be loaded."""

    code = MODEL_ERROR


def check_servers(
    asked: list[str] | None,
    known: Any,
    *,
    within: str = "in the index",
    where: str | None = None,
    fix: str | None = None,
    error: type[ToolidxError] = NotFoundError,
) -> None:
    """The one "no server named ..." check: `error` naming every server of `asked` not in `known`
    (`within`: where it was looked for), with the known names (the first 20) as the fix."""
    missing = [s for s in asked or [] if s not in known]
    if not missing:
        return
    names = sorted(known)
    if fix is None:
        fix = f"known: {', '.join(names[:20])}" if names else "no servers here (crawl first)"
    what = f"no server named {', '.join(map(repr, missing))}"
    raise error(f"{what} {within}" if within else what, where=where, fix=fix)
