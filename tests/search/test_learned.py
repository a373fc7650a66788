"""Learning from usage (issue 46, search/learned.py), through the library's search and the CLI,
on serve's index of real servers (conftest `serve_index`) with the real model: pairs are put in
the usage store through its API, as serve's recorder writes them."""

from __future__ import annotations

import re
import shutil

import pytest
from conftest import run_cli

from toolidx.core.filters import Filters
from toolidx.search import learned
from toolidx.search.hybrid import search
from toolidx.search.request import SearchRequest
from toolidx.store.db import open_db
from toolidx.store.usage import MAX_PAIRS_PER_TOOL, PAIR_DAYS, open_usage, usage_path

TAUGHT = [  # three ways of asking one thing, each followed by a successful call of the tool
    "please keep in mind my sister's birthday is in May",
    "don't let me forget my sister's birthday, it is in May",
    "keep in mind my sister's birthday is in May",
]
# no "remember": that verb names the memory server by derivation (search.derive), and the ranking
# alone finds it; the lift is for what the ranking misses
UNSEEN = "keep in mind that my sister's birthday is on May 12"
TOOL = "memory/create_entities"


@pytest.fixture
def index(serve_index, tmp_path):
    db = tmp_path / "serve.db"
    shutil.copy(serve_index, db)
    return db


def teach(
    store, db, embedder, tool, requests, *, token="", session=None, tool_hash=None, at="2026-11-29T00:00:00.000Z"
):
    model = db.get_meta("embed_model")
    h = tool_hash or db.scalar("SELECT hash FROM tools WHERE id = ?", (tool,))
    store.record_pairs(
        [
            (
                tool,
                h,
                learned.request_text(q),
                model,
                embedder.embed_query(learned.request_text(q)),
                token,
                session or f"s{i}",
                at,
            )
            for i, q in enumerate(requests)
        ]
    )


def ranked(res):
    return [h.id for h in res.hits]


def test_past_requests_like_this_one_lift_the_tool_they_led_to(index, embedder):
    db = open_db(index)
    before = search(db, SearchRequest(UNSEEN, min_score=0, limit=40), embedder=embedder)
    assert TOOL not in ranked(before)[:10]  # a goal-style request the ranking alone misses
    store = open_usage(usage_path(index))
    teach(store, db, embedder, TOOL, TAUGHT)
    res = search(db, SearchRequest(UNSEEN), embedder=embedder)  # AUTO: the usage beside the index
    assert not res.no_match and TOOL in ranked(res)[:3], res.to_json()
    hit = next(h for h in res.hits if h.id == TOOL)
    assert re.search(r"chosen after [23] similar requests", hit.why), hit.why  # those past the model's floor
    # an unrelated request is not moved: the same hits and scores as without any usage
    for q in ("what time is it in Tokyo", "list the files in my home folder"):
        alone = search(db, SearchRequest(q), embedder=embedder, learned=None)
        taught = search(db, SearchRequest(q), embedder=embedder)
        assert [(h.id, h.score) for h in taught.hits] == [(h.id, h.score) for h in alone.hits]
    # the CLI reads the same usage, and says what was learned
    r = run_cli("search", UNSEEN, "--db", index, "--json")
    assert r.code == 0 and TOOL in [h["id"] for h in r.json["hits"]][:3], r.stderr
    store.close()
    db.close()


def test_learning_off_lifts_nothing(index, embedder, monkeypatch):
    db = open_db(index)
    store = open_usage(usage_path(index))
    teach(store, db, embedder, TOOL, TAUGHT)
    monkeypatch.setenv(learned.OFF_ENV, "1")
    assert TOOL not in ranked(search(db, SearchRequest(UNSEEN, min_score=0), embedder=embedder))[:10]
    monkeypatch.delenv(learned.OFF_ENV)
    monkeypatch.setattr(learned, "CONSTANTS", {})  # a model without fitted constants: refused
    assert TOOL not in ranked(search(db, SearchRequest(UNSEEN, min_score=0), embedder=embedder))[:10]
    store.close()
    db.close()


def test_a_store_whose_pairs_were_all_forgotten_lifts_nothing_and_fails_nothing(index, embedder):
    """After `forget --all` the store is there with no pairs: the search reads it as no history (it
    failed a numpy reshape on every search, caught and warned)."""
    db = open_db(index)
    store = open_usage(usage_path(index))
    teach(store, db, embedder, TOOL, TAUGHT)
    model = db.get_meta("embed_model")
    src = learned.Source(store, "")
    assert learned.recall(db, UNSEEN, embedder, None, model, src)[0]  # taught: something lifted
    store.forget_pairs()
    assert learned.recall(db, UNSEEN, embedder, None, model, src) == ({}, None)
    store.close()
    db.close()


