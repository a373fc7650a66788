"""Quoted spans of a request, read as argument values rather than as words that pick the tool.

Requests to an agent quote the values a tool will be called with: `search the "my_data" index
for "AI"`, `rename the event 'Team Lunch'`, `create a list named "My Tasks"`. Those words say
little about which tool serves the request, but in a long request they are often the rarest words
(highest idf) and they pull the embedding towards whatever the value happens to mean. Hybrid
search therefore weighs a word that occurs only inside quotes by QUOTED_WEIGHT in BM25 and embeds
the request without its quoted spans (docs/research/search.md: ETOM L2 R@1 +.012, LiveMCP unchanged). A
request that is nothing but quotes is read as it is.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..core.tokens import query_terms

QUOTED_WEIGHT = 0.25  # 0 to 0.5 measured alike; a quoted platform name ("On 'Semgrep'") still counts

# "..." and “...” anywhere; '...' only where the quote cannot be an apostrophe (users' files)
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<!\w)'[^'\n]{2,}'(?!\w)")


@lru_cache(maxsize=512)  # search asks twice per query (embedding, BM25 weights)
def _outside(text: str) -> tuple[str, frozenset[str] | None]:
    """(text without its quoted spans, the query terms left outside them), or (text, None) when
    it has no quotes or nothing but quotes."""
    if '"' not in text and "'" not in text and "“" not in text:
        return text, None
    rest = " ".join(_QUOTED.sub(" ", text).split())
    terms = query_terms(rest)
    return (rest, frozenset(terms)) if terms and rest != text else (text, None)


def strip_quoted(text: str) -> str:
    """`text` without its quoted spans; `text` itself when nothing else is left."""
    return _outside(text)[0]


def term_weights(text: str, terms: list[str]) -> dict[str, float]:
    """{term: QUOTED_WEIGHT} for the query terms found only inside quotes (empty: none, or the
    request has no word outside quotes)."""
    outside = _outside(text)[1]
    if outside is None:
        return {}
    return {t: QUOTED_WEIGHT for t in terms if t not in outside}
