"""The one cache of what readers derive from an index: search's vector matrix, BM25 postings and
name words, kept on the opened `Database` (`db.cache`) and valid for one version of the index.

Every entry is built by its owner's function on first use and dropped, all together, as soon as
the index changes (another connection's commit, or this one's: `Database.version_key`), so no
entry can outlive the data it was built from, and a closed index takes its cache with it. The
names are few and fixed (one per kind of derived data), so the count is bounded; each entry bounds
its own size (bm25 keeps at most MAX_CACHED terms) and reports it through `size`, which
`toolidx stats --json` and serve show.

Pure memos of strings (a compiled regex filter, a parsed quoted query) are not index data and stay
`lru_cache`s beside their functions; the loaded embedding model is per process, not per index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class IndexCache:
    """Named entries for one version of one index. Thread-safe: a builder runs outside the lock
    (two threads may both build on a cold cache; one result is kept) and an entry built from a
    version that changed meanwhile is returned but not kept."""

    def __init__(self, version_key: Callable[[], tuple]):
        self._version_key = version_key
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._items: dict[str, Any] = {}
        self._sizes: dict[str, Callable[[Any], int]] = {}
        self.hits = self.misses = self.resets = 0

    def _move_to(self, key: tuple) -> None:
        # the caller holds the lock; the key was read before taking it (reading it takes the
        # database's lock, which a reader in a snapshot may hold while it asks this cache)
        if key != self._key:
            if self._items:
                self.resets += 1
            self._items.clear()
            self._key = key

    def get(self, name: str, build: Callable[[], T], size: Callable[[T], int] | None = None) -> T:
        """The entry `name` for the index as it is now, built by `build()` if missing. `size`
        tells stats how many items (terms, vectors, names) the entry holds."""
        key = self._version_key()
        with self._lock:
            self._move_to(key)
            if name in self._items:
                self.hits += 1
                return self._items[name]
            self.misses += 1
        value = build()
        with self._lock:
            if self._key == key:
                value = self._items.setdefault(name, value)
                if size is not None:
                    self._sizes[name] = size
        return value

    def peek(self, name: str) -> Any | None:
        """The entry if it is built for the index as it is now, else None (never builds)."""
        key = self._version_key()
        with self._lock:
            self._move_to(key)
            return self._items.get(name)

    def clear(self) -> None:
        """Drop every entry now (the next `get` builds afresh)."""
        with self._lock:
            self._items.clear()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            entries = {n: (self._sizes[n](v) if n in self._sizes else None) for n, v in self._items.items()}
            return {"entries": entries, "hits": self.hits, "misses": self.misses, "resets": self.resets}
