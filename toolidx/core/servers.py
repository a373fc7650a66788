"""A configured server (`ServerSpec`) and what one crawl of it produced (`ServerResult`): the
hand-off from crawl (live servers and tools_file) to the store, and from the config to serve's backends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT = 30.0



@dataclass
class ServerSpec:
    name: str
    transport: str  # stdio | http | sse | tools_file
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # expanded: secrets, never stored
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # expanded: secrets, never stored
    tools_file: str | None = None
    tags: list[str] = field(default_factory=list)
    category: str | None = None  # the config's `category:` for every tool (wins over the taxonomy)
    tool_categories: dict[str, str] = field(default_factory=dict)  # `tool_categories:` per tool name
    timeout: float = DEFAULT_TIMEOUT
    enabled: bool = True
    problem: str | None = None  # a reason it cannot be started (e.g. an unset ${VAR}); crawl reports it
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # as written, unexpanded

    def public(self) -> dict[str, Any]:
        """How to reach this server, safe to store: env/header *names* only, templates unexpanded."""
        r = self.raw
        out: dict[str, Any] = {"transport": self.transport}
        if self.transport == "stdio":
            out.update(command=r.get("command"), args=list(r.get("args") or []), cwd=r.get("cwd"))
        elif self.transport in ("http", "sse"):
            out["url"] = r.get("url")
        else:
            out["tools_file"] = self.tools_file
        if self.env:
            out["env_keys"] = sorted(self.env)
        if self.headers:
            out["header_keys"] = sorted(self.headers)
        out["timeout"] = self.timeout
        return out


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
