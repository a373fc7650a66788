"""A tool as shown: the one shape every view of a tool starts from (list, search, similar, describe,
serve's answers). `ToolCard` is what names a tool on screen; `ToolSummary` adds enough to choose
it; each view extends one of them with its own fields (search's `Hit`, describe's `Description`),
so the same field has the same name and meaning everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .tooldoc import first_line

_S = TypeVar("_S", bound="ToolSummary")

# serve's compact item (list_tools): what an agent needs to choose, empty values left out
COMPACT_KEYS = ("id", "title", "description", "params", "read_only", "destructive", "stale", "usage")


@dataclass
class ToolCard:
    """A tool as one line shows it: its id (`server/name`), title and description."""

    id: str
    server: str
    name: str
    title: str | None
    description: str  # the first line, except where a view says (describe: the whole text)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "server": self.server,
            "name": self.name,
            "title": self.title,
            "description": self.description,
        }


@dataclass
class ToolSummary(ToolCard):
    """A tool as list shows it: enough to choose, not to call (see describe)."""

    tags: list[str]
    category: str | None
    params: list[str]
    read_only: bool | None
    destructive: bool | None
    stale: bool

    @classmethod
    def from_row(cls: type[_S], row: Mapping[str, Any]) -> _S:
        """From an index row (store.catalog, store.tools), the description cut to its first line."""
        return cls(
            id=row["id"],
            server=row["server"],
            name=row["name"],
            title=row.get("title"),
            description=first_line(row.get("description")),
            tags=row.get("tags") or [],
            category=row.get("category"),
            params=row.get("param_names") or [],
            read_only=row.get("read_only"),
            destructive=row.get("destructive"),
            stale=bool(row.get("stale")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **super().to_json(),
            "tags": self.tags,
            "category": self.category,
            "params": self.params,
            "read_only": self.read_only,
            "destructive": self.destructive,
            "stale": self.stale,
        }


def compact(item: Mapping[str, Any]) -> dict[str, Any]:
    """A listed tool's JSON (`ToolSummary.to_json()`, usage included) as serve's list_tools sends
    it: COMPACT_KEYS with None, "" and False left out."""
    return {k: item[k] for k in COMPACT_KEYS if item.get(k) not in (None, "", False)}
