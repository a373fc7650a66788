"""The MCP servers the clients on this machine already use (`toolidx crawl --from CLIENTS`): each
client's usual config files, per OS, read as they are, merged into one crawl config.

A server that several files list with the same launch line (command and arguments, URL, or tools
file) is crawled once, under the name the first file gives it; two different servers that share
a name keep both, the later one named `NAME-CLIENT`. What was read, and what was merged, is part
of the result so the CLI can say it.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, UsageError
from ..core.servers import ServerSpec
from .config import Config, build_config, parse_text

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")


def _app_dirs(home: Path, environ: dict[str, str], system: str) -> list[Path]:
    """Where desktop apps keep their settings on this OS."""
    if system == "darwin":
        return [home / "Library" / "Application Support"]
    if system == "win32":
        return [Path(environ["APPDATA"])] if environ.get("APPDATA") else [home / "AppData" / "Roaming"]
    return [Path(environ["XDG_CONFIG_HOME"])] if environ.get("XDG_CONFIG_HOME") else [home / ".config"]


def candidate_files(client: str, home: Path, cwd: Path, environ: dict[str, str], system: str) -> list[tuple[Path, str]]:
    """(path, kind) of each file `client` may keep servers in, user-wide first, then this project's.
    kind: "servers" (an `mcpServers`/`servers` file), "claude.json" (Claude Code's own state
    file), "vscode-settings" (VS Code's settings.json, servers under `mcp.servers`)."""
    apps = _app_dirs(home, environ, system)
    if client == "claude-desktop":
        return [(a / "Claude" / "claude_desktop_config.json", "servers") for a in apps]
    if client == "claude-code":
        return [(home / ".claude.json", "claude.json"), (cwd / ".mcp.json", "servers")]
    if client == "cursor":
        return [(home / ".cursor" / "mcp.json", "servers"), (cwd / ".cursor" / "mcp.json", "servers")]
    if client == "vscode":
        users = [a / "Code" / "User" for a in apps]
        return [
            *((u / "mcp.json", "servers") for u in users),
            *((u / "settings.json", "vscode-settings") for u in users),
            (cwd / ".vscode" / "mcp.json", "servers"),
        ]
    raise UsageError(f"unknown client {client!r}", fix=f"use one or more of: {', '.join(CLIENTS)} (or all)")


# JSON with comments and trailing commas (VS Code's files): strings kept, comments and commas dropped
_JSONC = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.S)


def _blocks(path: Path, kind: str, cwd: Path) -> list[dict]:
    """The server mappings a file holds (as `{"mcpServers": {...}}` configs)."""
    text = path.read_text(encoding="utf-8")
    if kind != "claude.json":
        text = _JSONC.sub(lambda m: m.group(1) or "", text)
    data = parse_text(text, str(path), is_json=True)
    if not isinstance(data, dict):
        return []
    if kind == "vscode-settings":
        mcp = data.get("mcp")
        return [{"servers": mcp["servers"]}] if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict) else []
    if kind == "claude.json":  # user scope at the top, local scope per project folder
        out = [{"mcpServers": data["mcpServers"]}] if isinstance(data.get("mcpServers"), dict) else []
        project = (data.get("projects") or {}).get(str(cwd))
        if isinstance(project, dict) and isinstance(project.get("mcpServers"), dict) and project["mcpServers"]:
            out.append({"mcpServers": project["mcpServers"]})
        return out
    return [data] if isinstance(data.get("mcpServers", data.get("servers")), dict) else []


def launch_line(spec: ServerSpec) -> tuple:
    """What makes two entries the same server: how it is started or reached."""
    return (spec.transport, spec.command, tuple(spec.args), spec.url, spec.tools_file, spec.cwd)


@dataclass
class ClientFile:
    client: str
    path: str
    servers: list[str]  # as this file names them
    error: str | None = None  # the file is there but could not be read: its servers are left out

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, "path": self.path, "servers": self.servers, "error": self.error}


@dataclass
class ClientConfigs:
    """What `crawl --from` found: one config of every server, the files read, the duplicates."""

    config: Config
    files: list[ClientFile] = field(default_factory=list)
    looked_in: list[str] = field(default_factory=list)  # every path tried, found or not
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # kept name -> "client: name" also listing it
    renamed: dict[str, str] = field(default_factory=dict)  # new name -> "client: name" (a name two servers had)


def parse_clients(text: str) -> list[str]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names or names == ["all"]:
        return list(CLIENTS)
    unknown = [n for n in names if n not in CLIENTS]
    if unknown:
        raise UsageError(
            f"unknown client {', '.join(map(repr, unknown))} in --from", fix=f"use {', '.join(CLIENTS)} or all"
        )
    return names


def from_clients(
    clients: list[str],
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    environ: dict[str, str] | None = None,
    system: str | None = None,
) -> ClientConfigs:
    """One crawl config of the servers `clients` list in their usual files on this machine."""
    environ = dict(os.environ if environ is None else environ)
    home = home or Path(environ.get("HOME") or environ.get("USERPROFILE") or Path.home())
    cwd = (cwd or Path.cwd()).resolve()
    system = system or sys.platform
    # its identity in a shared index (servers.owner): a `--from` crawl prunes only what `--from` of
    # the same clients crawled, never a --config crawl's servers
    found = ClientConfigs(Config(path=None, servers=[], settings={"owner": "--from " + ",".join(clients)}))
    by_line: dict[tuple, ServerSpec] = {}
    names: set[str] = set()
    seen: set[Path] = set()  # run from the home folder, ~/.cursor/mcp.json is also the project's
    for client in clients:
        for path, kind in candidate_files(client, home, cwd, environ, system):
            found.looked_in.append(str(path))
            if not path.is_file() or path.resolve() in seen:
                continue
            seen.add(path.resolve())
            entry = ClientFile(client, str(path), [])
            found.files.append(entry)
            try:
                specs = [
                    s
                    for block in _blocks(path, kind, cwd)
                    for s in build_config(block, str(path), base_dir=path.parent, environ=environ).servers
                ]
            except (ConfigError, OSError, UnicodeDecodeError) as e:
                entry.error = str(e)
                continue
            for spec in specs:
                entry.servers.append(spec.name)
                same = by_line.get(launch_line(spec))
                if same is not None:
                    found.duplicates.setdefault(same.name, []).append(f"{client}: {spec.name}")
                    continue
                if spec.name in names:
                    new = f"{spec.name}-{client}"
                    found.renamed[new] = f"{client}: {spec.name}"
                    spec.name = new
                names.add(spec.name)
                by_line[launch_line(spec)] = spec
                found.config.servers.append(spec)
    if not found.config.servers:
        read = [f.path for f in found.files]
        raise UsageError(
            f"no MCP servers found in the configs of {', '.join(clients)}"
            + (f" (read {', '.join(read)})" if read else ""),
            fix="pass --config PATH to an mcpServers file (looked in: " + ", ".join(found.looked_in) + ")",
        )
    return found
