"""Query text -> keyword terms, and terms -> a safe FTS5 query.

User text is never passed to FTS5 as syntax: it is cut into Unicode word tokens (the same
camelCase / snake_case splitting as tool names), stop words, request boilerplate and bare numbers
are dropped (an identifier's digits stay), and each remaining term is quoted and OR-combined. So
`"`, `*`, `NEAR`, `-`, `:`, parentheses, emoji and 10 KB pastes all become plain words or nothing.
"""

from __future__ import annotations

import re

from .tooldoc import cap_words, split_name

MAX_TERMS = 48  # a pasted page must not become a 2,000-term OR query
MAX_QUERY_CHARS = 4000  # the longest query read, and accepted by serve and HTTP (the model reads ~256 tokens)

_WORD = re.compile(r"\w+")

# English function words plus the boilerplate of requests to an assistant ("can you please help
# me ..."). Platform names are kept: "On Semgrep, scan ..." must still reach the Semgrep server.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "please",
        "kindly",
        "help",
        "want",
        "wanted",
        "need",
        "needs",
        "like",
        "tell",
        "show",
        "give",
        "get",
        "gets",
        "got",
        "make",
        "sure",
        "also",
        "etc",
        "e",
        "g",
        "ie",
        "eg",
        "using",
        "via",
        "thanks",
        "thank",
        "hi",
        "hello",
        "hey",
        "whether",
        "may",
        "might",
        "must",
        "shall",
    ]
)


def query_terms(text: str, whole: bool = True) -> list[str]:
    """Lowercase keyword terms of a query, in order, deduplicated, at most MAX_TERMS. `whole`: a
    word in camel case is a term whole too, before its parts (False: its parts only, as a name's
    words are compared)."""
    seen: set[str] = set()
    out: list[str] = []
    for m in _WORD.finditer(text[:MAX_QUERY_CHARS]):
        word = m.group(0)
        # digits alone ("on March 3 2023") say little; inside an identifier (tool_01234, v2_api)
        # they are what tells it from its siblings, so they stay
        ident = not word.isdigit() and any(ch.isdigit() for ch in word)
        parts = split_name(word)
        # a word in camel case is also the word the index holds ("PowerPoint", "GitHub": tool texts
        # say it whole, as one token), before its parts (an identifier: "getUserById")
        joined = [word.lower()] if whole and len(parts) > 1 and word.isalpha() else []
        for w in map(cap_words, joined + parts):  # a long word as the index cut it
            if (
                w in seen
                or w in STOP_WORDS
                or (w.isdigit() and not ident)
                or (len(w) == 1 and w.isascii() and not (ident and w.isdigit()))
            ):
                continue
            seen.add(w)
            out.append(w)
            if len(out) >= MAX_TERMS:
                return out
    return out


def fts_query(terms: list[str]) -> str:
    """`"t1" OR "t2" ...`: every term quoted, so none can be read as FTS5 syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
