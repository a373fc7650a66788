"""The index in PostgreSQL (`--db postgresql://...`): the same tables and guarantees as the SQLite
file, for many crawlers and many serve replicas on one catalog.

`PgDatabase` has the file's interface (`store.index.Index`, on the same `store.base.IndexBase` as
store/sqlite/'s `Database`), so one store module serves both engines: its statements are written
in the SQL both speak, and where the two spell one thing differently (json_each, instr) it asks
`db.sql` (store/dialect.py, `POSTGRES` here). The only change made to a statement here is
psycopg's placeholder (`pyformat`: `?` -> `%s`). Where a module needs what only one engine has
(FTS5 or `tool_terms`, sqlite-vec or pgvector, PRAGMA or information_schema), it asks the index's
`writer` (store/writer.py; store/pg/writer.py here), as search asks its `retrieval`.

- Tables live in their own schema (`toolidx`, or `?schema=` in the URL), so the database may hold
  other applications' tables; migrations (store/pg/migrations.py) run on connect under an
  advisory lock.
- Writers serialise on one advisory lock taken at the start of every write transaction (what
  SQLite's BEGIN IMMEDIATE does): a crawl's snapshot of the whole catalog (`crawl_tools`) then
  always includes what a crawler of other servers committed just before.
- `meta.data_version` counts committed write transactions: serve compares it to notice a crawl
  from another machine, as it does PRAGMA data_version for a file; each commit also sends
  NOTIFY on CHANNEL.
- Keyword search: the tools' words as FTS5's tokenizer cuts them (porter unicode61, run in an
  in-memory SQLite), stored as postings (`tool_terms`, `tool_docsize`), so BM25 ranks exactly as
  on the file. Vectors: pgvector's `vector(dim)` with an HNSW index when the extension is there,
  else `real[]` and an exact scan.
- Usage rows (serve's calls and recorded examples, store/usage.py) live in the same schema with
  migrations of their own; they are written in `row_transaction`s, which take no writers' lock
  and move no data_version.
- A dropped connection (a restart, a failover) is replaced at the next statement outside a
  transaction, and a read that found it dropped runs again; a transaction it broke fails whole,
  in one line, and is never run again half-way (PgConnection).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from ...core.errors import DatabaseError
from ...core.tooldoc import fix_strings
from ..base import IndexBase, statements
from ..cache import IndexCache
from ..dialect import POSTGRES, Dialect
from ..sqlite.file import sqlite_module
from ..urls import public_url, unsplit_url, url_secrets
from .migrations import ADDITIVE, PG_MIGRATIONS, PG_USAGE_MIGRATIONS

if TYPE_CHECKING:
    from ..retrieval import Retrieval
    from ..writer import Writer

DEFAULT_SCHEMA = "toolidx"
CHANNEL = "toolidx_catalog"
WRITE_LOCK = 0x54494458  # advisory lock key of writers ("TIDX", as the file's application_id)
MIGRATE_LOCK = 0x5449444D  # "TIDM": one connection migrates at a time
APP_MARK = "toolidx"  # meta.application: the schema is a toolidx index
LOCK_WAIT = "120s"  # a crawl's write transaction on a large catalog can take a while
RECONNECT_PAUSE_S = 1.0  # after a failed reconnect, statements fail at once this long (no pile-up)

log = logging.getLogger("toolidx")


# query keys that hold a secret or say where one is: libpq's password, sslpassword, passfile,
# sslkey, and any spelling with pass/secret/token/key/auth/cred in it (PGPASSWORD, api_token)
def _split_schema(url: str) -> tuple[str, str]:
    """(the URL psycopg connects to, the schema toolidx keeps its tables in: ?schema=NAME)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), DEFAULT_SCHEMA)
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise DatabaseError(
            f"schema name {schema!r} is not a plain lower-case identifier",
            where=public_url(url),
            fix="use ?schema=NAME with letters, digits and _",
        )
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return unsplit_url(parts._replace(query=rest)), schema


# --- SQL: psycopg's placeholders ------------------------------------------------------------------
_LITERAL = re.compile(r"('(?:[^']|'')*')")


