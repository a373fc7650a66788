"""Crawl configs: the common `mcpServers` shape (Claude Desktop, Cursor), VS Code's `servers`,
plus toolidx's own keys. Parsing, validation, and `${VAR}` expansion live here.

Every problem raises ConfigError naming the file, the server and the key. Values of `env` and
`headers` are secrets: they are used to connect and never stored (see `ServerSpec.public`).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, check_servers
from ..core.files import not_regular, open_regular
from ..core.notices import warn_once
from ..core.servers import DEFAULT_TIMEOUT, FOLDER_VARS, ServerSpec, server_name_problem
from ..core.tooldoc import fix_strings

DEFAULT_CONCURRENCY = 4
MAX_TIMEOUT = 86_400.0  # a day: a longer (or NaN, infinite) timeout is a config error
MAX_ENV_FILE = 1 << 20  # an envFile larger than 1 MiB is not one (and is not read past that)

TRANSPORTS = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
    "tools_file": "tools_file",
    "tools-file": "tools_file",
    "file": "tools_file",
}

_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_INPUT = re.compile(r"\$\{input:([^}]+)\}")  # VS Code prompts the user for these; we cannot


@dataclass
class Config:
    path: str | None
    servers: list[ServerSpec]
    settings: dict[str, Any] = field(default_factory=dict)  # the top-level `toolidx:` block

    def enabled_servers(self, only: list[str] | None = None) -> list[ServerSpec]:
        out = [s for s in self.servers if s.enabled]
        if only:
            check_servers(only, {s.name for s in self.servers}, within="", where=self.path, error=ConfigError)
            out = [s for s in self.servers if s.name in only]
        return out


# Variables whose values are not secret (paths): not masked, so errors keep readable paths.
NOT_SECRET_VARS = frozenset({"HOME", "USER", "LOGNAME", "PWD", "TMPDIR", "workspaceFolder", "TOOLIDX_PYTHON"})


def expand(value: str, environ: dict[str, str] | None = None, used: list[str] | None = None) -> tuple[str, list[str]]:
    """Expand `${VAR}`, `${VAR:-default}` and VS Code's `${env:VAR}`; return (text, unset names).
    `used` receives every value taken from the environment (to be masked as a secret)."""
    env = os.environ if environ is None else environ
    missing: list[str] = []

    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in env and (env[name] != "" or default is None):
            if used is not None and name not in NOT_SECRET_VARS:
                used.append(env[name])
            return env[name]
        if default is not None:
            return default
        missing.append(name)
        return ""

    return _VAR.sub(sub, value), missing


class _DupKeyLoader:
    """YAML and JSON both drop duplicate keys silently; a duplicate server name must be an error."""

    @staticmethod
    def json_pairs(pairs: list[tuple[str, Any]]) -> dict:
        seen: dict[str, Any] = {}
        for k, v in pairs:
            if k in seen:
                raise _Duplicate(k, server=_looks_like_server(v))
            seen[k] = v
        return seen


class _Duplicate(Exception):
    def __init__(self, key: str, line: int | None = None, server: bool = False):
        self.key, self.line, self.server = key, line, server


def _looks_like_server(value: Any) -> bool:
    keys = set(value) if isinstance(value, dict) else set()
    return bool(keys & {"command", "url", "tools_file", "type", "transport"})


def _load_yaml(text: str) -> Any:
    import yaml

    # libyaml's parser when installed: a 50 MB config in seconds, not minutes
    base = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

    class Loader(base):  # type: ignore[valid-type,misc]
        pass

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict:
        keys = set()
        for key_node, _ in node.value:
            k = loader.construct_object(key_node, deep=deep)
            if k in keys:
                value_node = next(v for kn, v in node.value if kn is key_node)
                is_server = isinstance(value_node, yaml.MappingNode) and any(
                    getattr(kn, "value", None) in ("command", "url", "tools_file", "type", "transport")
                    for kn, _ in value_node.value
                )
                raise _Duplicate(str(k), key_node.start_mark.line + 1, is_server)
            keys.add(k)
        return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return yaml.load(text, Loader=Loader)  # noqa: S506 - SafeLoader subclass


def parse_text(text: str, where: str, is_json: bool) -> Any:
    try:
        if is_json:
            return json.loads(text, object_pairs_hook=_DupKeyLoader.json_pairs)
        return _load_yaml(text)
    except _Duplicate as d:
        at = f"{where}:{d.line}" if d.line else where
        what = f"server {d.key!r} is defined twice" if d.server else f"duplicate key {d.key!r}"
        raise ConfigError(f"{what} (names must be unique)", where=at, fix="rename or remove one of them") from None
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"invalid JSON: {e.msg}", where=f"{where}:{e.lineno}:{e.colno}", fix="fix the syntax"
        ) from None
    except RecursionError:
        raise ConfigError(
            "the config nests too deep to read",
            where=where,
            fix="a server's settings are a few levels deep; check the file",
        ) from None
    except Exception as e:  # yaml.YAMLError and friends
        mark = getattr(e, "problem_mark", None)
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"invalid YAML: {problem}", where=at, fix="fix the syntax") from None


def load_config(path: str | os.PathLike, environ: dict[str, str] | None = None) -> Config:
    p = Path(path).expanduser()
    where = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "config file not found", where=where, fix="pass --config PATH to an mcpServers JSON/YAML file"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read config: {e}", where=where) from None
    data = parse_text(text, where, is_json=p.suffix.lower() == ".json")
    try:
        return build_config(data, where, base_dir=p.parent, environ=environ)
    except RecursionError:
        raise ConfigError("the config nests too deep to read", where=where) from None
    except (TypeError, ValueError, AttributeError, KeyError) as e:  # a shape no check foresaw
        raise ConfigError(
            f"unexpected value ({type(e).__name__}: {_short(str(e))})",
            where=where,
            fix="check the types of the keys (see docs/crawl.md)",
        ) from None


def build_config(
    data: Any,
    where: str | None,
    base_dir: Path | None = None,
    environ: dict[str, str] | None = None,
    folder_config: bool = False,
) -> Config:
    """The config `data` (read from `where`; relative paths from `base_dir`), `${VAR}` expanded from
    `environ`. `folder_config`: the file came with a folder (a clone: `.vscode/mcp.json`,
    `.mcp.json`), so it may not read the user's environment (`_server` refuses such a server)."""
    w = where or "<config>"
    if not isinstance(data, dict):
        raise ConfigError("the config must be a mapping with `mcpServers` (or `servers`)", where=w)
    block_key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if block_key is None:
        raise ConfigError(
            "no `mcpServers` (or VS Code `servers`) block", where=w, fix="see examples/servers.yaml for the shape"
        )
    block = data[block_key] or {}
    if not isinstance(block, dict):
        raise ConfigError(f"`{block_key}` must be a mapping of server name to settings", where=w)
    settings = data.get("toolidx") or {}
    if not isinstance(settings, dict):
        raise ConfigError("`toolidx` must be a mapping", where=w)
    _check_settings(settings, w)
    environ = dict(os.environ if environ is None else environ)  # read once, not per server
    servers = [
        _server(name, entry, w, base_dir or Path.cwd(), environ, settings, folder_config)
        for name, entry in block.items()
    ]
    return Config(path=where, servers=servers, settings=settings)