def test_one_token_moves_other_callers_results_no_further_than_the_bound(index, embedder, tmp_path):
    """Mallory searches and calls one tool 1,000 times, with the very request Alice will make: in
    anyone else's search that weighs as one similar request of their own (OTHER_CAP), the stated
    bound; only Mallory's own searches feel the rest."""
    db = open_db(index)
    store = open_usage(usage_path(index))
    victim = "what time is it in Tokyo"
    target = "everything/echo"
    vec = embedder.embed_query(learned.request_text(victim))
    h = db.scalar("SELECT hash FROM tools WHERE id = ?", (target,))
    model = db.get_meta("embed_model")
    at = "2026-11-29T00:00:00.000Z"
    store.record_pairs([(target, h, f"{victim} #{i}", model, vec, "mallory", f"m{i}", at) for i in range(1000)])
    one = open_usage(tmp_path / "one.db")  # the bound: one such request, by the caller itself
    one.record_pairs([(target, h, victim, model, vec, "alice", "a1", at)])

    def scores(src):
        res = search(db, SearchRequest(victim, min_score=0, limit=50), embedder=embedder, learned=src)
        return {x.id: x for x in res.hits}

    alone = scores(None)
    bounded = scores(learned.Source(one, "alice"))
    for caller in ("alice", ""):  # another token, and the owner (stdio, the CLI)
        seen = scores(learned.Source(store, caller))
        assert [(x.id, x.score) for x in seen.values()] == [(x.id, x.score) for x in bounded.values()]
        assert seen[target].score > alone[target].score and "chosen after 1 similar request" in seen[target].why
        # the strong match stays first: a capped lift cannot carry a weak tool over it
        assert next(iter(seen)) == next(iter(alone)) == "time/get_current_time"
    own = scores(learned.Source(store, "mallory"))  # its own searches: up to `saturate` count
    assert own[target].score > bounded[target].score and "chosen after 3 similar requests" in own[target].why
    one.close()
    store.close()
    db.close()


def test_a_changed_quarantined_or_out_of_scope_tool_is_never_lifted(index, embedder):
    db = open_db(index)
    store = open_usage(usage_path(index))
    teach(store, db, embedder, TOOL, TAUGHT, tool_hash="0" * 64)  # learned on another definition
    assert TOOL not in ranked(search(db, SearchRequest(UNSEEN, min_score=0), embedder=embedder))[:10]
    store.forget_pairs()
    teach(store, db, embedder, TOOL, TAUGHT)
    assert TOOL in ranked(search(db, SearchRequest(UNSEEN), embedder=embedder))[:3]
    # out of the search's scope (a token's servers), or not approved under quarantine
    scoped = search(
        db, SearchRequest(UNSEEN, min_score=0, filters=Filters(servers=["time", "everything"])), embedder=embedder
    )
    assert all(not x.id.startswith("memory/") for x in scoped.hits)
    assert run_cli("approve", "time/get_current_time", "everything/echo", "--db", index).code == 0
    quarantined = search(db, SearchRequest(UNSEEN, min_score=0, filters=Filters(approved_only=True)), embedder=embedder)
    assert TOOL not in ranked(quarantined)
    store.close()
    db.close()


def test_pairs_are_kept_once_per_session_masked_bounded_and_forgotten(tmp_path):
    store = open_usage(tmp_path / "u.db")
    v = b"\0" * 16
    row = ("s/t", "h", "convert a file", "m", v, "", "S1", "2026-11-29T00:00:00.000Z")
    store.record_pairs([row, row])
    store.record_pairs([row])  # the session's repeat: kept once
    store.record_pairs([(*row[:6], "S2", row[7])])  # another session: counts
    assert [(t["id"], t["pairs"]) for t in store.learned()] == [("s/t", 2)]
    old = "2020-01-01T00:00:00.000Z"  # past PAIR_DAYS: dropped at the next write
    store.record_pairs([("s/old", "h", "x", "m", v, "", "S3", old), ("s/u", "h", "y", "m", v, "bob", "S3", row[7])])
    assert {t["id"] for t in store.learned()} == {"s/t", "s/u"} and PAIR_DAYS == 90
    store.record_pairs([("s/t", "h", f"r{i}", "m", v, "bob", "S4", row[7]) for i in range(MAX_PAIRS_PER_TOOL + 5)])
    (t,) = [t for t in store.learned() if t["id"] == "s/t"]
    assert t["pairs"] == MAX_PAIRS_PER_TOOL and t["tokens"] == {"bob": MAX_PAIRS_PER_TOOL}  # the newest kept
    assert store.forget_pairs(token="bob", tool_id="s/u") == 1
    assert store.forget_pairs(tool_id="s/t") == MAX_PAIRS_PER_TOOL
    assert store.forget_pairs() == 0
    # a request's secrets are masked before it is kept (as recorded examples are)
    masked = learned.mask("remember my token ghp_abcdefghijklmnopqrstuvwxyz0123456789 please")
    assert "ghp_" not in masked and masked.startswith("remember my token ") and masked.endswith(" please")
    store.close()


