"""What an index file writes its own way (store/writer.py's `Writer`): FTS5's tools_fts, sqlite-vec's
vec0 table, sqlite_master and PRAGMA; the JSON columns checked by SQLite's json_valid."""

from __future__ import annotations

from typing import Any

from ..writer import VECTOR_TABLE, Writer
from .migrations import APPLICATION_ID


class SqliteWriter(Writer):
    def table_exists(self, name: str) -> bool:
        return self.db.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)) is not None

    def create_vector_table(self, dim: int) -> None:
        self.db.execute(
            f"CREATE VIRTUAL TABLE {VECTOR_TABLE} USING vec0(embedding float[{dim}] distance_metric=cosine)"
        )

    def put_vector(self, rowid: int, blob: bytes) -> None:
        # vec0 has no UPSERT
        self.db.execute(f"DELETE FROM {VECTOR_TABLE} WHERE rowid = ?", (rowid,))
        self.db.execute(f"INSERT INTO {VECTOR_TABLE}(rowid, embedding) VALUES (?, ?)", (rowid, blob))

    def vector(self, rowid: int) -> bytes | None:
        return self.db.scalar(f"SELECT embedding FROM {VECTOR_TABLE} WHERE rowid = ?", (rowid,))

    def put_keywords(self, rows: list[tuple[int, dict[str, str]]]) -> None:
        for rowid, fts in rows:
            self.db.execute("DELETE FROM tools_fts WHERE rowid = ?", (rowid,))
            self.db.execute(
                f"INSERT INTO tools_fts(rowid, {', '.join(fts)}) VALUES (?, {', '.join('?' * len(fts))})",
                [rowid, *fts.values()],
            )

    def delete_keywords(self, rowids: list[int]) -> None:
        for r in rowids:
            self.db.execute("DELETE FROM tools_fts WHERE rowid = ?", (r,))

    def name_matches(self, column: str, pattern: str) -> tuple[str, list[Any]]:
        return f"{column} REGEXP ?", [pattern]  # regexp(), registered on every connection by sqlite.database

    def columns(self, table: str) -> list[str]:
        return [r["name"] for r in self.db.query(f"PRAGMA table_info({table})")]

    @property
    def written_order(self) -> dict[str, str]:
        return {"servers": "rowid", "crawl_servers": "crawl_id, rowid", "crawl_tools": "crawl_id, rowid"}

    def after_merge(self) -> None:
        """Nothing: a merged file is new, its ids are its own."""

    def malformed_row(self) -> str | None:
        server = self.db.one(_MALFORMED_SERVER)
        if server is not None:
            return f"server {server['name']!r}: {server['why']}"
        tool = self.db.one(_MALFORMED_TOOL)
        return f"tool {tool['id']!r}: {tool['why']}" if tool is not None else None

    def integrity(self) -> tuple[int, bool, list[str]]:
        version = int(self.db.scalar("PRAGMA user_version"))
        ours = int(self.db.scalar("PRAGMA application_id")) == APPLICATION_ID
        return version, ours, [r[0] for r in self.db.execute("PRAGMA quick_check(5)").fetchall()]

    def content_digest(self, key: bytes, skip_meta: list[str]) -> str:
        from .content import digest

        return digest(self.db, key, skip_meta)

    def engine_facts(self) -> dict[str, Any]:
        vec = self.db.scalar("SELECT vec_version()") if self.db.vec_available else None
        return {
            "engine": "sqlite",
            "version": self.db.scalar("SELECT sqlite_version()"),
            "vector": "sqlite-vec" if vec else None,
            "vector_version": vec,
            "pgvector_available": None,
        }


# JSON columns an input's rows must hold for the merge (and every reader of its output) to parse
# them: the first row that does not, with why (store/merge.py's malformed_parsed applies the same
# rules in Python to PostgreSQL's rows). CASE stops at the first true branch, so json_each only ever
# sees valid JSON.
_MALFORMED_TOOL = """
SELECT id, CASE
    WHEN definition IS NULL OR NOT json_valid(definition) THEN 'its definition is not JSON'
    WHEN json_type(definition) != 'object' THEN 'its definition is not a JSON object'
    WHEN tags IS NULL OR NOT json_valid(tags) THEN 'its tags are not JSON'
    WHEN json_type(tags) != 'array' THEN 'its tags are not a JSON array'
    WHEN EXISTS (SELECT 1 FROM json_each(tools.tags) WHERE type != 'text') THEN 'its tags are not all strings'
    WHEN param_names IS NULL OR NOT json_valid(param_names) THEN 'its param_names are not JSON'
    WHEN input_schema IS NOT NULL AND NOT json_valid(input_schema) THEN 'its input_schema is not JSON'
    WHEN output_schema IS NOT NULL AND NOT json_valid(output_schema) THEN 'its output_schema is not JSON'
    WHEN annotations IS NOT NULL AND NOT json_valid(annotations) THEN 'its annotations are not JSON'
    WHEN icons IS NOT NULL AND NOT json_valid(icons) THEN 'its icons are not JSON'
    WHEN meta IS NOT NULL AND NOT json_valid(meta) THEN 'its _meta is not JSON'
    END AS why
FROM tools WHERE why IS NOT NULL ORDER BY rowid LIMIT 1
"""
_MALFORMED_SERVER = """
SELECT name, CASE
    WHEN tags IS NULL OR NOT json_valid(tags) OR json_type(tags) != 'array' THEN 'its tags are not a JSON array'
    WHEN invalid_tools IS NULL OR NOT json_valid(invalid_tools) THEN 'its invalid_tools are not JSON'
    WHEN connect IS NOT NULL AND NOT json_valid(connect) THEN 'its connect record is not JSON'
    WHEN capabilities IS NOT NULL AND NOT json_valid(capabilities) THEN 'its capabilities are not JSON'
    END AS why
FROM servers WHERE why IS NOT NULL ORDER BY rowid LIMIT 1
"""
