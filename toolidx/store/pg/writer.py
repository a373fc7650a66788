"""What a catalog in PostgreSQL writes its own way (store/writer.py's `Writer`): the keyword index as
the postings of FTS5's own tokens (`tool_terms`, `tool_docsize`, written by COPY), the vectors in
pgvector's vector(dim) with an HNSW index or in real[] where pgvector is missing,
information_schema, the identities a merge moves past its rows, and the JSON columns parsed in
Python (PostgreSQL 15 cannot test text for JSON without failing the statement)."""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..base import in_chunks
from ..writer import VECTOR_TABLE, Writer

if TYPE_CHECKING:
    from .database import PgDatabase


def pg_value(db: PgDatabase, blob: bytes) -> tuple[str, Any]:
    """(the SQL cast, the parameter) of a float32 blob: pgvector's text form, or a real[] where
    pgvector is missing."""
    values = array("f", blob).tolist()
    if db.vec_kind == "vector":
        return "::vector", "[" + ",".join(map(repr, values)) + "]"
    return "::real[]", values


class PgWriter(Writer):
    db: PgDatabase

    def table_exists(self, name: str) -> bool:
        return (
            self.db.scalar(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
                (self.db.schema, name),
            )
            is not None
        )

    def create_vector_table(self, dim: int) -> None:
        if self.db.vec_kind == "vector":
            self.db.execute(
                f"CREATE TABLE {VECTOR_TABLE} (rowid BIGINT PRIMARY KEY REFERENCES tools(rowid) ON DELETE CASCADE, "
                f"embedding vector({int(dim)}) NOT NULL)"
            )
            self.db.execute(
                f"CREATE INDEX {VECTOR_TABLE}_hnsw ON {VECTOR_TABLE} USING hnsw (embedding vector_cosine_ops)"
            )
        else:
            self.db.execute(
                f"CREATE TABLE {VECTOR_TABLE} (rowid BIGINT PRIMARY KEY REFERENCES tools(rowid) ON DELETE CASCADE, "
                "embedding real[] NOT NULL)"
            )

    def put_vector(self, rowid: int, blob: bytes) -> None:
        cast, value = pg_value(self.db, blob)
        self.db.execute(
            f"INSERT INTO {VECTOR_TABLE}(rowid, embedding) VALUES (?, ?{cast}) "
            "ON CONFLICT (rowid) DO UPDATE SET embedding = excluded.embedding",
            (rowid, value),
        )

    def vector(self, rowid: int) -> bytes | None:
        values = self.db.scalar(f"SELECT embedding::real[] FROM {VECTOR_TABLE} WHERE rowid = ?", (rowid,))
        return None if values is None else array("f", values).tobytes()

    def put_keywords(self, rows: list[tuple[int, dict[str, str]]]) -> None:
        from ..keywords import tokenizer

        self.delete_keywords([r for r, _ in rows])
        terms, sizes = tokenizer().postings(rows)
        length = dict(sizes)
        self._copy("tool_terms (term, rowid, col, n, len)", ((*t, length[t[1]]) for t in terms))
        self._copy("tool_docsize (rowid, len)", sizes)

    def _copy(self, target: str, rows: Iterable[tuple]) -> None:
        """COPY: a crawl of 10k tools writes ~1M postings, 20x faster than INSERTs."""
        raw: Any = self.db.conn.raw
        with self.db.lock, raw.cursor() as cur, cur.copy(f"COPY {target} FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        self.db.conn.total_changes += 1

    def delete_keywords(self, rowids: list[int]) -> None:
        for marks, chunk in in_chunks(rowids):
            self.db.execute(f"DELETE FROM tool_terms WHERE rowid IN ({marks})", chunk)
            self.db.execute(f"DELETE FROM tool_docsize WHERE rowid IN ({marks})", chunk)

    def name_matches(self, column: str, pattern: str) -> tuple[str, list[Any]]:
        # RE2 on both engines: PostgreSQL's ~* is another dialect (\\b, \\z, (?P<n>), \\pL, counts
        # over 255), so its names are matched here and the condition names them
        from ..tools import names_matching

        return f"{column} IN (SELECT nm.value FROM {self.db.sql.json_each('?', 'nm')})", [
            json.dumps(names_matching(self.db, pattern))
        ]

    def columns(self, table: str) -> list[str]:
        return [
            r["column_name"]
            for r in self.db.query(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position",
                (self.db.schema, table),
            )
        ]

    @property
    def written_order(self) -> dict[str, str]:
        # PostgreSQL's tables have no rowid, but these keys order them as written
        return {"servers": "name", "crawl_servers": "crawl_id, server", "crawl_tools": "crawl_id, tool_id"}

    def after_merge(self) -> None:
        """Merged rows carry ids from 1, as in a new file. An identity's next value is moved past
        them with setval (never back: setval outlives a rollback, and the old rows would then come
        back with ids the sequence hands out again), not ALTER ... RESTART (an exclusive lock)."""
        for table, column in (("crawls", "id"), ("tools", "rowid")):
            seq = f"pg_get_serial_sequence('{table}', '{column}')"
            self.db.execute(f"SELECT setval({seq}, GREATEST((SELECT max({column}) FROM {table}), nextval({seq})))")

    def malformed_row(self) -> str | None:
        from ..merge import malformed_parsed

        return malformed_parsed(self.db)

    def integrity(self) -> tuple[int, bool, list[str]]:
        """meta holds what a file's PRAGMAs hold; PostgreSQL checks its own pages, so what is
        missing is tools the keyword index lacks."""
        version = int(self.db.get_meta("schema_version") or 0)
        missing = int(
            self.db.scalar(
                "SELECT count(*) FROM tools t WHERE NOT EXISTS (SELECT 1 FROM tool_docsize d WHERE d.rowid = t.rowid)"
            )
        )
        problems = [f"{missing} tool(s) missing from the keyword index (crawl again)"] if missing else ["ok"]
        return version, self.db.get_meta("application") == "toolidx", problems

    def engine_facts(self) -> dict[str, Any]:
        installed = self.db.scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        available = self.db.scalar("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        kind = self.db.vec_kind
        return {
            "engine": "postgres",
            "version": self.db.scalar("SHOW server_version"),
            "vector": "pgvector" if kind == "vector" else "real[]" if kind else None,
            "vector_version": installed,
            "pgvector_available": available,
        }
