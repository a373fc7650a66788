"""Secret-looking values taken out of arguments before they are kept as examples
(`serve --record-examples`). Errs on the side of redacting: an example with a placeholder still
teaches the shape of a call; a leaked token cannot be taken back.

A value is replaced by REDACTED when its key is named like a secret (token, key, password,
secret, auth, credential, cookie, session, signature, private), or when the value itself looks
like one: a bearer/basic authorization value, a JWT, an AWS access key id, a GitHub / GitLab /
Slack / OpenAI / Anthropic / Google style token, a PEM private key, or a long high-entropy string.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(token|secret|passw|pwd|passphrase|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?key|"
    r"^key$|_key$|auth|credential|cookie|session|signature|bearer)", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"(?:^|\s)(?:bearer|basic|token)\s+\S{8,}"                      # Authorization header values
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"      # JWT
    r"|\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b"                 # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b"  # GitHub tokens
    r"|\bglpat-[A-Za-z0-9_-]{16,}\b"                                 # GitLab
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}\b"                             # Slack
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}\b"                      # OpenAI / Anthropic
    r"|\bAIza[0-9A-Za-z_-]{30,}\b"                                    # Google API key
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----",                           # PEM
    re.IGNORECASE)
_TOKENISH = re.compile(r"[A-Za-z0-9+/=_\-.]{24,}")
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
    return bool(_SECRET_KEY.search(key))


def redact(value: Any) -> tuple[Any, int]:
    """(`value` with secret-looking values replaced by REDACTED, how many were replaced)."""
    count = 0

    def walk(v: Any, key: str | None) -> Any:
        nonlocal count
        if key is not None and secret_key(key) and v not in (None, "", True, False) \
                and not isinstance(v, (dict, list)):
            count += 1
            return REDACTED
        if isinstance(v, dict):
            return {k: walk(x, str(k)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, None) for x in v]
        if isinstance(v, str) and looks_secret(v):
            count += 1
            return REDACTED
        return v

    return walk(value, None), count
