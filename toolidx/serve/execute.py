"""One execute path, for serve's `execute_tool` (and its exposed tools) and for the model-API
adapters (toolidx.integrations): resolve the name inside the scope, check the arguments against
the stored schema (and the approval, under quarantine), call the real server on the backend pool
with a timeout, say what happened, and queue it for the usage file.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ..core.errors import BACKEND_UNAVAILABLE, INVALID_ARGUMENTS
from .backends import BackendPool, BackendUnavailable
from .discovery import Discovery, error_answer
from .recorder import Usage

log = logging.getLogger("toolidx")
UNAVAILABLE_FIX = "try again"  # when nothing more specific is known (backends.BackendUnavailable.fix)


@dataclass(frozen=True)
class CallOutcome:
    """What one execute_tool call came to: the answer for the caller and what the usage file keeps."""

    result: dict  # the MCP CallToolResult JSON: the real server's, or toolidx's refusal (isError)
    tool_id: str  # the resolved id; the name as asked when it resolved to nothing
    server: str  # "" when the name resolved to nothing
    outcome: str  # ok | tool_error | invalid_arguments | timeout | backend_failed | refused


async def call_tool(
    disc: Discovery, pool: BackendPool, tool_name: str, arguments: Any, timeout: float, alternative: str | None = None
) -> CallOutcome:
    """One call, start to end. A refusal or a dead server is an answer with isError, never an
    exception; its fix says what to do about what happened, then `alternative`."""
    tool, refusal = disc.prepare_call(tool_name, arguments)
    if tool is None:
        assert refusal is not None  # prepare_call gives one or the other
        known = refusal.payload.get("tool")  # resolved, then refused (quarantine) or invalid
        tid = str(known or tool_name)
        outcome = "invalid_arguments" if refusal.payload.get("code") == INVALID_ARGUMENTS else "refused"
        return CallOutcome(refusal.to_result(), tid, tid.partition("/")[0] if known else "", outcome)
    try:
        result = await pool.call(tool["server"], tool["name"], arguments, timeout)
    except BackendUnavailable as e:
        fix = (e.fix or UNAVAILABLE_FIX) + (f", or {alternative}" if alternative else "")
        return CallOutcome(
            error_answer(BACKEND_UNAVAILABLE, str(e), fix, tool=tool["id"]).to_result(),
            tool["id"],
            tool["server"],
            "timeout" if e.timed_out else "backend_failed",
        )
    return CallOutcome(result, tool["id"], tool["server"], "tool_error" if result.get("isError") else "ok")


async def execute(
    disc: Discovery,
    pool: BackendPool,
    tool_name: str,
    arguments: Any,
    timeout: float,
    *,
    usage: Usage | None,
    alternative: str | None = None,
    session: Any = None,
) -> dict:
    """call_tool, and its outcome queued in the usage file (never delays the answer); a
    successful call in `session` (an MCP session) is linked to the search that showed its tool
    (Usage.ran, search.learned)."""
    started = time.perf_counter()
    done = await call_tool(disc, pool, tool_name, arguments, timeout, alternative)
    if usage is not None:
        usage.record(
            done.tool_id, done.server, done.outcome, (time.perf_counter() - started) * 1000, arguments, disc.scope
        )
        if done.outcome == "ok" and session is not None:
            try:
                tool = disc.tool(done.tool_id)
                usage.ran(session, done.tool_id, tool.get("hash") if tool else None)
            except Exception as e:  # learning never fails a call that ran
                log.debug(f"call not noted for learning: {type(e).__name__}: {e}")
    return done.result
