"""Opening the index: the one place that picks a SQLite, loads sqlite-vec and applies migrations.

Why sqlean-py: sqlite-vec is a loadable extension, and many Pythons (this project's CI image,
macOS's system Python, some distro builds) compile `sqlite3` without `enable_load_extension`.
sqlean-py ships wheels for Linux, macOS and Windows with a current SQLite (FTS5 included) that can
load extensions, so every platform runs the same SQLite. The stdlib module is the fallback, and
`TOOLIDX_SQLITE=stdlib|sqlean|pysqlite3` forces a choice (for debugging).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.errors import DatabaseError
from ..core.files import NotRegularFile, open_regular
from .cache import IndexCache
from .migrations import ADDITIVE, MIGRATIONS

APPLICATION_ID = 0x54494458  # "TIDX" in PRAGMA application_id marks a file as ours
SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_DB_ENV = "TOOLIDX_DB"


def default_db_path() -> Path:
    """`TOOLIDX_DB`, else `$XDG_DATA_HOME/toolidx/tools.db` (`~/.local/share/toolidx/tools.db`)."""
    env = os.environ.get(DEFAULT_DB_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "toolidx" / "tools.db"


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
    raise DatabaseError(f"no usable SQLite module ({choice or 'sqlean, stdlib'})",
                        fix="pip install sqlean-py, or unset TOOLIDX_SQLITE")


class Database:
    """A connection to one index file. Thread-safe for serve's worker threads via a lock."""

    def __init__(self, conn: Any, path: str, module: Any, vec_available: bool, vec_error: str | None):
        self.conn = conn
        self.path = path
        self.module = module
        self.vec_available = vec_available
        self.vec_error = vec_error
        self.lock = threading.RLock()
        self.cache = IndexCache(self.version_key)  # what readers derive from this index (cache.py)

    # --- statements -------------------------------------------------------------------------
    def execute(self, sql: str, params: Any = ()) -> Any:
        with self.lock:
            return self.conn.execute(sql, params)

    def query(self, sql: str, params: Any = ()) -> list[dict]:
        with self.lock:
            cur = self.conn.execute(sql, params)
            cols = [d[0] for d in cur.description or ()]
            return [dict(zip(cols, row)) for row in cur.fetchall()]

    def one(self, sql: str, params: Any = ()) -> dict | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = ()) -> Any:
        with self.lock:
            row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction (BEGIN IMMEDIATE): readers see all of it or none of it."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A read transaction: several queries see the same committed index."""
        with self.lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")

    # --- meta -------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        v = self.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return default if v is None else v

    def set_meta(self, key: str, value: str | None) -> None:
        self.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                      "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def data_version(self) -> int:
        """Changes whenever another connection commits (serve uses it to notice a new crawl)."""
        return int(self.scalar("PRAGMA data_version"))

    def version_key(self) -> tuple:
        """Equal only while the index is unchanged, for caches built from it: another connection's
        commit moves data_version, this one's total_changes. The connection object, not its id:
        a closed connection's id is reused by the next one, whose counters start over."""
        return (self.conn, self.data_version(), self.conn.total_changes)

    def close(self) -> None:
        with self.lock:
            self.conn.close()


def in_chunks(values: list) -> Iterator[tuple[str, list]]:
    """(`?, ?, ...`, values) 500 at a time, for `... IN (?, ...)`: SQLite bounds the variables of
    one statement."""
    for i in range(0, len(values), 500):
        chunk = values[i:i + 500]
        yield ", ".join("?" * len(chunk)), chunk


def check_header(path: Path, *, label: str = "the index", subject: str = "",
                 fix: str = "point --db at a toolidx index, or at a new file name") -> None:
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


def open_db(path: str | os.PathLike | None = None, *, create: bool = False,
            readonly: bool = False) -> Database:
    """Open (and with `create`, make) an index. Migrations are applied on open.

    `readonly`: never write, not even the WAL switch or a migration (a baseline index downloaded
    from CI may be a read-only file); an index that needs migrating is then refused.

    Raises DatabaseError for a missing file (unless `create`), a foreign or corrupt file, or a
    file from a newer toolidx. A foreign or corrupt file is never written to.
    """
    p = Path(path).expanduser() if path is not None else default_db_path()
    spath = str(p)
    if spath != ":memory:":
        if p.is_dir():
            raise DatabaseError("is a directory, not an index file", where=spath)
        if not p.exists():
            if not create:
                raise DatabaseError("no index here", where=spath,
                                    fix="build one with `toolidx crawl --config FILE --db PATH`")
            p.parent.mkdir(parents=True, exist_ok=True)
        else:
            check_header(p)
    mod = sqlite_module()
    target, uri = spath, False
    frozen = spath != ":memory:" and _frozen(p)
    readonly = readonly or frozen
    if readonly and spath != ":memory:":
        target, uri = readonly_uri(p), True
    try:
        conn = mod.connect(target, isolation_level=None, check_same_thread=False, timeout=30, uri=uri)
    except mod.Error as e:
        raise DatabaseError(f"cannot open: {e}", where=spath) from None
    vec_ok, vec_err = load_vec(conn)
    from ..core.filters import regexp

    conn.create_function("regexp", 2, regexp, deterministic=True)
    try:
        _identify(conn, spath)
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA foreign_keys = ON")
        if readonly:
            _check_version(conn, spath)
        elif spath != ":memory:":
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        if not readonly:
            _migrate(conn, spath)
    except mod.DatabaseError as e:
        conn.close()
        raise DatabaseError(f"corrupt or unreadable index ({e}); left untouched", where=spath,
                            fix="restore it, or crawl into a new file") from None
    except DatabaseError:
        conn.close()
        raise
    return Database(conn, spath, mod, vec_ok, vec_err)


