"""Who may use `toolidx serve --http`: the listen address and the bearer tokens, each with its own
scope. No HTTP or MCP import here (the CLI checks its flags with this module before anything starts).

Token file format (`--token-file PATH`), one token a line; blank lines and `#` comments are skipped:

    TOKEN [servers=a,b] [tags=x,y] [categories=c,d] [read-only] [admin]

A token is 16 or more printable characters without spaces. Its scope narrows the server's own
scope (`--server`, `--tag`, `--category`, `--read-only`), never widens it. `admin` lets it also
change what the index records (the console's approve and revoke, inside its scope); no other
token can, `--token-env NAME`'s included (one token, the whole value of the variable, with no
scope of its own).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UsageError
from ..core.files import readable_by_others
from ..core.filters import Filters
from ..core.notices import warn_once

MIN_TOKEN_CHARS = 16
_SCOPE_KEYS = ("servers", "tags", "categories")


@dataclass(frozen=True)
class Grant:
    """What one token may do: `label` names it in logs and sessions (never the token itself)."""

    label: str
    scope: Filters = field(default_factory=Filters, compare=False, hash=False)
    admin: bool = field(default=False, compare=False, hash=False)  # may approve and revoke (console)


ANONYMOUS = Grant("anonymous")


def parse_address(text: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT` -> (host, port); a bare port listens on 127.0.0.1."""
    raw = (text or "").strip()
    host, port_text = "127.0.0.1", raw
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0 or raw[end + 1 : end + 2] != ":":
            raise _bad_address(raw)
        host, port_text = raw[1:end], raw[end + 2 :]
    elif ":" in raw:
        host, _, port_text = raw.rpartition(":")
        if ":" in host:  # an IPv6 address needs its brackets: [::1]:8765
            raise _bad_address(raw)
    if not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535 or any(c.isspace() for c in host):
        raise _bad_address(raw)
    return host, int(port_text)


