"""What one crawl of one server produced: the hand-off from crawl (and tools_file) to the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .config import ServerSpec


@dataclass
class ServerResult:
    spec: ServerSpec
    status: str  # "ok" | "failed"
    started_at: str  # ISO 8601 UTC
    duration_ms: float = 0.0
    error: str | None = None
    stderr_tail: str | None = None
    server_name: str | None = None
    server_title: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    instructions: str | None = None
    capabilities: dict[str, Any] | None = None
    tools: list[dict] = field(default_factory=list)  # valid tools, wire JSON as sent
    invalid_tools: list[dict] = field(default_factory=list)  # [{"name", "reason"}]

    @property
    def ok(self) -> bool:
        return self.status == "ok"
