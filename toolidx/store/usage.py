"""Usage: what `toolidx serve` saw when it ran tools (one row per `execute_tool`) and the example
arguments it recorded. `UsageStore` is the one interface the layers above read and write; behind
it, one of two engines:

- An index file keeps its usage in a SQLite file of its own beside the index, never inside it: a
  crawl rewrites the index's tools, never this file, so usage survives re-crawls; a published
  index may be a read-only file in a read-only folder, and usage must still be kept; writing here
  never takes the index's write lock, so it cannot block a search or a crawl.
- A catalog in PostgreSQL (store/pg/) keeps its usage in its own schema, tables `calls` and
  `examples` with the file's columns (pg.migrations' PG_USAGE_MIGRATIONS, applied on connect like
  the catalog's), so every serve replica records into and reads from one place. Rows are written in
  short transactions of their own (`PgDatabase.row_transaction`) that take no writers' lock and move no
  data_version: a crawl never waits for them, nor they for a crawl, nor replicas reload for them.

Where usage lives (`usage_path`): `--usage-db` / `TOOLIDX_USAGE_DB` (a file, whatever the index),
else, for a catalog in PostgreSQL, the catalog itself; for a file, `<index>.usage.db` when that
can be written, else `$XDG_STATE_HOME/toolidx/usage/<hash of the index path>.db`.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.clock import now_iso
from ..core.errors import DatabaseError, UsageError
from ..core.files import not_regular, private_dir
from .base import in_chunks
from .index import Index, Reader, own
from .pg.migrations import PG_USAGE_MIGRATIONS
from .sqlite.file import FileKind, SqliteFile, check_header, open_file
from .urls import is_pg_url, public_url

USAGE_ENV = "TOOLIDX_USAGE_DB"
USAGE_APP_ID = 0x54495553  # "TIUS"
OUTCOMES = ("ok", "tool_error", "invalid_arguments", "timeout", "backend_failed", "refused")
MAX_EXAMPLES_PER_TOOL = 5
# What serve learned (pairs) is kept this long and this much: a pair older than PAIR_DAYS, or past
# the newest MAX_PAIRS_PER_TOOL of its tool, or past the newest MAX_PAIRS in all, is deleted when
# pairs are next written. The cap bounds what a search keeps of them (search/learned.py: 64 bytes
# a pair) and how many pairs of one tool it may read.
PAIR_DAYS = 90
MAX_PAIRS_PER_TOOL = 50
MAX_PAIRS = 20_000
_FIX = f"move it away (a new one is then started), or choose another with --usage-db / {USAGE_ENV}"

# Append only, like store/sqlite/migrations.py; PRAGMA user_version counts what was applied.
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
    # what serve learned (issue 46): each successful call of a tool a search in the same session
    # had shown, with that search's request (secrets masked) and its embedding
    """
    CREATE TABLE pairs (
        id          INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: insertion order
        tool_id     TEXT NOT NULL,
        tool_hash   TEXT NOT NULL,           -- the tool's definition hash when it ran (tools.hash)
        request     TEXT NOT NULL,           -- the search's request, secret-looking words masked
        model       TEXT NOT NULL,           -- the embedding model of `vector` (the index's embed_model)
        vector      BLOB NOT NULL,           -- float32 embedding of `request`
        token       TEXT NOT NULL DEFAULT '',-- the HTTP token's label ('' = stdio, no token)
        session     TEXT NOT NULL,           -- a random id per MCP session: a session counts once
        at          TEXT NOT NULL,
        UNIQUE (session, tool_id, request)
    );
    CREATE INDEX pairs_tool ON pairs(tool_id, at);
    -- one row, moved by every write of pairs: what a reader compares to know its copy is current
    CREATE TABLE pairs_generation (one INTEGER PRIMARY KEY CHECK (one = 1), generation INTEGER NOT NULL);
    INSERT INTO pairs_generation VALUES (1, 0);
    """,
    # a search keeps only the pairs' ids and sign bits in memory (search.learned): after a write it
    # reads the ids of one model's pairs from this index, never their vectors, to drop the deleted
    "CREATE INDEX pairs_model ON pairs(model, id);",
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


def usage_path(index_path: str | os.PathLike, explicit: str | os.PathLike | None = None) -> Path | str:
    """Where the usage of the index at `index_path` is kept (see the module docstring): a file's
    Path, or, for a catalog in PostgreSQL with no file named, the catalog's URL as given. Raises
    UsageError when --usage-db / TOOLIDX_USAGE_DB names a URL (usage in PostgreSQL is the
    catalog's own), or a file that is there but is not a regular file (a FIFO would block every
    open, a device never ends): a bad argument, not a usage file to warn about and go on without."""
    for given, name in ((explicit, "--usage-db"), (os.environ.get(USAGE_ENV), USAGE_ENV)):
        if given:
            if is_pg_url(os.fspath(given)):
                raise UsageError(
                    f"{name}: names a usage file, not a database URL",
                    where=public_url(os.fspath(given)),
                    fix="a catalog in PostgreSQL keeps its usage in its own tables: leave "
                    f"--usage-db / {USAGE_ENV} unset (or name a local file)",
                )
            p = Path(given).expanduser()
            kind = not_regular(p)
            if kind:
                raise UsageError(
                    f"{name}: is {kind}, not a regular file",
                    where=str(p),
                    fix=f"name a usage file (a new one is made there) with --usage-db / {USAGE_ENV}",
                )
            return p
    if is_pg_url(os.fspath(index_path)):
        return os.fspath(index_path)
    index = Path(index_path).expanduser()
    beside = index.with_name(index.name + ".usage.db")
    if _writable(beside):
        return beside
    h = hashlib.sha256(str(index.resolve()).encode()).hexdigest()[:16]
    return _state_home() / "toolidx" / "usage" / f"{h}.db"


def _text(value: str) -> str:
    """A caller's text as either engine stores it: PostgreSQL's TEXT cannot hold NUL, and a refused
    call keeps the tool name as the (untrusted) caller sent it."""
    return value.replace("\x00", "\ufffd")


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(-(-q * len(sorted_values) // 1)) - 1))
    return round(sorted_values[k], 1)


class UsageStore:
    """Usage in one place: a usage file, or a catalog's tables in PostgreSQL (`engine`, the
    connection). Thread-safe (the engine's connection is behind a lock); every write is one short
    transaction of its own. `where` names it in messages (a path, or the URL without password)."""

    def __init__(self, engine: SqliteFile | Index, where: str, *, owned: bool = True):
        self.engine = engine
        self.where = where
        self.owned = owned  # False: the catalog's own connection (the CLI's), closed with the catalog

    def rows(self, sql: str, params: Any = ()) -> list[tuple]:
        return self.engine.rows(sql, params)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One short write transaction: the file's, or on PostgreSQL one that takes no writers'
        lock (store/pg/database.py)."""
        with self.engine.row_transaction() as conn:
            yield conn

    def close(self) -> None:
        if self.owned:
            self.engine.close()

    # --- writes -------------------------------------------------------------------------------
    def record_calls(self, calls: list[tuple[str, str, str, float, str, str]]) -> None:
        """Several calls (tool_id, server, outcome, duration_ms, scope, at) in one transaction."""
        for c in calls:
            if c[2] not in OUTCOMES:
                raise ValueError(f"unknown outcome {c[2]!r}")
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO calls(tool_id, server, outcome, duration_ms, scope, at) VALUES (?, ?, ?, ?, ?, ?)",
                [(_text(t), _text(sv), o, round(d, 1), _text(sc), at) for t, sv, o, d, sc, at in calls],
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

    def record_pairs(self, pairs: list[tuple[str, str, str, str, bytes, str, str, str]]) -> None:
        """Learned pairs (tool_id, tool_hash, request, model, vector, token, session, at), the
        request already masked, in one transaction; a session's repeat of one request and tool is
        kept once. Then what retention drops (PAIR_DAYS, MAX_PAIRS_PER_TOOL, MAX_PAIRS) is deleted."""
        if not pairs:
            return
        from datetime import datetime, timedelta, timezone

        oldest = (datetime.now(timezone.utc) - timedelta(days=PAIR_DAYS)).strftime("%Y-%m-%dT%H:%M:%S")
        tools = sorted({_text(p[0]) for p in pairs})
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO pairs(tool_id, tool_hash, request, model, vector, token, session, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(session, tool_id, request) DO NOTHING",
                [(_text(t), h, _text(r), m, v, _text(tk), s, at) for t, h, r, m, v, tk, s, at in pairs],
            )
            conn.execute("DELETE FROM pairs WHERE at < ?", (oldest,))
            for tool in tools:
                conn.execute(
                    "DELETE FROM pairs WHERE tool_id = ? AND id NOT IN (SELECT id FROM pairs WHERE "
                    "tool_id = ? ORDER BY at DESC, id DESC LIMIT ?)",
                    (tool, tool, MAX_PAIRS_PER_TOOL),
                )
            conn.execute(
                "DELETE FROM pairs WHERE id < (SELECT min(id) FROM (SELECT id FROM pairs "
                "ORDER BY id DESC LIMIT ?) AS newest)",
                (MAX_PAIRS,),
            )
            conn.execute("UPDATE pairs_generation SET generation = generation + 1")

    def forget_pairs(self, *, tool_id: str | None = None, token: str | None = None) -> int:
        """Delete learned pairs: of one tool, of one token, of both, or (neither) all. How many."""
        conds, params = [], []
        if tool_id is not None:
            conds.append("tool_id = ?")
            params.append(tool_id)
        if token is not None:
            conds.append("token = ?")
            params.append(token)
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        n = int(self.rows(f"SELECT count(*) FROM pairs{where}", tuple(params))[0][0])
        with self.transaction() as conn:
            conn.execute(f"DELETE FROM pairs{where}", tuple(params))
            conn.execute("UPDATE pairs_generation SET generation = generation + 1")
        return n

    # --- reads --------------------------------------------------------------------------------
    def pairs_version(self) -> int:
        """A number every write of pairs changes (one row read): what a reader compares to know
        its copy is current (search.learned, once per search)."""
        return int(self.rows("SELECT generation FROM pairs_generation")[0][0])

    def pair_ids(self, model: str) -> list[int]:
        """The ids of the pairs embedded with `model`, ascending (index pairs_model: no row read)."""
        return [int(r[0]) for r in self.rows("SELECT id FROM pairs WHERE model = ? ORDER BY id", (model,))]

    def _pair_rows(self, where: str, params: tuple) -> list[tuple[int, str, str, str, bytes]]:
        """(id, tool_id, tool_hash, token, vector) of the pairs `where` selects."""
        rows = self.rows(f"SELECT id, tool_id, tool_hash, token, vector FROM pairs WHERE {where}", params)
        return [(int(i), t, h, tk, bytes(v)) for i, t, h, tk, v in rows]

    def pair_vectors(self, model: str, after: int, limit: int) -> list[tuple[int, str, str, str, bytes]]:
        """(id, tool_id, tool_hash, token, vector) of the first `limit` pairs embedded with `model`
        whose id is over `after`, ascending: what was written since a reader last read up to `after`."""
        return self._pair_rows("model = ? AND id > ? ORDER BY id LIMIT ?", (model, after, limit))

    def pairs_by_id(self, ids: Iterable[int]) -> list[tuple[int, str, str, str, bytes]]:
        """(id, tool_id, tool_hash, token, vector) of those of the pairs `ids` still kept."""
        out = []
        for marks, chunk in in_chunks([int(i) for i in ids]):
            out += self._pair_rows(f"id IN ({marks})", tuple(chunk))
        return out

    def learned(self) -> list[dict]:
        """What was learned, per tool, most pairs first: [{"id", "pairs", "tokens": {label: n},
        "models", "first", "last", "requests" (the 3 newest)}]."""
        out: dict[str, dict] = {}
        for tool, token, model, n, first, last in self.rows(
            "SELECT tool_id, token, model, count(*), min(at), max(at) FROM pairs GROUP BY tool_id, token, model"
        ):
            t = out.setdefault(
                tool, {"id": tool, "pairs": 0, "tokens": {}, "models": [], "first": first, "last": last, "requests": []}
            )
            t["pairs"] += int(n)
            t["tokens"][token] = t["tokens"].get(token, 0) + int(n)
            if model not in t["models"]:
                t["models"].append(model)
            t["first"], t["last"] = min(t["first"], first), max(t["last"], last)
        for tool, request in self.rows("SELECT tool_id, request FROM pairs ORDER BY at DESC, id DESC"):
            if len(out[tool]["requests"]) < 3:
                out[tool]["requests"].append(request)
        return sorted(out.values(), key=lambda t: (-t["pairs"], t["id"]))

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


def usage_facts(target: str | os.PathLike) -> dict[str, Any]:
    """What `toolidx doctor` says of existing usage (`usage_path`'s answer: a file, or a catalog's
    URL), read without writing (no migration): {"schema_version", "current", "calls",
    "tools_called", "tools_with_examples", "last_call", "writable"}. Raises DatabaseError for a
    file that is not a usage file, or is corrupt, or a catalog that cannot be read."""
    if is_pg_url(target):
        return _pg_facts(target)
    p = Path(target)
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


def _pg_facts(url: str) -> dict[str, Any]:
    from .pg.database import open_pg

    db = open_pg(url, readonly=True)
    try:
        version = _pg_version(db)
        if version == 0:  # made by the next connection that may write (serve, crawl)
            calls, tools, last, examples = 0, 0, None, 0
            writable = bool(db.scalar("SELECT has_schema_privilege(?, 'CREATE')", (db.schema,)))
        else:
            calls, tools, last = db.rows("SELECT count(*), count(DISTINCT tool_id), max(at) FROM calls")[0]
            examples = db.scalar("SELECT count(DISTINCT tool_id) FROM examples")
            writable = bool(
                db.scalar(
                    "SELECT has_table_privilege('calls', 'INSERT') AND "
                    "has_table_privilege('examples', 'INSERT, UPDATE, DELETE')"
                )
            )
    finally:
        db.close()
    return {
        "schema_version": version,
        "current": version == len(PG_USAGE_MIGRATIONS),
        "calls": int(calls),
        "tools_called": int(tools),
        "tools_with_examples": int(examples),
        "last_call": last,
        "writable": writable,
    }


def _pg_version(db: SqliteFile | Index) -> int:
    """The catalog's usage tables' schema version (0: not made yet); DatabaseError when a newer
    toolidx made them."""
    version = int(db.scalar("SELECT value FROM meta WHERE key = 'usage_schema_version'") or 0)
    if version > len(PG_USAGE_MIGRATIONS):
        raise DatabaseError(
            f"usage tables' schema v{version} is newer than this toolidx (v{len(PG_USAGE_MIGRATIONS)})",
            where=getattr(db, "path", None),
            fix="upgrade toolidx",
        )
    return version


def open_usage(target: str | os.PathLike, *, create: bool = True) -> UsageStore | None:
    """Open usage at `target` (`usage_path`'s answer) on a connection of its own (serve's writer):
    a usage file (with `create`, made; None when it does not exist and `create` is false: nothing
    was recorded yet), or a catalog in PostgreSQL (its usage tables are made by the catalog's
    migrations on connect). Raises DatabaseError for a file that is not a usage file or is
    corrupt (left untouched), or a catalog that cannot be opened."""
    if is_pg_url(target):
        from .pg.database import open_pg

        db = open_pg(target, readonly=not create)
        try:
            if _pg_version(db) == 0:  # read-only, before the usage tables were made
                db.close()
                return None
        except BaseException:
            db.close()
            raise
        return UsageStore(db, db.path)
    p = Path(target)
    if p.is_dir():
        raise DatabaseError("usage file is a directory", where=str(p))
    if not p.exists():
        if not create:
            return None
        try:
            private_dir(p.parent)
        except OSError as e:
            raise DatabaseError(f"cannot create the usage file's folder: {e.strerror}", where=str(p)) from None
    else:
        check_header(p, label="the usage file", subject="usage file is ", fix=_FIX)
    mod, conn = open_file(USAGE_FILE, p)
    return UsageStore(SqliteFile(conn, mod), str(p))


def catalog_usage(db: Reader, explicit: str | os.PathLike | None = None) -> UsageStore | None:
    """The usage of the open index `db`, for reading (the CLI): a catalog in PostgreSQL's own tables,
    on the catalog's connection; else the usage file (None when nothing was recorded yet). Raises
    as `usage_path` and `open_usage` do."""
    db = own(db)
    target = usage_path(db.path, explicit)
    if isinstance(target, Path):
        return open_usage(target, create=False)
    return UsageStore(db, db.path, owned=False) if _pg_version(db) else None


def shown(target: Path | str) -> str:
    """How messages name usage at `target` (`usage_path`'s answer): a path, or a URL without password."""
    return public_url(target) if isinstance(target, str) else str(target)
