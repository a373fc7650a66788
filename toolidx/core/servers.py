"""A configured server (`ServerSpec`) and what one crawl of it produced (`ServerResult`): the
hand-off from crawl (live servers and tools_file) to the store, and from the config to serve's backends."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

DEFAULT_TIMEOUT = 30.0
MIN_SECRET_LEN = 6  # shorter values are not masked (they would mask ordinary words)
MASK = "***"


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
    trust_server_tags: bool = False  # count the tags the server puts in a tool's `_meta` (config key)
    category: str | None = None  # the config's `category:` for every tool (wins over the taxonomy)
    tool_categories: dict[str, str] = field(default_factory=dict)  # `tool_categories:` per tool name
    timeout: float = DEFAULT_TIMEOUT
    enabled: bool = True
    problem: str | None = None  # a reason it cannot be started (e.g. an unset ${VAR}); crawl reports it
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # as written, unexpanded
    # values that came from the environment through ${VAR} anywhere in the entry (command, args,
    # cwd, url, env, headers, envFile): secrets, masked wherever server output or errors go
    from_env: list[str] = field(default_factory=list, repr=False)
    # the values the folder-dependent variables (FOLDER_VARS) had where the config was read: the
    # index keeps them substituted, so its launch line never depends on where it is opened
    here: dict[str, str] = field(default_factory=dict, repr=False)
    env_file: str | None = None  # `envFile` as read (a path); the index keeps it absolute
    folder: str | None = None  # the folder the entry's relative paths are read from (absolute)

    def secrets(self) -> list[str]:
        """Every value to mask, longest first: `env` and `headers` values, values expanded from
        the environment, a URL's query values and password (as written and as expanded)."""
        found = [*self.env.values(), *self.headers.values(), *self.from_env]
        for url in {self.url, self.raw.get("url")}:
            if isinstance(url, str) and url:
                found.extend(_url_secrets(url))
        return sorted({v for v in found if isinstance(v, str) and len(v) >= MIN_SECRET_LEN}, key=len, reverse=True)

    def mask(self, text: str | None) -> str | None:
        """`text` with every secret of this server replaced by ***. The one masking function: every
        server output or error that is stored, shown or sent to an agent goes through it."""
        return masker(self.secrets())(text) if text else text

    def public(self) -> dict[str, Any]:
        """How to reach this server, safe to store: templates unexpanded, header *names* only, and
        `env` as written where the value cannot be a secret (`plain_env_value`: a `${VAR}` template,
        a path, a short flag), else only its name (`env_secret`): serve needs the config for those.
        Without the kept values a launch from the index ran with the user's own HOME, and failed
        on a literal MEMORY_FILE_PATH it could not know."""
        r = self.raw
        out: dict[str, Any] = {"transport": self.transport}
        if self.transport == "stdio":
            # resolved where it was crawled: what runs is pinned to this folder, never rebuilt
            # against the folder serve or check is started in (an index may be opened anywhere)
            cwd = self._pinned_path(r.get("cwd"), self.cwd)
            command = self._pinned(r.get("command"))
            if isinstance(command, str) and "${" not in command and relative_with_folder(command):
                inside = os.path.join(cwd, command)
                command = os.path.normpath(inside) if os.path.exists(inside) else os.path.abspath(command)
            args = [self._pinned(a) for a in r.get("args") or []]
            out.update(command=command, args=args, cwd=cwd)
        elif self.transport in ("http", "sse"):
            out["url"] = _mask_literal_query(r.get("url"))
        else:
            # as written when it names a variable, like every other field: its value is this
            # machine's (a home, a mount, possibly a secret path), not the index's to keep
            tf = r.get("tools_file")
            out["tools_file"] = tf if isinstance(tf, str) and "${" in tf else self.tools_file
        if self.env:
            out["env_keys"] = sorted(self.env)
            env = r.get("env")
            written: dict[Any, Any] = env if isinstance(env, dict) else {}
            out["env"] = {
                str(k): self._pinned(str(v)) for k, v in written.items() if plain_env_value(v, self.env.get(str(k)))
            }
            secret = sorted(str(k) for k in written if str(k) not in out["env"])
            if secret:
                out["env_secret"] = secret
            if isinstance(r.get("envFile"), str):
                out["env_file"] = self._pinned_path(r["envFile"], self.env_file)  # read at launch as at crawl
        if self.headers:
            out["header_keys"] = sorted(self.headers)
        out["timeout"] = self.timeout
        return out

    def _pinned(self, value: Any) -> Any:
        """`value` as written, with the folder-dependent variables replaced by their values here."""
        if not isinstance(value, str) or "${" not in value:
            return value
        return FOLDER_VAR.sub(lambda m: self.here.get(m.group(1)) or m.group(0), value)

    def _pinned_path(self, written: Any, resolved: str | None) -> str:
        """A folder or file path of the entry, absolute. One that names a variable is kept as
        written (its value may be a secret), made absolute when only a relative part remains;
        serve refuses one whose value is relative where it runs."""
        if isinstance(written, str) and "${" in written:
            p = self._pinned(written)
            return p if p.startswith("${") or os.path.isabs(p) else os.path.join(self.folder or os.getcwd(), p)
        return os.path.abspath(resolved or os.curdir)


