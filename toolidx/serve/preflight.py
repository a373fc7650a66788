"""Preflight: is an indexed tool callable right now? Per tool: indexed (the one resolver), in
serve's scope, approved (under --quarantine), and whether its server starts and still lists it with
the definition the index holds. `toolidx check --require` runs it with fresh server processes
(spec from the crawl config, as execute_tool starts them); serve's `describe_tool` with
`check: true` runs it on the session's live backend."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import anyio

from ..core.errors import UsageError
from ..core.filters import Filters
from ..core.servers import stderr_lines
from ..core.tooldoc import definition_hash
from .backends import FIX_CONFIG, BackendUnavailable, SpecSource

# server name -> the tools it lists now (wire JSON); raises BackendUnavailable when it cannot start
Lister = Callable[[str], Awaitable[list[dict]]]


@dataclass
class ToolCheck:
    requested: str
    id: str | None = None
    server: str | None = None
    indexed: bool = False
    in_scope: bool | None = None
    approved: str | None = None  # approved | changed | unapproved; None: quarantine off
    server_started: bool | None = None
    listed: bool | None = None  # the server lists a tool of this name
    hash: str | None = None  # the indexed definition's hash
    definition: str | None = None  # same | changed: what the server lists now against the index
    callable: bool = False
    reason: str | None = None  # why not callable (or what to watch), one line
    suggestions: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def resolve_checks(db: Any, required: list[str], scope: Filters) -> list[ToolCheck]:
    """The part that needs no server: indexed, in scope, approved."""
    from ..catalog.resolve import UnknownToolError, resolve_tool_id
    from ..diff.approved import approval_state, current_hash, server_changes
    from ..store.approvals import approvals
    from ..store.catalog import tool_exists
    from ..store.tools import get_tool

    quarantine = scope.approved_only
    visible = replace(scope, approved_only=False)  # in scope; approval is checked apart
    within = None if visible.is_empty() else visible
    out = []
    for name in required:
        c = ToolCheck(requested=name)
        out.append(c)
        try:
            tid = resolve_tool_id(db, name)
        except UnknownToolError as e:  # unknown or ambiguous: the closest ids say which
            c.reason, c.suggestions = e.what, list(e.suggestions)
            continue
        except UsageError as e:
            c.reason = e.what
            continue
        tool = get_tool(db, tid)
        if tool is None:
            c.reason = "removed from the index meanwhile"
            continue
        c.id, c.server, c.indexed = tid, tool["server"], True
        c.in_scope = tool_exists(db, tid, within)
        if quarantine:
            c.approved = approval_state(tool, approvals(db, [tid]).get(tid), server_changes(db, tool["server"]))
        c.hash = current_hash(tool)  # what the server's definition is compared with, computed
    return out


async def check_live(checks: list[ToolCheck], lister: Lister, *, quarantine: bool) -> None:
    """Start each server once (concurrently), list its tools, and fill in the rest of each check."""
    servers = sorted({c.server for c in checks if c.server})
    listed: dict[str, list[dict] | str] = {}

    async def one(server: str) -> None:
        try:
            listed[server] = await lister(server)
        except BackendUnavailable as e:
            listed[server] = str(e)
        except Exception as e:  # any other oddity of one server is its own failure, not a crash
            listed[server] = f"server {server!r} failed: {type(e).__name__}: {e}"

    async with anyio.create_task_group() as tg:
        for s in servers:
            tg.start_soon(one, s)
    for c in checks:
        if not c.indexed or c.server is None:
            continue
        got = listed[c.server]
        if isinstance(got, str):
            c.server_started, c.reason = False, got
        else:
            c.server_started = True
            name = c.id.split("/", 1)[1] if c.id else ""
            live = next((t for t in got if t.get("name") == name), None)
            c.listed = live is not None
            if live is not None:
                c.definition = "same" if definition_hash(live) == c.hash else "changed"
        c.callable, why = _verdict(c, quarantine)
        c.reason = why or c.reason


def _verdict(c: ToolCheck, quarantine: bool) -> tuple[bool, str | None]:
    if not c.in_scope:
        return False, "outside this server's scope"
    if quarantine and c.approved != "approved":
        return False, (
            "quarantined: no one approved it"
            if c.approved == "unapproved"
            else "quarantined: changed since its approval (toolidx diff --approved)"
        )
    if not c.server_started:
        return False, None  # the server's own reason is already set
    if not c.listed:
        return False, f"server {c.server!r} no longer lists it (re-crawl to update the index)"
    if c.definition == "changed":
        if quarantine:
            return False, "the server now sends a different definition than the approved one (re-crawl, review)"
        return True, "callable, but its definition changed since the crawl: re-crawl so arguments are checked right"
    return True, None


@dataclass
class CheckReport:
    """What `check` returns (`to_json()`: the `check --json` document's body)."""

    db: str
    quarantine: bool
    tools: list[ToolCheck]

    @property
    def callable(self) -> int:
        return sum(1 for c in self.tools if c.callable)

    @property
    def not_callable(self) -> int:
        return len(self.tools) - self.callable

    @property
    def ok(self) -> bool:
        return self.not_callable == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "quarantine": self.quarantine,
            "tools": [c.to_json() for c in self.tools],
            "callable": self.callable,
            "not_callable": self.not_callable,
            "ok": self.ok,
        }