@functools.lru_cache(maxsize=2048)
def pyformat(sql: str) -> str:
    """A statement of the store as psycopg takes it: each `?` outside a string literal becomes
    `%s`, and every `%` (a LIKE pattern's, a literal's) is doubled. That is all: the store writes
    its statements in the SQL both engines speak, and asks `db.sql` (store/dialect.py) where they
    differ, so nothing else of a statement is rewritten here."""
    parts = _LITERAL.split(sql)  # odd indexes: the literals, whose ? are text
    return "".join(
        p.replace("%", "%%") if i % 2 else p.replace("%", "%%").replace("?", "%s") for i, p in enumerate(parts)
    )


class _Result:
    """A psycopg cursor as sqlite3's: fetchall of a statement that returns no rows is []."""

    def __init__(self, cur: Any):
        self.cur = cur
        self.description = cur.description
        self.rowcount = cur.rowcount

    def fetchone(self) -> Any:
        return self.cur.fetchone()

    def fetchall(self) -> list:
        return self.cur.fetchall() if self.cur.description else []

    def __iter__(self) -> Iterator:
        return iter(self.fetchall())


class PgConnection:
    """The psycopg connection behind the sqlite3-style calls the store makes (`db.conn.execute`,
    the connection a transaction yields).

    A connection the server dropped (a restart, a failover, pg_terminate_backend) is replaced by a
    new one (`reopen`) at the next statement outside a transaction, and a read that found it
    dropped is run again on the new one. Inside a transaction nothing is run again: PostgreSQL
    rolled the unfinished transaction back, and the caller's transaction fails whole
    (PgDatabase.transaction)."""

    def __init__(self, raw: Any, reopen: Callable[[], Any] | None = None, shown: str = ""):
        self.raw = raw
        self.reopen = reopen  # a new raw connection, session set up as the first (open_pg)
        self.shown = shown  # the URL without its password, for errors
        self.total_changes = 0  # this connection's writes: part of version_key, as sqlite's
        self.reconnects = 0  # part of version_key too: caches built before a reconnect are dropped
        self.open_tx = False  # a BEGIN of ours not yet ended (autocommit otherwise)
        self._retry_at = 0.0  # after a failed reconnect, the next try waits until then

    @property
    def in_transaction(self) -> bool:
        return self.open_tx

    def execute(self, sql: str, params: Any = ()) -> _Result:
        text = pyformat(sql)
        args = _storable(params) if params is not None else ()
        if self.raw.closed and not self.open_tx:  # dropped since the last statement: a new one first
            self._reconnect()
        try:
            cur = self.raw.execute(text, args)
        except Exception as e:
            if not self.raw.closed or self.reopen is None or self.open_tx:
                raise  # the statement's own error; or part of a transaction, which fails whole
            if not _is_read(text) or text.startswith(("COMMIT", "ROLLBACK")):  # may have landed: never twice
                raise DatabaseError(
                    f"the connection to the catalog was lost during a write; it may or may not have landed "
                    f"({_first_line(e)})",
                    where=self.shown,
                    fix="run it again (toolidx reconnects by itself)",
                ) from None
            self._reconnect()
            cur = self.raw.execute(text, args)
        head = text.lstrip()[:8].upper()
        if head.startswith("BEGIN"):
            self.open_tx = True
        elif head.startswith(("COMMIT", "ROLLBACK")):
            self.open_tx = False
        if not _is_read(text):
            self.total_changes += 1
        return _Result(cur)

    def executemany(self, sql: str, seq: Any) -> None:
        rows = [_storable(r) for r in seq]
        if rows:
            if self.raw.closed and not self.open_tx:
                self._reconnect()
            with self.raw.cursor() as cur:
                cur.executemany(pyformat(sql), rows)
            self.total_changes += 1

    def end(self, how: str) -> None:
        """COMMIT or ROLLBACK the transaction of ours; a ROLLBACK on a dropped connection is a no-op
        (the server rolled it back)."""
        self.open_tx = False
        if how == "ROLLBACK" and self.raw.closed:
            return
        self.raw.execute(how)

    def _reconnect(self) -> None:
        if self.reopen is None:
            return
        now = time.monotonic()
        if now < self._retry_at:  # a failed try a moment ago: answer at once, never queue up
            raise DatabaseError(
                "the connection to the catalog was lost and reconnecting failed a moment ago",
                where=self.shown,
                fix="check that the database server is running; toolidx reconnects by itself",
            )
        try:
            raw = self.reopen()
        except DatabaseError:
            self._retry_at = now + RECONNECT_PAUSE_S
            raise
        with suppress(Exception):
            self.raw.close()
        self.raw, self.open_tx, self._retry_at = raw, False, 0.0
        self.reconnects += 1
        log.info(f"reconnected to the catalog ({self.shown})")

    def close(self) -> None:
        self.raw.close()


