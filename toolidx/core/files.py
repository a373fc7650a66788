"""Files toolidx reads that a user named (an index, a usage file, a merge input, a tools_file, a
config): only regular files. A FIFO opened for reading waits for a writer that never comes, and a
device (/dev/zero) never ends, so either would hang a command; both are refused in one line.
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
