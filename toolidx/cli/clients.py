"""Client config entries for `toolidx serve` (Claude Desktop, Cursor, VS Code): what to paste so a
client starts this index's discovery server.

Paths are absolute (clients start servers from an unknown working directory), and the command is
the `toolidx` script next to the running Python when there is one, else `python -m toolidx`.
Secrets are never printed: the environment variables the crawl config references are named, and
the user adds their values to the entry.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import UsageError

CLIENTS = {
    "claude": {"key": "mcpServers", "where": [
        "macOS: ~/Library/Application Support/Claude/claude_desktop_config.json",
        "Windows: %APPDATA%\\Claude\\claude_desktop_config.json"]},
    "cursor": {"key": "mcpServers", "where": ["~/.cursor/mcp.json (all projects) or .cursor/mcp.json (one project)"]},
    "vscode": {"key": "servers", "where": [".vscode/mcp.json in the workspace (or the user mcp.json)"]},
}
_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def toolidx_command() -> list[str]:
    """How to start this toolidx: its console script if installed next to Python, else -m."""
    exe = Path(sys.executable)
    script = exe.parent / ("toolidx.exe" if os.name == "nt" else "toolidx")
    if script.is_file():
        return [str(script)]
    return [str(exe), "-m", "toolidx"]


def serve_args(db_path: str, *, config_path: str | None = None, servers: Sequence[str] = (),
               tags: Sequence[str] = (), categories: Sequence[str] = (), read_only: bool = False,
               expose_tools: bool = False, pins: Sequence[str] = (), max_tokens: int | None = None) -> list[str]:
    args = ["serve", "--db", str(Path(db_path).expanduser().resolve())]
    if config_path:
        args += ["--config", str(Path(config_path).expanduser().resolve())]
    for flag, values in (("--server", servers), ("--tag", tags), ("--category", categories), ("--pin", pins)):
        for v in values:
            args += [flag, v]
    if read_only:
        args.append("--read-only")
    if expose_tools:
        args.append("--expose-tools")
    if max_tokens is not None:
        args += ["--max-tokens", str(max_tokens)]
    return args


def env_references(config_path: str | None) -> list[str]:
    """Variables the crawl config takes from the environment (`${VAR}`): the client must pass them."""
    if not config_path:
        return []
    try:
        text = Path(config_path).expanduser().read_text(encoding="utf-8")
    except OSError:
        return []
    return sorted(set(_VAR.findall(text)))


def client_config(client: str, db_path: str, *, name: str = "toolidx", index_config_path: str | None = None,
                  **serve_options) -> dict:
    """{"client", "config": the JSON to merge into the client's file, "where": [paths],
    "env_needed": [names]}."""
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}", fix="use one of: " + ", ".join(CLIENTS))
    if not Path(db_path).expanduser().is_file():
        raise UsageError(f"no index at {db_path}", fix="crawl first: toolidx crawl --config FILE --db PATH")
    cmd = toolidx_command()
    entry: dict = {"command": cmd[0], "args": cmd[1:] + serve_args(db_path, **serve_options)}
    if client == "vscode":
        entry = {"type": "stdio", **entry}
    env = {}
    model_path = os.environ.get("TOOLIDX_MODEL_PATH")
    if model_path:  # clients start servers with a bare environment
        env["TOOLIDX_MODEL_PATH"] = str(Path(model_path).expanduser().resolve())
    needed = env_references(serve_options.get("config_path") or index_config_path)
    for var in needed:
        env.setdefault(var, f"<value of {var}>")
    if env:
        entry["env"] = env
    return {"client": client, "config": {CLIENTS[client]["key"]: {name: entry}},
            "where": CLIENTS[client]["where"], "env_needed": needed}