def _storable(params: Any) -> tuple:
    """Statement parameters with what PostgreSQL refuses in text (NUL) cleaned as the store cleans
    what it writes (`fix_strings`): a look-up holding NUL finds what was stored for it, or nothing,
    as on the file, never a DataError (an agent's filter, a tool name asked for)."""
    return tuple(fix_strings(p) if isinstance(p, str) else p for p in params)


def _is_read(text: str) -> bool:
    head = text.lstrip()[:8].upper()
    return head.startswith(("SELECT", "WITH", "BEGIN", "COMMIT", "ROLLBACK", "SET", "SHOW", "LISTEN"))


class PgDatabase(IndexBase):
    """A connection to one toolidx catalog in PostgreSQL: an `Index`, as the file's `Database` is
    (module docstring). The statements and meta values are both engines' (`store.base.IndexBase`);
    the connection, transactions and versions are PostgreSQL's."""

    dialect = "postgres"
    sql: Dialect = POSTGRES

    @functools.cached_property
    def retrieval(self) -> Retrieval:
        from .retrieval import PgRetrieval

        return PgRetrieval(self)

    @functools.cached_property
    def writer(self) -> Writer:
        """What this engine writes its own way (store/writer.py)."""
        from .writer import PgWriter

        return PgWriter(self)

    def __init__(self, conn: PgConnection, path: str, schema: str, vec_kind: str | None, vec_error: str | None):
        self.conn = conn
        self.path = path
        self.schema = schema
        self.module = sqlite_module()  # the query tokenizer (store.retrieval) is an in-memory SQLite
        self.vec_kind = vec_kind  # "vector" (pgvector) | "array" (real[], exact scan)
        self.vec_available = vec_kind is not None
        self.vec_error = vec_error
        self.lock = threading.RLock()
        self.cache = IndexCache(self.version_key)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction; writers take turns (WRITE_LOCK), readers see all of it or none.
        Every replica notices it (data_version, NOTIFY)."""
        with self._write(catalog=True) as conn:
            yield conn

    @contextmanager
    def row_transaction(self) -> Iterator[Any]:
        """A short write transaction of rows beside the catalog (usage: store/usage.py): it takes
        no writers' lock, so it never waits for a crawl, and moves no data_version, so replicas do
        not reload for it."""
        with self._write(catalog=False) as conn:
            yield conn

    @contextmanager
    def _write(self, *, catalog: bool) -> Iterator[Any]:
        with self.lock:
            self.conn.execute("BEGIN")  # a dropped connection is replaced here, before any write
            try:
                if catalog:
                    self.conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))
                yield self.conn
                if catalog:
                    self.conn.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'data_version'")
                    self.conn.raw.execute(f"NOTIFY {CHANNEL}")
            except BaseException as e:
                self._roll_back(
                    e,
                    "the connection to the catalog was lost during a write: nothing of it was written",
                    "run it again (toolidx reconnects by itself)",
                )
                raise
            try:
                self.conn.end("COMMIT")
            except Exception as e:
                if not self.conn.raw.closed:
                    raise
                raise DatabaseError(
                    f"the connection to the catalog was lost at commit: the write may or may not have landed "
                    f"({_first_line(e)})",
                    where=self.path,
                    fix="run it again (crawl, approve and merge may be repeated)",
                ) from None

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A read transaction: several queries see the same committed catalog."""
        with self.lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                with self._pinned_version():  # its first query: the transaction's snapshot is taken there
                    yield self.conn
            except BaseException as e:
                self._roll_back(
                    e,
                    "the connection to the catalog was lost during a read",
                    "ask again (toolidx reconnects by itself)",
                )
                raise
            try:
                self.conn.end("COMMIT")
            except Exception:
                if not self.conn.raw.closed:  # a read-only transaction: what was read stands
                    raise

    def _roll_back(self, e: BaseException, lost_what: str, fix: str) -> None:
        """End a transaction that `e` broke. When the connection itself was lost under it (a
        restart, a failover), raise that as one line instead of the driver's error; else return
        (the caller re-raises `e`)."""
        lost = self.conn.raw.closed
        with suppress(Exception):
            self.conn.end("ROLLBACK")
        if lost and isinstance(e, Exception) and not isinstance(e, DatabaseError):
            raise DatabaseError(f"{lost_what} ({_first_line(e)})", where=self.path, fix=fix) from None

    def data_version(self) -> int:
        return int(self.scalar("SELECT value FROM meta WHERE key = 'data_version'") or 0)

    def version_key(self) -> tuple:
        return (self.conn, self._version(), self.conn.total_changes, self.conn.reconnects)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _said(e: BaseException, url: str) -> str:
    """The driver's one line about `e`, with the URL's secrets masked (it may quote the URL)."""
    from ...core.servers import masker

    return str(masker([v for v in url_secrets(url) if len(v) >= 3])(_first_line(e)))


