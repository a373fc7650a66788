"""The SQLite-file layer under every file toolidx keeps (the index, the usage file, trusted.db): which
SQLite to use, opening a file, telling ours from another application's (PRAGMA application_id),
migrating it (PRAGMA user_version counts the migrations applied) and write transactions. Each kind
of file is one `FileKind`: its application id, migrations, pragmas and the words of its errors.

Why sqlean-py: sqlite-vec is a loadable extension, and many Pythons (this project's CI image,
macOS's system Python, some distro builds) compile `sqlite3` without `enable_load_extension`.
sqlean-py ships wheels for Linux, macOS and Windows with a current SQLite (FTS5 included) that can
load extensions, so every platform runs the same SQLite. The stdlib module is the fallback, and
`TOOLIDX_SQLITE=stdlib|sqlean|pysqlite3` forces a choice (for debugging).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import DatabaseError
from ...core.files import NotRegularFile, open_regular, private_file
from ..base import Statements, statements
from ..dialect import SQLITE, Dialect

SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_module() -> Any:
    choice = os.environ.get("TOOLIDX_SQLITE", "").strip().lower()
    order = [choice] if choice else ["sqlean", "stdlib"]
    for name in order:
        try:
            if name == "sqlean":
                import sqlean

                return sqlean
            if name == "pysqlite3":
                from pysqlite3 import dbapi2

                return dbapi2
            if name == "stdlib":
                import sqlite3

                return sqlite3
        except ImportError:
            continue
    raise DatabaseError(
        f"no usable SQLite module ({choice or 'sqlean, stdlib'})", fix="pip install sqlean-py, or unset TOOLIDX_SQLITE"
    )


@dataclass(frozen=True)
class FileKind:
    """One kind of SQLite file: what marks it as ours, its schema, how it is opened, and what its
    errors say. Messages are `str.format` templates: `{e}` is SQLite's error, `{found}` and
    `{ours}` schema versions, `{app_id}` and `{tables}` what a foreign file holds."""

    application_id: int | None  # None: files of this kind are not marked (nor checked)
    migrations: Sequence[str]  # append only; a released migration never changes
    additive: frozenset[int] = frozenset()  # migrations (from 1) that only add tables, see check_readable
    timeout_s: float = 30
    pragmas: tuple[str, ...] = ()  # run on every open, after the file is identified
    wal: bool = True  # switch a file opened for writing to WAL
    probe: str | None = None  # a read run last: a damaged table shows up here, not at the first call
    on_migrated: Callable[[Any, int], None] | None = None  # (connection, version), inside the migration
    fresh_ok: bool = True  # an empty file (no application id, no tables) is one to start
    cannot_open: str = "cannot open: {e}"
    foreign_id: str = "not ours (application_id {app_id:#x}); left untouched"
    foreign_tables: str = "not ours (has tables {tables}); left untouched"
    foreign_fix: str | None = None
    newer: str = "schema v{found} is newer than this toolidx (v{ours})"
    newer_fix: str | None = "upgrade toolidx"
    corrupt: str = "corrupt or unreadable file ({e}); left untouched"
    corrupt_fix: str | None = None
    # a file opened read-only at a version it cannot be read at; None: older versions are read as
    # they are (their readers cope) and only a newer one is refused, with `newer`
    readonly_stale: str | None = None
    readonly_stale_fix: str | None = None
    # the fix for a damaged page met after the open (damaged()): (the file's path) -> one line
    damaged_fix: Callable[[str], str | None] | None = None

    @property
    def version(self) -> int:
        return len(self.migrations)


# every file open_file opened in this process, the latest last: where a damaged page met later, in
# any query, is (damaged()); a set of paths, so bounded by the files a process uses
_OPENED: dict[str, FileKind] = {}
_DAMAGE_NAMES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
# SQLite's words for the same, and sqlite-vec's when a vector's page is unreadable
_DAMAGE_WORDS = ("database disk image is malformed", "file is not a database", "blob read error", "corrupt")


def is_damage(e: BaseException) -> bool:
    """Whether `e` is SQLite (or sqlite-vec) meeting a damaged page of a file."""
    import sqlite3

    if not isinstance(e, (sqlite_module().DatabaseError, sqlite3.DatabaseError)):
        return False
    name = getattr(e, "sqlite_errorname", None) or ""
    return name.startswith(_DAMAGE_NAMES) or any(w in str(e) for w in _DAMAGE_WORDS)


def damaged(e: BaseException) -> DatabaseError | None:
    """The one line for a damaged page met in a query, naming the file (None: `e` is no such
    error). The exception does not say which file: the one this process opened, or of several
    the first, latest first, whose quick_check fails (run only now, on the way out)."""
    if not is_damage(e) or not _OPENED:
        return None
    paths = list(reversed(_OPENED))
    path = next((p for p in paths if not _intact(p)), paths[0]) if len(paths) > 1 else paths[0]
    kind = _OPENED[path]
    fix = kind.damaged_fix(path) if kind.damaged_fix is not None else kind.corrupt_fix
    return DatabaseError(kind.corrupt.format(e=e), where=path, fix=fix)


def _intact(path: str) -> bool:
    mod = sqlite_module()
    try:
        conn = mod.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("PRAGMA quick_check(1)").fetchone()[0] == "ok"
        finally:
            conn.close()
    except (mod.Error, OSError):
        return False


def check_header(path: Path, *, label: str, subject: str = "", fix: str | None) -> None:
    """Refuse, before SQLite touches it, a file that is not a SQLite database (never written to),
    and anything that is not a regular file (a FIFO would block the open forever, a device never
    ends). `label` names the file in a read error; `subject` starts the not-a-database message."""
    try:
        with open_regular(path) as f:
            head = f.read(16)
    except NotRegularFile as e:
        raise DatabaseError(f"{label} {e.strerror} (left untouched)", where=str(path), fix=fix) from None
    except OSError as e:
        raise DatabaseError(f"cannot read {label}: {e.strerror}", where=str(path)) from None
    if head and head != SQLITE_HEADER:
        raise DatabaseError(f"{subject}not a SQLite database (left untouched)", where=str(path), fix=fix)


def readonly_uri(p: Path, *, wal: bool = True) -> str:
    """The URI that reads `p` without writing it.

    A file this user may write, in a folder it may write, is read with SQLite's locks (`mode=ro`):
    it sees every other connection's commits whole. It was opened `immutable=1` when no `-wal` /
    `-shm` was there (no writer at that instant): immutable takes no locks and trusts the file
    never to change, so a writer that opened it a moment later (`toolidx approve`, serve writing
    approvals, a crawl) folded its WAL into the pages the reader was reading, and the reader failed
    with "database disk image is malformed" or read a torn mix of old and new rows (#42 item 20).
    A `mode=ro` connection to a WAL file makes `-wal` and `-shm` when missing and cannot remove
    them: open_file's connection removes them at close (`_tidy`), or left behind they would make a
    published index look busy (`db._frozen`).

    A file this user cannot write (a published or downloaded index, read-only media) can only be
    changed by its owner: opened immutable when no writer has it open (no `-wal`, no `-shm`), else
    read-only on the writer's own files, which SQLite needs to see its commits. A file not in WAL
    (`wal` false) is read with SQLite's locks."""
    if _ours(p):
        return p.resolve().as_uri() + "?mode=ro"
    quiet = wal and not (Path(f"{p}-wal").exists() or Path(f"{p}-shm").exists())
    return p.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if quiet else "")


