"""Files toolidx reads that a user named (an index, a usage file, a merge input, a tools_file, a
config): only regular files. A FIFO opened for reading waits for a writer that never comes, and a
device (/dev/zero) never ends, so either would hang a command; both are refused in one line.

Files and folders toolidx creates (indexes and their -wal/-shm, the usage file, which holds call
arguments, the trust store and the state folder, merge's temporary file) are private to the user,
whatever the umask: `private_file` and `private_dir` are the one way they are made.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, Any

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class NotRegularFile(OSError):
    """`path` is something other than a regular file; `str()` says what."""

    def __init__(self, path: str | os.PathLike, kind: str):
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", str(path))
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def kind_of(mode: int) -> str | None:
    """What a stat mode names when it is not a regular file ("a FIFO (named pipe)", ...); None
    for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: str | os.PathLike) -> str | None:
    """What `path` is when it exists and is not a regular file (a symlink counts as what it
    points to); None for a regular file or nothing there. Never opens it."""
    try:
        return kind_of(os.stat(path).st_mode)
    except OSError:
        return None


def open_regular(path: str | os.PathLike, mode: str = "rb", **kw: Any) -> IO[Any]:
    """`open(path, mode)` for reading, refusing anything but a regular file with NotRegularFile
    before a byte is read. The open itself is non-blocking (a FIFO is opened at once, then
    refused), so there is no window between a check and the open for a FIFO to slip in."""
    fd = os.open(Path(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode, **kw)
    except BaseException:
        os.close(fd)
        raise


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def private_dir(path: str | os.PathLike) -> None:
    """Make the folder `path`, and each missing folder above it, readable by the user only (0700);
    folders already there are left as they are."""
    p = Path(path)
    if p.is_dir():
        return
    if not p.parent.exists():
        private_dir(p.parent)
    try:
        os.mkdir(p, PRIVATE_DIR)
    except FileExistsError:
        return
    os.chmod(p, PRIVATE_DIR)  # the umask may have taken more than group and others' bits, or fewer


def private_file(path: str | os.PathLike) -> bool:
    """Create `path` empty, readable by the user only (0600), unless something is there; True when
    it was created. SQLite gives a database's -wal, -shm and journal the mode of the database file,
    so an index or usage file made here first keeps every file beside it private too."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
    except FileExistsError:
        return False
    os.close(fd)
    os.chmod(path, PRIVATE_FILE)  # the umask may have taken more than group and others' bits
    return True


def writable_by_others(path: str | os.PathLike) -> str | None:
    """Who besides the user may write `path` ("its group", "others", "its group and others"), or
    None (also when nothing is there)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    who = [w for bit, w in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "others")) if mode & bit]
    return " and ".join(who) or None


def readable_by_others(path: str | os.PathLike) -> bool:
    """Whether every user of this machine may read `path` (False when nothing is there)."""
    try:
        return bool(os.stat(path).st_mode & stat.S_IROTH)
    except OSError:
        return False


def remove_database_files(path: str | os.PathLike) -> None:
    """Remove an SQLite file toolidx made and its -wal, -shm and -journal (merge's temporary file,
    a first crawl's new index when it is interrupted): what is not there, or cannot be removed
    (a read-only folder: then nothing was made), is left."""
    import contextlib

    for p in (Path(path), Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        with contextlib.suppress(OSError):
            p.unlink()
