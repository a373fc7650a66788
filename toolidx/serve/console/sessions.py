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
from collections.abc import Callable
from dataclasses import dataclass

from ..access import Grant

COOKIE = "toolidx_session"
LOGIN_COOKIE = "toolidx_login"
MAX_AGE_S = 12 * 3600  # a session lasts a working day, then the token is asked for again
# past this a token's oldest session is dropped: logins cannot fill the memory, and one token's
# logins never sign out another token's holder (the count of tokens is the token file's)
SESSIONS_PER_TOKEN = 100


@dataclass(frozen=True)
class Session:
    sid: str
    grant: Grant
    opened: float


class Sessions:
    def __init__(self, once: str | None = None, once_grant: Grant | None = None):
        self._secret = secrets.token_bytes(32)
        self._open: dict[str, Session] = {}
        self._by_token: dict[str, OrderedDict[str, None]] = {}  # a grant's label -> its sessions, oldest first
        # `toolidx ui`'s one-time link: its secret's digest -> the grant it opens a session for
        self._once = {_digest(once): once_grant} if once and once_grant else {}
        # `toolidx ui`: its one token is shown to nobody, so its login page offers no token form
        self.link_only = bool(self._once)

    def open(self, grant: Grant) -> Session:
        s = Session(secrets.token_urlsafe(32), grant, time.monotonic())
        self._open[s.sid] = s
        mine = self._by_token.setdefault(grant.label, OrderedDict())
        mine[s.sid] = None
        while len(mine) > SESSIONS_PER_TOKEN:
            self._open.pop(mine.popitem(last=False)[0], None)
        return s

    def get(self, sid: str | None) -> Session | None:
        s = self._open.get(sid or "")
        if s is not None and time.monotonic() - s.opened > MAX_AGE_S:
            self.close(s.sid)
            return None
        return s

    def close(self, sid: str) -> None:
        s = self._open.pop(sid, None)
        if s is not None:
            self._by_token.get(s.grant.label, OrderedDict()).pop(sid, None)

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


class LoginThrottle:
    """Failed sign-ins per client address: past FREE failures in WINDOW_S seconds, each further
    attempt waits 2, 4, 8 ... seconds (at most MAX_WAIT_S) after the last failure, and is answered
    429 before the token is even compared. A success does not clear the count (a holder of a weak
    token could otherwise guess the admin's between its own logins). ADDRESSES bounds the memory:
    the oldest address is forgotten first. Behind a reverse proxy every client has its address."""

    FREE = 5
    WINDOW_S = 600.0
    MAX_WAIT_S = 300.0
    ADDRESSES = 10_000

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._failed: OrderedDict[str, list[float]] = OrderedDict()

    def _recent(self, address: str) -> list[float]:
        now = self._clock()
        kept = [t for t in self._failed.get(address, []) if now - t < self.WINDOW_S]
        if kept:
            self._failed[address] = kept
        else:
            self._failed.pop(address, None)
        return kept

    def wait_s(self, address: str) -> float:
        """Seconds before `address` may try again (0: now)."""
        recent = self._recent(address)
        if len(recent) < self.FREE:
            return 0.0
        wait = min(self.MAX_WAIT_S, 2.0 ** (len(recent) - self.FREE + 1))
        return max(0.0, recent[-1] + wait - self._clock())

    def failed(self, address: str) -> int:
        """Count a failure; returns how many `address` has in the window."""
        recent = self._recent(address)
        recent.append(self._clock())
        self._failed[address] = recent
        self._failed.move_to_end(address)
        while len(self._failed) > self.ADDRESSES:
            self._failed.popitem(last=False)
        return len(recent)
