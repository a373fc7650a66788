"""Untrusted text (tool names, descriptions, parameter docs, serverInfo, server errors) made safe to
show: the one place that neutralises it, for every renderer (plain text, rich, Markdown, JSON), on
a terminal or in a pipe.

- `visible(text)`: control characters (C0 but newline/tab, DEL, C1: ANSI CSI/OSC escape sequences
  start with these), invisible characters (zero-width, bidi overrides, BOM, tag characters) and
  lone surrogates become `\\uXXXX` escapes. The result cannot move the cursor, clear the screen,
  set a window title, open an OSC 8 hyperlink or hide text, and it stays valid inside a JSON string.
- `markup(text)`: `visible` plus rich markup escaped (`[link=…]` is shown, never interpreted).
- `markdown(text)` / `code(text)`: `visible` plus Markdown escaped / a code span that cannot be
  broken out of.
"""

from __future__ import annotations

import re

# C0 (but \t \n), DEL, C1; zero-width and joiners, bidi controls, BOM, soft hyphen, tag
# characters, variation selectors supplement; lone surrogates (from JSON's \ud800)
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028\u2029"
    "\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)


def _esc(m: re.Match) -> str:
    c = ord(m.group(0))
    if c <= 0xFFFF:
        return f"\\u{c:04x}"
    c -= 0x10000  # as a JSON surrogate pair: valid inside a JSON string too
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


def visible(text: str, keep_newlines: bool = True) -> str:
    """`text` with every control or invisible character shown as an escape (see the module doc)."""
    if not isinstance(text, str):
        text = str(text)
    if not keep_newlines:
        text = text.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    return _UNSAFE.sub(_esc, text)


def markup(text: str) -> str:
    """For a rich markup string: visible, and `[` escaped (so is a backslash before it)."""
    from rich.markup import escape

    return escape(visible(text))


_MD = re.compile(r"([\\`*_\[\]<>|~#!])")


def markdown(text: str) -> str:
    """For Markdown on one line (tables, lists): visible, Markdown punctuation escaped."""
    return _MD.sub(r"\\\1", visible(text, keep_newlines=False))


def code(text: str) -> str:
    """A Markdown code span holding `text` (its own backticks cannot close it)."""
    t = visible(text, keep_newlines=False)
    runs = [len(r) for r in re.findall(r"`+", t)]
    fence = "`" * (max(runs) + 1 if runs else 1)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"
