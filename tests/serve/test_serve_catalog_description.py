"""search_tools' description names the catalog it fronts (tool count, servers, top categories),
within a small budget, and a re-crawl changes it: the list_tools after tools/list_changed carries
the new one. A real serve session with the real mcp client over an index of real servers."""

from __future__ import annotations

import shutil

import anyio
import pytest
from conftest import list_changed_recorder, run_cli

from toolidx.core.filters import Filters
from toolidx.serve.metatools import DESCRIPTION_MAX_BYTES, META_TOOLS, catalog_sentence, meta_tools

BASE = next(t["description"] for t in META_TOOLS if t["name"] == "search_tools")


def _search_description(tools) -> str:
    return next(t.description for t in tools if t.name == "search_tools")


def _added_words(description: str) -> int:
    assert description.endswith(BASE)
    return len(description[: -len(BASE)].split())


def test_the_catalog_sentence_stays_small_for_any_catalog():
    servers = [(f"server-{i:03d}-with-a-long-name", 1000 - i) for i in range(300)]
    cats = [f"category-{i}" for i in range(100)]
    s = catalog_sentence(sum(c for _, c in servers), servers, cats)
    assert len(s.split()) <= 61 and "and 292 more" in s and "category-5" in s and "category-6" not in s
    assert (
        catalog_sentence(7, [("files", 4), ("weather", 3)], ["files", "data"])
        == "Searches 7 tools of 2 MCP servers (files, weather); top categories: data."
    )
    d = next(t for t in meta_tools(catalog=(10**6, servers, cats)) if t["name"] == "search_tools")["description"]
    assert len(d.encode()) <= DESCRIPTION_MAX_BYTES and len(d.split()) <= 150
    assert next(t for t in meta_tools() if t["name"] == "search_tools")["description"] == BASE  # no catalog


@pytest.mark.slow
def test_search_tools_names_its_catalog_and_follows_a_recrawl(serve_index, tmp_path):
    from mcp import Client

    from toolidx.serve.server import build_server

    db = tmp_path / "live.db"
    shutil.copy(serve_index, db)
    seen, on_message = list_changed_recorder()

    async def main():
        srv = build_server(db, load_model=False, poll_interval=0.1)
        async with Client(srv, mode="legacy", message_handler=on_message) as c:
            before = _search_description((await c.list_tools()).tools)
            r = await anyio.to_thread.run_sync(
                lambda: run_cli(
                    "crawl",
                    "--config",
                    serve_index.parent / "servers.json",
                    "--db",
                    db,
                    "--server",
                    "weather",
                    "--model",
                    "none",
                )
            )
            assert r.code == 0, r.stderr
            with anyio.fail_after(10):
                while not seen:
                    await anyio.sleep(0.05)
            after = _search_description((await c.list_tools()).tools)
        scoped = build_server(db, load_model=False, scope=Filters(servers=["time"]))
        async with Client(scoped, mode="legacy") as c:
            only_time = _search_description((await c.list_tools()).tools)
        return before, after, only_time

    before, after, only_time = anyio.run(main)
    assert before.startswith("Searches 42 tools of 5 MCP servers (filesystem, everything, memory, crashy, time)")
    if "top categories:" in before:  # categories that are only the servers' names are not repeated
        cats = before.split("top categories: ", 1)[1].split(".", 1)[0].split(", ")
        assert not set(cats) & {"filesystem", "everything", "memory", "crashy", "time"}
    assert after.startswith("Searches 45 tools of 6 MCP servers (") and "weather" in after.split(";")[0]
    assert only_time.startswith("Searches 2 tools of 1 MCP server (time)")
    for d in (before, after, only_time):
        assert len(d.encode()) <= DESCRIPTION_MAX_BYTES and _added_words(d) <= 120


def test_the_summary_of_a_large_catalog_says_what_every_name_would(tmp_path):
    """serve counts in the database and keeps a few hundred names (SUMMARY_NAMES): its
    instructions and catalog sentence are those the whole lists give, on a catalog with more
    servers and categories than that, a category named like a small server among them."""
    from toolidx.catalog.listing import categories
    from toolidx.core.clock import now_iso
    from toolidx.serve.metatools import SUMMARY_NAMES, instructions
    from toolidx.serve.stats import catalog_of
    from toolidx.store.db import open_db

    db = open_db(tmp_path / "big.db", create=True)
    n = SUMMARY_NAMES + 150
    with db.transaction() as c:
        for i in range(n):
            server = f"srv-{i:04d}" if i else "zz-small"  # a late name, one tool, also a category
            c.execute(
                "INSERT INTO servers(name, transport, status, crawled_at) VALUES (?, 'stdio', 'ok', ?)",
                (server, now_iso()),
            )
            for k in range(1 + (i * 7) % 13):  # ties in size, the largest spread over the names
                cat = "zz-small" if i % 50 == 0 else f"cat-{(i + k) % (SUMMARY_NAMES + 40)}"
                c.execute(
                    "INSERT INTO tools(id, server, name, definition, hash, embed_text, category, first_seen, "
                    "updated_at) VALUES (?, ?, ?, '{}', 'h', 'x', ?, ?, ?)",
                    (f"{server}/t{k}", server, f"t{k}", cat, now_iso(), now_iso()),
                )
    for scope in (None, Filters(servers=["zz-small", "srv-0001"])):
        whole = categories(db, scope)
        servers = [(s.name, s.count) for s in whole.servers if s.count]
        cats = [x.name for x in whole.categories if x.name]
        summary = catalog_of(db, scope)
        assert len(summary.servers) < len(servers) or scope is not None
        assert instructions(*summary) == instructions(whole.total, servers, cats)
        assert catalog_sentence(*summary[:4]) == catalog_sentence(whole.total, servers, cats)
        assert meta_tools(catalog=summary) == meta_tools(catalog=(whole.total, servers, cats))
    top = catalog_sentence(*catalog_of(db, None)[:4]).split("top categories: ")[1]
    assert "zz-small" in [x.name for x in categories(db).categories][:6] and "zz-small" not in top
    db.close()