def _bad_address(raw: str) -> UsageError:
    return UsageError(
        f"--http {raw!r}: not a [HOST:]PORT address",
        fix="give a port (8765, on 127.0.0.1) or HOST:PORT (0.0.0.0:8765, [::1]:8765)",
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Tokens:
    """The accepted tokens. `match` compares the offered token with every one in constant time
    (per token: SHA-256 digests compared with hmac.compare_digest, no early exit)."""

    def __init__(self, entries: list[tuple[str, Grant]], loose_file: Path | None = None):
        self._entries = [(hashlib.sha256(t.encode()).digest(), g) for t, g in entries]
        self.loose_file = loose_file  # a --token-file every user of this machine can read

    def warn_if_loose(self) -> None:
        """Said once serve has started (a start-up error stays the one line): the file is the
        user's to fix, and the tokens are served all the same."""
        if self.loose_file is not None:
            warn_once(
                f"token-file:{self.loose_file}",
                f"--token-file {self.loose_file}: readable by every user of this machine, who can then "
                f"call serve with its tokens: chmod 600 {self.loose_file}",
            )

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def grants(self) -> list[Grant]:
        return [g for _, g in self._entries]

    def match(self, offered: str) -> Grant | None:
        digest = hashlib.sha256(offered.encode("utf-8", errors="replace")).digest()
        found: Grant | None = None
        for known, grant in self._entries:
            if hmac.compare_digest(digest, known) and found is None:
                found = grant
        return found


def load_tokens(
    token_env: str | None = None, token_file: str | Path | None = None, environ: dict[str, str] | None = None
) -> Tokens:
    """The tokens from `--token-env NAME` and/or `--token-file PATH`. Raises UsageError (one line)
    for an unset variable, a missing, unreadable or empty file, or a bad line (by its number; the
    token is never shown)."""
    env = os.environ if environ is None else environ
    entries: list[tuple[str, Grant]] = []
    if token_env:
        value = (env.get(token_env) or "").strip()
        if not value:
            raise UsageError(
                f"--token-env {token_env}: the variable is not set or empty",
                fix=f"export {token_env}=<a random token of {MIN_TOKEN_CHARS}+ characters>",
            )
        _check_token(value, f"--token-env {token_env}")
        entries.append((value, Grant(f"env:{token_env}")))
    if token_file:
        path = Path(token_file)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(
                f"--token-file {path}: no such file", fix="create it with one token per line (see docs/serve.md)"
            ) from None
        except (OSError, UnicodeDecodeError) as e:
            why = getattr(e, "strerror", None) or e
            raise UsageError(
                f"--token-file {path}: cannot be read ({type(e).__name__}: {why})",
                fix="check the path and its permissions",
            ) from None
        before = len(entries)
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            token, *options = line.split()
            where = f"--token-file {path} line {n}"
            _check_token(token, where)
            admin = "admin" in options
            scope = _scope([o for o in options if o != "admin"], where)
            entries.append((token, Grant(f"file:{path.name}:{n}", scope, admin)))
        if len(entries) == before:
            raise UsageError(
                f"--token-file {path}: holds no token",
                fix="write one token per line: TOKEN [servers=a,b] [tags=x] [read-only] [admin]",
            )
        if readable_by_others(path):
            return Tokens(entries, loose_file=path)
    return Tokens(entries)


def _check_token(token: str, where: str) -> None:
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable():
        raise UsageError(
            f"{where}: a token must be {MIN_TOKEN_CHARS} or more printable characters",
            fix="generate one, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        )


def _scope(options: list[str], where: str) -> Filters:
    values: dict[str, list[str]] = {}
    read_only = False
    for opt in options:
        if opt == "read-only":
            read_only = True
            continue
        key, eq, value = opt.partition("=")
        names = [v for v in value.split(",") if v]
        if not eq or key not in _SCOPE_KEYS or not names:
            raise UsageError(
                f"{where}: unknown scope {opt[:40]!r}", fix="use servers=a,b tags=x,y categories=c read-only admin"
            )
        values.setdefault(key, []).extend(names)
    return Filters(
        servers=values.get("servers", []),
        tags=values.get("tags", []),
        categories=values.get("categories", []),
        read_only=read_only,
    )


# --- Host and Origin (DNS rebinding) ----------------------------------------------------------------
def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


def split_host(value: str, default_port: int) -> tuple[str, int] | None:
    """A Host header (or an origin's netloc) -> (name, port): the name lower-cased, an IP literal in
    its one canonical spelling, the port `default_port` when none is given. None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        rest = value[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return None
        name, port_text = value[1:end], value[end + 2 :]
        if _ip(name) is None:
            return None
    else:
        name, _, port_text = value.partition(":")
        if ":" in port_text:  # an IPv6 address without its brackets is no Host header
            return None
    name = name.rstrip(".")
    if not name or (port_text and not (port_text.isdigit() and int(port_text) <= 65535)):
        return None
    ip = _ip(name)
    return (str(ip) if ip else name), (int(port_text) if port_text else default_port)


def check_allowed(allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...]) -> None:
    """`--allow-host NAME[:PORT]` and `--allow-origin SCHEME://HOST[:PORT]` are well formed, or a
    one-line UsageError."""
    for h in allow_hosts:
        if split_host(h, 0) is None or "/" in h:
            raise UsageError(f"--allow-host {h!r}: not a host name", fix="give a name as clients type it: tools.lan")
    for o in allow_origins:
        scheme, sep, netloc = o.strip().rstrip("/").partition("://")
        if not sep or scheme.lower() not in ("http", "https") or "/" in netloc or split_host(netloc, 0) is None:
            raise UsageError(
                f"--allow-origin {o!r}: not an origin", fix="give SCHEME://HOST[:PORT], e.g. https://app.example:8443"
            )


class HostPolicy:
    """Which Host and Origin headers serve --http answers, against DNS rebinding: a web page whose
    name an attacker re-points at this address sends its own name as Host, so only names that
    can mean this listener pass (421 otherwise), and a browser page on another origin is refused
    (403) even when its Host is right.

    - Host: the bound address in any spelling, with the bound port; for a loopback bind also
      `localhost` (and `*.localhost`) and any loopback IP literal; plus each `--allow-host NAME`
      (any port, e.g. a reverse proxy's name). A wildcard bind (0.0.0.0, ::) cannot know the
      machine's names: IP literals pass with the bound port, names only when some `--allow-host`
      is given, else any Host passes (a non-loopback bind always needs a token, which a
      rebinding page does not have).
    - Origin (sent by browsers only; absent passes): the request's own Host as origin (same
      origin), for a loopback bind any loopback origin (local tools such as the MCP Inspector),
      and each `--allow-origin URL`."""

    def __init__(
        self,
        host: str,
        port: int,
        scheme: str = "http",
        allow_hosts: tuple[str, ...] = (),
        allow_origins: tuple[str, ...] = (),
    ):
        self.scheme, self.port = scheme, port
        self.default_port = 443 if scheme == "https" else 80
        bound = _ip(host)
        self.wildcard = bound is not None and bound.is_unspecified
        self.loopback = is_loopback(host) or self.wildcard
        self.bound = str(bound) if bound is not None else host.lower().rstrip(".")
        self.allow_hosts = {h[0] for h in (split_host(a, 0) for a in allow_hosts) if h}
        self.allow_origins = {o.strip().lower().rstrip("/") for o in allow_origins}

    def host_ok(self, header: str | None) -> bool:
        parsed = split_host(header, self.default_port) if header else None
        if parsed is None:
            return False
        name, port = parsed
        if name in self.allow_hosts:
            return True
        if port != self.port:
            return False
        ip = _ip(name)
        if name == self.bound or (ip is not None and self.wildcard):
            return True
        if self.loopback and (
            (ip is not None and ip.is_loopback) or name == "localhost" or name.endswith(".localhost")
        ):
            return True
        return self.wildcard and not self.allow_hosts

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        if origin is None:
            return True
        origin = origin.strip().lower().rstrip("/")
        if origin in self.allow_origins:
            return True
        scheme, sep, netloc = origin.partition("://")
        parsed = split_host(netloc, 443 if scheme == "https" else 80) if sep and scheme in ("http", "https") else None
        if parsed is None:
            return False  # `null` (sandboxed frames, file:) and anything unparsable
        if scheme == self.scheme and host and parsed == split_host(host, self.default_port):
            return True
        name, _ = parsed
        ip = _ip(name)
        return (
            self.loopback
            and not self.wildcard
            and ((ip is not None and ip.is_loopback) or name == "localhost" or name.endswith(".localhost"))
        )
