"""A count with its noun, for every message toolidx writes: `plural(1, "tool")` is "1 tool",
`plural(3, "tool")` "3 tools" (never "1 tools", never "tool(s)" where the count is known)."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and `noun`, or `many` (default: noun + "s") unless n is 1."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"
