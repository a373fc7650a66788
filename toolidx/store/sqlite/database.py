"""The SQLite engine's index file: the one place that loads sqlite-vec into it and names its kind of
file (application id "TIDX", migrations, pragmas) for the SQLite-file layer (`file`), which picks
the SQLite, identifies, migrates and runs transactions for every file toolidx keeps.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import DatabaseError
from ...core.files import private_dir
from ..base import IndexBase
from ..cache import IndexCache
from .file import FileKind, SqliteFile, check_header, open_file, sqlite_module
from .migrations import ADDITIVE, APPLICATION_ID, MIGRATIONS

if TYPE_CHECKING:
    from ..retrieval import Retrieval
    from ..writer import Writer

_FOREIGN_FIX = "point --db at a toolidx index, or at a new file name"


def _record_version(conn: Any, version: int) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(version),),
    )


def recrawl_fix(path: str, source: list[str] | None = None, *, doctor: bool = True) -> str:
    """What to do about a damaged index at `path`, as commands to run: doctor to see the damage
    (unless `doctor` is what says it), then a copy restored or a crawl into a new file moved over
    it. `source`: what to crawl (`--config FILE`, `--from CLIENTS`; default: the config the index
    records, when that page can still be read, else a placeholder to fill in)."""
    import shlex

    if source is None:
        with suppress(Exception):  # the damage may be in meta too: then the user names the config
            conn = sqlite_module().connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True, timeout=1)
            try:
                row = conn.execute("SELECT value FROM meta WHERE key = 'config_path'").fetchone()
                source = ["--config", row[0]] if row and row[0] else None
            finally:
                conn.close()
    p = Path(path)
    new = str(p.with_name(f"{p.stem}.new{p.suffix}" if p.suffix else f"{p.name}.new"))
    crawl = shlex.join(["toolidx", "crawl", *(source or ["--config", "CONFIG"]), "--db", new])
    move = shlex.join(["mv", new, path])
    then = f"restore a copy of the file, or crawl into a new one and move it over: {crawl} && {move}"
    return f"see what is damaged: {shlex.join(['toolidx', 'doctor', '--db', path])}; then {then}" if doctor else then


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
    damaged_fix=recrawl_fix,
    readonly_stale="index schema v{found} differs from this toolidx's v{ours} and it was opened read-only",
    readonly_stale_fix="open it once with a writing command (toolidx crawl/embed) or upgrade toolidx",
)


class Database(SqliteFile, IndexBase):
    """A connection to one index file. Thread-safe for serve's worker threads via a lock. The store
    modules name its interface, `store.index.Index` (the layers above store/ its part
    `store.index.Reader`), which store/pg/'s PgDatabase (on the same `store.base.IndexBase`) offers too."""

    def __init__(self, conn: Any, path: str, module: Any, vec_available: bool, vec_error: str | None):
        super().__init__(conn, module)
        self.path = path
        self.vec_available = vec_available
        self.vec_error = vec_error
        self.cache = IndexCache(self.version_key)  # what readers derive from this index (cache.py)

    @cached_property
    def retrieval(self) -> Retrieval:
        """What search asks of this index (store/retrieval.py), this engine's implementation."""
        from .retrieval import SqliteRetrieval

        return SqliteRetrieval(self)

    @cached_property
    def writer(self) -> Writer:
        """What this engine writes its own way (store/writer.py)."""
        from .writer import SqliteWriter

        return SqliteWriter(self)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """In the index's read snapshot, data_version pinned for it: one PRAGMA per search instead
        of one per cache lookup (19 to 25 in a hybrid search)."""
        # a deferred BEGIN takes its snapshot at the first read: read, then pin the version
        self.conn.execute("SELECT 1 FROM meta LIMIT 1").fetchone()
        with self._pinned_version():
            yield

    def data_version(self) -> int:
        """Changes whenever another connection commits (serve uses it to notice a new crawl)."""
        return int(self.scalar("PRAGMA data_version"))

    def version_key(self) -> tuple:
        """Equal only while the index is unchanged, for caches built from it: another connection's
        commit moves data_version, this one's total_changes. The connection object, not its id:
        a closed connection's id is reused by the next one, whose counters start over."""
        return (self.conn, self._version(), self.conn.total_changes)


def open_sqlite(p: Path, *, create: bool = False, readonly: bool = False) -> Database:
    """Open (and with `create`, make) the index file `p` (`store.db.open_db` picks this engine)."""
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
        from ..tools import regexp  # tools imports this module

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