def test_stats_shows_what_was_learned_and_forget_deletes_it(index, embedder):
    db = open_db(index)
    store = open_usage(usage_path(index))
    teach(store, db, embedder, TOOL, TAUGHT[:2], token="team")
    teach(store, db, embedder, TOOL, TAUGHT[2:], token="")
    teach(store, db, embedder, "time/get_current_time", ["what time is it"], token="team")
    store.close()
    db.close()
    r = run_cli("stats", "--db", index, "--usage", "--json")
    assert r.code == 0, r.stderr
    got = {t["id"]: t for t in r.json["usage"]["learned"]}
    assert got[TOOL]["pairs"] == 3 and got[TOOL]["tokens"] == {"team": 2, "": 1}
    assert got[TOOL]["requests"][0] in TAUGHT
    r = run_cli("stats", "--db", index, "--usage")
    assert r.code == 0 and "newest request" in r.stdout and f"{TOOL}\t3\t" in r.stdout
    assert run_cli("forget", "--db", index).code == 2  # forget what? nothing named
    r = run_cli("forget", "--db", index, "--token", "team", "--tool", TOOL, "--json")
    assert r.code == 0 and r.json["forgot"] == 2, r.stderr
    r = run_cli("forget", "--db", index, "--token", "", "--json")
    assert r.json["forgot"] == 1
    r = run_cli("forget", "--db", index, "--all")
    assert r.code == 0 and "forgot 1 learned pair" in r.stderr + r.stdout
    assert run_cli("stats", "--db", index, "--usage", "--json").json["usage"]["learned"] == []


def test_a_write_reads_only_its_new_pairs_and_a_deletion_none(index, embedder, monkeypatch):
    """A search keeps the pairs' ids and sign bits, not their vectors: after a write it reads the
    new pair's vector and those of the pairs near its request, never every pair's (it read all of
    them, 20,000 at the store's cap, after each write); after a deletion, only the near ones, and
    what was deleted is no longer lifted."""
    import numpy as np

    from toolidx.store import usage

    monkeypatch.setattr(usage, "MAX_PAIRS_PER_TOOL", 10**6)
    db = open_db(index)
    store = open_usage(usage_path(index))
    model = db.get_meta("embed_model")
    dim = embedder.dim
    others = 1000  # other tools' past requests, far from this one
    noise = np.random.default_rng(46).standard_normal((others, dim)).astype(np.float32)
    h = db.scalar("SELECT hash FROM tools WHERE id = ?", ("everything/echo",))
    at = "2026-11-29T00:00:00.000Z"
    store.record_pairs(
        [("everything/echo", h, f"n{i}", model, noise[i].tobytes(), "", f"n{i}", at) for i in range(others)]
    )
    teach(store, db, embedder, TOOL, TAUGHT[:2])
    vectors_read: list[int] = []
    rows = store.rows

    def counting(sql, params=()):
        got = rows(sql, params)
        vectors_read.append(sum(isinstance(x, (bytes, memoryview)) and len(x) == 4 * dim for r in got for x in r))
        return got

    monkeypatch.setattr(store, "rows", counting)
    src = learned.Source(store, "")

    def lifted() -> int:
        res = search(db, SearchRequest(UNSEEN, min_score=0), embedder=embedder, learned=src)
        hit = next((x for x in res.hits if x.id == TOOL), None)
        got = re.search(r"chosen after (\d) similar", hit.why) if hit else None
        return int(got.group(1)) if got else 0

    assert lifted() == 2
    vectors_read.clear()
    teach(store, db, embedder, TOOL, TAUGHT[2:], session="s2")
    assert lifted() == 3
    assert sum(vectors_read) == 1 + 3, vectors_read  # the new pair, then the three near ones
    vectors_read.clear()
    assert store.forget_pairs(tool_id=TOOL) == 3
    assert lifted() == 0
    assert sum(vectors_read) == 0, vectors_read
    teach(store, db, embedder, TOOL, TAUGHT[:1], session="again")  # a new pair after the deletion
    assert lifted() == 1
    store.close()
    db.close()


