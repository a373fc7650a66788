"""Near requests: a named product the catalog lacks (issue 43).

"create a new Jira ticket for the login bug" on a catalog with GitHub: everything but the product
is there (a ticket is an issue, a bug is a bug), so the calibrated score and the far gate both
answer it, with `github/create_issue` first. What the catalog lacks is the one word that says
where: Jira. A product's name is evidence a request's other words cannot outweigh: a Jira ticket
filed on GitHub is not what was asked.

A request names a product when it has a coined name: a word capitalised where a sentence does
not start ("Jira", "Trello", "Dropbox") or in camel case anywhere ("GitLab", "MongoDB",
"QuickBooks"; not an identifier's `contactListId`) that is no whole word of the model's vocabulary
(bert-base-uncased's WordPiece list, which both of toolidx's models and all-MiniLM-L6-v2 read
with: "Alice", "Paris", "Slack" or "Zoom" are English to it, "Jira" and "Asana" are not), not a
place (search.gate's PLACES), nor all capitals (PDF, CSV, USD: formats and units, not products),
where a request names a product: where it is done ("in QuickBooks", "on GitLab", "to the Airtable
base", "from Spotify") or what holds the thing it acts on ("a Jira ticket", "the MongoDB
collection", "my Jupyter notebook": PRODUCT_NOUNS). A name in any other place is an argument,
a person, a coin, a stock ("the price of Dogecoin", "stats for Azir"): no evidence either way.
When no tool of the catalog has the name (its document frequency, as the keyword index cuts it, is 0: a tool's name,
description, server or parameters naming it makes it the catalog's) and no tool is near the
request in meaning (the best cosine under the model's bound, calibration.json `near`), the
request asks for a product the catalog lacks: hybrid lowers its list under the "no good match"
gate and says which ("not in the catalog: Jira").

A request asks an action none of the tools does when its verb (its first word past the opening,
search.actions.read_request) names an action of actions' lexicon that changes something (delete,
send, create, ...), it asks that one thing and has a subject (search.gate.subjects: "delete the
file notes.txt" is about *file*), and none of its best K tools may do it: none has the verb it
typed (in its name or text, as the keyword index stems them), does the action by its name
(`remove_file`), says a verb of the action in its description ("Manage branches: ... delete a
branch") or has no description (what it does is unknown, so it may): "nothing here deletes
file" (the subject words its best tools have, else all of them). Every best tool is read
for the action, whatever it is about, so a tool a server adds can only make the action done,
never a request turned away that another tool would answer. A verb the lexicon lacks
("translate", "lock") is not read: measured, such verbs were as often a synonym of a tool's
("duplicate the tab" and `copy_sheet`) as a missing action.

Fit-or-refuse: the bounds are per model (benchmarks/near_dev.py); a model without it has no near
gate. The rule reads the request and the catalog's document frequencies, never a server's
claims: a server's text can only make a name the catalog's (its requests answered), never make
another server's requests turned away (docs/reliability.md).
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..core.notices import warn_once
from ..core.tokens import MAX_QUERY_CHARS
from . import actions, gate
from .gate import K

# the WordPiece vocabulary of toolidx's models (bert-base-uncased's, Apache-2.0), shipped with the
# default model: its whole words are what the model knows as words
VOCAB = Path(__file__).resolve().parents[1] / "models" / "tool-minilm-l6-v2" / "tokenizer.json"
_CAPITALISED = re.compile(r"(?<![\w.'/@:#-])([A-Z][a-z]*(?:[A-Z]+[a-z]*)*)(?![\w'/@-])")
# where a request says a thing is done: "in QuickBooks", "on GitLab", "to the Airtable base"
_WHERE = re.compile(
    r"\b(?:on|in|into|onto|to|from|via|using|with|through|inside)\s+(?:(?:the|my|our|your|their|a|an)\s+)?$",
    re.IGNORECASE,
)
# what a product holds, named after it: "a Jira ticket", "the MongoDB collection"
PRODUCT_NOUNS = frozenset(
    """
    ticket tickets issue issues card cards board boards channel channels message messages page pages
    base bases table tables database databases db collection collections bucket buckets account
    accounts workspace workspaces project projects repo repos repository repositories notebook
    notebooks task tasks call calls meeting meetings cluster clusters instance instances sheet sheets
    spreadsheet spreadsheets doc docs document documents calendar calendars playlist playlists chat
    chats group groups inbox wiki space spaces folder folders drive store list lists note notes
    """.split()  # noqa: SIM905 - a word list, read as one
)
_NEXT_WORD = re.compile(r"\s+([a-z]+)")
# "on" after what is written or told is "about": "the Wikipedia article on Llullaillaco" names a topic
_TOPIC = re.compile(
    r"\b(?:article|articles|report|reports|essay|paper|papers|book|books|story|stories|research|information|info|"
    r"news|facts|lecture|talk|documentary|notes|summary|opinion|thoughts)\s+on\s+(?:the\s+)?$",
    re.IGNORECASE,
)


@lru_cache(maxsize=1)
def vocabulary() -> frozenset[str]:
    """The model vocabulary's whole lowercase words (no '##' pieces, no marks)."""
    try:
        vocab = json.loads(VOCAB.read_text())["model"]["vocab"]
    except (OSError, ValueError, KeyError) as e:  # a broken install: no word is coined, no near gate
        warn_once("vocab", f"{VOCAB}: {e}: the near gate is off (reinstall toolidx)")
        return frozenset()
    return frozenset(w for w in vocab if w.isalpha() and w.islower())