def _numeric_loader() -> Any:
    """numeric (sum, avg) as int or float, as sqlite returns them, not Decimal (JSON output)."""
    from psycopg.adapt import Loader

    class NumericLoader(Loader):
        def load(self, data: Any) -> Any:
            s = bytes(data).decode()
            return int(s) if s.lstrip("-").isdigit() else float(s)

    return NumericLoader


def open_pg(url: str, *, create: bool = False, readonly: bool = False) -> PgDatabase:
    """Connect to the catalog at `url`, making its schema (and applying migrations) unless
    `readonly`. Raises DatabaseError: no driver, no server, a schema that is not toolidx's, a
    schema from a newer toolidx."""
    shown = public_url(url)
    try:
        import psycopg
    except ImportError:
        raise DatabaseError(
            "a postgresql:// index needs the psycopg driver", where=shown, fix="pip install 'toolidx[postgres]'"
        ) from None
    target, schema = _split_schema(url)
    raw = _connect(target, shown, "cannot connect")
    try:
        vec_kind, vec_err = _vector_support(raw, readonly)
        _migrate(raw, schema, shown, readonly=readonly, create=create)
        _session(raw, schema, vec_kind)
    except psycopg.Error as e:
        raw.close()
        raise DatabaseError(f"cannot open the catalog: {_said(e, url)}", where=shown) from None
    except DatabaseError:
        raw.close()
        raise

    def reopen() -> Any:
        """A new connection in the same session state (no migrations: the catalog was checked)."""
        again = _connect(target, shown, "cannot reconnect")
        try:
            _session(again, schema, vec_kind)
        except psycopg.Error as e:
            again.close()
            raise DatabaseError(f"cannot reconnect to the catalog: {_said(e, url)}", where=shown) from None
        return again

    return PgDatabase(PgConnection(raw, reopen, shown), shown, schema, vec_kind, vec_err)


def _connect(target: str, shown: str, what: str) -> Any:
    """A raw autocommit connection (psycopg), numerics read as sqlite returns them."""
    import psycopg

    try:
        raw = psycopg.connect(target, autocommit=True, connect_timeout=10)
    except psycopg.Error as e:
        raise DatabaseError(
            f"{what}: {_said(e, target)}", where=shown, fix="check the URL and that the server is running"
        ) from None
    raw.adapters.register_loader("numeric", _numeric_loader())
    try:
        raw.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
    except psycopg.Error as e:
        raw.close()
        raise DatabaseError(f"{what}: {_said(e, target)}", where=shown) from None
    return raw


def _session(raw: Any, schema: str, vec_kind: str) -> None:
    """What every connection to the catalog sets after migrations: its schema, HNSW's search."""
    import psycopg

    raw.execute(f"SET search_path = {schema}, public")
    if vec_kind == "vector":
        # HNSW's candidate list: wide enough that its top 50 is the exact top 50 in practice;
        # a filtered query scans on until it has k rows (pgvector >= 0.8)
        raw.execute("SET hnsw.ef_search = 200")
        with suppress(psycopg.Error):
            raw.execute("SET hnsw.iterative_scan = relaxed_order")


