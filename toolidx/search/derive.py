"""Words related by derivation ("remember" and "memory", "calculate" and "calculator"), as the
keyword index stems them: TABLE, written by scripts/derive.py from WordNet 3.0's derivationally
related forms (Princeton University; its license is at the head of the table). Read by
search.server_match: a request word related to a server's name ("remember ..." and the `memory`
server) is searched also as that name."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..core.notices import warn_once

TABLE = Path(__file__).with_name("derive.txt")


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[str, ...]]:
    try:
        text = TABLE.read_text()
    except OSError as e:  # a broken install: search goes on without related words
        warn_once("derive", f"{TABLE}: {e.strerror or e}: words related by derivation are not read (reinstall toolidx)")
        return {}
    out: dict[str, list[str]] = {}
    for line in text.split("\n"):
        if line and not line.startswith("#"):
            stem, *after = line.split(" ")  # each pair once, on the line of the stem that sorts first
            out.setdefault(stem, []).extend(after)
            for other in after:
                out.setdefault(other, []).append(stem)
    return {s: tuple(sorted(r)) for s, r in out.items()}


def related(stem: str) -> tuple[str, ...]:
    """The stems related to `stem` by derivation (none: empty)."""
    return _table().get(stem, ())