def coined(text: str) -> list[tuple[str, str]]:
    """The request's coined names: (as typed, lowercase), in order, each once."""
    text = text[:MAX_QUERY_CHARS]
    plain = gate.without_values(text)
    vocab = vocabulary()
    if not vocab:
        return []
    out: dict[str, str] = {}
    for m in _CAPITALISED.finditer(plain):
        word = m.group(1)
        if word.isupper():
            continue  # PDF, CSV, USD: a format or a unit, not a product
        camel = any(ch.isupper() for ch in word[1:])
        if not camel and gate.opens_sentence(plain, m.start()):
            continue  # "Book a flight": a sentence's first word says nothing of a name
        after = _NEXT_WORD.match(plain, m.end())
        where = _WHERE.search(plain, 0, m.start()) and not _TOPIC.search(plain, 0, m.start())
        if not where and not (after and after.group(1) in PRODUCT_NOUNS):
            continue  # an argument, a person, a coin, a topic: not where the request is done
        key = word.lower()
        if len(key) < 3 or key in gate.places() or (key in vocab and not camel):
            continue
        out.setdefault(key, word)
    return [(w, k) for k, w in out.items()]


@dataclass(frozen=True)
class Near:
    """A request read for a named product the catalog lacks."""

    missing: tuple[str, ...]  # its coined names no tool has, as typed
    lacking: tuple[str, tuple[str, ...]] | None  # (verb, object words) no tool about the object does
    cosine: float  # the best cosine of any candidate
    near: bool  # turned away

    def why(self) -> str:
        if self.missing:
            return "not in the catalog: " + ", ".join(self.missing[:3])
        verb, objects = self.lacking or ("", ())
        return f"nothing here {_third_person(verb)} {', '.join(objects[:3])}".rstrip()


def _third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def read(
    text: str,
    terms: list[str],
    cands: dict[int, dict],
    scored: dict[int, float],
    fit: dict,
    df: Callable[[list[str]], dict[str, int]],
    rows: Callable[[list[int]], dict[int, dict]],
    slips: Collection[str] = (),
) -> Near | None:
    """The request `text`, its keyword `terms` and its hybrid candidates (each one's "cos" and
    "matched" words) with their scores, read with the model's
    near bounds (`fit`: "cos" for a product, "action_cos" for an action; a part without its
    bound is off), the catalog's document frequencies (`df`) and a reader of the best tools'
    names and descriptions (`rows`), and the typing slips search corrected (`slips`: a slip is
    no verb); None when it names no product the catalog lacks and asks
    no action its object's tools lack."""
    names = coined(text)
    missing: tuple[str, ...] = ()
    if names:
        have = df([key for _, key in names])
        missing = tuple(word for word, key in names if not have.get(key))
    lacking = _lacking(text, terms, cands, scored, rows, slips)
    if not missing and lacking is None:
        return None
    cos = max((c.get("cos") or 0.0 for c in cands.values()), default=0.0)
    turned = (bool(missing) and cos < float(fit.get("cos", -2.0))) or (
        lacking is not None and cos < float(fit.get("action_cos", -2.0))
    )
    return Near(missing, lacking, cos, turned)


def _lacking(
    text: str,
    terms: list[str],
    cands: dict[int, dict],
    scored: dict[int, float],
    rows: Callable[[list[int]], dict[int, dict]],
    slips: Collection[str],
) -> tuple[str, tuple[str, ...]] | None:
    """(the verb, the object words) when the request asks an action and no best tool about its
    object may do it (module doc); None otherwise."""
    asked, verb = actions.read_request(text)
    if not verb or verb in slips:
        return None
    if asked not in actions.WRITES or not actions.asks_one_thing(text, asked):
        return None
    subject = set(gate.subjects(text, terms)) - {verb}
    if not subject:
        return None
    best = heapq.nlargest(K, scored, key=scored.__getitem__)
    objects: list[str] = []
    for r, row in rows(best).items():
        name = row.get("name") or ""
        if verb in cands[r].get("matched", ()) or actions.tool_action(name) == asked:
            return None  # it says the verb (as the keyword index stems it) or does the action
        said = re.findall(r"[a-z]+", (row.get("description") or "").lower())
        if any(actions.VERBS.get(w) == asked for w in said) or not said:
            return None  # its description says a verb of the action, or says nothing: it may
        objects += [w for w in cands[r].get("matched", ()) if w in subject and w not in objects]
    return verb, tuple(objects or sorted(subject))
