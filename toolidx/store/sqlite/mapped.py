"""Numeric arrays a large index's searches read, written once to a cache file and memory-mapped
by every process that opens the same index content after: the vectors (matrix.py) and the
keyword postings (retrieval.py). A replica opens them in milliseconds instead of rebuilding them
from the index; their pages are the page cache's, shared by every replica on the machine and
given back under memory pressure, and only the pages a search touches are resident.

A file is named by a hash of the index content it was built from (the caller's key), so a
changed index gets a new file and never reads an old one. It holds numbers only, in the dtypes
below, read as numbers (never unpickled): a file that is damaged, foreign or of another layout is
no error, `read` answers None and the caller builds the arrays again. The KEEP_FILES used last
are kept. Where no cache folder can be written, callers keep the arrays in memory.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import tempfile
from pathlib import Path
from typing import Any

# files kept per kind, the newest by use: two indexes and each one's version before its last crawl
# (vectors and postings: ~210 MB a version at 100k tools)
KEEP_FILES = 4
MAGIC = b"TOOLIDX-MAPPED-1\n"
HEADER = 65536  # bytes before the arrays: MAGIC, then the JSON of their dtypes, shapes and offsets
ALIGN = 65536  # each array starts on a page (of any size a kernel uses), so each gets its own advice
DTYPES = ("int64", "uint64", "float32", "float64", "int32", "uint8")


def cache_folder() -> Path:
    """Where the files are kept: $XDG_CACHE_HOME/toolidx/mapped (vectors `.vec`, postings `.kw`)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolidx" / "mapped"


def path_for(kind: str, key: str) -> Path:
    return cache_folder() / f"{key}.{kind}"


def write(path: Path, arrays: dict[str, Any]) -> None:
    """The arrays to `path`, whole or not at all (a temporary file renamed over it). Raises
    OSError where the folder cannot be made or written."""
    import numpy as np

    layout: dict[str, dict[str, Any]] = {}
    offsets, at = {}, HEADER
    for name, arr in arrays.items():
        if str(arr.dtype) not in DTYPES:
            raise ValueError(f"{name}: {arr.dtype} is not a mapped dtype")
        layout[name] = {"dtype": str(arr.dtype), "shape": list(arr.shape), "at": at}
        offsets[name] = at
        at += arr.nbytes + (-arr.nbytes) % ALIGN
    head = MAGIC + json.dumps(layout).encode()
    if len(head) > HEADER:
        raise ValueError("too many arrays for the header")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".part")  # no kind's suffix: tidy never sees it
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(head.ljust(HEADER, b"\0"))
            for name, arr in arrays.items():
                f.seek(offsets[name])
                f.write(np.ascontiguousarray(arr).tobytes())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    tidy(path)


def read(path: Path, *, scattered: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The arrays in the file, mapped read-only; None unless it is a whole file of this layout.
    `scattered`: arrays a search reads a few rows of, here and there (no read-ahead)."""
    import numpy as np

    try:
        with open(path, "rb") as f:
            head = f.read(HEADER)
            if not head.startswith(MAGIC):
                return None
            layout = json.loads(head[len(MAGIC) :].rstrip(b"\0"))
            size = os.fstat(f.fileno()).st_size
            spans = {}
            for name, d in layout.items():
                if d["dtype"] not in DTYPES:  # numbers only: never an object array
                    return None
                dtype, shape, at = np.dtype(d["dtype"]), tuple(int(s) for s in d["shape"]), int(d["at"])
                if at < HEADER or any(s < 0 for s in shape):
                    return None
                nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
                if at + nbytes > size:
                    return None
                spans[name] = (dtype, shape, at, nbytes)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        for name in scattered:
            if name in spans and spans[name][3] and hasattr(mm, "madvise"):
                mm.madvise(mmap.MADV_RANDOM, spans[name][2], spans[name][3])
        buf = np.frombuffer(mm, dtype=np.uint8)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: tidy keeps the files used last
    return {name: buf[at : at + n].view(dtype).reshape(shape) for name, (dtype, shape, at, n) in spans.items()}


def tidy(keep: Path) -> None:
    """Keep the KEEP_FILES files of `keep`'s kind used last (`keep` among them)."""
    try:
        files = sorted(keep.parent.glob(f"*{keep.suffix}"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in files[KEEP_FILES:]:
            if p != keep:
                p.unlink(missing_ok=True)
    except OSError:
        pass
