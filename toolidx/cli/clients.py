"""Client config entries for `toolidx serve` (Claude Desktop, Claude Code, Codex, Cursor, VS Code):
what to paste so a client starts this index's discovery server. Codex's entry is TOML, the others
JSON.

Paths are absolute (clients start servers from an unknown working directory), and the command is
the `toolidx` script next to the running Python when there is one, else `python -m toolidx`.
Secrets are never printed: the environment variables the crawl config references are named, and
the user adds their values to the entry.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import socket
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..store import trust

CLIENTS = {
    "claude": {
        "key": "mcpServers",
        "where": [
            "macOS: ~/Library/Application Support/Claude/claude_desktop_config.json",
            "Windows: %APPDATA%\\Claude\\claude_desktop_config.json",
            "Linux: ~/.config/Claude/claude_desktop_config.json",
        ],
    },
    "claude-code": {"key": "mcpServers", "where": [".mcp.json at the project root (shared with the project)"]},
    "codex": {"key": "mcp_servers", "format": "toml", "where": ["~/.codex/config.toml"]},
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


def serve_args(
    db_path: str,
    *,
    config_path: str | None = None,
    servers: Sequence[str] = (),
    tags: Sequence[str] = (),
    categories: Sequence[str] = (),
    read_only: bool = False,
    expose_tools: bool = False,
    pins: Sequence[str] = (),
    max_tokens: int | None = None,
    always_load: bool = True,
    quarantine: bool = False,
    usage_db: str | None = None,
    record_examples: bool = False,
    trust_index: bool = False,
) -> list[str]:
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
    if quarantine:
        args.append("--quarantine")
    if not always_load:
        args.append("--no-always-load")
    if max_tokens is not None:
        args += ["--max-tokens", str(max_tokens)]
    if usage_db:
        args += ["--usage-db", str(Path(usage_db).expanduser().resolve())]
    if record_examples:
        args.append("--record-examples")
    if trust_index:
        args.append("--trust-index")
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


def client_config(
    client: str,
    db_path: str,
    *,
    name: str = "toolidx",
    index_config_path: str | None = None,
    index_vars: Sequence[str] = (),
    **serve_options,
) -> ClientEntry:
    """The stdio entry that makes `client` start `toolidx serve` on `db_path`."""
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}", fix="use one of: " + ", ".join(CLIENTS))
    if not Path(db_path).expanduser().is_file():
        raise UsageError(f"no index at {db_path}", fix="crawl first: toolidx crawl --config FILE --db PATH")
    cmd = toolidx_command()
    entry: dict = {"command": cmd[0], "args": cmd[1:] + serve_args(db_path, **serve_options)}
    if client in ("vscode", "claude-code"):
        entry = {"type": "stdio", **entry}
    env = {}
    model_path = os.environ.get("TOOLIDX_MODEL_PATH")
    if model_path:  # clients start servers with a bare environment
        env["TOOLIDX_MODEL_PATH"] = str(Path(model_path).expanduser().resolve())
    if os.environ.get(trust.STATE_ENV) or os.environ.get("XDG_STATE_HOME"):
        # serve runs only launch lines this user's crawls vouch for: it must read them where they
        # were written, not in the default folder a bare environment points at
        env[trust.STATE_ENV] = str(trust.state_dir().expanduser().resolve())
    # the config's variables, and those of the index's own launch lines (a `crawl --from` records
    # no config file: its servers start from those lines)
    needed = sorted({*env_references(serve_options.get("config_path") or index_config_path), *index_vars})
    for var in needed:
        env.setdefault(var, f"<value of {var}>")
    if env:
        entry["env"] = env
    if client == "claude-code" and serve_options.get("always_load", True):
        entry["alwaysLoad"] = True  # Claude Code loads this server's tools up front, not behind its search
    return _result(client, name, entry, needed)


@dataclass
class ClientEntry:
    """What `serve --print-config` prints (`to_json()`: the `serve-config --json` document's body)."""

    client: str
    config: dict[str, Any]  # the entry to merge into the client's file
    format: str  # json | toml
    text: str  # that entry as the client's file writes it
    where: list[str]  # the client's config files (and, for claude-code, its add-json command)
    env_needed: list[str]  # variables the servers need, filled in as placeholders
    notes: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _result(client: str, name: str, entry: dict, env_needed: list[str], notes: Sequence[str] = ()) -> ClientEntry:
    config: dict[str, Any] = {str(CLIENTS[client]["key"]): {name: entry}}
    fmt = str(CLIENTS[client].get("format", "json"))
    text = to_toml(config) if fmt == "toml" else json.dumps(config, indent=2, ensure_ascii=False) + "\n"
    where = list(CLIENTS[client]["where"])
    if client == "claude-code":  # `claude mcp add-json NAME JSON` takes the entry itself, not the mcpServers object
        entry_json = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        where.append(f"or, for every project: claude mcp add-json {name} {shlex.quote(entry_json)} --scope user")
    return ClientEntry(client, config, fmt, text, where, env_needed, list(notes))


TOKEN_PLACEHOLDER = "<your token>"


def http_client_config(
    client: str, host: str, port: int, *, tls: bool = False, token: bool = True, name: str = "toolidx"
) -> ClientEntry:
    """The entry that connects `client` to a running `toolidx serve --http HOST:PORT`: its URL and,
    with `token`, the Authorization header (a placeholder: tokens are never printed). Same shape
    as client_config. Claude Desktop's config file starts stdio servers only: a UsageError."""
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}", fix="use one of: " + ", ".join(CLIENTS))
    if client == "claude":
        raise UsageError(
            "--client claude --http: Claude Desktop's config file starts stdio servers, it takes no URL",
            fix="drop --http for the stdio entry, or use --client claude-code | codex | cursor | vscode",
        )
    if port == 0:
        raise UsageError(
            "--print-config --http: port 0 is chosen when serve starts",
            fix="give the port serve listens on, e.g. --http 8765",
        )
    try:
        wildcard = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        wildcard = False
    shown = socket.gethostname() if wildcard else host  # 0.0.0.0 is no address to connect to
    url = f"{'https' if tls else 'http'}://{f'[{shown}]' if ':' in shown else shown}:{port}/mcp"
    headers = {"Authorization": f"Bearer {TOKEN_PLACEHOLDER}"} if token else {}
    entry: dict = {"url": url}
    if client in ("claude-code", "vscode"):
        entry = {"type": "http", **entry}
    if headers:
        entry["http_headers" if client == "codex" else "headers"] = headers
    notes = [f"Replace {TOKEN_PLACEHOLDER} with one of serve's tokens (--token-file / --token-env)"] if token else []
    if wildcard:
        notes.append(f"{shown} is this machine's name: use the name clients reach it by (serve --allow-host NAME)")
    return _result(client, name, entry, [], notes)


def to_toml(config: dict) -> str:
    """Nested tables of strings, booleans, numbers and string lists as TOML (what a client entry
    holds; JSON string escapes are valid TOML basic strings)."""
    lines: list[str] = []

    def table(path: list[str], d: dict) -> None:
        scalars = {k: v for k, v in d.items() if not isinstance(v, dict)}
        if path and (scalars or not d):
            lines.append(("\n" if lines else "") + "[" + ".".join(_toml_key(p) for p in path) + "]")
        for k, v in scalars.items():
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        for k, v in d.items():
            if isinstance(v, dict):
                table([*path, k], v)

    table([], config)
    return "\n".join(lines) + "\n"


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v), ensure_ascii=False)