def check(
    db_path: str,
    required: list[str],
    *,
    scope: Filters | None = None,
    config_path: str | None = None,
    trust_index: bool = False,
) -> CheckReport:
    """`toolidx check --require`: each server started afresh from the crawl config (or --config),
    as execute_tool would (the same launch-line trust, backends.SpecSource), and stopped again."""
    from ..crawl.connect import list_server_tools
    from ..store.db import open_db
    from ..store.tools import get_server

    names = [n.strip() for r in required for n in r.split(",") if n.strip()]
    if not names:
        raise UsageError("no tool to check", fix="toolidx check --require SERVER/TOOL [--require ...]")
    scope = scope or Filters()
    db = open_db(db_path)
    try:
        checks = resolve_checks(db, names, scope)
        source = SpecSource(
            server_row=lambda n: get_server(db, n),
            config_path=config_path,
            index_config_path=lambda: db.get_meta("config_path"),
            db_path=db.path,
            trust_index=trust_index,
        )

        async def lister(server: str) -> list[dict]:
            spec, where = source.spec(server)
            if spec.problem:
                raise BackendUnavailable(f"cannot start server {server!r}: {spec.problem}", fix=FIX_CONFIG)
            if spec.transport == "tools_file":
                raise BackendUnavailable(
                    f"server {server!r} is a saved tool list (tools_file), not a live server: its tools cannot be run"
                )
            res = await list_server_tools(spec)
            if not res.ok:
                said = stderr_lines(res.stderr_tail, spec.mask)
                raise BackendUnavailable(
                    f"server {server!r} did not start ({res.error}; spec from {where})"
                    + (f"; last stderr: {' | '.join(said)}" if said else "")
                )
            return res.tools

        anyio.run(lambda: check_live(checks, lister, quarantine=scope.approved_only))
        return CheckReport(db.path, scope.approved_only, checks)
    finally:
        db.close()


async def add_check(answer: Any, disc: Any, pool: Any) -> None:
    """describe_tool's `check`: the same checks for the described tool, on the session's backend
    pool (its server started, or reused, as execute_tool would), added to the answer."""
    tool_id = answer.payload.get("id")
    if not tool_id:
        return
    checks = await anyio.to_thread.run_sync(lambda: resolve_checks(disc.db, [tool_id], disc.scope))

    async def lister(server: str) -> list[dict]:
        conn = await pool.connection(server)
        tools, _ = await conn.list_tools_raw(conn.spec.timeout)
        return tools

    await check_live(checks, lister, quarantine=disc.scope.approved_only)
    c = checks[0]
    answer.payload["check"] = {k: v for k, v in c.to_json().items() if k not in ("requested", "suggestions")}
    answer.text += (
        f"\nCheck: {'callable' if c.callable else 'NOT callable'}" + (f" ({c.reason})" if c.reason else "") + "."
    )
