"""What a request asks done, and whether a tool does the opposite (issue 32).

An embedding reads "delete a directory" and `create_directory` as close (the same object, verbs
of one family), and so does BM25 (the shared word). The gate then lets through, with confidence,
a tool that would do the opposite of what was asked. This module reads the action of each side
with a small verb lexicon, and hybrid's evidence gets two marks (search.hybrid.gather):

- `opposed`: the tool's action contradicts the request's: antonyms (create / delete, start /
  stop, complete / reopen, buy / sell, upload / download), an update asked of a tool that creates
  or deletes, or a verb and the one that undoes it (ANTONYMS: lock / unlock, enable / disable,
  activate / deactivate, follow / unfollow);
- `reads_only`: the request changes something (creates, deletes, updates, sends, buys, starts,
  ...) and the tool only reads (get, list, search, ...): "buy 0.1 ETH" and `get_price`;
- `writes`, the other way round: the request only reads (a read verb or a question, and no verb
  of the lexicon that changes something: "show me how to create a branch" asks about creating)
  and the tool changes something: "list the entities in my knowledge graph" and
  `create_entities`; "do not delete the entities, just show me the graph" reads (search.negation's
  rest of the request).

Their weights belong to the model they were fitted on (calibration.ModelFit.action,
benchmarks/fit_fusion.py): a mark lowers the hit's score (its final logit, after the list is read),
so a marked tool falls below an unmarked one of like evidence, and a request whose best tools are
all marked falls under the "no good match" threshold.

Only plain English verbs are read; a request with none ("I finished it, my task list should show
that") or a tool name with none (`weather`) gets no mark. The request's action is what its first
word after the polite opening ("can you please", "I want to") names, when the lexicon has it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..core.tooldoc import split_name

READ, CREATE, DELETE, UPDATE, START, STOP, COMPLETE, REOPEN, BUY, SELL, UPLOAD, DOWNLOAD, SEND = (
    "read",
    "create",
    "delete",
    "update",
    "start",
    "stop",
    "complete",
    "reopen",
    "buy",
    "sell",
    "upload",
    "download",
    "send",
)

VERBS: dict[str, str] = {}
for _action, _spelled in {
    READ: "get list show find search read fetch view look lookup check retrieve query browse see describe "
    "display inspect count lists gets shows finds searches reads fetches views retrieves describes "
    # what reads and computes but changes nothing, and the nouns tools are named with for it
    "parse analyze summarize extract calculate whois searcher getter finder reader viewer fetcher details "
    "info",
    CREATE: "create add make insert register new creates adds makes inserts registers build builds "
    "compose draft write writes schedule remind record log draw reserve book commit save remember memorize "
    "store stores jot",
    DELETE: "delete remove erase destroy purge trash discard wipe deletes removes erases destroys uninstall cancel",
    UPDATE: "update edit modify change rename amend updates edits modifies changes renames set adjust move "
    "increase decrease scale rotate assign renew fix stamp upvote vote",
    START: "start launch resume begin starts launches resumes begins boot play stream enable activate",
    STOP: "stop kill halt pause terminate stops kills halts pauses terminates abort disable deactivate",
    COMPLETE: "complete finish completes finishes done",
    REOPEN: "reopen undo revert uncomplete reopens undoes reverts",
    BUY: "buy purchase buys purchases order pay",
    SELL: "sell sells",
    UPLOAD: "upload push publish submit uploads pushes publishes submits",
    DOWNLOAD: "download pull downloads pulls",
    SEND: "send post reply sends posts replies share call",
}.items():
    for _w in _spelled.split():
        VERBS[_w] = _action

# two-word verbs, read before the one-word ones
PHRASES = {
    ("take", "back"): REOPEN,
    ("roll", "back"): REOPEN,
    ("turn", "off"): STOP,
    ("shut", "down"): STOP,
    ("turn", "on"): START,
    ("look", "up"): READ,
    ("get", "rid"): DELETE,
    ("set", "up"): CREATE,
    ("sign", "up"): CREATE,
    ("sign", "me"): CREATE,
    ("kick", "off"): START,
    ("turn", "up"): UPDATE,
    ("turn", "down"): UPDATE,
    ("place", "a"): BUY,
    ("place", "an"): BUY,
    ("mark", "done"): COMPLETE,
    ("mark", "complete"): COMPLETE,
    ("cross", "off"): COMPLETE,
    ("check", "in"): CREATE,  # a commit, not a look inside
    ("tell", "me"): READ,
}

OPPOSITES = {
    frozenset((CREATE, DELETE)),
    frozenset((START, STOP)),
    frozenset((COMPLETE, REOPEN)),
    frozenset((BUY, SELL)),
    frozenset((UPLOAD, DOWNLOAD)),
}
# an update asked of a tool that creates or deletes: "change the record" and `create_record`; an
# undo asked of a tool that does ("take back my last move" and `make_move`)
ASKED_NOT_DONE = {(UPDATE, CREATE), (UPDATE, DELETE)} | {
    (REOPEN, done) for done in (CREATE, COMPLETE, START, UPLOAD, SEND, BUY, UPDATE)
}
# actions that change something; asked of a tool that only reads, the tool cannot do them
WRITES = frozenset((CREATE, DELETE, UPDATE, START, STOP, COMPLETE, REOPEN, BUY, SELL, UPLOAD, SEND))
# Verbs and the verbs that undo them, each pair spelled out: a prefix is no evidence by itself
# ("design" is no un-"sign", nor "dispatch" un-"patch", "display" un-"play", "debug" un-"bug"). A
# request's verb and a tool name's word in one pair mark the tool opposed (`unlock the door` and
# `lock_door`); benchmarks/antonyms.py lists what it marks on every bench tool name.
_PAIRS = (
    "lock/unlock enable/disable activate/deactivate follow/unfollow subscribe/unsubscribe "
    "archive/unarchive mount/unmount install/uninstall connect/disconnect block/unblock mute/unmute "
    "pin/unpin star/unstar hide/unhide assign/unassign link/unlink load/unload pack/unpack zip/unzip "
    "register/unregister register/deregister publish/unpublish freeze/unfreeze suspend/unsuspend "
    "ban/unban watch/unwatch favorite/unfavorite approve/disapprove encrypt/decrypt "
    "compress/decompress attach/detach select/deselect mark/unmark tag/untag share/unshare "
    "check/uncheck flag/unflag resolve/unresolve save/unsave delete/undelete bookmark/unbookmark "
    "snooze/unsnooze ignore/unignore like/unlike merge/unmerge "
    "deploy/undeploy schedule/unschedule protect/unprotect"
)
ANTONYMS = tuple(tuple(pair.split("/")) for pair in _PAIRS.split())
# words a request opens with before its verb ("could you please help me to ...")
OPENING = frozenset(
    " ".join(
        (
            "can could would will you please pls kindly i i'd id we me my help want wanna like need to let",
            "lets let's just go ahead and try hey hi ok okay so now also then",
        )
    ).split()
)
DETERMINERS = frozenset("the a an my this these those our your his her their its every each".split())  # noqa: SIM905
QUESTION = frozenset(("what", "what's", "whats", "which", "how", "who", "where", "when", "is", "are"))
LOOK_AHEAD = 8  # the request's verb is among its first words
_WORD = re.compile(r"[a-z][a-z']*")


def read_request(query: str) -> tuple[str | None, str | None]:
    """(action, word) of a request: its first word after the opening ("can you please"), and the
    action that word (or the two-word verb it starts) names; None for what it lacks. A question
    asks to read; a noun first ("weather in Paris") names no action."""
    words = _WORD.findall(query.lower())[:LOOK_AHEAD]
    for i, w in enumerate(words):
        if w in OPENING:
            continue
        if i + 1 < len(words) and (w, words[i + 1]) in PHRASES:
            return PHRASES[(w, words[i + 1])], w
        return VERBS.get(w, READ if w in QUESTION else None), w
    return None, None


@lru_cache(maxsize=65536)
def tool_action(name: str) -> str | None:
    """The action of a tool from its name's words (`create_directory`, `issue_create`,
    `getWeather`): the first word when it is a known verb, else the last, else the first known
    verb between them; None when it has none."""
    words = _words(name)
    pairs = list(zip(words, words[1:]))
    if pairs and pairs[0] in PHRASES:
        return PHRASES[pairs[0]]
    # verb_noun (`create_issue`) or noun_verb (`issue_create`, `todo_list_add`); else the first verb
    for w in (words[:1] + words[-1:] + words[1:-1]) if words else []:
        if w in VERBS:
            return VERBS[w]
    return None


@lru_cache(maxsize=65536)
def _words(name: str) -> tuple[str, ...]:
    return tuple(split_name(name))


def name_words(name: str) -> tuple[str, ...]:
    """A tool name's words, lowercase (`getWeather`: get, weather), cached."""
    return _words(name)


