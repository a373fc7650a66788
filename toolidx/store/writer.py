"""What the store's modules ask of the engine that holds the index, where the two engines differ:
`Writer`, implemented once per engine beside its `Retrieval` (`sqlite.writer`: FTS5, sqlite-vec,
PRAGMA; `pg.writer`: the postings of FTS5's words, pgvector or real[], information_schema) and
picked once per open index (`db.writer`). The store's modules write everything else once, in the
SQL both engines speak (`db.sql`, store/dialect.py, spells the little they say differently); none
asks which engine it is on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .index import Index

VECTOR_TABLE = "tool_vectors"  # the tool embeddings, rowid = tools.rowid (store/vectors.py)


class Writer(ABC):
    """One open index's engine-specific statements: its tables, the vectors, the keyword index,
    a merge's engine parts and what doctor reports of the engine."""

    def __init__(self, db: Index):
        self.db = db

    @abstractmethod
    def table_exists(self, name: str) -> bool:
        """Whether the index has the table `name`."""

    def has_vectors(self) -> bool:
        """Whether the index has its vector table."""
        return self.table_exists(VECTOR_TABLE)

    # --- vectors (float32 blobs, cosine) ---------------------------------------------------------
    @abstractmethod
    def create_vector_table(self, dim: int) -> None:
        """The vector table for vectors of `dim` floats (none there)."""

    @abstractmethod
    def put_vector(self, rowid: int, blob: bytes) -> None:
        """Write one tool's vector, replacing the one it had."""

    @abstractmethod
    def vector(self, rowid: int) -> bytes | None:
        """One tool's vector (None: it has none). The table exists."""

    # --- the keyword index -----------------------------------------------------------------------
    @abstractmethod
    def put_keywords(self, rows: list[tuple[int, dict[str, str]]]) -> None:
        """Index (rowid, fts_row) pairs (store/keywords.py's FTS_COLUMNS), replacing what those
        tools had. Inside the writer's transaction."""

    @abstractmethod
    def delete_keywords(self, rowids: list[int]) -> None:
        """Drop these tools from the keyword index."""

    # --- filters ---------------------------------------------------------------------------------
    @abstractmethod
    def name_matches(self, column: str, pattern: str) -> tuple[str, list[Any]]:
        """(condition, parameters): `column` (a tool name) matches the RE2 `pattern`, the same
        on both engines (store/tools.py's `where`)."""

    # --- merge -----------------------------------------------------------------------------------
    @abstractmethod
    def columns(self, table: str) -> list[str]:
        """The columns of `table`, in order."""

    @property
    @abstractmethod
    def written_order(self) -> dict[str, str]:
        """The ORDER BY of servers, crawl_servers and crawl_tools that reads their rows in the
        order they were written."""

    @abstractmethod
    def after_merge(self) -> None:
        """What the engine needs once merged rows (ids from 1) are in."""

    @abstractmethod
    def malformed_row(self) -> str | None:
        """The first row whose JSON columns cannot be parsed ("tool s/t: its tags are not
        JSON"), or None (store/merge.py)."""

    # --- doctor ----------------------------------------------------------------------------------
    @abstractmethod
    def integrity(self) -> tuple[int, bool, list[str]]:
        """(the schema version, whether it is a toolidx index, ["ok"] or what is wrong)."""

    def content_digest(self, key: bytes, skip_meta: list[str]) -> str:
        """A keyed digest of everything the index holds (a sealed cache file: integrations/catalog.py);
        only a file has one."""
        raise NotImplementedError("only an index file is sealed")

    @abstractmethod
    def engine_facts(self) -> dict[str, Any]:
        """{"engine", "version", "vector", "vector_version", "pgvector_available"}
        (store/health.py's engine_facts)."""
