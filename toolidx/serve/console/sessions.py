"""The console's sessions: a cookie that names a token's grant, opened by a login form (or, for
`toolidx ui`, by a one-time link), and the CSRF token bound to it.

The cookie holds a random id only (never the token); the server keeps id -> grant in memory, so a
restart logs everyone out. Each form carries HMAC(secret, session id): a page on another origin
can neither read it nor compute it, and the cookie itself is HttpOnly and SameSite=Strict.
The login form, before any session, is bound the same way to a random pre-login cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

from ..access import Grant

COOKIE = "toolidx_session"
LOGIN_COOKIE = "toolidx_login"
MAX_AGE_S = 12 * 3600  # a session lasts a working day, then the token is asked for again
MAX_SESSIONS = 10_000  # the oldest is dropped past this: logins cannot fill the memory


@dataclass(frozen=True)
class Session:
    sid: str
    grant: Grant
    opened: float


class Sessions:
    def __init__(self, once: str | None = None, once_grant: Grant | None = None):
        self._secret = secrets.token_bytes(32)
        self._open: OrderedDict[str, Session] = OrderedDict()
        # `toolidx ui`'s one-time link: its secret's digest -> the grant it opens a session for
        self._once = {_digest(once): once_grant} if once and once_grant else {}

    def open(self, grant: Grant) -> Session:
        s = Session(secrets.token_urlsafe(32), grant, time.monotonic())
        self._open[s.sid] = s
        while len(self._open) > MAX_SESSIONS:
            self._open.popitem(last=False)
        return s

    def get(self, sid: str | None) -> Session | None:
        s = self._open.get(sid or "")
        if s is not None and time.monotonic() - s.opened > MAX_AGE_S:
            self._open.pop(s.sid, None)
            return None
        return s

    def close(self, sid: str) -> None:
        self._open.pop(sid, None)

    def redeem(self, once: str) -> Grant | None:
        """The grant of a one-time link, which then no longer works (compared in constant time)."""
        offered = _digest(once)
        for known in list(self._once):
            if hmac.compare_digest(offered, known):
                return self._once.pop(known)
        return None

    def csrf(self, key: str) -> str:
        """The form token bound to `key` (a session id, or the pre-login cookie)."""
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, key: str | None, offered: object) -> bool:
        """`offered` (a form field: text, or a file a forged form sent) is `key`'s form token."""
        if not key or not isinstance(offered, str) or not offered:
            return False
        return hmac.compare_digest(self.csrf(key).encode(), offered.encode("utf-8", errors="replace"))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).digest()
