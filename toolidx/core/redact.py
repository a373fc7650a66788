"""Secret-looking values taken out of arguments before they are kept as examples
(`serve --record-examples`). Errs on the side of redacting: an example with a placeholder still
teaches the shape of a call; a leaked token cannot be taken back.

A value is replaced by REDACTED when its key is named like a secret (token, key, password, pass,
pin, otp, secret, auth, credential, cookie, session, signature, private), and so is everything
under such a key (`{"auth": {"pass": ...}}`, `{"tokens": [...]}`), numbers included (`"pin": 1234`);
or when the value itself looks like one: a bearer/basic authorization value, a JWT, an AWS access
key id, a GitHub / GitLab / Slack / OpenAI / Anthropic / Google style token, a PEM private key, or
a long high-entropy string. Inside a longer string only the secret part goes: the password of a
URL's credentials (`postgres://u:[REDACTED]@h/db`) and the value of a secret-named `name=value`
or `name: value` pair (`?api_key=...`, `password=...` in a key/value DSN).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(token|secret|passw|pwd|passphrase|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?key|"
    r"^key$|_key$|auth|credential|cookie|session|signature|bearer)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(?:^|\s)(?:bearer|basic|token)\s+\S{8,}"  # Authorization header values
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # JWT
    r"|\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b"  # GitHub tokens
    r"|\bglpat-[A-Za-z0-9_-]{16,}\b"  # GitLab
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}\b"  # Slack
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}\b"  # OpenAI / Anthropic
    r"|\bAIza[0-9A-Za-z_-]{30,}\b"  # Google API key
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----",  # PEM
    re.IGNORECASE,
)
_TOKENISH = re.compile(r"[A-Za-z0-9+/=_\-.]{24,}")
# short secret words count only as a whole word of the key ("pin" but not "shipping")
_SECRET_WORDS = frozenset(
    {"pass", "pin", "pins", "otp", "cvv", "cvc", "passcode", "mfa", "totp", "sig", "ssn", "creds", "pw"}
)
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# scheme://user:PASSWORD@host (the user may be empty: redis://:pw@host); the password runs to the
# last @ of the word, so one with a raw @ in it is still taken whole
_URL_CREDENTIALS = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:)(?P<pw>[^\s]+)(?=@)", re.IGNORECASE)
# name=value / name: value (query strings, key/value DSNs, config lines): the name and separator
# are matched alone, so a pair that is not secret never swallows the next one
_PAIR_HEAD = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)\s*(?:=|:(?!//))\s*")
_PAIR_VALUE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s&;,'\"]+")

MIN_ENTROPY_BITS = 3.5  # per character; English words and paths stay well below


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def looks_secret(value: str) -> bool:
    """A string that looks like a credential (see the module docstring)."""
    if _SECRET_VALUE.search(value):
        return True
    for run in _TOKENISH.findall(value):
        classes = sum(bool(re.search(p, run)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
        if classes >= 2 and _entropy(run) >= MIN_ENTROPY_BITS and not run.startswith(("/", ".")):
            return True
    return False


def secret_key(key: str) -> bool:
    if _SECRET_KEY.search(key):
        return True
    return any(w.lower() in _SECRET_WORDS for w in _KEY_WORDS.findall(key))


def _redact_inside(s: str) -> tuple[str, int]:
    """`s` with the secret parts of a longer string replaced: URL credentials' passwords and the
    values of secret-named pairs (how many)."""
    n = 0

    def url(m: re.Match) -> str:
        nonlocal n
        n += 1
        return m["head"] + REDACTED

    s = _URL_CREDENTIALS.sub(url, s)
    out, pos = [], 0
    for m in _PAIR_HEAD.finditer(s):
        if m.start() < pos or not secret_key(m["name"]):
            continue
        v = _PAIR_VALUE.match(s, m.end())
        if v is None or v[0].strip("'\"") in ("", REDACTED):
            continue
        out += [s[pos : m.end()], REDACTED]
        pos, n = v.end(), n + 1
    return "".join(out) + s[pos:], n


def redact(value: Any) -> tuple[Any, int]:
    """(`value` with secret-looking values replaced by REDACTED, how many were replaced)."""
    count = 0

    def walk(v: Any, secret: bool) -> Any:
        nonlocal count
        if isinstance(v, dict):
            return {k: walk(x, secret or secret_key(str(k))) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, secret) for x in v]  # the items of a list under `tokens` are tokens
        if secret and not (v is None or v == "" or isinstance(v, bool)):  # 1 == True: not `in`
            count += 1
            return REDACTED
        if isinstance(v, str):
            if looks_secret(v):
                count += 1
                return REDACTED
            clean, n = _redact_inside(v)
            count += n
            return clean
        return v

    return walk(value, False), count