def _sidecars(p: Path) -> bool:
    return Path(f"{p}-wal").exists() or Path(f"{p}-shm").exists()


def _tidy(mod: Any, p: Path) -> Any:
    """A connection class whose close removes the `-wal` and `-shm` beside `p` that a read-only
    connection made, or that a writer which closed while it read could not remove (it cannot
    itself): a plain connection opened and closed, which SQLite lets remove them only when it is
    the file's last connection (a writer still at work keeps them)."""

    class TidyConnection(mod.Connection):
        def close(self) -> None:
            super().close()
            if not _sidecars(p):
                return
            try:
                last = mod.connect(p.resolve().as_uri() + "?mode=rw", uri=True, timeout=0)
                try:
                    last.execute("SELECT count(*) FROM sqlite_master").fetchone()
                finally:
                    last.close()
            except mod.Error:
                pass  # busy or gone: the next connection to close does it

    return TidyConnection


def _ours(p: Path) -> bool:
    """This user may write `p` and its folder: read with locks, companions removed after."""
    return _writable(p) and os.access(p.resolve().parent, os.W_OK)


def _writable(p: Path) -> bool:
    """This user may write `p`, and its mode says anyone may (a 0444 index stays read-only to root,
    whom os.access lets write anything)."""
    try:
        return os.access(p, os.W_OK) and bool(p.stat().st_mode & 0o222)
    except OSError:
        return False