def _vector_support(raw: Any, readonly: bool) -> tuple[str, str | None]:
    """("vector", None) with pgvector (made here when allowed), else ("array", why): vectors are
    then real[] and searched by an exact scan."""
    import psycopg

    have = raw.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if have:
        return "vector", None
    if readonly:
        return "array", "pgvector is not installed in this database: exact vector search"
    try:
        raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return "vector", None
    except psycopg.Error as e:
        return "array", f"pgvector unavailable ({str(e).strip().splitlines()[0]}): exact vector search"


def _migrate(raw: Any, schema: str, shown: str, *, readonly: bool, create: bool) -> None:
    """Apply the migrations the schema lacks: the catalog's (PG_MIGRATIONS, counted by
    meta.schema_version) and the usage tables' (PG_USAGE_MIGRATIONS, counted by
    meta.usage_schema_version). Read-only, a catalog that lacks only the usage tables is read as
    it is: readers take missing usage tables as nothing recorded."""
    ours = len(PG_MIGRATIONS)
    exists = raw.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    version = _version(raw, schema, shown) if exists else 0
    if version > ours:
        raise DatabaseError(
            f"index schema v{version} is newer than this toolidx (v{ours})",
            where=shown,
            fix="upgrade toolidx",
        )
    usage_current = bool(exists) and _meta_int(raw, schema, "usage_schema_version") >= len(PG_USAGE_MIGRATIONS)
    if version == ours and (usage_current or readonly):
        return
    if readonly and 0 < version < ours and all(i + 1 in ADDITIVE for i in range(version, ours)):
        return  # as a file (sqlite/file.py's check_readable): what it lacks, readers do without
    if readonly:
        raise DatabaseError(
            f"index schema v{version} differs from this toolidx's v{ours} and it was opened read-only",
            where=shown,
            fix="open it once with a writing command (toolidx crawl/embed) or upgrade toolidx",
        )
    if not exists and not create:
        raise DatabaseError(
            f"no index here (schema {schema} does not exist)",
            where=shown,
            fix="build one with `toolidx crawl --config FILE --db URL`",
        )
    raw.execute("BEGIN")
    try:
        raw.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        raw.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        raw.execute(f"SET LOCAL search_path = {schema}, public")
        # re-read under the lock: another connection may have migrated meanwhile
        version = _version(raw, schema, shown)
        for i in range(version, ours):
            for stmt in statements(PG_MIGRATIONS[i]):
                raw.execute(stmt)
        rows = []
        if version < ours:
            rows = [("application", APP_MARK), ("schema_version", str(ours))]
            if version == 0:
                rows.append(("data_version", "0"))
        usage = _meta_int(raw, schema, "usage_schema_version")
        for i in range(usage, len(PG_USAGE_MIGRATIONS)):  # a newer toolidx's usage tables: left as they are
            for stmt in statements(PG_USAGE_MIGRATIONS[i]):
                raw.execute(stmt)
        if usage < len(PG_USAGE_MIGRATIONS):
            rows.append(("usage_schema_version", str(len(PG_USAGE_MIGRATIONS))))
        for k, v in rows:
            raw.execute(
                "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (k, v),
            )
        raw.execute("COMMIT")
    except BaseException:
        raw.execute("ROLLBACK")
        raise


def _meta_int(raw: Any, schema: str, key: str) -> int:
    """A number meta holds (0 when the schema has no meta table, or meta no such key)."""
    if not raw.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'meta'", (schema,)
    ).fetchone():
        return 0
    row = raw.execute(f"SELECT value FROM {schema}.meta WHERE key = %s", (key,)).fetchone()
    return int(row[0]) if row and row[0] else 0


def _version(raw: Any, schema: str, shown: str) -> int:
    """How many migrations the schema has had; DatabaseError when it holds tables but not ours."""
    tables = [
        r[0]
        for r in raw.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY table_name", (schema,)
        ).fetchall()
    ]
    if not tables:
        return 0
    row = (
        raw.execute(f"SELECT value FROM {schema}.meta WHERE key = 'application'").fetchone()
        if "meta" in tables
        else None
    )
    if row is None or row[0] != APP_MARK:
        raise DatabaseError(
            f"schema {schema} is not a toolidx index (has tables {', '.join(tables[:5])}); left untouched",
            where=shown,
            fix="name another schema with ?schema=NAME",
        )
    return _meta_int(raw, schema, "schema_version")
