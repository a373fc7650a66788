"""Opening the index: the one place that loads sqlite-vec into it and names its kind of file
(application id "TIDX", migrations, pragmas) for the SQLite-file layer (`sqlitefile`), which picks
the SQLite, identifies, migrates and runs transactions for every file toolidx keeps.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from ..core.errors import DatabaseError
from ..core.files import private_dir
from .cache import IndexCache
from .migrations import ADDITIVE, MIGRATIONS
from .sqlitefile import FileKind, SqliteFile, check_header, open_file, sqlite_module
from .sqlitefile import statements as _statements  # noqa: F401  (store/pg.py splits its migrations with it)

if TYPE_CHECKING:
    from .index import Index
    from .retrieval import Retrieval

# sqlite_module is sqlitefile's, named here too: callers (tests among them) take it from here
__all__ = ["APPLICATION_ID", "Database", "default_db_path", "in_chunks", "load_vec", "open_db", "sqlite_module"]

APPLICATION_ID = 0x54494458  # "TIDX" in PRAGMA application_id marks a file as ours
DEFAULT_DB_ENV = "TOOLIDX_DB"
_FOREIGN_FIX = "point --db at a toolidx index, or at a new file name"


def _record_version(conn: Any, version: int) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(version),),
    )


INDEX = FileKind(
    application_id=APPLICATION_ID,
    migrations=MIGRATIONS,
    additive=ADDITIVE,
    timeout_s=30,
    pragmas=("PRAGMA busy_timeout = 30000", "PRAGMA foreign_keys = ON", "PRAGMA synchronous = NORMAL"),
    on_migrated=_record_version,
    foreign_id="not a toolidx index (application_id {app_id:#x}); left untouched",
    foreign_tables="not a toolidx index (has tables {tables}); left untouched",
    foreign_fix=_FOREIGN_FIX,
    newer="index schema v{found} is newer than this toolidx (v{ours})",
    corrupt="corrupt or unreadable index ({e}); left untouched",
    corrupt_fix="restore it, or crawl into a new file",
    readonly_stale="index schema v{found} differs from this toolidx's v{ours} and it was opened read-only",
    readonly_stale_fix="open it once with a writing command (toolidx crawl/embed) or upgrade toolidx",
)


def default_db_path() -> Path:
    """`TOOLIDX_DB`, else `$XDG_DATA_HOME/toolidx/tools.db` (`~/.local/share/toolidx/tools.db`)."""
    env = os.environ.get(DEFAULT_DB_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "toolidx" / "tools.db"


class Database(SqliteFile):
    """A connection to one index file. Thread-safe for serve's worker threads via a lock. What
    the layers above store/ and the store modules name is its interface, `store.index.Index`,
    which store/pg.py's PgDatabase (a subclass, with its own connection) offers too."""

    def __init__(self, conn: Any, path: str, module: Any, vec_available: bool, vec_error: str | None):
        super().__init__(conn, module)
        self.path = path
        self.vec_available = vec_available
        self.vec_error = vec_error
        self.cache = IndexCache(self.version_key)  # what readers derive from this index (cache.py)

    @cached_property
    def retrieval(self) -> Retrieval:
        """What search asks of this index (store/retrieval.py), this engine's implementation."""
        from .retrieval_sqlite import SqliteRetrieval

        return SqliteRetrieval(self)

    # --- meta -------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        v = self.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return default if v is None else v

    def set_meta(self, key: str, value: str | None) -> None:
        self.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def data_version(self) -> int:
        """Changes whenever another connection commits (serve uses it to notice a new crawl)."""
        return int(self.scalar("PRAGMA data_version"))

    def version_key(self) -> tuple:
        """Equal only while the index is unchanged, for caches built from it: another connection's
        commit moves data_version, this one's total_changes. The connection object, not its id:
        a closed connection's id is reused by the next one, whose counters start over."""
        return (self.conn, self.data_version(), self.conn.total_changes)


def in_chunks(values: list) -> Iterator[tuple[str, list]]:
    """(`?, ?, ...`, values) 500 at a time, for `... IN (?, ...)`: SQLite bounds the variables of
    one statement."""
    for i in range(0, len(values), 500):
        chunk = values[i : i + 500]
        yield ", ".join("?" * len(chunk)), chunk


PG_SCHEMES = ("postgresql://", "postgres://")


def is_pg_url(target: Any) -> TypeGuard[str]:
    """Whether `target` names a catalog in PostgreSQL (store/pg.py) rather than an index file:
    the one test, which `open_db` and the CLI's --db make before anything is opened."""
    return isinstance(target, str) and target.startswith(PG_SCHEMES)


def open_db(path: str | os.PathLike | None = None, *, create: bool = False, readonly: bool = False) -> Index:
    """Open (and with `create`, make) an index: a `Database` (a file) or a `pg.PgDatabase` (a
    postgresql:// URL), each an `Index` (mypy checks both here). Migrations are applied on open.

    `readonly`: never write, not even the WAL switch or a migration (a baseline index downloaded
    from CI may be a read-only file); an index that needs migrating is then refused.

    Raises DatabaseError for a missing file (unless `create`), a foreign or corrupt file, or a
    file from a newer toolidx. A foreign or corrupt file is never written to.
    """
    given = os.fspath(path) if path is not None else os.environ.get(DEFAULT_DB_ENV, "")
    if is_pg_url(given):
        from .pg import open_pg

        return open_pg(given, create=create, readonly=readonly)
    p = Path(path).expanduser() if path is not None else default_db_path()
    spath = str(p)
    if spath != ":memory:":
        if p.is_dir():
            raise DatabaseError("is a directory, not an index file", where=spath)
        if not p.exists():
            if not create:
                raise DatabaseError(
                    "no index here", where=spath, fix="build one with `toolidx crawl --config FILE --db PATH`"
                )
            private_dir(p.parent)
        else:
            check_header(p, label="the index", fix=_FOREIGN_FIX)
    frozen = spath != ":memory:" and _frozen(p)
    if frozen and create:  # a crawl: refused before it starts a server, not when it writes
        raise DatabaseError(
            "cannot be written here (read-only file and folder)",
            where=spath,
            fix="make the file and its folder writable, or crawl into another --db",
        )
    readonly = readonly or frozen
    vec: list[tuple[bool, str | None]] = []

    def setup(conn: Any) -> None:
        vec.append(load_vec(conn))
        from .tools import regexp  # tools imports this module

        conn.create_function("regexp", 2, regexp, deterministic=True)

    mod, conn = open_file(INDEX, spath, readonly=readonly, setup=setup)
    return Database(conn, spath, mod, *vec[0])


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