def open_file(
    kind: FileKind, path: str | os.PathLike, *, readonly: bool = False, setup: Callable[[Any], None] | None = None
) -> tuple[Any, Any]:
    """(module, connection) to the file at `path` (`:memory:` too), identified as `kind`, its pragmas
    set and, unless `readonly`, switched to WAL and migrated; read-only, a file at a version it
    cannot be read at is refused. `setup(connection)` runs first (functions, extensions). The
    caller has checked the path (check_header). Raises DatabaseError; the file is then untouched."""
    spath = str(path)
    memory = spath == ":memory:"
    mod = sqlite_module()
    target, uri, factory = spath, False, mod.Connection
    if readonly and not memory:
        target, uri = readonly_uri(Path(spath), wal=kind.wal), True
        if kind.wal and _ours(Path(spath)):
            factory = _tidy(mod, Path(spath))
    elif not memory:
        try:
            private_file(spath)  # SQLite would make it (and its -wal, -shm) readable by all
        except OSError as e:
            raise DatabaseError(
                kind.cannot_open.format(e=e.strerror),
                where=spath,
                fix="make its folder writable, or name a file in another folder",
            ) from None
    try:
        conn = mod.connect(
            target, isolation_level=None, check_same_thread=False, timeout=kind.timeout_s, uri=uri, factory=factory
        )
    except mod.Error as e:
        raise DatabaseError(kind.cannot_open.format(e=e), where=spath) from None
    try:
        if setup is not None:
            setup(conn)
        version = identify(kind, conn, spath)
        for pragma in kind.pragmas:
            conn.execute(pragma)
        if readonly:
            check_readable(kind, version, spath)
        else:
            if kind.wal and not memory and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            migrate(kind, conn, spath)
        if kind.probe:
            conn.execute(kind.probe).fetchone()
    except mod.DatabaseError as e:
        conn.close()
        raise DatabaseError(kind.corrupt.format(e=e), where=spath, fix=kind.corrupt_fix) from None
    except BaseException:
        conn.close()
        raise
    if not memory:
        _OPENED.pop(spath, None)
        _OPENED[spath] = kind
    return mod, conn


