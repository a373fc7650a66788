"""`Index`: what the rest of toolidx may ask of an open index, whatever holds it. `db.Database` (a
SQLite file) is one; another backend offers the same members. Its `conn`, `lock` and `module` are
SQLite's own and stay inside store/ (store.retrieval borrows `module` for its in-memory query tokenizer)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from .cache import IndexCache


@runtime_checkable
class Index(Protocol):
    path: str  # where it is, as errors name it
    vec_available: bool  # whether vector search can run on it
    vec_error: str | None  # why not
    cache: IndexCache  # what readers derive from it, valid while version_key() is unchanged

    def execute(self, sql: str, params: Any = ()) -> Any: ...

    def query(self, sql: str, params: Any = ()) -> list[dict]: ...

    def one(self, sql: str, params: Any = ()) -> dict | None: ...

    def scalar(self, sql: str, params: Any = ()) -> Any: ...

    def transaction(self) -> AbstractContextManager[Any]:
        """One write transaction: readers see all of it or none of it."""
        ...

    def snapshot(self) -> AbstractContextManager[Any]:
        """A read transaction: several queries see the same committed index."""
        ...

    def get_meta(self, key: str, default: str | None = None) -> str | None: ...

    def set_meta(self, key: str, value: str | None) -> None: ...

    def data_version(self) -> int:
        """Changes whenever another connection commits."""
        ...

    def version_key(self) -> tuple:
        """Equal only while the index is unchanged."""
        ...

    def close(self) -> None: ...
