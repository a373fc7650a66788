"""serve learns from its own usage (issue 46): a real `toolidx serve` over stdio, spoken to with the
MCP SDK's client, against real servers (conftest `serve_index`); on PostgreSQL, two serve replicas
over one catalog."""

from __future__ import annotations

import shutil
import sys
import time

import anyio
import pytest
from conftest import STATE_ENV, run_cli

from toolidx.store.usage import open_usage, usage_path

pytestmark = [pytest.mark.servers, pytest.mark.slow]

TOOL = "memory/create_entities"
TAUGHT = [  # other words for one request, each followed by a successful call of TOOL
    "please keep in mind my sister's birthday is in May",
    "don't let me forget my sister's birthday, it is in May",
    "keep in mind my sister's birthday is in May",
]
# no "remember": that verb names the memory server by derivation (search.derive), and the ranking
# alone finds it; the lift is for what the ranking misses
UNSEEN = "keep in mind that my sister's birthday is on May 12"
FAILED = ["make a new folder named reports", "create a directory called reports", "make a folder for the reports"]
FAILED_UNSEEN = "create a new reports directory"
UNRELATED = "what time is it in Tokyo"


async def call(c, name, args):
    r = await c.call_tool(name, args)
    return r.structured_content or {}


def ids(answer: dict) -> list[str]:
    return [h["id"] for h in answer.get("hits", [])]


async def teach(c) -> list[dict]:
    """Each request searched (the best 30 whatever their score, as the no-match note suggests), then
    the tool run: create_entities succeeds, create_directory outside the allowed folders fails."""
    shown = []
    for i, q in enumerate(TAUGHT):
        found = await call(c, "search_tools", {"query": q, "limit": 30, "filters": {"min_score": 0}})
        assert TOOL in ids(found), found
        shown.append(found)
        ran = await c.call_tool(
            "execute_tool",
            {
                "tool_name": TOOL,
                "arguments": {"entities": [{"name": f"sister{i}", "entityType": "person", "observations": [q]}]},
            },
        )
        assert not ran.is_error, ran.content
    for q in FAILED:
        found = await call(c, "search_tools", {"query": q, "limit": 30, "filters": {"min_score": 0}})
        assert "filesystem/create_directory" in ids(found), found
        ran = await c.call_tool(
            "execute_tool", {"tool_name": "filesystem/create_directory", "arguments": {"path": "/proc/no/reports"}}
        )
        assert ran.is_error  # outside the allowed folders: a failed call teaches nothing
    return shown