def identify(kind: FileKind, conn: Any, where: str) -> int:
    """The file's schema version; DatabaseError when another application's file (its application
    id, or tables in a file that has none) or, for a kind with no application id, nothing."""
    if kind.application_id is not None:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id != kind.application_id:
            if app_id != 0 or not kind.fresh_ok:
                raise DatabaseError(kind.foreign_id.format(app_id=app_id), where=where, fix=kind.foreign_fix)
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') LIMIT 5")
            ]
            if tables:
                raise DatabaseError(
                    kind.foreign_tables.format(tables=", ".join(tables)), where=where, fix=kind.foreign_fix
                )
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def check_readable(kind: FileKind, version: int, where: str) -> None:
    """Refuse a file opened read-only at a version this toolidx cannot read. A file that only lacks
    additive migrations (new tables, e.g. approvals) is read as it is: readers treat the missing
    tables as empty."""
    ours = kind.version
    if version == ours:
        return
    if 0 < version < ours and all(i + 1 in kind.additive for i in range(version, ours)):
        return
    if kind.readonly_stale is not None:
        raise DatabaseError(
            kind.readonly_stale.format(found=version, ours=ours), where=where, fix=kind.readonly_stale_fix
        )
    if version > ours:
        raise DatabaseError(kind.newer.format(found=version, ours=ours), where=where, fix=kind.newer_fix)


def migrate(kind: FileKind, conn: Any, where: str) -> None:
    """Apply the migrations the file lacks, in one write transaction; DatabaseError for a file from
    a newer toolidx."""
    ours = kind.version
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > ours:
        raise DatabaseError(kind.newer.format(found=version, ours=ours), where=where, fix=kind.newer_fix)
    if version == ours:
        return
    with write_transaction(conn, where):
        # re-read inside the lock: another process may have migrated meanwhile
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for i in range(version, ours):
            for stmt in statements(kind.migrations[i]):
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {i + 1}")
        if kind.application_id is not None:
            conn.execute(f"PRAGMA application_id = {kind.application_id}")
        if kind.on_migrated is not None:
            kind.on_migrated(conn, ours)


# what a write meets when the disk or the file will not take it (full, over the size limit, read
# only): SQLite's error names, and their words for Pythons before 3.11 (no sqlite_errorname)
_CANNOT_WRITE = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN")
_CANNOT_WRITE_WORDS = ("database or disk is full", "disk I/O error", "readonly database", "unable to open database")


def cannot_write(e: BaseException, where: str | None) -> DatabaseError | None:
    """The one line for a write the disk or the file refused, or None for any other error."""
    name = getattr(e, "sqlite_errorname", None) or ""
    if not (name.startswith(_CANNOT_WRITE) or any(w in str(e) for w in _CANNOT_WRITE_WORDS)):
        return None
    return DatabaseError(
        f"cannot write ({e}); the change was rolled back",
        where=where,
        fix="free disk space, or make the file and its folder writable, then run the command again",
    )


@contextmanager
def write_transaction(conn: Any, where: str | None = None) -> Iterator[Any]:
    """One write transaction (BEGIN IMMEDIATE) on `conn`: readers see all of it or none of it. A
    write the disk refuses raises DatabaseError (see cannot_write) after the rollback."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # after a full disk or an I/O error SQLite has ended it itself
                with suppress(Exception):  # the first error says more
                    conn.execute("ROLLBACK")
            raise
    except Exception as e:
        refused = cannot_write(e, where)
        if refused is None:
            raise
        raise refused from None


class SqliteFile(Statements):
    """One open file: a connection shared by serve's worker threads behind a lock."""

    dialect = "sqlite"
    sql: Dialect = SQLITE

    def __init__(self, conn: Any, module: Any):
        self.conn = conn
        self.module = module
        self.lock = threading.RLock()

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction (BEGIN IMMEDIATE): readers see all of it or none of it."""
        with self.lock, write_transaction(self.conn, getattr(self, "path", None)) as conn:
            yield conn

    @contextmanager
    def row_transaction(self) -> Iterator[Any]:
        """A short write transaction of rows (usage: store/usage.py): a file's is its `transaction`
        (a usage file is apart from its index: it never waits for a crawl)."""
        with self.transaction() as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A read transaction: several queries see the same committed file."""
        with self.lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            try:
                with self._reading():
                    yield self.conn
            finally:
                self.conn.execute("COMMIT")

    def _reading(self) -> AbstractContextManager[Any]:
        """What a kind of file does inside its read snapshot, once the transaction has begun."""
        return nullcontext()