# variables whose value is the folder a command runs in: kept as written, an index opened in
# another folder would run something else
FOLDER_VARS = ("PWD", "workspaceFolder")
FOLDER_VAR = re.compile(r"\$\{(?:env:)?(" + "|".join(FOLDER_VARS) + r")(?::-[^}]*)?\}")


_NAMED_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def launch_vars(connect: Any) -> list[str]:
    """The environment variables a stored launch line (`servers.connect`) is expanded with where
    serve starts it (`${VAR}` in its command, args, cwd, url, kept env values; the names of env
    values kept by name from an index that kept no values): the client that starts serve must
    pass them. Not the folder's own variables, which the crawl pinned."""
    c = connect if isinstance(connect, dict) else {}
    texts = [c.get(k) for k in ("command", "cwd", "url", "env_file", "tools_file")]
    texts += list(c.get("args") or []) + list((c.get("env") or {}).values() if isinstance(c.get("env"), dict) else [])
    found = {m for t in texts if isinstance(t, str) for m in _NAMED_VAR.findall(t)}
    if not isinstance(c.get("env"), dict):
        found.update(str(k) for k in c.get("env_keys") or [])
    return sorted(found - {*FOLDER_VARS, "TOOLIDX_PYTHON"})


def relative_with_folder(command: str) -> bool:
    """A relative command with a folder part (`./server`, `.venv/bin/python`): found from a folder."""
    return not os.path.isabs(command) and ("/" in command or os.sep in command)


STDERR_LINES = 5  # what crawl, doctor and categories show of a failed server's stderr
STDERR_LINE_CHARS = 240
# a stack frame (Node's "    at f (file:1:2)", Python's '  File "x.py", line 3'): noise next to the cause
_FRAME = re.compile(r"^\s+(at\s|File \"|\^+$)|^\s*(Traceback \(most recent call last\)|throw err;)")
_CAUSE = re.compile(
    r"error|exception|cannot|can't|not found|no such|fatal|denied|refused|missing|"
    r"invalid|failed|unable",
    re.IGNORECASE,
)


def stderr_lines(tail: str | None, mask: Any = None, limit: int = STDERR_LINES) -> list[str]:
    """The last lines of a server's stderr worth showing with its error: stack frames and blank
    lines left out, each line cut to a readable length, masked (`ServerSpec.mask`, when the caller
    has the spec; a stored tail was masked when it was stored) and made terminal-safe
    (`safetext.visible`). When none of the last lines reads like an error, the last one that does
    leads: Node prints the cause ("Error: Cannot find module ...") above its stack and version."""
    from .safetext import visible

    if mask is not None:
        tail = mask(tail)
    if not tail or not isinstance(tail, str):
        return []
    lines: list[str] = []
    in_frame = False
    for ln in tail.splitlines():
        # a Python frame's source and ^^^ lines are indented below its File "..." line
        in_frame = bool(_FRAME.search(ln)) or (in_frame and ln[:1].isspace())
        if ln.strip().strip("{}[](),;") and not in_frame:  # a lone "}" closes Node's error object
            lines.append(ln.strip())
    shown = lines[-limit:]
    if not any(_CAUSE.search(ln) for ln in shown):
        causes = [ln for ln in lines[:-limit] if _CAUSE.search(ln)] if len(lines) > limit else []
        if causes:
            shown = [causes[-1], *lines[-(limit - 1) :]]
    cut = [ln if len(ln) <= STDERR_LINE_CHARS else ln[: STDERR_LINE_CHARS - 1] + "…" for ln in shown]
    return [visible(ln, keep_newlines=False) for ln in cut]


_TEMPLATE = re.compile(r"\$\{[^}]*\}")


