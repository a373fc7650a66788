"""A catalog's postgresql:// URL as toolidx tells it from a file and shows it: the scheme is the
user's, so every layer may test or mask one. Neither engine's folder imports `store.db` (which
opens both), so what store/pg/ needs of a URL is here."""

from __future__ import annotations

import re
from typing import Any, TypeGuard
from urllib.parse import SplitResult, urlsplit, urlunsplit

PG_SCHEMES = ("postgresql://", "postgres://")


def is_pg_url(target: Any) -> TypeGuard[str]:
    """Whether `target` names a catalog in PostgreSQL (store/pg/) rather than an index file:
    the one test, which `open_db` and the CLI's --db make before anything is opened."""
    return isinstance(target, str) and target.startswith(PG_SCHEMES)


_SECRET_KEY = re.compile(r"pass|secret|token|key|auth|cred", re.I)


def unsplit_url(parts: SplitResult) -> str:
    """urlunsplit, keeping the `//` of an empty authority: libpq's `postgresql:///db?host=/socket`
    (a Unix socket, no host in the authority) came back as `postgresql:/db...`, which is no
    postgresql:// URL at all."""
    text = urlunsplit(parts)
    if parts.scheme and not parts.netloc and not text.startswith(f"{parts.scheme}://"):
        text = f"{parts.scheme}://{text[len(parts.scheme) + 1 :]}"
    return text


def public_url(url: str) -> str:
    """The URL with every secret replaced by ***: the password of `user:pass@` and the value of
    each secret query key (`?password=`, `sslpassword`, `passfile`, ...). The one masking of a
    catalog URL: what toolidx prints, stores (db.path) and puts in errors and HTTP answers."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password:
            user = netloc.rpartition("@")[0].partition(":")[0]
            netloc = f"{user}:***@{netloc.rpartition('@')[2]}"
    except ValueError:  # not a URL urlsplit can read: nothing of it is shown
        return url.partition("://")[0] + "://***"
    query = re.sub(
        r"(^|&)([^&=]*)=([^&]*)",
        lambda m: f"{m.group(1)}{m.group(2)}=***" if _SECRET_KEY.search(m.group(2)) else m.group(0),
        parts.query,
    )
    return unsplit_url(parts._replace(netloc=netloc, query=query))


def url_secrets(url: str) -> list[str]:
    """The secret values `public_url` hides (as written and percent-decoded), longest first: to
    mask them in text that is not the URL (a driver's error message)."""
    from urllib.parse import unquote

    found: list[str] = []
    try:
        parts = urlsplit(url)
        if parts.password:
            found.append(parts.password)
    except ValueError:
        return []
    for m in re.finditer(r"(?:^|&)([^&=]*)=([^&]*)", parts.query):
        if _SECRET_KEY.search(m.group(1)):
            found.append(m.group(2))
    found += [unquote(v) for v in found]
    return sorted({v for v in found if v}, key=len, reverse=True)