def test_serve_over_stdio_learns_which_tool_a_request_like_this_one_needs(serve_index, model_path, tmp_path):
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    db = tmp_path / "learn.db"
    shutil.copy(serve_index, db)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolidx", "serve", "--db", str(db)],
        env={"TOOLIDX_MODEL_PATH": model_path, **STATE_ENV},
    )

    async def main():
        with open(tmp_path / "serve.err", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as c:
                out = {"before": await call(c, "search_tools", {"query": UNSEEN})}
                out["unrelated_before"] = await call(c, "search_tools", {"query": UNRELATED})
                await teach(c)
                out["after"] = await call(c, "search_tools", {"query": UNSEEN})
                out["text"] = (await c.call_tool("search_tools", {"query": UNSEEN})).content[0].text
                out["unrelated_after"] = await call(c, "search_tools", {"query": UNRELATED})
                out["failed_after"] = await call(c, "search_tools", {"query": FAILED_UNSEEN, "limit": 30})
                return out

    out = anyio.run(main)
    assert TOOL not in ids(out["before"])[:3]
    after = out["after"]
    assert not after["no_match"] and TOOL in ids(after)[:3], after
    assert "No good match" not in out["text"] and "no good match" not in str(after.get("notes"))
    # (get_current_time since a place's name weighs nothing by itself: "tokyo" drew convert_time)
    assert ids(out["unrelated_after"])[:1] == ids(out["unrelated_before"])[:1] == ["time/get_current_time"]
    assert "chosen after" not in str(out["unrelated_after"])
    # a tool whose calls failed after a search is not lifted for requests like it
    assert "chosen after" not in str(out["failed_after"])
    store = open_usage(usage_path(db), create=False)
    learned = {t["id"]: t for t in store.learned()}
    assert set(learned) == {TOOL} and learned[TOOL]["pairs"] == 3 and learned[TOOL]["tokens"] == {"": 3}
    store.close()
    r = run_cli("stats", "--db", db, "--usage", "--json")
    assert [t["id"] for t in r.json["usage"]["learned"]] == [TOOL]


def test_serve_no_learn_records_and_lifts_nothing(serve_index, model_path, tmp_path):
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    db = tmp_path / "off.db"
    shutil.copy(serve_index, db)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolidx", "serve", "--db", str(db), "--no-learn"],
        env={"TOOLIDX_MODEL_PATH": model_path, **STATE_ENV},  # the trust store the crawl wrote
    )

    async def main():
        with open(tmp_path / "serve.err", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as c:
                await teach(c)
                return await call(c, "search_tools", {"query": UNSEEN})

    after = anyio.run(main)
    assert TOOL not in ids(after)[:3]
    store = open_usage(usage_path(db), create=False)
    assert store.learned() == [] and store.tool_metrics()[TOOL]["ok"] == 3  # the calls are still counted
    store.close()


def test_what_one_replica_learns_the_other_uses(servers_config, model_path, pg_url, tmp_path, monkeypatch):
    """Two serve processes over one PostgreSQL catalog: A's session teaches, B's search uses it."""
    import json

    from mcp import Client

    from toolidx.serve.server import build_server

    monkeypatch.setenv("TOOLIDX_MODEL_PATH", model_path)
    src = servers_config["mcpServers"]
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {n: src[n] for n in ("memory", "filesystem", "time")}}))
    r = run_cli("crawl", "--config", cfg, "--db", pg_url, "--model-path", model_path)
    assert r.code == 0, r.stderr
    one, two = build_server(pg_url, config_path=str(cfg)), build_server(pg_url, config_path=str(cfg))

    async def first():
        async with Client(one, mode="legacy") as c:
            await teach(c)

    anyio.run(first)
    assert one.discovery.usage.flush(10)

    async def second():
        async with Client(two, mode="legacy") as c:
            return await call(c, "search_tools", {"query": UNSEEN})

    deadline = time.monotonic() + 30  # a hang guard: the rows are in the catalog once flushed
    after = anyio.run(second)
    while TOOL not in ids(after)[:3] and time.monotonic() < deadline:
        time.sleep(0.5)
        after = anyio.run(second)
    assert not after["no_match"] and TOOL in ids(after)[:3], after
    r = run_cli("stats", "--db", pg_url, "--usage", "--json")
    assert [(t["id"], t["pairs"]) for t in r.json["usage"]["learned"]] == [(TOOL, 3)]
    assert run_cli("forget", "--db", pg_url, "--tool", TOOL, "--json").json["forgot"] == 3
    one.discovery.usage.close()
    two.discovery.usage.close()


def test_over_http_one_tokens_pairs_weigh_as_one_request_in_another_tokens_search(
    serve_index, embedder, model_path, tmp_path
):
    """serve --http with two tokens: Mallory's 1,000 pairs (put through the store's API) with the
    very request Alice makes count as one similar request in Alice's /v1/search and MCP search, as
    three in Mallory's own; Alice's first hit stays the strong match."""
    import json
    import urllib.request

    from test_serve_http import spawn

    from toolidx.search import learned
    from toolidx.store.db import open_db

    alice, mallory = "alice-token-0123456789abcdef", "mallory-token-0123456789abcdef"
    (tmp_path / "tokens").write_text(f"{alice}\n{mallory}\n")
    victim, target = "what time is it in Tokyo", "everything/echo"
    db = open_db(serve_index)
    h, model = db.scalar("SELECT hash FROM tools WHERE id = ?", (target,)), db.get_meta("embed_model")
    db.close()
    vec = embedder.embed_query(learned.request_text(victim))
    store = open_usage(tmp_path / "usage.db")
    at = "2026-11-29T00:00:00.000Z"
    store.record_pairs([(target, h, f"{victim} {i}", model, vec, "file:tokens:2", f"m{i}", at) for i in range(1000)])
    store.close()
    flags = ["--token-file", tmp_path / "tokens", "--usage-db", tmp_path / "usage.db"]
    env = {"TOOLIDX_MODEL_PATH": model_path}
    with spawn(serve_index, tmp_path / "serve.err", *flags, env=env, loaded=False) as base:

        def hits(token):
            q = urllib.parse.urlencode({"q": victim, "min_score": 0, "limit": 50})
            req = urllib.request.Request(f"{base}/v1/search?{q}", headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=60) as r:
                return {x["id"]: x for x in json.loads(r.read())["hits"]}

        seen, own = hits(alice), hits(mallory)
    assert "chosen after 1 similar request" in seen[target]["why"]
    assert "chosen after 3 similar requests" in own[target]["why"]
    assert own[target]["score"] > seen[target]["score"]
    assert next(iter(seen)) == "time/get_current_time"  # the request's own first tool, as without the pairs
