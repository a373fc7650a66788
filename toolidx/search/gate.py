"""Far requests: is what the request is about anywhere in the catalog? (issue 43)

"book a flight to Paris next tuesday" on a catalog of file, git and time tools: the time
server's text names Europe/Paris, so BM25 and the embedding both find `convert_time`, and the
list read alone answers it. What the request is about, "flight", is in no tool. The calibrated
score cannot see that: it weighs how well a tool matches, and a place name matches well.

A request's subject words are its content words less what says nothing of the subject: the
action verb and the other verbs of search.actions' lexicon ("book", "order", "send"), requests'
filler ("please", "quickly", "something"), times and dates ("tuesday", "tonight", "7pm"), bare
numbers and ids, quoted values, and names: a capitalised word not at the start of a sentence
("Alice", "Spotify", "DHL") and the places of PLACES (the cities and countries of the machine's
time-zone database, scripts/places.py), whoever typed them in lowercase. A request whose every
subject word is missing from the tools it found (no best-K tool has any of them, as the keyword
index stems them) and whose nearest tool by meaning is farther than the model's bound (its best
cosine under `ModelFit.gate["cos"]`) is about nothing the catalog holds: hybrid lowers its list
under the "no good match" gate, and says which words it missed ("not in the catalog: flight").

Nothing else is judged: a request with no subject word ("show me what Alice did in Paris") is
left to the calibrated gate, and a match on a name or a verb is no evidence either way. The
bound is per model (calibration.json `gate`, fitted by benchmarks/gate_dev.py); a model without
one has no far gate. A server's text can only add coverage (a word in a tool makes requests
about it answerable), never remove it: a hostile server can make requests about its words
answered, as its tools' text already could, and nothing more (docs/reliability.md).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..core.notices import warn_once
from ..core.tokens import MAX_QUERY_CHARS, query_terms
from . import actions, quoted

PLACES = Path(__file__).with_name("places.txt")
# how many of the best tools are read for the request's subject words: the five an agent is
# shown and as many again (a subject word in the 8th tool is still the catalog's)
K = 10

# What a request says besides its subject: verbs of asking, filler, times. Written from the
# dev requests' shapes (benchmarks/data/gate_dev.jsonl), not from the bench sets' far requests.
_NOT_SUBJECT = frozenset(
    """
    want wants wanted need needs needed help helps like would please pls thanks thank tell give
    let know use using used go going put keep try trying able sure via kindly maybe ok okay hey hi
    quickly quick asap soon later now right currently current just also really actually
    something anything everything nothing someone somebody anyone everyone thing things stuff way
    lot bit kind whole entire every each near exactly properly safely effectively specific latest
    favorite favourite still top recent
    today tonight tomorrow yesterday morning afternoon evening night noon midnight weekend week
    weeks month months year years day days hour hours minute minutes second seconds ago next last
    previous upcoming daily weekly monthly yearly pm am oclock
    monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november december
    big small little large good great best better nice fine many much few several other same new
    different one two three four five six seven eight nine ten twenty hundred thousand dozen
    """.split()  # noqa: SIM905 - a word list, read as one
)
# a word before one of these is a verb ("water the plants", "track my package", "remember that
# Alice ..."): what the request does, whether or not search.actions knows it
_OBJECT = frozenset("the a an my this that these those me our your his her their its some all it them us him".split())  # noqa: SIM905
# a host, path, file or e-mail: a value, not a subject ("example.com", "Europe/Paris")
_VALUE = re.compile(r"\S*\w[./@:\\]\w\S*")
# a word capitalised where a sentence does not start: a name ("Alice", "Spotify", "DHL", "GitHub")
_NAME = re.compile(r"(?<![\w.'/@:#-])([A-Z][\w]*|[a-z]+[A-Z]\w*)")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|[\"'(]\s*)$")


def without_values(text: str) -> str:
    """`text` less its values: quoted arguments, hosts, paths, files, e-mails (an argument names
    nothing the request is about)."""
    return _VALUE.sub(" ", quoted.strip_quoted(text))


def opens_sentence(text: str, at: int) -> bool:
    """Whether the word at `at` opens a sentence of `text` (where a capital says nothing of a name)."""
    return bool(_SENTENCE_START.search(text, 0, at))


@lru_cache(maxsize=1)
def places() -> frozenset[str]:
    """The place words of PLACES (one a line, lowercase)."""
    try:
        text = PLACES.read_text()
    except OSError as e:  # a broken install: the gate goes on, reading places as words
        warn_once("places", f"{PLACES}: {e.strerror or e}: place names count as subject words (reinstall toolidx)")
        return frozenset()
    return frozenset(w for w in text.split("\n") if w and not w.startswith("#"))


def names(text: str) -> set[str]:
    """The request's names, lowercase: words capitalised anywhere but a sentence's start."""
    out = set()
    for m in _NAME.finditer(text):
        word = m.group(1)
        if word[0].isupper() and word[1:].islower() and opens_sentence(text, m.start()):
            continue  # "Book a flight": a sentence's first word, not a name
        out.update(query_terms(word) + [word.lower()])  # its parts as the keyword index cuts them
    return out


def subjects(text: str, terms: list[str]) -> list[str]:
    """What `text` is about, of its keyword `terms` (as search read them)."""
    text = text[:MAX_QUERY_CHARS]
    plain = without_values(text)
    words = re.findall(r"[a-z]+", plain.lower())
    said = set(words)
    typed = set(re.findall(r"[a-z]+", text.lower()))  # a term not typed is a slip's correction (search.spelling)
    skip = names(plain) | places() | {w for w, nxt in zip(words, words[1:]) if nxt in _OBJECT} | _fact(plain, words)
    # a verb of the lexicon a word or two after an article is a noun: "a SELECT query", "the git log"
    nouns = {w for i, w in enumerate(words) if w in actions.VERBS and actions.after_determiner(words, i)}
    return [
        t
        for t in terms
        if t.isalpha()
        and (t in said or t not in typed)
        and t not in skip
        and (t not in actions.VERBS or t in nouns)
        and t not in _NOT_SUBJECT
        and len(t) > 2
        and not (len(t) > 4 and t.endswith("ed") and not t.endswith("eed"))  # "moved", "named": a verb's
    ]


# how far past the request's verb its "that" may open the fact: the verb, then where the fact
# goes ("in the graph", "to my notes")
_FACT_REACH = 4


def _fact(plain: str, words: list[str]) -> set[str]:
    """The words of the clause after the request's verb and "that", when the verb writes
    ("remember that Alice likes tea", "record that ..."; search.actions.read_request): the fact it
    hands over is a value, like a quoted one, not what the request is about. A verb that reads
    asks about the clause ("check that the backup ran"), and it stays."""
    asked, verb = actions.read_request(plain)
    if asked not in actions.WRITES or verb not in words:
        return set()
    i = words.index(verb)
    # "that" right after the verb or after where it goes ("store in the graph that ...")
    for k in range(i + 1, min(i + _FACT_REACH + 1, len(words) - 1)):
        if words[k] == "that":
            return set(words[k + 1 :])
    return set()


@dataclass(frozen=True)
class About:
    """A request read for whether the catalog holds what it is about."""

    subjects: tuple[str, ...]  # its subject words
    covered: tuple[str, ...]  # those a best tool has
    share: float  # the covered words' share of the subject, each word weighed by its idf
    cosine: float  # the best cosine of any candidate
    far: bool  # about nothing the catalog holds: turned away

    def why(self) -> str:
        missing = [w for w in self.subjects if w not in self.covered]
        return "not in the catalog: " + ", ".join(missing[:5])


def read(
    text: str,
    terms: list[str],
    cands: dict[int, dict],
    scored: dict[int, float],
    fit: dict,
    df: Callable[[list[str]], dict[str, int]],
    n_tools: int,
) -> About | None:
    """The request `text` with its hybrid candidates (`cands`: each one's "matched" words and
    "cos") and their scores, read with the model's far gate (`fit`: "share" and "cos" bounds) and
    the catalog's document frequencies (`df`, of `n_tools` tools): whether it is far (About.far);
    None with no subject word. A word no tool has weighs most, a word every tool has nothing: the
    subject is covered by what is rare in the catalog, not by "file" or "data"."""
    subject = subjects(text, terms)
    if not subject:
        return None
    best = heapq.nlargest(K, scored, key=scored.__getitem__)
    have = {w for r in best for w in cands[r].get("matched", ())}
    covered = tuple(w for w in subject if w in have)
    share = coverage(subject, covered, df(subject), n_tools)
    cos = max((c.get("cos") or 0.0 for c in cands.values()), default=0.0)
    far = share < float(fit["share"]) and cos < float(fit["cos"])
    return About(tuple(subject), covered, share, cos, far)


def coverage(subject: list[str], covered: tuple[str, ...] | set[str], df: dict[str, int], n_tools: int) -> float:
    """The covered words' share of the subject, each word weighed by log((N + 1) / (df + 0.5))."""
    weight = {w: math.log((n_tools + 1) / (df.get(w, 0) + 0.5)) for w in subject}
    total = sum(weight.values())
    return sum(weight[w] for w in subject if w in covered) / total if total > 0 else 0.0


def lower(scored: dict[int, float], gate: float, below: float) -> dict[int, float]:
    """The scores with the whole list moved down, its order kept, until the best is `below` (in
    the logit) under the gate."""
    if not scored or gate <= 0:
        return scored
    top = max(scored.values())
    shift = _logit(top) - _logit(gate) + below
    if shift <= 0:
        return scored
    return {r: 1.0 / (1.0 + math.exp(min(shift - _logit(s), 700.0))) for r, s in scored.items()}


def _logit(p: float) -> float:
    p = min(max(p, 1e-12), 1 - 1e-12)
    return math.log(p / (1 - p))
