"""The MCP servers the clients on this machine already use (`toolidx crawl --from CLIENTS`): each
client's usual config files, per OS, read as they are, merged into one crawl config.

A server that several files list with the same launch line (command and arguments, URL, or tools
file) is crawled once, under the name the first file gives it; two different servers that share
a name keep both, the later one named `NAME-CLIENT`. What was read, and what was merged, is part
of the result so the CLI can say it.

The files in the folder it runs in (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`) came with
that folder (a clone, a download): they are listed and skipped, never run, unless the user names
each one for this run (`trust_folder`, the CLI's `--trust-folder-config PATH`). Even then such a
file may not read the user's environment (`build_config(..., folder_config=True)`), and a server
the user declined in Claude Code (`disabledMcpjsonServers`) is never crawled. The user's own files
(under HOME, and the per-project section Claude Code keeps in ~/.claude.json) are crawled as they are.
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
FOLDER = "folder"  # a file of the folder toolidx runs in: it came with the folder, not from the user


def _app_dirs(home: Path, environ: dict[str, str], system: str) -> list[Path]:
    """Where desktop apps keep their settings on this OS."""
    if system == "darwin":
        return [home / "Library" / "Application Support"]
    if system == "win32":
        return [Path(environ["APPDATA"])] if environ.get("APPDATA") else [home / "AppData" / "Roaming"]
    return [Path(environ["XDG_CONFIG_HOME"])] if environ.get("XDG_CONFIG_HOME") else [home / ".config"]


def candidate_files(client: str, home: Path, cwd: Path, environ: dict[str, str], system: str) -> list[tuple[Path, str]]:
    """(path, kind) of each file `client` may keep servers in, user-wide first, then this project's.
    kind: "servers" (an `mcpServers`/`servers` file of the user's), "folder" (the same shape, in
    the folder toolidx runs in: it came with the folder), "claude.json" (Claude Code's own state
    file), "vscode-settings" (VS Code's settings.json, servers under `mcp.servers`)."""
    apps = _app_dirs(home, environ, system)
    if client == "claude-desktop":
        return [(a / "Claude" / "claude_desktop_config.json", "servers") for a in apps]
    if client == "claude-code":
        return [(home / ".claude.json", "claude.json"), (cwd / ".mcp.json", FOLDER)]
    if client == "cursor":
        return [(home / ".cursor" / "mcp.json", "servers"), (cwd / ".cursor" / "mcp.json", FOLDER)]
    if client == "vscode":
        users = [a / "Code" / "User" for a in apps]
        return [
            *((u / "mcp.json", "servers") for u in users),
            *((u / "settings.json", "vscode-settings") for u in users),
            (cwd / ".vscode" / "mcp.json", FOLDER),
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
        project = _project(data, cwd)
        if isinstance(project.get("mcpServers"), dict) and project["mcpServers"]:
            out.append({"mcpServers": project["mcpServers"], "_scope": "project"})
        return out
    return [data] if isinstance(data.get("mcpServers", data.get("servers")), dict) else []


def _project(claude_json: Any, cwd: Path) -> dict:
    """~/.claude.json's section for the project folder `cwd` (Claude Code's local scope)."""
    projects = claude_json.get("projects") if isinstance(claude_json, dict) else None
    project = projects.get(str(cwd)) if isinstance(projects, dict) else None
    return project if isinstance(project, dict) else {}


def _read_json(path: Path) -> Any:
    try:
        return parse_text(path.read_text(encoding="utf-8"), str(path), is_json=True) if path.is_file() else None
    except (ConfigError, OSError, UnicodeDecodeError):
        return None


def declined_mcpjson(home: Path, cwd: Path) -> dict[str, str]:
    """The `.mcp.json` servers the user declined in Claude Code (`disabledMcpjsonServers`): name ->
    the file that says so. Claude Code keeps the answer in ~/.claude.json's project section (and
    settings files may list more); a decline from any of them holds, since it only ever runs less.
    An approval (`enabledMcpjsonServers`, `enableAllProjectMcpServers`) is not an opt-in here: it
    names a server, not what the file says today, which a `git pull` may have changed."""
    out: dict[str, str] = {}
    claude = home / ".claude.json"
    sources = [(claude, _project(_read_json(claude), cwd)), (claude, _read_json(claude))]
    for settings in (
        home / ".claude" / "settings.json",
        cwd / ".claude" / "settings.json",
        cwd / ".claude" / "settings.local.json",
    ):
        sources.append((settings, _read_json(settings)))
    for path, data in sources:
        names = data.get("disabledMcpjsonServers") if isinstance(data, dict) else None
        for name in names if isinstance(names, list) else []:
            if isinstance(name, str):
                out.setdefault(name, str(path))
    return out


def launch_line(spec: ServerSpec) -> tuple:
    """What makes two entries the same server: how it is started or reached."""
    return (spec.transport, spec.command, tuple(spec.args), spec.url, spec.tools_file, spec.cwd)


@dataclass
class ClientFile:
    client: str
    path: str
    servers: list[str]  # as this file names them
    error: str | None = None  # the file is there but could not be read: its servers are left out
    folder: bool = False  # a file of the folder toolidx ran in (it came with the folder)
    skipped: bool = False  # a folder file the user did not name for this run: nothing in it ran
    declined: dict[str, str] = field(default_factory=dict)  # server -> the file where the user declined it

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "path": self.path,
            "servers": self.servers,
            "error": self.error,
            "folder": self.folder,
            "skipped": self.skipped,
            "declined": self.declined,
        }


@dataclass
class ClientConfigs:
    """What `crawl --from` found: one config of every server, the files read, the duplicates."""

    config: Config
    files: list[ClientFile] = field(default_factory=list)
    looked_in: list[str] = field(default_factory=list)  # every path tried, found or not
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # kept name -> "client: name" also listing it
    renamed: dict[str, str] = field(default_factory=dict)  # new name -> "client: name" (a name two servers had)
    clients: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> list[ClientFile]:
        """The folder's files left out (the user did not name them): the CLI says how to opt in."""
        return [f for f in self.files if f.skipped]

    def to_json(self) -> dict[str, Any]:
        return {
            "clients": self.clients,
            "files": [f.to_json() for f in self.files],
            "duplicates": self.duplicates,
            "renamed": self.renamed,
        }


def parse_clients(text: str) -> list[str]:
    """The clients `--from` names, in CLIENTS' order, each once: `cursor,vscode` and `vscode,cursor`
    are one set, so one owner in a shared index (`owner`)."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names or "all" in names:
        return list(CLIENTS)
    unknown = [n for n in names if n not in CLIENTS]
    if unknown:
        raise UsageError(
            f"unknown client {', '.join(map(repr, unknown))} in --from", fix=f"use {', '.join(CLIENTS)} or all"
        )
    return [c for c in CLIENTS if c in names]


OWNER_PREFIX = "--from "


def owner(clients: list[str]) -> str:
    """A `--from` crawl's identity in a shared index (servers.owner): it prunes only what `--from` of
    the same clients crawled, never a --config crawl's servers; a plain `crawl` re-crawls it."""
    return OWNER_PREFIX + ",".join(c for c in CLIENTS if c in clients)


def owner_clients(owner_name: str | None) -> list[str] | None:
    """The clients a `--from` crawl's owner names (in any order it was ever written), or None when
    `owner_name` is not a `--from` crawl's."""
    if not isinstance(owner_name, str) or not owner_name.startswith(OWNER_PREFIX):
        return None
    names = [n.strip() for n in owner_name[len(OWNER_PREFIX) :].split(",")]
    return [c for c in CLIENTS if c in names] if names and all(n in CLIENTS for n in names) else None


def from_clients(
    clients: list[str],
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    environ: dict[str, str] | None = None,
    system: str | None = None,
    trust_folder: list[str | os.PathLike] | None = None,
) -> ClientConfigs:
    """One crawl config of the servers `clients` list in their usual files on this machine. The
    folder's own files are read only when `trust_folder` names them (see the module docstring)."""
    environ = dict(os.environ if environ is None else environ)
    home = home or Path(environ.get("HOME") or environ.get("USERPROFILE") or Path.home())
    cwd = (cwd or Path.cwd()).resolve()
    system = system or sys.platform
    clients = [c for c in CLIENTS if c in clients]
    named = {_key(p) for p in trust_folder or []}
    found = ClientConfigs(Config(path=None, servers=[], settings={"owner": owner(clients)}), clients=clients)
    declined = declined_mcpjson(home, cwd) if "claude-code" in clients else {}
    by_line: dict[tuple, ServerSpec] = {}
    names: set[str] = set()
    seen: set[Path] = set()  # run from the home folder, ~/.cursor/mcp.json is also the project's
    folder_files: list[Path] = []
    for client in clients:
        for path, kind in candidate_files(client, home, cwd, environ, system):
            if str(path) not in found.looked_in:
                found.looked_in.append(str(path))
            if not path.is_file() or path.resolve() in seen:
                continue
            seen.add(path.resolve())
            folder = kind == FOLDER
            # a folder file the user did not name is listed, never run nor expanded (nor its envFile read)
            entry = ClientFile(client, str(path), [], folder=folder, skipped=folder and path.resolve() not in named)
            found.files.append(entry)
            if folder:
                folder_files.append(path.resolve())
            try:
                blocks = _blocks_at(path, kind, cwd)
                if entry.skipped:
                    entry.servers = [str(n) for b, _ in blocks for n in b.get("mcpServers") or b.get("servers") or {}]
                    continue
                specs = [
                    s
                    for block, base in blocks
                    for s in build_config(
                        block, str(path), base_dir=base, environ=environ, folder_config=folder
                    ).servers
                ]
            except (ConfigError, OSError, UnicodeDecodeError) as e:
                entry.error = str(e)
                continue
            for spec in specs:
                if folder and path.name == ".mcp.json" and spec.name in declined:
                    entry.declined[spec.name] = declined[spec.name]
                    continue
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
    stray = sorted(str(p) for p in named - set(folder_files))
    if stray:
        raise UsageError(
            f"--trust-folder-config {stray[0]} is not a config of {', '.join(clients)} in this folder",
            fix="name one of: "
            + (", ".join(map(str, folder_files)) or "(none found here)")
            + "; to crawl another file, pass --config FILE",
        )
    if not found.config.servers:
        read = [f.path for f in found.files if not f.skipped]
        skipped = [f.path for f in found.skipped]
        raise UsageError(
            f"no MCP servers found in the configs of {', '.join(clients)}"
            + (f" (read {', '.join(read)})" if read else "")
            + (f" (skipped this folder's {', '.join(skipped)})" if skipped else ""),
            fix=(
                f"to crawl a folder's config, name it: --trust-folder-config {skipped[0]}"
                if skipped
                else "pass --config PATH to an mcpServers file (looked in: " + ", ".join(found.looked_in) + ")"
            ),
        )
    return found


def _key(path: str | os.PathLike) -> Path:
    return Path(path).expanduser().resolve()


def _blocks_at(path: Path, kind: str, cwd: Path) -> list[tuple[dict, Path]]:
    """(block, the folder its relative paths and ${workspaceFolder} mean) for each server mapping
    of `path`: the file's folder; for ~/.claude.json's project section, the project's folder (the
    one Claude Code runs those servers in)."""
    blocks = _blocks(path, kind, cwd)
    if kind == "claude.json":
        user = [b for b in blocks if b.get("_scope") != "project"]
        return [(b, path.parent) for b in user] + [
            ({"mcpServers": b["mcpServers"]}, cwd) for b in blocks if b.get("_scope") == "project"
        ]
    return [(b, path.parent) for b in blocks]