def _antonym_lexicon() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for a, b in ANTONYMS:
        for x, y in ((a, b), (b, a)):  # with the -s of a name's verb (`unlocks`, `locks`)
            for form in (x, x + "s"):
                out.setdefault(form, set()).update((y, y + "s"))
    return {w: frozenset(v) for w, v in out.items()}


OPPOSITE_WORDS = _antonym_lexicon()


def _negations(word: str) -> frozenset[str]:
    """The words that undo `word` or that it undoes (ANTONYMS): `unlock` / `lock`."""
    return OPPOSITE_WORDS.get(word, frozenset())


def marks(request: tuple[str | None, str | None], name: str) -> tuple[int, int]:
    """(opposed, reads_only) of a tool named `name` for a request read by `read_request`."""
    asked, word = request
    if word and not _negations(word).isdisjoint(_words(name)):
        return 1, 0
    tool = tool_action(name)
    if asked is None or tool is None or asked == tool:
        return 0, 0
    opposed = frozenset((asked, tool)) in OPPOSITES or (asked, tool) in ASKED_NOT_DONE
    return int(opposed), int(not opposed and asked in WRITES and tool == READ)


def does(request: tuple[str | None, str | None], name: str) -> int:
    """1 when the request changes something and a tool named `name` does that very action
    (`save a fact` and `add_observations`, both create): the tool that rises above one that
    only reads (search.calibration.score_candidates)."""
    asked = request[0]
    return int(asked in WRITES and tool_action(name) == asked and not marks(request, name)[0])


