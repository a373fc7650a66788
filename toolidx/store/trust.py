"""What this user's own crawls vouch for: the launch lines (`servers.connect`, by `launch_hash`)
and the config files they were read from. serve, check and the integrations start a server from
an index's own record, or from the config the index names, only when it is listed here (or when
the user passes --config, or --trust-index for that run).

It lives outside every index, in the user's state folder (`TOOLIDX_STATE_DIR`, else
`$XDG_STATE_HOME/toolidx`, else `~/.local/state/toolidx`), file `trusted.db`: an index file is
what may come from elsewhere (a merged shard, a download), so it cannot vouch for itself. A
crawl records what it read from the config the user named; nothing else writes here. So the file
and its folder are the user's alone (0600 / 0700): one that others can write is refused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..core.clock import now_iso
from ..core.errors import DatabaseError
from ..core.files import private_dir, writable_by_others
from ..core.notices import warn_once
from .sqlite.file import FileKind, open_file, write_transaction

STATE_ENV = "TOOLIDX_STATE_DIR"
FILE = "trusted.db"
# No application id and no WAL, as trusted.db has always been written. `IF NOT EXISTS`: files from
# before migrations were counted hold these tables at user_version 0. Errors read as SQLite's own:
# they only ever show inside record()'s warning.
TRUST_FILE = FileKind(
    application_id=None,
    wal=False,
    timeout_s=30,
    cannot_open="{e}",
    corrupt="{e}",
    migrations=[
        """
    CREATE TABLE IF NOT EXISTS launch_lines (
        hash    TEXT PRIMARY KEY,   -- launch_hash(servers.connect) a crawl wrote
        server  TEXT NOT NULL,      -- the server it was written for (for people reading the file)
        at      TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS configs (
        path    TEXT PRIMARY KEY,   -- a config file a crawl read (absolute, resolved)
        at      TEXT NOT NULL
    );
    """
    ],
)


def state_dir() -> Path:
    env = os.environ.get(STATE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "toolidx"


def trust_path() -> Path:
    return state_dir() / FILE


def config_key(path: str | os.PathLike) -> str:
    """The one spelling of a config path in the trust file (absolute, links resolved)."""
    try:
        return str(Path(path).expanduser().resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(os.path.expanduser(str(path)))


class UnsafeTrustStore(DatabaseError):
    """The trust store, or its folder, can be written by someone else, who could then make serve
    and check start their commands: it is not read (nor written) until the user fixes that."""


def _refuse_if_shared(path: Path) -> None:
    for p, what in ((path.parent, "folder"), (path, "file")):
        who = writable_by_others(p)
        if who:
            raise UnsafeTrustStore(
                f"the trust store's {what} is writable by {who}, who could make toolidx start their commands: not read",
                where=str(p),
                fix=f"chmod go-w {p}",
            )


@contextlib.contextmanager
def _connect(write: bool) -> Iterator[Any]:
    path = trust_path()
    _refuse_if_shared(path)
    if not write and not path.is_file():
        yield None
        return
    if write:
        private_dir(path.parent)
    _, conn = open_file(TRUST_FILE, path, readonly=not write)
    try:
        yield conn
    finally:
        conn.close()


def record(launch: Iterable[tuple[str, str]], config_path: str | None) -> None:
    """Vouch for `launch` ((server, launch hash) pairs a crawl wrote) and the config it read. A
    state folder that cannot be written costs only a warning: serve then needs --config."""
    rows = [(h, name, now_iso()) for name, h in launch]
    try:
        with _connect(write=True) as conn, write_transaction(conn):
            conn.executemany("INSERT INTO launch_lines(hash, server, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", rows)
            if config_path:
                conn.execute(
                    "INSERT INTO configs(path, at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (config_key(config_path), now_iso()),
                )
    except Exception as e:  # the crawl itself succeeded; only serve-without---config is lost
        why = e.what if isinstance(e, DatabaseError) else e
        if isinstance(e, UnsafeTrustStore):
            why = f"{e.what}; {e.fix}"
        warn_once(
            "trust-file",
            f"cannot record this crawl's launch lines in {trust_path()} ({why}): "
            "serve and check will need --config for this index",
        )


def _has(table: str, column: str, value: str) -> bool:
    try:
        with _connect(write=False) as conn:
            if conn is None:
                return False
            return conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (value,)).fetchone() is not None
    except UnsafeTrustStore:  # said, in one line, where serve and check explain a refusal
        raise
    except Exception:  # unreadable or not ours: nothing is trusted
        return False


def trusted_launch(h: str) -> bool:
    """Whether a crawl on this machine wrote the launch line with hash `h`."""
    return _has("launch_lines", "hash", h)


def trusted_config(path: str | os.PathLike) -> bool:
    """Whether a crawl on this machine read the config at `path`."""
    return _has("configs", "path", config_key(path))
