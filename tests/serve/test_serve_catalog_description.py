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
