"""An open index, whichever engine holds it, as two protocols. `Reader`: what the layers above
store/ hold and call (where it is, whether it can run a vector search, the cache of what readers
derive, `retrieval`, the meta values, snapshots, versions, a transaction around meta writes);
every signature above store/ names it, so mypy refuses a layer that reaches for SQL. `Index`: a
Reader plus the store's own members (the connection, its lock, the statements, `sql`, `writer`),
what store/'s modules use (SQL lives only there: tests/test_docs.py). `sqlite.database.Database`
(a SQLite file) and `pg.database.PgDatabase` (a catalog in PostgreSQL) both satisfy `Index`
(tests/store/test_pg.py checks both, mypy each use); a store function handed a Reader narrows it
with `own`."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from .cache import IndexCache

if TYPE_CHECKING:
    from .dialect import Dialect
    from .retrieval import Retrieval
    from .writer import Writer


@runtime_checkable
class Reader(Protocol):
    path: str  # where it is, as errors name it (a catalog's URL without its secrets)
    vec_available: bool  # whether vector search can run on it
    vec_error: str | None  # why not
    cache: IndexCache  # what readers derive from it, valid while version_key() is unchanged

    @property
    def retrieval(self) -> Retrieval:
        """What search asks of this index, this engine's implementation."""
        ...

    def get_meta(self, key: str, default: str | None = None) -> str | None: ...

    def set_meta(self, key: str, value: str | None) -> None: ...

    def snapshot(self) -> AbstractContextManager[Any]:
        """A read transaction: several queries see the same committed index."""
        ...

    def data_version(self) -> int:
        """Changes whenever another connection commits."""
        ...

    def version_key(self) -> tuple:
        """Equal only while the index is unchanged."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """One write transaction: readers see all of it or none of it."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Index(Reader, Protocol):
    """A Reader with the store's own members: for store/'s modules only."""

    conn: Any  # the engine's connection (sqlite3's, or store.pg.database.PgConnection), used under `lock`
    lock: Any  # a threading.RLock: one statement or transaction at a time on `conn`
    sql: Dialect  # the engine's spelling of what the two write differently
    module: Any  # the SQLite module whose FTS5 tokenizer cuts a query's words (store/retrieval.py)

    @property
    def writer(self) -> Writer:
        """What this engine writes its own way (store/writer.py), its implementation."""
        ...

    def execute(self, sql: str, params: Any = ()) -> Any: ...

    def query(self, sql: str, params: Any = ()) -> list[dict]: ...

    def one(self, sql: str, params: Any = ()) -> dict | None: ...

    def scalar(self, sql: str, params: Any = ()) -> Any: ...

    def rows(self, sql: str, params: Any = ()) -> list[tuple]: ...

    def row_transaction(self) -> AbstractContextManager[Any]:
        """A short write transaction of rows beside the index (usage: store/usage.py)."""
        ...


def own(db: Reader) -> Index:
    """`db` as the store's modules use it. Every Reader is an index the store opened
    (store/db.py's open_db: a `Database` or a `PgDatabase`, both an `Index`); the layers above only
    name it by the smaller protocol, so nothing is checked at run time."""
    return cast(Index, db)