def _positive_seconds(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and 0 < v <= MAX_TIMEOUT


# the `toolidx:` block: key -> (check, what it must be)
_SETTINGS: dict[str, tuple[Any, str]] = {
    "timeout": (_positive_seconds, f"a number of seconds above 0, at most {MAX_TIMEOUT:g}"),
    "concurrency": (
        lambda v: not isinstance(v, bool) and isinstance(v, int) and 1 <= v <= 256,
        "a whole number from 1 to 256",
    ),
    "model": (lambda v: isinstance(v, str) and v.strip() != "", "a model name (string)"),
    "model_path": (lambda v: isinstance(v, str) and v.strip() != "", "a folder path (string)"),
    "trust_server_tags": (lambda v: isinstance(v, bool), "true or false"),
    # the config's name in a shared index (servers.owner): a crawl prunes only its own servers
    "owner": (lambda v: isinstance(v, str) and v.strip() != "", "a name (string)"),
}


def _check_settings(settings: dict, w: str) -> None:
    for key, value in settings.items():
        rule = _SETTINGS.get(key)
        if rule is not None and not rule[0](value):
            raise ConfigError(
                f"`toolidx.{key}` must be {rule[1]}, not {_short(value)}",
                where=w,
                fix=f"fix `{key}` in the `toolidx:` block",
            )


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:59] + "…"