# words of the verb lexicon that a tool name also uses as a noun after its object (`git_log`,
# `purchase_order`, `blog_post`): the only verb of such a name is no evidence that it writes
_NOUNS = "log logs record records post posts order orders book books call calls share shares draft drafts schedule"
NOUN_TOO = frozenset((*_NOUNS.split(), "schedules", "new", "changes"))


def writes(request: tuple[str | None, str | None], name: str, reads: bool) -> int:
    """1 when the request asks to read and only reads (`reads`: only_reads of its text) and a
    tool named `name` changes something (`list the entities` and `create_entities`)."""
    if not reads or request[0] != READ or tool_action(name) not in WRITES:
        return 0
    words = _words(name)
    verb = next((w for w in (words[:1] + words[-1:] + words[1:-1]) if w in VERBS), None)
    lead = bool(words) and (words[0] in VERBS or tuple(words[:2]) in PHRASES)
    return int(lead or verb not in NOUN_TOO)


def forms(word: str) -> frozenset[str]:
    """`word` and the stems its -ing / -ed / -s inflection could come from (deleting: delete;
    stopping: stop; clears: clear)."""
    w = word.lower()
    out = {w}
    if w.endswith("ing") and len(w) > 5:
        out |= {w[:-3], w[:-3] + "e"}
        if w[-4] == w[-5]:
            out.add(w[:-4])
    if w.endswith("ed") and len(w) > 4:
        out |= {w[:-2], w[:-1]}
        if w[-3] == w[-4]:
            out.add(w[:-3])
    if w.endswith("es") and len(w) > 4:
        out.add(w[:-2])
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        out.add(w[:-1])
    return frozenset(out)


def inflected(word: str) -> str | None:
    """The action of `word` or of a verb its inflection comes from (`deleting`: delete)."""
    for f in sorted(forms(word)):
        if f in VERBS:
            return VERBS[f]
    return None


def only_reads(text: str) -> bool:
    """Whether no verb of the lexicon in a request, in any inflection, changes something: of a
    request that asks to read, whether it only reads ("show me how to create a branch", "what
    happens if I delete the sheet", "read the article, saved to notes.md" ask about a write). In
    a question, a verb of change in the past asks what happened, not that it be done: "what
    changed since my last commit", "which files were deleted"."""
    words = _WORD.findall(text.lower())
    past = read_request(text)[1] in QUESTION
    return all(
        inflected(w) in (None, READ)
        or (past and w.endswith("ed"))
        # "my last commit" is a noun; "the article, saved to" a verb, and "a new page" asks one made
        or (after_determiner(words, i) and not w.endswith("ed") and w != "new")
        for i, w in enumerate(words)
    )


def after_determiner(words: list[str], i: int) -> bool:
    """Whether `words[i]` follows a determiner by a word or two: a noun, though the lexicon has
    it as a verb ("my last commit", "the git log")."""
    return not DETERMINERS.isdisjoint(words[max(0, i - 2) : i])


# a clause of a request that starts with a verb: after a comma or a sentence's end, after "and",
# "then", "also", "next", "finally", after "to" (what a step is for: "call the method to get the
# counts") or "that" / "which" (what a thing made must do)
_CLAUSE = re.compile(
    r"(?:^|[,.;:!?]\s*|\b(?:and|then|also|after that|afterwards|next|finally|to|that|which)\s+)"
    r"(?:then\s+|also\s+|please\s+)?([a-z][a-z']*)"
)


def several_steps(text: str, asked: str | None) -> bool:
    """Whether a clause of the request asks an action besides `asked`, its own ("create a project
    and then list its tools"): a task of steps, one of which may only read."""
    for m in _CLAUSE.finditer(text.lower()):
        said = _verb_or_its_s(m.group(1))
        if said is not None and said != asked:
            return True
    return False


def _verb_or_its_s(w: str) -> str | None:
    """The action of a verb of the lexicon, with its -s ("and checks", "then lists")."""
    return VERBS.get(w) or (VERBS.get(w[:-1]) if w.endswith("s") else None)


def asks_one_thing(text: str, asked: str | None) -> bool:
    """Whether every verb of the lexicon in the request names the action it asks: "save a fact
    to the knowledge graph" does; "create a folder and then list its files" asks two (a task of
    steps needs its reading step too, and the rule that lifts a tool doing the asked action
    cost ETOM's multi-step sets R@5 when it read such tasks)."""
    if asked is None:
        return False
    for w in _WORD.findall(text.lower()):
        said = _verb_or_its_s(w)
        if said not in (None, asked):
            return False
    return True