def test_the_shortlist_holds_what_an_exact_scan_lifts(index, embedder, monkeypatch):
    """Past requests that are real embeddings of near phrasings (ten ways of asking, thirty
    facts: many at or above the model's floor of one another), of 8 tools, ~32 a tool: for each
    request, each tool's strongest `saturate` pairs at or above the floor by an exact scan of
    every pair are among those the search reads by sign bits (with 4 a group read at most, not
    the shipped 50: the store's cap a tool), the lift is the exact scan's, and far fewer pairs are
    read than kept."""
    import numpy as np

    from toolidx.store import usage

    assert learned.PER_GROUP == MAX_PAIRS_PER_TOOL  # a store within its caps: no group over it
    monkeypatch.setattr(usage, "MAX_PAIRS_PER_TOOL", 10**6)
    monkeypatch.setattr(learned, "PER_GROUP", 4)
    asks = ["remember that", "note that", "keep in mind that", "don't forget that", "save the fact that"]
    asks += ["write down that", "make a note that", "store that", "please record that", "remind me later that"]
    facts = [
        "my sister's birthday is in May", "Carol's dog is called Rex", "the meeting moved to Friday",
        "our wifi password changed", "the invoice is due on the 3rd", "Bob prefers tea to coffee",
        "the server reboots at midnight", "my flight leaves at 9 am", "the car needs new tyres",
        "Alice is allergic to peanuts", "the rent went up this year", "the cat's vet visit is Tuesday",
        "the build broke on main", "Dan moved to Berlin", "the library closes at 6",
        "my passport expires in June", "the printer is out of toner", "Eve's phone number changed",
        "the release is on hold", "we ran out of milk", "the plants need water on Sundays",
        "grandma likes roses", "the gym is closed on holidays", "my bike lock code is new",
        "the kids' school starts at 8", "Frank owes me ten dollars", "the garage door is broken",
        "the project deadline is next week", "the dentist appointment is at 4", "the boiler was serviced",
    ]  # fmt: skip
    texts = [f"{a} {f}" for f in facts for a in asks]
    db = open_db(index)
    model = db.get_meta("embed_model")
    c = learned.constants(model)
    assert c is not None
    tools = [r["id"] for r in db.query("SELECT id FROM tools ORDER BY id")][:8]
    hashes = {t: db.scalar("SELECT hash FROM tools WHERE id = ?", (t,)) for t in tools}
    vecs = [embedder.embed_query(t) for t in texts]
    store = open_usage(usage_path(index))
    at = "2026-11-29T00:00:00.000Z"
    held = set(range(0, len(texts), 7))  # asked, never recorded
    kept = [i for i in range(len(texts)) if i not in held]
    tool_of = {i: tools[i % len(tools)] for i in kept}
    store.record_pairs([(tool_of[i], hashes[tool_of[i]], texts[i], model, vecs[i], "", f"s{i}", at) for i in kept])
    got = learned._pairs(store, model)
    assert got is not None and got.ids.size == len(kept)
    assert got.signs.nbytes == len(kept) * learned.SIGN_BITS // 8  # bits, not the vectors, in memory
    m = np.stack([np.frombuffer(vecs[i], dtype=np.float32) for i in kept])
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    pair = dict(zip(got.ids.tolist(), kept))  # pair id -> its request
    src = learned.Source(store, "")
    counted = read = 0
    reach = learned.REACH
    for i in sorted(held):
        q = np.frombuffer(vecs[i], dtype=np.float32)
        q = q / np.linalg.norm(q)
        sims = dict(zip(kept, (m @ q).tolist()))
        shortlist = {pair[x] for x in learned._shortlist(got, q, c.floor)}
        read += len(shortlist)
        for t in tools:
            strongest = sorted((j for j in kept if tool_of[j] == t and sims[j] >= c.floor), key=lambda j: -sims[j])
            counted += len(strongest[: c.saturate])
            assert set(strongest[: c.saturate]) <= shortlist, (texts[i], t)
        with_shortlist = learned.recall(db, texts[i], embedder, None, model, src)[0]
        monkeypatch.setattr(learned, "REACH", 1000.0)  # every pair read and scored: the exact scan
        monkeypatch.setattr(learned, "PER_GROUP", 10**9)
        assert learned.recall(db, texts[i], embedder, None, model, src)[0] == with_shortlist, texts[i]
        monkeypatch.setattr(learned, "REACH", reach)
        monkeypatch.setattr(learned, "PER_GROUP", 4)
    assert counted > 2 * len(held)  # near phrasings: several pairs count a request
    assert read < len(kept) * len(held) / 4
    store.close()
    db.close()