def _server(
    name: Any,
    entry: Any,
    where: str,
    base: Path,
    environ: dict[str, str] | None,
    settings: dict[str, Any],
    folder_config: bool = False,
) -> ServerSpec:
    name = str(name)
    invalid_unicode = fix_strings(name) != name
    name = fix_strings(name)  # a lone surrogate (valid in JSON) cannot be stored or printed

    def err(msg: str, key: str | None = None, fix: str | None = None) -> ConfigError:
        at = f"server {name!r}" + (f", key {key!r}" if key else "")
        return ConfigError(f"{at}: {msg}", where=where, fix=fix)

    if not name.strip():
        raise err("empty server name")
    if not isinstance(entry, dict):
        raise err("settings must be a mapping")
    declared = entry.get("type", entry.get("transport"))
    if declared is not None:
        transport = TRANSPORTS.get(str(declared).strip().lower().replace(" ", ""))
        if transport is None:
            key = "type" if "type" in entry else "transport"
            raise err(
                f"unknown transport {declared!r}", key, fix="use stdio, http (Streamable HTTP), sse or tools_file"
            )
    elif entry.get("tools_file"):
        transport = "tools_file"
    elif entry.get("command"):
        transport = "stdio"
    elif entry.get("url"):
        transport = "sse" if str(entry["url"]).rstrip("/").endswith("/sse") else "http"
    else:
        slips = _slips(entry)
        raise err(
            "no `command`, `url` or `tools_file`",
            "command",
            fix="; ".join(slips) if slips else "say how to start (command) or reach (url) the server",
        )
    for slip in _slips(entry):  # `agrs`, `evn`: the server would start without them, unsaid
        warn_once(f"config-key:{where}:{name}:{slip}", f"{where}: server {name!r}: {slip}")

    missing: list[str] = []

    from collections import ChainMap

    # The folder-relative variables (FOLDER_VARS) mean the config's folder (VS Code's and Cursor's
    # files live in .vscode/ and .cursor/ of the project), never the folder toolidx happens to run
    # in: a config read again by check or serve from another folder starts the same thing.
    workspace = os.path.abspath(base.parent if base.name in (".vscode", ".cursor") else base)
    folder_values = {k: workspace for k in FOLDER_VARS}
    # ${TOOLIDX_PYTHON}: the interpreter toolidx runs under, which has the `mcp` package, so a
    # Python server written with the SDK (the bundled example) starts without a venv of its own
    python = {"TOOLIDX_PYTHON": sys.executable} if sys.executable else {}
    user_env: Any = os.environ if environ is None else environ
    # a folder's config never reads the user's environment (its values would go to the folder's
    # command or URL): only the folder's own variables
    env_vars: Any = ChainMap(folder_values, python) if folder_config else ChainMap(folder_values, user_env, python)
    inputs: list[str] = []
    refused: list[str] = []
    from_env: list[str] = []
    here = dict(folder_values)

    def expanded(value: Any, key: str) -> str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise err(f"must be a string, not {type(value).__name__}", key)
        inputs.extend(f"${{input:{m}}} in {key}" for m in _INPUT.findall(str(value)))
        if folder_config and key.split(".")[0] in ("url", "headers"):
            # what reaches a host: not even a path of this machine
            refused.extend(f"variable {m.group(1)} in {key}" for m in _VAR.finditer(str(value)))
        text, unset = expand(str(value), env_vars, from_env)
        if folder_config:
            refused.extend(f"variable {n} in {key}" for n in unset)
        else:
            missing.extend(unset)
        return text

    def xmap(key: str) -> dict[str, str]:
        mapping = entry.get(key) or {}
        if not isinstance(mapping, dict):
            raise err("must be a mapping of names to strings", key)
        return {str(k): expanded(val, f"{key}.{k}") for k, val in mapping.items()}

    spec = ServerSpec(
        name=name, transport=transport, raw=dict(entry), from_env=from_env, here=here, folder=os.path.abspath(base)
    )
    if transport == "stdio":
        if not entry.get("command"):
            raise err("stdio transport needs `command`", "command")
        spec.command = expanded(entry["command"], "command")
        args = entry.get("args") or []
        if not isinstance(args, list):
            raise err("must be a list of strings", "args")
        spec.args = [expanded(a, "args") for a in args]
        if entry.get("envFile"):
            spec.env_file = os.path.abspath(base / expanded(entry["envFile"], "envFile"))
            inside = os.path.realpath(spec.env_file).startswith(os.path.realpath(workspace) + os.sep)
            if folder_config and not inside:  # the folder's command would get a file of yours
                refused.append(f"envFile {entry['envFile']!r} outside the config's folder")
                spec.env_file = None
        spec.env = {**_env_file(entry, spec.env_file, err), **xmap("env")}
        if entry.get("cwd"):
            spec.cwd = str(base / expanded(entry["cwd"], "cwd"))
    elif transport in ("http", "sse"):
        if not entry.get("url"):
            raise err(f"{transport} transport needs `url`", "url")
        spec.url = expanded(entry["url"], "url")
        if not re.match(r"^https?://", spec.url):
            # as written: an expanded ${TOKEN} must not reach the message
            raise err(f"not an http(s) URL: {spec.mask(str(entry['url']))!r}", "url")
        spec.headers = xmap("headers")
    else:
        tf = entry.get("tools_file")
        if not tf:
            raise err("tools_file transport needs `tools_file`", "tools_file")
        spec.tools_file = str((base / expanded(tf, "tools_file")).resolve())
        kind = not_regular(spec.tools_file)
        if kind:  # reading a FIFO would wait forever for a writer, a device never ends
            raise err(
                f"is {kind}, not a regular file",
                "tools_file",
                fix="point tools_file at a saved tool list (a JSON or JSONL file)",
            )

    tags = entry.get("tags") or []
    if isinstance(tags, str):
        tags = [tag.strip() for tag in tags.split(",") if tag.strip()]
    if not isinstance(tags, list) or not all(isinstance(tag, (str, int)) for tag in tags):
        raise err("must be a list of strings", "tags")
    spec.tags = [fix_strings(str(tag)) for tag in tags]
    if entry.get("category") is not None:
        spec.category = fix_strings(str(entry["category"]))
    per_tool = entry.get("tool_categories") or {}
    if not isinstance(per_tool, dict) or not all(isinstance(v, str) for v in per_tool.values()):
        raise err("must be a mapping of tool names to categories", "tool_categories")
    spec.tool_categories = {str(k): fix_strings(v) for k, v in per_tool.items()}
    timeout = entry.get("timeout", settings.get("timeout", DEFAULT_TIMEOUT))
    if not _positive_seconds(timeout):
        raise err(f"must be a number of seconds above 0, at most {MAX_TIMEOUT:g}, not {_short(timeout)}", "timeout")
    spec.timeout = float(timeout)
    trust = entry.get("trust_server_tags", settings.get("trust_server_tags", False))
    if not isinstance(trust, bool):
        raise err("must be true or false", "trust_server_tags")
    spec.trust_server_tags = trust
    enabled = entry.get("enabled", not entry.get("disabled", False))
    if not isinstance(enabled, bool):
        raise err("must be true or false", "enabled")
    spec.enabled = enabled
    if missing:
        spec.problem = missing_vars_problem(sorted(set(missing)))
    bad_name = server_name_problem(name) or (
        f"server name {name!r} holds invalid Unicode (a lone surrogate)" if invalid_unicode else None
    )
    if bad_name:  # this server is reported and skipped; the others are crawled
        spec.problem = f"{bad_name}: rename it in the config"
    if inputs:
        spec.problem = (
            f"uses VS Code input variables, which toolidx cannot prompt for "
            f"({', '.join(inputs)}): use ${{ENV_VAR}} instead"
        )
    if refused:
        spec.problem = (
            f"refused, nothing started or sent: this config came with the folder {workspace} (not one of "
            f"your own), and may not read your environment or files ({', '.join(dict.fromkeys(refused))}): "
            "to use your own variables, put the server in your own config (--config FILE, or your client's user config)"
        )
    return spec