def plain_env_value(written: Any, expanded: str | None = None) -> bool:
    """Whether an `env` value cannot be a secret, so the index may keep it as `written`: its literal
    text (`${VAR}` templates, which name a secret rather than hold one, taken out) is shorter than a
    secret (MIN_SECRET_LEN, the masking rule), or its value (`expanded`) is a path: `./` or `../`
    relative, or absolute (`~`, `/`, a drive) naming something that exists here or in a folder
    that does (a token that merely starts with `/` does not). Anything else (a token, a URL that
    may carry one, a password) is kept by name only."""
    if isinstance(written, bool) or not isinstance(written, (str, int, float)):
        return False
    literal = _TEMPLATE.sub("", str(written)).strip()
    if len(literal) < MIN_SECRET_LEN:
        return True
    value = str(written) if expanded is None else expanded
    if value.startswith(("./", "../")):
        return True
    if not re.match(r"(~|/|[A-Za-z]:[\\/])", value):
        return False
    from pathlib import Path

    try:
        p = Path(value).expanduser()
        return p.is_absolute() and (p.exists() or p.parent.is_dir())
    except (OSError, RuntimeError, ValueError):
        return False


def launch_hash(connect: Any) -> str:
    """The identity of a launch line (a `servers.connect` record: command, args, cwd, url, env and
    header names, kept env values): what `toolidx crawl` vouches for on this machine, and what serve
    checks before it starts a server from an index's own record."""
    import hashlib

    from .tooldoc import canonical_json

    return hashlib.sha256(canonical_json(connect).encode()).hexdigest()


MAX_SERVER_NAME = 200


def server_name_problem(name: str) -> str | None:
    """Why `name` cannot name a server in the index, or None. Tool ids are `server/tool` and tool
    names may hold `/`, so a server name must not: `x` + tool `a/b` and `x/a` + tool `b` would
    both be `x/a/b`."""
    if not isinstance(name, str) or not name.strip():
        return "empty server name"
    if "/" in name:
        return f"server name {name!r} contains '/', which separates server and tool in ids (server/tool)"
    if len(name) > MAX_SERVER_NAME:
        return f"server name longer than {MAX_SERVER_NAME} characters"
    if re.search("[\x00-\x1f\x7f-\x9f\ud800-\udfff]", name):
        return f"server name {name!r} holds control characters or invalid Unicode"
    return None


def _url_secrets(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out = [v for _, v in parse_qsl(parts.query, keep_blank_values=False)]
    out += [v for v in re.findall(r"=([^&#]+)", parts.query)]  # also as written (percent-encoded)
    if parts.password:
        out.append(parts.password)
    return out


def _mask_literal_query(url: Any) -> Any:
    """A URL as written with its literal query values and password masked (`${VAR}` templates
    kept: they name a secret, they are not one)."""
    if not isinstance(url, str):
        return url
    literal = [v for v in _url_secrets(url) if "${" not in v]
    return masker(sorted(set(literal), key=len, reverse=True))(url)


def masker(secrets: list[str]) -> Any:
    """A function replacing each of `secrets` (longest first) by ***."""

    def mask(text: Any) -> Any:
        if not text or not isinstance(text, str):
            return text
        for s in secrets:
            if s in text:
                text = text.replace(s, MASK)
        return text

    return mask


def mask_deep(value: Any, mask: Any) -> Any:
    """`value` (JSON: dicts, lists, strings) with `mask` applied to every string, keys included
    (unchanged if it nests too deep to walk)."""
    try:
        return _mask_deep(value, mask)
    except RecursionError:
        return value


def _mask_deep(value: Any, mask: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list):
        return [_mask_deep(v, mask) for v in value]
    if isinstance(value, dict):
        return {mask(k) if isinstance(k, str) else k: _mask_deep(v, mask) for k, v in value.items()}
    return value


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

    def mask_secrets(self) -> ServerResult:
        """Mask the spec's secrets in everything the server said and every error, and clean what
        no index can store (`tooldoc.fix_strings`: lone surrogates, NUL) the same way for both
        engines (in place; idempotent). Crawl calls it where a result is handed on to the display
        and the store, and the store calls it again on what it receives."""
        from .tooldoc import fix_strings

        mask = masker(self.spec.secrets())

        def m(text: Any) -> Any:  # what cannot be stored replaced, then secrets masked
            return mask(fix_strings(text))

        self.error, self.stderr_tail = m(self.error), m(self.stderr_tail)
        self.server_name, self.server_title = m(self.server_name), m(self.server_title)
        self.server_version, self.instructions = m(self.server_version), m(self.instructions)
        self.protocol_version = m(self.protocol_version)
        self.capabilities = mask_deep(self.capabilities, m)
        self.tools = mask_deep(self.tools, m)
        self.invalid_tools = mask_deep(self.invalid_tools, m)
        return self
