"""The usage file: what `toolidx serve` saw when it ran tools (one row per `execute_tool`) and the
example arguments it recorded. A SQLite file of its own beside the index, never inside it:

- a crawl rewrites the index's tools, never this file, so usage survives re-crawls;
- a published index may be a read-only file in a read-only folder, and usage must still be kept;
- writing here never takes the index's write lock, so it cannot block a search or a crawl.

Where it lives (`usage_path`): `--usage-db` / `TOOLIDX_USAGE_DB`, else `<index>.usage.db` when
that can be written, else `$XDG_STATE_HOME/toolidx/usage/<hash of the index path>.db`.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.clock import now_iso
from ..core.errors import DatabaseError, UsageError
from ..core.files import not_regular
from .sqlitefile import FileKind, SqliteFile, check_header, open_file

USAGE_ENV = "TOOLIDX_USAGE_DB"
USAGE_APP_ID = 0x54495553  # "TIUS"
OUTCOMES = ("ok", "tool_error", "invalid_arguments", "timeout", "backend_failed", "refused")
MAX_EXAMPLES_PER_TOOL = 5
_FIX = f"move it away (a new one is then started), or choose another with --usage-db / {USAGE_ENV}"

# Append only, like store/migrations.py; PRAGMA user_version counts what was applied.
USAGE_MIGRATIONS: list[str] = [
    """
    CREATE TABLE calls (
        id          INTEGER PRIMARY KEY,
        tool_id     TEXT NOT NULL,           -- "server/tool"; the name as asked when refused unresolved
        server      TEXT NOT NULL DEFAULT '',
        at          TEXT NOT NULL,           -- ISO 8601 UTC, when the call started
        duration_ms REAL NOT NULL,
        outcome     TEXT NOT NULL,           -- ok | tool_error | invalid_arguments | timeout | backend_failed | refused
        scope       TEXT NOT NULL DEFAULT '' -- serve's scope, as text ('' = everything)
    );
    CREATE INDEX calls_tool ON calls(tool_id, at);
    CREATE TABLE examples (
        tool_id     TEXT NOT NULL,
        arguments   TEXT NOT NULL,           -- JSON, secrets redacted before they are written
        hash        TEXT NOT NULL,           -- sha256 of the arguments JSON (one row per distinct example)
        at          TEXT NOT NULL,
        PRIMARY KEY (tool_id, hash)
    );
    """,
    # examples are kept per scope: arguments one token's callers sent are never shown to callers
    # of another scope. Rows from before this migration ran in an unknown scope: OLD_SCOPE, which
    # no serve scope equals (only the file's owner, through the CLI, sees them).
    """
    CREATE TABLE examples_scoped (
        tool_id     TEXT NOT NULL,
        scope       TEXT NOT NULL,           -- the whole scope label of the call ('' = everything)
        arguments   TEXT NOT NULL,
        hash        TEXT NOT NULL,
        at          TEXT NOT NULL,
        PRIMARY KEY (tool_id, scope, hash)
    );
    INSERT INTO examples_scoped(tool_id, scope, arguments, hash, at)
        SELECT tool_id, '?', arguments, hash, at FROM examples;
    DROP TABLE examples;
    ALTER TABLE examples_scoped RENAME TO examples;
    """,
]
OLD_SCOPE = "?"  # examples recorded before scopes were kept (see the migration above)

_FOREIGN = "not a toolidx usage file (left untouched)"
USAGE_FILE = FileKind(
    application_id=USAGE_APP_ID,
    migrations=USAGE_MIGRATIONS,
    timeout_s=2,
    # WAL (on by default): no fsync per call row; a crash loses at most the last few
    pragmas=("PRAGMA busy_timeout = 2000", "PRAGMA synchronous = NORMAL"),
    probe="SELECT count(*) FROM calls",  # a damaged table shows up here
    cannot_open="cannot open the usage file: {e}",
    foreign_id=_FOREIGN,
    foreign_tables=_FOREIGN,
    foreign_fix=f"choose another file with --usage-db / {USAGE_ENV}",
    newer="usage file schema v{found} is newer than this toolidx",
    corrupt="corrupt or unreadable usage file ({e}); left untouched",
    corrupt_fix=_FIX,
)
# what doctor reads: an existing file only (an empty one is not a usage file), never written to
_USAGE_FILE_READ = replace(USAGE_FILE, fresh_ok=False, corrupt="corrupt or unreadable usage file ({e})")


def _state_home() -> Path:
    return Path(os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state"))


def _writable(p: Path) -> bool:
    """Can (and may) we write `p`? A file or folder whose mode has no write bit counts as
    read-only even for root: someone marked it so (a published index)."""
    target = p if p.exists() else p.parent
    try:
        st = target.stat()
    except OSError:
        return False
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return False
    if target is p:
        return os.access(p, os.W_OK) and _writable_dir(p.parent)
    return _writable_dir(target)


def _writable_dir(d: Path) -> bool:
    try:
        st = d.stat()
    except OSError:
        return False
    return bool(st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(d, os.W_OK | os.X_OK)


def usage_path(index_path: str | os.PathLike, explicit: str | os.PathLike | None = None) -> Path:
    """Where the usage of the index at `index_path` is kept (see the module docstring). Raises
    UsageError when the file named by --usage-db / TOOLIDX_USAGE_DB is there but is not a regular
    file (a FIFO would block every open, a device never ends): a bad argument, not a usage file
    to warn about and go on without."""
    for given, name in ((explicit, "--usage-db"), (os.environ.get(USAGE_ENV), USAGE_ENV)):
        if given:
            p = Path(given).expanduser()
            kind = not_regular(p)
            if kind:
                raise UsageError(
                    f"{name}: is {kind}, not a regular file",
                    where=str(p),
                    fix=f"name a usage file (a new one is made there) with --usage-db / {USAGE_ENV}",
                )
            return p
    index = Path(index_path).expanduser()
    beside = index.with_name(index.name + ".usage.db")
    if _writable(beside):
        return beside
    h = hashlib.sha256(str(index.resolve()).encode()).hexdigest()[:16]
    return _state_home() / "toolidx" / "usage" / f"{h}.db"


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(-(-q * len(sorted_values) // 1)) - 1))
    return round(sorted_values[k], 1)


class UsageStore(SqliteFile):
    """One usage file. Thread-safe (one connection behind a lock); every write is one short
    transaction of its own."""

    def __init__(self, conn: Any, path: Path, module: Any = None):
        super().__init__(conn, module)
        self.path = path

    # --- writes -------------------------------------------------------------------------------
    def record_call(
        self, tool_id: str, server: str, outcome: str, duration_ms: float, scope: str = "", at: str | None = None
    ) -> None:
        self.record_calls([(tool_id, server, outcome, duration_ms, scope, at or now_iso())])

    def record_calls(self, calls: list[tuple[str, str, str, float, str, str]]) -> None:
        """Several calls (tool_id, server, outcome, duration_ms, scope, at) in one transaction."""
        for c in calls:
            if c[2] not in OUTCOMES:
                raise ValueError(f"unknown outcome {c[2]!r}")
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO calls(tool_id, server, outcome, duration_ms, scope, at) VALUES (?, ?, ?, ?, ?, ?)",
                [(t, sv, o, round(d, 1), sc, at) for t, sv, o, d, sc, at in calls],
            )

    def add_example(self, tool_id: str, arguments: dict, scope: str = "") -> None:
        """Keep `arguments` (already redacted) as an example of `tool_id` seen in `scope` (the
        call's whole scope label): distinct ones only, the newest MAX_EXAMPLES_PER_TOOL per scope."""
        text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        h = hashlib.sha256(text.encode()).hexdigest()
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO examples(tool_id, scope, arguments, hash, at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(tool_id, scope, hash) DO UPDATE SET at = excluded.at",
                (tool_id, scope, text, h, now_iso()),
            )
            conn.execute(
                "DELETE FROM examples WHERE tool_id = ? AND scope = ? AND hash NOT IN (SELECT hash "
                "FROM examples WHERE tool_id = ? AND scope = ? ORDER BY at DESC, rowid DESC LIMIT ?)",
                (tool_id, scope, tool_id, scope, MAX_EXAMPLES_PER_TOOL),
            )

    # --- reads --------------------------------------------------------------------------------
    def tool_metrics(self, tool_ids: Iterable[str] | None = None) -> dict[str, dict]:
        """tool id -> {"calls", "ok", "success_rate", "p50_ms", "p95_ms", "last_used", "outcomes"}
        for tools that were called (all of them, or those in `tool_ids`). A refused call that named
        no tool in scope is no tool's call (see `unresolved_calls`)."""
        return self._metrics("tool_id", tool_ids)

    def server_metrics(self) -> dict[str, dict]:
        """server -> the same figures over all its tools: the per-tool figures add up to these."""
        return self._metrics("server", None)

    def unresolved_calls(self) -> int:
        """Refused calls that named no tool in scope (unknown, ambiguous, out of scope): recorded
        with no server, so counted neither per tool nor per server."""
        return int(self.rows("SELECT count(*) FROM calls WHERE server = ''")[0][0])

    def _metrics(self, key: str, only: Iterable[str] | None) -> dict[str, dict]:
        wanted = set(only) if only is not None else None
        out: dict[str, dict] = {}
        durations: dict[str, list[float]] = {}
        rows = self.rows(
            f"SELECT {key}, outcome, count(*), max(at) FROM calls WHERE server != '' GROUP BY {key}, outcome"
        )
        for k, outcome, n, last in rows:
            if wanted is not None and k not in wanted:
                continue
            m = out.setdefault(
                k,
                {
                    "calls": 0,
                    "ok": 0,
                    "success_rate": None,
                    "p50_ms": None,
                    "p95_ms": None,
                    "last_used": None,
                    "outcomes": {},
                },
            )
            m["calls"] += n
            m["outcomes"][outcome] = n
            if outcome == "ok":
                m["ok"] += n
            if m["last_used"] is None or last > m["last_used"]:
                m["last_used"] = last
        # durations of calls that reached a server (a refusal's time says nothing of the tool)
        for k, d in self.rows(
            f"SELECT {key}, duration_ms FROM calls WHERE server != '' AND outcome NOT IN "
            f"('refused', 'invalid_arguments') ORDER BY {key}, duration_ms"
        ):
            if k in out:
                durations.setdefault(k, []).append(d)
        for k, m in out.items():
            m["success_rate"] = round(m["ok"] / m["calls"], 3) if m["calls"] else None
            ds = durations.get(k, [])
            m["p50_ms"], m["p95_ms"] = _percentile(ds, 0.5), _percentile(ds, 0.95)
        return out

    def examples(self, tool_id: str, scope: str | None = None) -> list[dict]:
        """Recorded examples of `tool_id`, newest first: [{"arguments", "at", "scope"}]. `scope`:
        only those recorded in exactly that scope (what serve shows a caller); None: every scope
        (the file's owner, through the CLI)."""
        where, params = (
            ("tool_id = ?", (tool_id,)) if scope is None else ("tool_id = ? AND scope = ?", (tool_id, scope))
        )
        return [
            {"arguments": json.loads(a), "at": at, "scope": sc}
            for a, at, sc in self.rows(
                f"SELECT arguments, at, scope FROM examples WHERE {where} ORDER BY at DESC, rowid DESC", params
            )
        ]

    def tools_with_examples(self, scope: str | None = None) -> set[str]:
        """Tools with recorded examples (in exactly `scope`; None: in any)."""
        if scope is None:
            return {r[0] for r in self.rows("SELECT DISTINCT tool_id FROM examples")}
        return {r[0] for r in self.rows("SELECT DISTINCT tool_id FROM examples WHERE scope = ?", (scope,))}


def usage_facts(path: str | os.PathLike) -> dict[str, Any]:
    """What `toolidx doctor` says of an existing usage file, read without writing (no migration):
    {"schema_version", "current", "calls", "tools_called", "tools_with_examples", "last_call",
    "writable"}. Raises DatabaseError for a file that is not a usage file, or is corrupt."""
    p = Path(path)
    check_header(p, label="the usage file", subject="usage file is ", fix=_FIX)
    mod, conn = open_file(_USAGE_FILE_READ, p, readonly=True)  # no -wal / -shm left beside it
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        calls, tools, last = conn.execute("SELECT count(*), count(DISTINCT tool_id), max(at) FROM calls").fetchone()
        examples = conn.execute("SELECT count(DISTINCT tool_id) FROM examples").fetchone()[0]
    except mod.DatabaseError as e:
        raise DatabaseError(_USAGE_FILE_READ.corrupt.format(e=e), where=str(p), fix=_FIX) from None
    finally:
        conn.close()
    return {
        "schema_version": version,
        "current": version == len(USAGE_MIGRATIONS),
        "calls": calls,
        "tools_called": tools,
        "tools_with_examples": examples,
        "last_call": last,
        "writable": _writable(p),
    }


def open_usage(path: str | os.PathLike, *, create: bool = True) -> UsageStore | None:
    """Open (with `create`, make) the usage file at `path`; None when it does not exist and
    `create` is false (nothing was recorded yet). Raises DatabaseError for a file that is not a
    usage file or is corrupt (left untouched)."""
    p = Path(path)
    if p.is_dir():
        raise DatabaseError("usage file is a directory", where=str(p))
    if not p.exists():
        if not create:
            return None
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DatabaseError(f"cannot create the usage file's folder: {e.strerror}", where=str(p)) from None
    else:
        check_header(p, label="the usage file", subject="usage file is ", fix=_FIX)
    mod, conn = open_file(USAGE_FILE, p)
    return UsageStore(conn, p, mod)