def readonly_uri(p: Path) -> str:
    """The URI that reads `p` without writing anything, beside it included. A read-only connection
    to a WAL file creates `-wal` and `-shm` when they are missing and, being read-only, cannot
    remove them at close: left behind, they make a published index look busy (`_frozen`) and
    `doctor` or `merge` write what they promise not to. So when no writer has the file open (no
    `-wal`, no `-shm`: every connection closed, the WAL folded in) it is opened immutable;
    otherwise read-only on the writer's own files, which SQLite needs to see its commits."""
    quiet = not (Path(f"{p}-wal").exists() or Path(f"{p}-shm").exists())
    return p.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if quiet else "")


def connect_readonly(path: Path, *, timeout: float = 30) -> Any:
    """A plain connection that reads `path` and writes nothing (see readonly_uri): for the files
    beside the index that are not indexes (the usage file). Raises the module's Error."""
    return sqlite_module().connect(readonly_uri(path), uri=True, timeout=timeout)


def _frozen(p: Path) -> bool:
    """An index nobody here can change (read-only media, a published file in a folder we may not
    write) and that no writer has open (no -wal, no -shm): SQLite could not even read it in WAL
    mode, having nowhere to put its shared-memory file, so it is opened immutable (read-only)."""
    if not p.exists() or os.access(p, os.W_OK) or os.access(p.parent, os.W_OK):
        return False
    return not (Path(f"{p}-wal").exists() or Path(f"{p}-shm").exists())


def load_vec(conn: Any) -> tuple[bool, str | None]:
    """Load sqlite-vec into `conn`: (True, None), or (False, why not)."""
    try:
        # find the bundled vec0 library without importing the package: `import sqlite_vec`
        # imports numpy (~0.3 s), which a keyword search must not pay for
        import importlib.util

        spec = importlib.util.find_spec("sqlite_vec")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("No module named 'sqlite_vec'")
        conn.enable_load_extension(True)
        conn.load_extension(os.path.join(list(spec.submodule_search_locations)[0], "vec0"))
        conn.enable_load_extension(False)
        return True, None
    except Exception as e:  # missing wheel, or a SQLite built without extension loading
        return False, f"sqlite-vec unavailable: {e}"


def _identify(conn: Any, spath: str) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        return
    if app_id != 0:
        raise DatabaseError(f"not a toolidx index (application_id {app_id:#x}); left untouched",
                            where=spath, fix="point --db at a toolidx index, or at a new file name")
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') LIMIT 5")]
    if tables:
        raise DatabaseError(f"not a toolidx index (has tables {', '.join(tables)}); left untouched",
                            where=spath, fix="point --db at a toolidx index, or at a new file name")


def _check_version(conn: Any, spath: str) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if 0 < version < len(MIGRATIONS) and all(i + 1 in ADDITIVE for i in range(version, len(MIGRATIONS))):
        return  # only tables are missing (e.g. approvals): their readers treat them as empty
    if version != len(MIGRATIONS):
        raise DatabaseError(f"index schema v{version} differs from this toolidx's v{len(MIGRATIONS)} "
                            "and it was opened read-only", where=spath,
                            fix="open it once with a writing command (toolidx crawl/embed) or upgrade toolidx")


def _migrate(conn: Any, spath: str) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise DatabaseError(f"index schema v{version} is newer than this toolidx (v{len(MIGRATIONS)})",
                            where=spath, fix="upgrade toolidx")
    if version == len(MIGRATIONS):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # re-read inside the lock: another process may have migrated meanwhile
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for i in range(version, len(MIGRATIONS)):
            for stmt in _statements(MIGRATIONS[i]):
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {i + 1}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
                     (str(len(MIGRATIONS)),))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a migration on `;` at line ends (executescript would commit on its own)."""
    out, buf = [], []
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buf.append(line)
        if line.rstrip().endswith(";"):
            stmt = "\n".join(buf).strip()
            if stmt.strip(";").strip():
                out.append(stmt)
            buf = []
    tail = "\n".join(buf).strip()
    if tail:
        out.append(tail)
    return out
