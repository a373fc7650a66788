"""What the two engines spell differently, asked of the open database (`db.sql`) by the store
module writing the statement: every other statement is written once, in the SQL both speak
(SQLite >= 3.35: `ON CONFLICT ... DO UPDATE SET c = excluded.c`, `RETURNING`, `TRUE`). Nothing
rewrites a statement after it is written; store/pg/database.py only turns `?` into psycopg's `%s`."""

from __future__ import annotations

from abc import ABC, abstractmethod


class Dialect(ABC):
    """How one engine spells what the two write differently."""

    # the `LIMIT ?` parameter that keeps every row
    every_row: int | None

    @abstractmethod
    def by_code(self, expr: str) -> str:
        """`expr` ordered by code point, as Python orders strings."""

    @abstractmethod
    def json_each(self, expr: str, alias: str) -> str:
        """A FROM item: the text elements of the JSON array `expr`, as `alias.value`."""

    @abstractmethod
    def strpos(self, text: str, part: str) -> str:
        """Where `part` first occurs in `text`, from 1; 0 when it does not."""

    @abstractmethod
    def json_has(self, expr: str, key: str) -> str:
        """Whether the JSON object `expr` has the member `key` (whatever its value, null too)."""

    @abstractmethod
    def json_members(self, expr: str, key: str, alias: str) -> str:
        """A FROM item: the members of the object at `key` of the JSON object `expr` (none when it
        is not an object), as `alias.value`; test a member with `member_is_object(alias)`."""

    @abstractmethod
    def member_is_object(self, alias: str) -> str: ...


class SqliteSql(Dialect):
    """SQLite's spellings (an index file, the usage file)."""

    every_row = -1

    def by_code(self, expr: str) -> str:
        return expr  # SQLite's BINARY already orders so

    def json_each(self, expr: str, alias: str) -> str:
        return f"json_each({expr}) AS {alias}"

    def strpos(self, text: str, part: str) -> str:
        return f"instr({text}, {part})"

    def json_has(self, expr: str, key: str) -> str:
        return f"json_type({expr}, '$.{key}') IS NOT NULL"

    def json_members(self, expr: str, key: str, alias: str) -> str:
        return f"json_each(CASE json_type({expr}, '$.{key}') WHEN 'object' THEN {expr} END, '$.{key}') AS {alias}"

    def member_is_object(self, alias: str) -> str:
        return f"{alias}.type = 'object'"


class PgSql(Dialect):
    """PostgreSQL's spellings (store/pg/): the JSON columns are text, read as jsonb."""

    every_row = None  # LIMIT NULL is LIMIT ALL

    def by_code(self, expr: str) -> str:
        return f'{expr} COLLATE "C"'

    def json_each(self, expr: str, alias: str) -> str:
        return f"jsonb_array_elements_text(({expr})::jsonb) AS {alias}(value)"

    def strpos(self, text: str, part: str) -> str:
        return f"strpos({text}, {part})"

    def json_has(self, expr: str, key: str) -> str:
        return f"(({expr})::jsonb -> '{key}') IS NOT NULL"

    def json_members(self, expr: str, key: str, alias: str) -> str:
        at = f"(({expr})::jsonb -> '{key}')"
        return f"jsonb_each(CASE jsonb_typeof({at}) WHEN 'object' THEN {at} END) AS {alias}(key, value)"

    def member_is_object(self, alias: str) -> str:
        return f"jsonb_typeof({alias}.value) = 'object'"


SQLITE = SqliteSql()
POSTGRES = PgSql()
