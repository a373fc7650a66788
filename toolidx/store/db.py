"""Opening the index: `open_db` picks its engine once, from what `--db` names (a postgresql:// URL:
store/pg/, else a file: store/sqlite/), and returns it as a `Reader` (store.index).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .urls import is_pg_url

if TYPE_CHECKING:
    from ..core.errors import DatabaseError
    from .index import Reader

DEFAULT_DB_ENV = "TOOLIDX_DB"


def default_db_path() -> Path:
    """`TOOLIDX_DB`, else `$XDG_DATA_HOME/toolidx/tools.db` (`~/.local/share/toolidx/tools.db`)."""
    env = os.environ.get(DEFAULT_DB_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "toolidx" / "tools.db"


def open_db(path: str | os.PathLike | None = None, *, create: bool = False, readonly: bool = False) -> Reader:
    """Open (and with `create`, make) an index: a `sqlite.database.Database` (a file) or a
    `pg.database.PgDatabase` (a postgresql:// URL), each an `Index` (mypy checks both). Migrations
    are applied on open.

    `readonly`: never write, not even the WAL switch or a migration (a baseline index downloaded
    from CI may be a read-only file); an index that needs migrating is then refused.

    Raises DatabaseError for a missing file (unless `create`), a foreign or corrupt file, or a
    file from a newer toolidx. A foreign or corrupt file is never written to.
    """
    given = os.fspath(path) if path is not None else os.environ.get(DEFAULT_DB_ENV, "")
    if is_pg_url(given):
        from .pg.database import open_pg

        return open_pg(given, create=create, readonly=readonly)
    from .sqlite.database import open_sqlite

    p = Path(path).expanduser() if path is not None else default_db_path()
    return open_sqlite(p, create=create, readonly=readonly)


def damaged(e: BaseException) -> DatabaseError | None:
    """The one line (the file named, what to do) for SQLite meeting a damaged page in any query of
    an index file this process opened; None for any other exception. The CLI's last resort, so
    that a damaged file is never a traceback (#42 item 18)."""
    from .sqlite.file import damaged as file_damaged

    return file_damaged(e)


def same_catalog(a: str, b: str) -> bool:
    """Whether two postgresql:// URLs name the same catalog however spelled: either scheme, the
    host, port, user and database in the authority or in the query, libpq's defaults (PGHOST,
    PGPORT, PGUSER, PGDATABASE; port 5432; the database named after the user) and the schema."""
    return _catalog_key(a) == _catalog_key(b)


def _catalog_key(url: str) -> tuple[str, ...]:
    import getpass
    from urllib.parse import parse_qsl, unquote

    from .pg.database import DEFAULT_SCHEMA

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # unreadable: only the same text is the same catalog
        return (url,)
    q = dict(parse_qsl(parts.query, keep_blank_values=True))
    userinfo, _, hostport = parts.netloc.rpartition("@")
    hosts = unquote(hostport.rpartition(":")[0] if parts.port else hostport).lower()
    user = unquote(userinfo.partition(":")[0]) or q.get("user") or os.environ.get("PGUSER") or getpass.getuser()
    return (
        hosts or q.get("host", "").lower() or os.environ.get("PGHOST", ""),
        str(port or q.get("port") or os.environ.get("PGPORT") or 5432),
        user,
        unquote(parts.path.lstrip("/")) or q.get("dbname") or os.environ.get("PGDATABASE") or user,
        q.get("schema") or DEFAULT_SCHEMA,
    )
