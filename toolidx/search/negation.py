"""What a request forbids: "do not delete my files, just list them" (issues 42 item 10, 43).

Both halves of search read such a request as being about deleting: the word "delete" is in it, and
an embedding does not read "not" (a tool that deletes files was first, at 0.99 or more). One small
rule: a negator (`do not`, `don't`, `never`, `without`, `instead of`, `rather than`, or `not` opening
a clause) forbids the verb that follows it in its clause (the clause ends at punctuation or at
`just`, `only`, `but`, `instead`, `and`, `then`). What is forbidden:

- its first word (`delete`, `deleting`, `merge`), and when that is no verb of the action lexicon,
  the first verb in the clause that changes something (`never run a write query`: `write`), each
  with its inflections;
- when that verb's action changes something (search.actions.WRITES) and is not also what the rest
  of the request asks, every tool of that action (`do not remove ...`: the tools that delete).

The rest of the request is what is asked: it is searched with the negator and the forbidden verbs
taken out (`my files, just list them`), its action is read from it, and a forbidden tool ranks below
every tool that is not (search.calibration.score_candidates). A request with no negator is searched
as typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import actions, quoted

# the negators; `not` only where it opens a clause ("not the merge, just ..."), since "is not
# working" or "whether or not" forbid nothing
_NEGATOR = re.compile(
    r"\b(?:do\s+not|does\s+not|don'?t|doesn'?t|never|without|instead\s+of|rather\s+than|no\s+need\s+to)\b"
    r"|(?:^|[,;:.!?]\s*|\b(?:but|and)\s+)(?P<bare>not)\b",
    re.IGNORECASE,
)
# where a forbidden clause ends: punctuation, or a word that turns to what is asked
_CLAUSE_END = re.compile(r"[,;:.!?()]|\b(?:just|only|but|instead|and|then|rather|so)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
# a negator in a condition forbids nothing ("if it doesn't exist", "unless ...")
_CONDITION = re.compile(r"\b(?:if|unless|whether|when|in\s+case)\b", re.IGNORECASE)
_ONLY = re.compile(r"\b(?:only|just)\b", re.IGNORECASE)  # "I only want to read": what is asked is to read
# the words that turn from what is forbidden to what is asked, at the start of the clause after it
_TURN = re.compile(r"^[\s,;:.!?()-]*(?:(?:just|only|but|instead|rather|so|then|and|please)\b\s*)*", re.IGNORECASE)
# words between a negator and its verb ("do not ever try to delete", "never want to run")
_FILLERS = "ever even try to want need please you i we go ahead actually really accidentally the a an any anything"
_FILLER = frozenset(_FILLERS.split())


@dataclass(frozen=True)
class Negation:
    """A request read for what it forbids."""

    text: str  # the request less its negators and forbidden verbs: what is searched
    words: frozenset[str]  # the forbidden verbs, each with its inflections' stems (forms)
    said: tuple[str, ...]  # the forbidden verbs as typed, for `why`
    actions: frozenset[str]  # the actions forbidden whole (search.actions.WRITES only)
    request: tuple[str | None, str | None]  # what is asked (search.actions.read_request), from the rest

    def forbids(self, name: str) -> bool:
        """Whether a tool named `name` does what the request forbids: a word of its name is a
        forbidden verb, or its action is a forbidden one."""
        if any(not actions.forms(w).isdisjoint(self.words) for w in actions.name_words(name)):
            return True
        return bool(self.actions) and actions.tool_action(name) in self.actions


def read(text: str) -> Negation | None:
    """The request's forbidden verbs, or None when it forbids nothing."""
    text = text.replace("\u2019", "'")  # a typographic apostrophe: don’t
    quoted_spans = [m.span() for m in quoted._QUOTED.finditer(text)]
    clauses: list[tuple[int, int, list[re.Match]]] = []  # (negator start, its end, the verbs it forbids)
    for m in _NEGATOR.finditer(text):
        start = m.start("bare") if m.group("bare") else m.start()
        if any(a <= start < b for a, b in quoted_spans):  # an argument's value: "Don't Panic"
            continue
        opened = max(text.rfind(ch, 0, start) for ch in ",.;:!?")
        if _CONDITION.search(text, opened + 1, start):  # "if it doesn't exist, create it"
            continue
        end_m = _CLAUSE_END.search(text, m.end())
        clause_end = end_m.start() if end_m else len(text)
        words = list(_WORD.finditer(text, m.end(), clause_end))
        first = next((w for w in words if w.group().lower() not in _FILLER), None)
        verbs = [first] if first else []
        lexical = next((w for w in words if actions.inflected(w.group()) in actions.WRITES and w is not first), None)
        if lexical is not None and not (first is not None and actions.inflected(first.group())):
            verbs.append(lexical)
        if verbs:
            clauses.append((start, m.end(), verbs))
    if not clauses:
        return None
    first_at = clauses[0][0]
    if actions.read_request(text[:first_at])[1] is not None:
        # the request says what it asks before it forbids anything: read as ever
        request = actions.read_request(text)
    else:
        # it opens with what it forbids: what is asked is the clause after ("..., just list them")
        end_m = _CLAUSE_END.search(text, clauses[-1][1])
        after = _ONLY.sub("", _TURN.sub("", text[end_m.start() if end_m else len(text) :], count=1))
        request = actions.read_request(after)
    # a forbidden verb that is also what is asked forbids an object, not the action ("send the
    # invoice without sending a copy"): no tool is forbidden by it
    cut: list[tuple[int, int]] = []
    said: list[str] = []
    for start, end, verbs in clauses:
        kept = [v for v in verbs if request[0] is None or actions.inflected(v.group()) != request[0]]
        if kept:
            cut.append((start, end))
            cut += [v.span() for v in kept]
            said += [v.group().lower() for v in kept]
    if not said:
        return None
    rest = "".join(ch for i, ch in enumerate(text) if not any(a <= i < b for a, b in cut))
    rest = " ".join(rest.split())
    if request[1] is None:
        request = actions.read_request(rest)
    forbidden = {a for w in said if (a := actions.inflected(w)) in actions.WRITES}
    return Negation(
        text=rest,
        words=frozenset(f for w in said for f in actions.forms(w)),
        said=tuple(dict.fromkeys(said)),
        actions=frozenset(forbidden),
        request=request,
    )
