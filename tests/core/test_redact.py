"""Secrets taken out of arguments before they are kept as examples (core/redact.py), in the shapes
calls carry them: URL credentials, nested objects and lists under a secret key, numbers, pairs
inside a longer string; and what must stay (words that merely contain a secret word)."""

from __future__ import annotations

import json

from toolidx.core.redact import REDACTED, redact

PW, TOK1, TOK2 = "hunter2-pw", "tok-one-1", "tok-two-2"


def test_secrets_in_nested_shapes_and_inside_strings_are_redacted():
    planted = {
        "dsn": f"postgres://app:{PW}@db.internal:5432/prod",
        "redis": f"redis://:{PW}x@cache:6379/0",
        "raw_at": f"mysql://u:{PW}@weird@h/db",  # a raw @ in the password
        "auth": {"user": "bob", "pass": PW + "y"},
        "tokens": [TOK1, TOK2],
        "pin": 1234,
        "userPin": 1,
        "otp": 0,
        "cvv": "123",
        "callback": f"https://example.com/cb?api_key={PW}z&page=2",
        "conn": f"host=h user=u password={PW}w dbname=d",
        "nested": {"list": [{"client_secret": PW + "q"}]},
    }
    clean, n = redact(planted)
    text = json.dumps(clean)
    assert PW not in text and TOK1 not in text and TOK2 not in text and "1234" not in text, text
    assert clean["dsn"] == f"postgres://app:{REDACTED}@db.internal:5432/prod"
    assert clean["callback"] == f"https://example.com/cb?api_key={REDACTED}&page=2"
    assert clean["conn"] == f"host=h user=u password={REDACTED} dbname=d"
    assert clean["tokens"] == [REDACTED, REDACTED] and clean["pin"] == REDACTED
    assert clean["userPin"] == REDACTED and clean["otp"] == REDACTED  # 1 and 0 are not True / False
    assert n == 14


def test_ordinary_values_are_kept():
    plain = {
        "shipping": "express",
        "spinner": True,
        "mapping": "a->b",
        "query": "weather in Lisbon",
        "url": "https://example.com:8080/path?page=2",
        "path": "/home/me/q3.txt",
        "ratio": "3:1",
        "when": "10:30",
        "tokenizer": None,
        "auth_required": False,
        "count": 3,
    }
    clean, n = redact(plain)
    assert clean == plain and n == 0