def missing_vars_problem(names: list[str]) -> str:
    """Why a server whose config names unset variables is not started, and where to set them."""
    return (
        f"environment variable(s) not set: {', '.join(names)} (set them where toolidx runs: for crawl, in "
        "your shell; for serve, in the `env` of toolidx's entry in your MCP client's config, which "
        "`toolidx serve --print-config` prints)"
    )


# the keys of a server entry toolidx reads (clients' other keys are ignored, unless one is a slip)
ENTRY_KEYS = (
    "type",
    "transport",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "headers",
    "tools_file",
    "tags",
    "category",
    "tool_categories",
    "timeout",
    "trust_server_tags",
    "enabled",
    "disabled",
)


# other clients' keys close to one of ours: not slips (Cline's `transportType`)
_CLIENT_KEYS = frozenset({"transportType"})


def _slips(entry: dict) -> list[str]:
    """`did you mean` for each key of `entry` that toolidx does not read but that is one edit (a
    letter left out, added, mistyped or two swapped; any case) from one it does: `comand`, `agrs`,
    `tool_file`. A client's own keys (`autoApprove`, `alwaysAllow`, `disabledTools`) are further."""
    from rapidfuzz.distance import DamerauLevenshtein

    out = []
    for key in entry:
        if not isinstance(key, str) or key in ENTRY_KEYS or key in _CLIENT_KEYS or len(key) < 3:
            continue
        close = [k for k in ENTRY_KEYS if DamerauLevenshtein.distance(key.lower(), k.lower()) <= 1]
        if close:
            out.append(f"unknown key `{key}`: did you mean `{close[0]}`?")
    return out


def _env_file(entry: dict, path: str | None, err: Any) -> dict[str, str]:
    """VS Code's `envFile` (at `path`): KEY=VALUE lines (dotenv); `env` wins over it. Only a
    regular file (a FIFO would wait for a writer forever, /dev/zero never ends), at most
    MAX_ENV_FILE bytes."""
    if not path:
        return {}
    try:
        with open_regular(path, "rb") as f:
            data = f.read(MAX_ENV_FILE + 1)
    except OSError as e:
        raise err(f"cannot read {entry['envFile']}: {e.strerror}", "envFile") from None
    if len(data) > MAX_ENV_FILE:
        raise err(
            f"{entry['envFile']} is larger than {MAX_ENV_FILE // 1024} KiB: not an env file",
            "envFile",
            fix="point envFile at a file of KEY=VALUE lines",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise err(
            f"{entry['envFile']} is not UTF-8 text", "envFile", fix="point envFile at a file of KEY=VALUE lines"
        ) from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.removeprefix("export ").split("=", 1)
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            v = v[1:-1]
        out[k.strip()] = v
    return out
