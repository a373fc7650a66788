"""Typing slips in a request ("wether in paris tomorow", "show me teh last 5 comits").

A slip is a word that is neither English (words.txt: MiniLM's vocabulary and the common words of
tool catalogs, scripts/words.py) nor the catalog's own (no tool has it, as the keyword index stems
it): it matches no tool and the model reads it as noise. Such a word is searched also as the
English words one edit away that some tool has: a letter left out, mistyped, or two letters
swapped (not one letter too many: "redis" less its i is a word, but rarely what was meant),
beginning with the same letter; at most MAX_PER_WORD, the most common in the catalog first. Two
edits found more slips' words wrong than right on the bench sets. They are added beside the slip,
not in its place (it may be a name the catalog does not know), to the text that both halves of
search read; the result says what was added.

Only what reads as a plain word is looked at: letters standing alone (not part of a path, a file
name or an id, not quoted), lowercase, or capitalised as a sentence's first word; MIN_LEN letters
or more, at most MAX_WORDS slips a request. What this bought and cost on the bench sets:
docs/research/search.md ("Typing slips").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from ..core.notices import warn_once
from ..core.tokens import MAX_QUERY_CHARS, STOP_WORDS
from ..store.index import Reader
from . import quoted

WORDS = Path(__file__).with_name("words.txt")
MIN_LEN = 4  # shorter words have too many neighbours one edit away ("teh": the, ten, tea, ...)
MAX_WORDS = 6  # slips looked up a request (a few hundred microseconds each)
MAX_PER_WORD = 3  # "wether": weather and whether, both one edit away
# a word on its own: not inside an identifier, a path, a file or host name, an e-mail, nor quoted
# (a quoted value means exactly what it says)
_WORD = re.compile(rf"(?<![\w.'\"/@:#-])[A-Za-z][a-z]{{{MIN_LEN - 1},}}(?![\w'\"/@#-]|[.:-][\w/])")
_SENTENCE_END = re.compile(r"(?:^|[.!?:]\s+)$")


def _plain(text: str) -> Iterator[re.Match]:
    """The words a slip is looked for in: lowercase, or capitalised at the start of a sentence
    ("Serch for ..."); any other capital marks a name."""
    for m in _WORD.finditer(text):
        if m.group(0)[0].islower() or _SENTENCE_END.search(text, 0, m.start()):
            yield m


@lru_cache(maxsize=1)
def _english() -> tuple[frozenset[str], frozenset[str]]:
    """The words, and their stems as the index's tokenizer cuts them."""
    words: list[str] = []
    stems: set[str] = set()
    try:
        text = WORDS.read_text()
    except OSError as e:  # a broken install: search goes on, without slips
        warn_once("words", f"{WORDS}: {e.strerror or e}: typing slips are not searched (reinstall toolidx)")
        return frozenset(), frozenset()
    for line in text.split("\n"):
        if line and not line.startswith("#"):
            word, _, stem = line.partition(" ")
            words.append(word)
            stems.add(stem or word)
    return frozenset(words), frozenset(stems)


@lru_cache(maxsize=1)
def _by_letter() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for w in sorted(_english()[0]):
        out.setdefault(w[0], []).append(w)
    return out


def corrections(db: Reader, text: str) -> dict[str, list[str]]:
    """{slip: the catalog's words searched beside it} for the request `text` (empty: none)."""
    plain = quoted.strip_quoted(text[:MAX_QUERY_CHARS])
    seen = list(dict.fromkeys(w for m in _plain(plain) if (w := m.group(0).lower()) not in STOP_WORDS))
    if not seen:
        return {}
    # the catalog's words first: a lookup the search makes anyway, and the word list (~10 ms to
    # read) is then read only for a request with a word no tool has
    df = db.retrieval.document_frequency(seen)
    slips = [w for w in seen if not df[w]]
    if slips:
        english, english_stems = _english()
        cut = db.retrieval.stems(slips) or {}
        # an inflection the list lacks ("pasted", "renting") is known by its stem
        slips = [w for w in slips if w not in english and not set(cut.get(w, ())) <= english_stems][:MAX_WORDS]
    if not slips:
        return {}
    from rapidfuzz import process
    from rapidfuzz.distance import DamerauLevenshtein

    near: dict[str, list[str]] = {}
    for w in slips:
        words = _by_letter().get(w[0], [])
        found = process.extract(w, words, scorer=DamerauLevenshtein.distance, score_cutoff=1, limit=None)
        # a letter left out, mistyped or swapped; not one too many: "redis", "printf", "leaky"
        # less a letter are words, rarely what was meant
        near[w] = [c for c, _, _ in found if len(c) >= len(w) and c not in STOP_WORDS]
    df = db.retrieval.document_frequency(sorted({c for cs in near.values() for c in cs}))
    out: dict[str, list[str]] = {}
    for w, cs in near.items():
        if known := sorted((c for c in cs if df[c]), key=lambda c: (-df[c], c)):
            out[w] = known[:MAX_PER_WORD]
    return out


def expand(text: str, fixes: dict[str, list[str]]) -> str:
    """`text` with each slip followed by the words searched beside it."""
    if not fixes:
        return text
    out, at = [], 0
    for m in _plain(text):
        if more := fixes.get(m.group(0).lower()):
            out += [text[at : m.end()], " ", " ".join(more)]
            at = m.end()
    return "".join(out) + text[at:]
