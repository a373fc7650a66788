"""toolidx inside an MCP server, in-process (issue 34): the Python API (`Catalog`: built from tool
definitions or opened from an index, the CLI's search and describe, the vector cache), the FastMCP
search transform on a real FastMCP server queried through `fastmcp.Client`, and the SDK helper on a
real `MCPServer` queried through `mcp.Client`; all with the real model."""

from __future__ import annotations

import contextlib
import json

import anyio
import pytest
from conftest import run_cli

from toolidx.core.filters import Filters
from toolidx.integrations.catalog import Catalog, LiveCatalog

TOOLS = [
    ("convert_pdf", "Convert a PDF document to plain text, page by page.", {"path": "string"}),
    ("send_email", "Send an email message to a recipient.", {"to": "string", "body": "string"}),
    ("get_weather", "Current weather forecast for a city.", {"city": "string"}),
    ("create_event", "Create a calendar event with a title and a start time.", {"title": "string", "start": "string"}),
    ("resize_image", "Resize a PNG or JPEG image to a given width and height.", {"path": "string", "width": "integer"}),
    ("git_commit", "Record staged changes in the git repository with a message.", {"message": "string"}),
    ("query_sql", "Run a read-only SQL query against the database.", {"sql": "string"}),
    ("translate_text", "Translate text from one language to another.", {"text": "string", "target": "string"}),
    ("list_files", "List the files in a directory.", {"path": "string"}),
    ("stock_price", "Latest stock price of a ticker symbol.", {"ticker": "string"}),
]


def tool_defs(tools=TOOLS) -> list[dict]:
    return [
        {
            "name": n,
            "description": d,
            "inputSchema": {
                "type": "object",
                "properties": {p: {"type": t} for p, t in params.items()},
                "required": list(params),
            },
        }
        for n, d, params in tools
    ]


class Counting:
    """The real embedder, counting the documents it embeds."""

    def __init__(self, inner):
        self.inner, self.documents = inner, 0
        self.model, self.dim, self.sha256 = inner.model, inner.dim, inner.sha256

    def embed_documents(self, texts):
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


# --- the Python API ------------------------------------------------------------------------------
def test_catalog_from_tools_searches_and_describes(model_path):
    from mcp.types import Tool

    defs = tool_defs()
    # an SDK Tool object and a bench-shaped dict are taken as well as the wire dicts; a bad one is left out
    mixed = [Tool(name=defs[0]["name"], description=defs[0]["description"], input_schema=defs[0]["inputSchema"])]
    mixed += [{**d, "input_schema": d.pop("inputSchema")} for d in defs[1:2]] + defs[2:]
    mixed.append({"name": "broken", "inputSchema": {"type": "string"}})
    with Catalog.from_tools(mixed, server="demo", model_path=model_path) as cat:
        assert len(cat) == len(TOOLS)
        assert cat.skipped == [{"name": "broken", "reason": '`inputSchema.type` is not "object"'}]
        res = cat.search("turn a pdf file into text")
        assert res.hits[0].id == "demo/convert_pdf" and res.hits[0].name == "convert_pdf"
        assert res.hits[0].score > 0.5 and "pdf" in res.hits[0].why and not res.no_match
        assert cat.search("email my colleague").hits[0].name == "send_email"
        assert cat.search("what will the weather be in Paris tomorrow").hits[0].name == "get_weather"
        # "no good match": nothing here bakes cakes; min_score=0 shows the least bad anyway
        none = cat.search("bake a chocolate cake for the birthday party")
        assert none.no_match and none.hits == [] and "min_score=0" in none.notes[0]
        assert len(cat.search("bake a chocolate cake", min_score=0, limit=3).hits) == 3
        # the CLI's filters
        assert [h.name for h in cat.search("files", name_pattern="^list", min_score=0).hits] == ["list_files"]
        by_text = cat.search("files", filters=Filters(description_contains="directory"), min_score=0)
        assert [h.name for h in by_text.hits] == ["list_files"]
        both = cat.search("message", servers=["demo"], filters=Filters(description_contains="email"), min_score=0)
        assert [h.name for h in both.hits] == ["send_email"]
        d = cat.describe("resize_image", detail="schema")
        assert d.id == "demo/resize_image" and [p["name"] for p in d.parameters or []] == ["path", "width"]
        full = cat.describe("demo/resize_image", detail="full").full
        assert full is not None and full.example_problem is None and set(full.example_arguments) == {"path", "width"}


def test_catalog_open_answers_as_the_cli(catalog_db):
    """An index file opened by the API searches as `toolidx search --json` does: one search function."""
    cat = Catalog.open(catalog_db)
    for query in ("show the git log", "read a file"):
        cli = run_cli("search", query, "--db", str(catalog_db), "--json", "-n", "5")
        assert cli.code == 0, cli.stderr
        mine = cat.search(query, limit=5).to_json()
        assert [h["id"] for h in mine["hits"]] == [h["id"] for h in cli.json["hits"]]
        assert [h["score"] for h in mine["hits"]] == [h["score"] for h in cli.json["hits"]]
    with pytest.raises(Exception, match="no index here"):
        Catalog.open(catalog_db.parent / "missing.db")


def test_vector_cache_second_start_embeds_nothing(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("TOOLIDX_STATE_DIR", str(tmp_path / "state"))
    cache = tmp_path / "cache" / "tools.db"
    first = Counting(embedder)
    a = Catalog.from_tools(tool_defs(), cache=cache, embedder=first)
    assert a.embedded == len(TOOLS) and first.documents == len(TOOLS) + 1  # and the server's text (search.server_match)
    hits_a = [h.to_json() for h in a.search("commit my changes to git").hits]
    a.close()
    again = Counting(embedder)
    b = Catalog.from_tools(tool_defs(), cache=cache, embedder=again)
    assert b.embedded == 0 and again.documents == 0  # a restart with the same tools embeds nothing
    assert [h.to_json() for h in b.search("commit my changes to git").hits] == hits_a
    # one tool changed, one removed, one added: only the changed and the new are embedded
    changed = tool_defs()[1:]
    changed[0]["description"] = "Send an email with attachments to several recipients."
    changed.append(tool_defs([("play_music", "Play a song on the speakers.", {"song": "string"})])[0])
    # (and the server's text, which names its tools)
    assert b.update(changed) == 2 and again.documents == 3
    assert len(b) == len(TOOLS) and b.search("play some music").hits[0].name == "play_music"
    assert b.search("convert pdf", min_score=0).hits[0].name != "convert_pdf"
    # tools handed over in memory vouch for no launch line: the user's trust store is never written;
    # the state folder holds only the key caches are sealed with, the user's alone
    assert [p.name for p in (tmp_path / "state").iterdir()] == ["catalog-cache.key"]
    assert (tmp_path / "state" / "catalog-cache.key").stat().st_mode & 0o777 == 0o600


# --- FastMCP -------------------------------------------------------------------------------------
def stub(name: str, description: str, params: dict):
    """A FastMCP tool of this definition that says what it was called with."""
    from fastmcp.tools.base import Tool, ToolResult

    class Stub(Tool):
        async def run(self, arguments):
            return ToolResult(content=f"{self.name} ran with {json.dumps(arguments, sort_keys=True)}")

    (d,) = tool_defs([(name, description, params)])
    return Stub(name=name, description=description, parameters=d["inputSchema"])


def fastmcp_server(tools, transform):
    from fastmcp import FastMCP

    server = FastMCP("demo")
    for t in tools:
        server.add_tool(stub(*t))
    if transform is not None:
        server.add_transform(transform)
    return server


def test_fastmcp_transform(model_path):
    pytest.importorskip("fastmcp")
    from fastmcp import Client
    from fastmcp.exceptions import ToolError

    from toolidx.integrations.fastmcp import ToolidxSearchTransform

    transform = ToolidxSearchTransform(always_visible=["get_weather"], max_results=3, model_path=model_path)
    server = fastmcp_server(TOOLS, transform)
    # the model loads in the background from the start, not at the first search
    assert transform.live._loading is not None and transform.live.catalog is None

    async def main():
        async with Client(server) as c:
            assert [t.name for t in await c.list_tools()] == ["get_weather", "search_tools", "call_tool"]

            async def search(query: str, **kw) -> dict:
                return (await c.call_tool("search_tools", {"query": query, **kw})).structured_content

            found = await search("turn a pdf file into text")
            top = found["tools"][0]
            assert top["name"] == "convert_pdf" and top["inputSchema"]["required"] == ["path"]
            assert top["score"] > 0.5 and "pdf" in top["why"] and found["no_match"] is False
            # pinned tools are listed, not searched
            assert "get_weather" not in [t["name"] for t in (await search("weather forecast for a city"))["tools"]]
            nothing = await search("bake a chocolate cake for the birthday party")
            assert nothing["tools"] == [] and nothing["no_match"] is True
            # the agent cannot set min_score: the note says what it can do
            assert "min_score" not in nothing["notes"][0] and "in other words" in nothing["notes"][0]
            # max results: the transform's default, and the caller's limit
            transform.min_score = 0.0
            assert len((await search("a tool"))["tools"]) == 3
            assert len((await search("a tool", limit=5))["tools"]) == 5
            transform.min_score = None
            # call_tool runs a hidden tool; hidden tools stay callable by name; unknown names are refused
            r = await c.call_tool("call_tool", {"name": "stock_price", "arguments": {"ticker": "ACME"}})
            assert r.content[0].text == 'stock_price ran with {"ticker": "ACME"}'
            assert (await c.call_tool("git_commit", {"message": "m"})).content[0].text.startswith("git_commit ran")
            with pytest.raises(ToolError, match="Unknown tool"):
                await c.call_tool("call_tool", {"name": "no_such_tool", "arguments": {}})
            with pytest.raises(ToolError, match="the query is empty"):  # toolidx's one-line error, what to do
                await search("  ")
            # the server's tools change: the next search embeds the new tool only, and forgets a removed one
            assert transform.live.catalog is not None and transform.live.catalog.embedded == len(TOOLS) - 1
            server.add_tool(stub("play_music", "Play a song on the speakers.", {"song": "string"}))
            assert (await search("play some music"))["tools"][0]["name"] == "play_music"
            assert transform.live.catalog.embedded == 1
            server.local_provider.remove_tool("convert_pdf")
            after = await search("turn a pdf file into text", limit=5)
            assert "convert_pdf" not in [t["name"] for t in after["tools"]]

    anyio.run(main)


def test_fastmcp_transform_model_that_does_not_load(tmp_path):
    """A model folder that does not load, loaded in the background: the first search says so."""
    pytest.importorskip("fastmcp")
    from fastmcp import Client
    from fastmcp.exceptions import ToolError

    from toolidx.integrations.fastmcp import ToolidxSearchTransform

    server = fastmcp_server(TOOLS, ToolidxSearchTransform(model_path=str(tmp_path / "no-model")))

    async def main():
        async with Client(server) as c:
            with pytest.raises(ToolError, match="model directory not found"):
                await c.call_tool("search_tools", {"query": "turn a pdf into text"})

    anyio.run(main)


def test_fastmcp_transform_vector_cache(tmp_path, model_path):
    """A second start of the same server with a cache file embeds nothing."""
    pytest.importorskip("fastmcp")
    from fastmcp import Client

    from toolidx.integrations.fastmcp import ToolidxSearchTransform

    async def start() -> tuple[str, int]:
        transform = ToolidxSearchTransform(cache=tmp_path / "tools.db", model_path=model_path)
        server = fastmcp_server(TOOLS, transform)
        await transform.prepare(server)  # built before any client asks
        assert transform.live.catalog is not None
        built, embedded = transform.live.catalog, transform.live.catalog.embedded
        async with Client(server) as c:
            r = await c.call_tool("search_tools", {"query": "translate this sentence into French"})
        # the first search found the catalog prepare built, current: nothing rebuilt nor re-embedded
        assert transform.live.catalog is built and transform.live.catalog.embedded == embedded
        return r.structured_content["tools"][0]["name"], embedded

    assert anyio.run(start) == ("translate_text", len(TOOLS))
    assert anyio.run(start) == ("translate_text", 0)


# --- the MCP Python SDK --------------------------------------------------------------------------
def test_sdk_server_tool_search(model_path):
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from toolidx.integrations.mcpsdk import add_tool_search

    server = MCPServer("demo")

    @server.tool()
    def convert_pdf(path: str) -> str:
        """Convert a PDF document to plain text, page by page."""
        return f"text of {path}"

    @server.tool()
    def send_email(to: str, body: str) -> str:
        """Send an email message to a recipient."""
        return f"sent to {to}"

    @server.tool()
    def get_weather(city: str) -> str:
        """Current weather forecast for a city."""
        return f"sunny in {city}"

    @server.tool()
    def stock_price(ticker: str) -> str:
        """Latest stock price of a ticker symbol."""
        return f"{ticker}: 42"

    live = add_tool_search(server, always_visible=["get_weather"], max_results=2, model_path=model_path)
    assert isinstance(live, LiveCatalog)

    async def main():
        await live.prepare()  # built before any client asks, from the hidden tools
        built = live.catalog
        assert built is not None and len(built) == 3 and built.embedded == 3
        async with Client(server) as c:
            listed = [t.name for t in (await c.list_tools()).tools]
            assert listed == ["get_weather", "search_tools", "describe_tool", "call_tool"]

            async def call(name: str, args: dict):
                return await c.call_tool(name, args)

            found = (await call("search_tools", {"query": "turn a pdf file into text"})).structured_content
            assert found["tools"][0]["name"] == "convert_pdf" and found["tools"][0]["score"] > 0.5
            assert found["tools"][0]["inputSchema"]["required"] == ["path"] and found["tools"][0]["why"]
            assert "get_weather" not in [t["name"] for t in found["tools"]]
            # the first search found the catalog prepare built, current
            assert live.catalog is built and built.embedded == 3
            nothing = (await call("search_tools", {"query": "bake a chocolate cake for the party"})).structured_content
            assert nothing["no_match"] and "min_score" not in nothing["notes"][0]
            assert "in other words" in nothing["notes"][0]
            d = (await call("describe_tool", {"name": "send_email"})).structured_content
            assert [p["name"] for p in d["parameters"]] == ["to", "body"]
            r = await call("call_tool", {"name": "stock_price", "arguments": {"ticker": "ACME"}})
            assert not r.is_error and r.content[0].text == "ACME: 42"
            assert (await call("convert_pdf", {"path": "a.pdf"})).content[0].text == "text of a.pdf"  # hidden, callable
            bad = await call("call_tool", {"name": "search_tools", "arguments": {}})
            assert bad.is_error
            assert (await call("call_tool", {"name": "nope", "arguments": {}})).is_error
            assert (await call("search_tools", {"query": " "})).is_error
            # a tool added later is found at the next search, embedded alone
            server.add_tool(
                lambda song: f"playing {song}", name="play_music", description="Play a song on the speakers."
            )
            found = (await call("search_tools", {"query": "play some music"})).structured_content
            assert found["tools"][0]["name"] == "play_music" and live.catalog is not None and live.catalog.embedded == 1

    anyio.run(main)


def test_example_fastmcp_server(tmp_path, model_path):
    """examples/fastmcp_server.py --demo: searched and called in-process, as the README's 5-minute path runs it."""
    pytest.importorskip("fastmcp")
    import os
    import subprocess
    import sys

    from conftest import REPO

    env = {**os.environ, "HOME": str(tmp_path), "TOOLIDX_MODEL_PATH": model_path}
    cmd = [sys.executable, str(REPO / "examples" / "fastmcp_server.py"), "--size", "40", "--demo", "list my invoices"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    assert lines[0] == "tools/list: ['whoami', 'search_tools', 'call_tool']"
    assert lines[1].split()[1] == "list_invoice", p.stdout
    assert lines[-1] == 'call_tool: list_invoice called with {"query": "x"}'
    assert (tmp_path / ".cache" / "toolidx-example" / "tools.db").is_file()


def test_core_never_imports_fastmcp():
    """FastMCP is an extra: the CLI, serve and the API load without it."""
    import subprocess
    import sys

    code = (
        "import sys, toolidx.cli.main, toolidx.serve.server, toolidx.integrations.catalog, "
        "toolidx.integrations.mcpsdk; assert 'fastmcp' not in sys.modules, 'fastmcp imported'"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_sdk_lowlevel_server_paginated(model_path):
    """A low-level Server whose own tools/list pages: every page is searched, calls reach its handler."""
    from mcp import Client
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    from toolidx.integrations.mcpsdk import add_tool_search

    defs = tool_defs()
    pages = [defs[:4], defs[4:8], defs[8:]]
    calls = []

    async def list_tools(ctx, params):
        n = int(params.cursor or 0)
        tools = [Tool(name=d["name"], description=d["description"], input_schema=d["inputSchema"]) for d in pages[n]]
        return ListToolsResult(tools=tools, next_cursor=str(n + 1) if n + 1 < len(pages) else None)

    async def call_tool(ctx, params):
        calls.append((params.name, params.arguments))
        return CallToolResult(content=[TextContent(type="text", text=f"ran {params.name}")])

    server = Server("low/level", on_list_tools=list_tools, on_call_tool=call_tool)
    add_tool_search(server, model_path=model_path)

    async def main():
        async with Client(server) as c:
            assert [t.name for t in (await c.list_tools()).tools] == ["search_tools", "describe_tool", "call_tool"]
            found = (await c.call_tool("search_tools", {"query": "latest price of a stock ticker"})).structured_content
            assert found["tools"][0]["name"] == "stock_price"  # on the last page
            r = await c.call_tool("call_tool", {"name": "stock_price", "arguments": {"ticker": "ACME"}})
            assert r.content[0].text == "ran stock_price" and calls == [("stock_price", {"ticker": "ACME"})]

    anyio.run(main)


# --- per-user tool lists, changed definitions (#42 item 4) -----------------------------------------
def export_tool(user: str, fmt: str) -> dict:
    """One tool, defined per user: the two users' definitions differ only in a nested `default`
    and a nested `const`, nothing a search ranks by."""
    return {
        "name": "export_report",
        "description": "Export the monthly report to a storage bucket.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "format": {"type": "string", "enum": ["csv", "pdf"], "default": fmt},
                "target": {
                    "type": "object",
                    "properties": {"bucket": {"type": "string", "const": f"{user}-reports"}},
                },
            },
        },
    }


def test_sdk_per_user_lists_describe_each_users_own_definition(model_path):
    """A server whose tools/list differs by caller (here by the client's name): each user's
    describe_tool answers that user's definition, in full, however the two users' calls
    interleave; and a definition that changed is described as it is now."""
    from mcp import Client
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, Implementation, ListToolsResult, TextContent, Tool

    from toolidx.core.tooldoc import definition_hash
    from toolidx.integrations.mcpsdk import add_tool_search

    formats = {"alice": "csv", "bob": "pdf"}
    defs = tool_defs()[:4]

    def own(user: str) -> list[dict]:
        return [*defs, export_tool(user, formats[user])]

    async def list_tools(ctx, params):
        user = ctx.session.client_params.client_info.name
        return ListToolsResult(tools=[Tool.model_validate(d) for d in own(user)])

    async def call_tool(ctx, params):
        return CallToolResult(content=[TextContent(type="text", text=f"ran {params.name}")])

    server = Server("reports", on_list_tools=list_tools, on_call_tool=call_tool)
    add_tool_search(server, model_path=model_path)

    def wire(d: dict) -> dict:  # the definition as the SDK sends it
        return Tool.model_validate(d).model_dump(by_alias=True, mode="json", exclude_none=True)

    async def main():
        async with (
            Client(server, client_info=Implementation(name="alice", version="1")) as alice,
            Client(server, client_info=Implementation(name="bob", version="1")) as bob,
        ):

            async def describe(c, user: str) -> None:
                r = await c.call_tool("describe_tool", {"name": "export_report", "detail": "full"})
                d = r.structured_content
                mine = wire(export_tool(user, formats[user]))
                assert d["input_schema"] == mine["inputSchema"], (user, d["input_schema"])
                assert d["hash"] == definition_hash(mine)

            await describe(alice, "alice")  # the catalog is built from alice's list
            await describe(bob, "bob")  # then bob asks: his default and const, not alice's
            found = (await bob.call_tool("search_tools", {"query": "export the monthly report"})).structured_content
            assert found["tools"][0]["inputSchema"]["properties"]["target"]["properties"]["bucket"]["const"] == (
                "bob-reports"
            )
            await describe(alice, "alice")
            # both at once, many times: no answer is read from the other's list
            async with anyio.create_task_group() as tg:
                for _ in range(16):
                    tg.start_soon(describe, alice, "alice")
                    tg.start_soon(describe, bob, "bob")
            # bob's default changes on the server: his next describe says so
            formats["bob"] = "csv"
            await describe(bob, "bob")

    anyio.run(main)


def test_catalog_describes_a_changed_default(tmp_path, embedder):
    """The Python API: a tool whose nested default changed is described as it is now, from memory
    and from a cache file written before the change."""
    cache = tmp_path / "tools.db"
    with Catalog.from_tools([*tool_defs()[:3], export_tool("alice", "csv")], cache=cache, embedder=embedder) as cat:
        assert cat.describe("export_report", "full").full.input_schema["properties"]["format"]["default"] == "csv"
        cat.update([*tool_defs()[:3], export_tool("alice", "pdf")])
        assert cat.describe("export_report", "full").full.input_schema["properties"]["format"]["default"] == "pdf"
    with Catalog.from_tools([*tool_defs()[:3], export_tool("bob", "pdf")], cache=cache, embedder=embedder) as cat:
        schema = cat.describe("export_report", "full").full.input_schema
        assert schema["properties"]["target"]["properties"]["bucket"]["const"] == "bob-reports"
        assert cat.embedded == 0  # what ranks a tool did not change: nothing embedded again


def test_fastmcp_transform_follows_a_changed_default(model_path):
    """FastMCP's transform keys its catalog the same way: a tool whose nested default changed is
    the catalog's new definition at the next search, and search_tools answers it."""
    pytest.importorskip("fastmcp")
    from fastmcp import Client
    from fastmcp.tools.base import Tool as FastTool

    from toolidx.integrations.fastmcp import ToolidxSearchTransform

    def export(fmt: str):
        d = export_tool("alice", fmt)
        return FastTool(name=d["name"], description=d["description"], parameters=d["inputSchema"])

    transform = ToolidxSearchTransform(model_path=model_path)
    server = fastmcp_server(TOOLS[:4], transform)
    server.add_tool(export("csv"))

    async def main():
        async with Client(server) as c:
            for fmt in ("csv", "pdf"):
                if fmt == "pdf":
                    server.local_provider.remove_tool("export_report")
                    server.add_tool(export("pdf"))
                r = await c.call_tool("search_tools", {"query": "export the monthly report"})
                assert r.structured_content["tools"][0]["inputSchema"]["properties"]["format"]["default"] == fmt
                assert transform.live.catalog is not None
                schema = transform.live.catalog.describe("export_report", "full").full.input_schema
                assert schema["properties"]["format"]["default"] == fmt

    anyio.run(main)


@pytest.mark.parametrize("limit", [0, -3, 51, 500])
def test_search_limit_out_of_range_is_an_error_in_both_helpers(limit, model_path):
    """An agent's limit out of 1..50 is refused with the same one-line error by both helpers
    (FastMCP's used to answer 1 or 50 tools instead), and neither helper is made with a default
    outside it."""
    pytest.importorskip("fastmcp")
    from fastmcp import Client as FastClient
    from fastmcp.exceptions import ToolError
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from toolidx.core.errors import UsageError
    from toolidx.integrations.fastmcp import ToolidxSearchTransform
    from toolidx.integrations.mcpsdk import add_tool_search

    fast = fastmcp_server(TOOLS, ToolidxSearchTransform(model_path=model_path))
    sdk = MCPServer("demo")
    sdk.add_tool(lambda city: city, name="get_weather", description="Current weather forecast for a city.")
    add_tool_search(sdk, model_path=model_path)

    async def main():
        async with FastClient(fast) as c:
            with pytest.raises(ToolError, match="limit must be an integer from 1 to 50"):
                await c.call_tool("search_tools", {"query": "weather in Paris", "limit": limit})
        async with Client(sdk) as c:
            r = await c.call_tool("search_tools", {"query": "weather in Paris", "limit": limit})
            assert r.is_error and "limit must be an integer from 1 to 50" in r.content[0].text

    anyio.run(main)
    with pytest.raises(UsageError, match="max_results"):
        ToolidxSearchTransform(max_results=limit, model_path=model_path)
    with pytest.raises(UsageError, match="max_results"):
        add_tool_search(MCPServer("other"), max_results=limit, model_path=model_path)


# --- the vector cache is checked against its seal (#42 item 15) -------------------------------------
BACKUP_TOOLS = [
    *TOOLS[:6],
    ("create_backup", "Create a backup copy of the database, to restore it later.", {"name": "string"}),
    ("drop_database", "Drop the whole database, deleting every table and row in it.", {"name": "string"}),
]


def swap_vectors(path) -> None:
    """What someone who can write the cache file does: create_backup's vector becomes
    drop_database's and the reverse; every other row, the seal's included, left as it was."""
    from toolidx.store import vectors
    from toolidx.store.db import open_db

    with contextlib.closing(open_db(path)) as db:
        rowid = {r["id"]: r["rowid"] for r in db.query("SELECT rowid, id FROM tools")}
        a, b = rowid["server/create_backup"], rowid["server/drop_database"]
        va, vb = vectors.get(db, a), vectors.get(db, b)
        with db.transaction():
            vectors.put(db, a, vb)
            vectors.put(db, b, va)


def edit_definition(path) -> None:
    """A stored definition rewritten: describe would answer it."""
    from toolidx.store.db import open_db

    with contextlib.closing(open_db(path)) as db, db.transaction():
        db.execute(
            "UPDATE tools SET description = ?, definition = json_set(definition, '$.description', ?) WHERE id = ?",
            ("Run this first.", "Run this first.", "server/create_backup"),
        )


def rewrite_keywords(path) -> None:
    """drop_database's row in the keyword index given create_backup's words."""
    from toolidx.store.db import open_db

    with contextlib.closing(open_db(path)) as db, db.transaction():
        db.execute(
            "UPDATE tools_fts SET description = 'create a backup copy backup backup' WHERE rowid = "
            "(SELECT rowid FROM tools WHERE id = 'server/drop_database')"
        )


@pytest.mark.parametrize("tamper", [swap_vectors, edit_definition, rewrite_keywords])
def test_vector_cache_changed_on_disk_is_not_used(tamper, tmp_path, embedder, caplog):
    cache = tmp_path / "tools.db"
    with Catalog.from_tools(tool_defs(BACKUP_TOOLS), cache=cache, embedder=embedder) as cat:
        assert cat.search("create a backup", mode="semantic").hits[0].name == "create_backup"
    tamper(cache)
    again = Counting(embedder)
    with Catalog.from_tools(tool_defs(BACKUP_TOOLS), cache=cache, embedder=again) as cat:
        assert again.documents == len(BACKUP_TOOLS) + 1  # discarded: every tool embedded again, and the server
        for mode in ("semantic", "hybrid", "keyword"):
            assert cat.search("create a backup", mode=mode).hits[0].name == "create_backup", mode
        assert cat.describe("create_backup").description.startswith("Create a backup copy")
    assert "vector cache not used, it changed since it was written" in caplog.text
    # what the discard wrote is sealed: the next start believes it and embeds nothing
    third = Counting(embedder)
    with Catalog.from_tools(tool_defs(BACKUP_TOOLS), cache=cache, embedder=third) as cat:
        assert third.documents == 0 and cat.search("create a backup", mode="semantic").hits[0].name == "create_backup"


def test_vector_cache_of_another_user_is_not_used(tmp_path, embedder, monkeypatch, caplog):
    """A cache file from elsewhere (another user's, another machine's) whose meta key is this
    catalog's own (same tools, same model), its vectors swapped there and sealed again under its
    writer's key: believed by that writer, discarded here."""
    import shutil

    from toolidx.integrations.catalog import SEAL, cache_key
    from toolidx.store.db import open_db
    from toolidx.store.sqlite.content import digest

    monkeypatch.setenv("TOOLIDX_STATE_DIR", str(tmp_path / "theirs"))
    theirs = tmp_path / "theirs.db"
    Catalog.from_tools(tool_defs(BACKUP_TOOLS), cache=theirs, embedder=embedder).close()
    swap_vectors(theirs)
    db = open_db(theirs)
    with db.transaction():
        db.set_meta(SEAL, digest(db, cache_key(), [SEAL]))
    db.close()
    count = Counting(embedder)
    with Catalog.from_tools(tool_defs(BACKUP_TOOLS), cache=theirs, embedder=count) as cat:  # what its writer sees
        assert count.documents == 0 and cat.search("create a backup", mode="semantic").hits[0].name == "drop_database"
    monkeypatch.setenv("TOOLIDX_STATE_DIR", str(tmp_path / "mine"))
    mine = tmp_path / "mine.db"
    shutil.copy(theirs, mine)
    again = Counting(embedder)
    with Catalog.from_tools(tool_defs(BACKUP_TOOLS), cache=mine, embedder=again) as cat:
        assert again.documents == len(BACKUP_TOOLS) + 1  # and the server's text
        assert cat.search("create a backup", mode="semantic").hits[0].name == "create_backup"
    assert f"{mine}: vector cache not used, it changed since it was written, or another user" in caplog.text


def test_vector_cache_path_holding_a_crawled_index_is_refused(catalog_db, tmp_path, embedder):
    """An index `crawl` wrote, passed as a cache by mistake, is refused and left as it was."""
    import shutil

    from toolidx.core.errors import UsageError

    path = tmp_path / "crawled.db"
    shutil.copy(catalog_db, path)
    before = path.read_bytes()
    with pytest.raises(UsageError, match="an index of crawled servers, not a catalog's cache"):
        Catalog.from_tools(tool_defs(), cache=path, embedder=embedder)
    assert path.read_bytes() == before


def test_vector_cache_without_a_key_is_never_believed(tmp_path, embedder, monkeypatch, caplog):
    """Where the key cannot be kept (a state folder others may write), a cache is embedded again at
    each start, and the log says what to do."""
    from toolidx.core import notices

    monkeypatch.setattr(notices, "_said", set())  # said once per process: this test must see it said
    state = tmp_path / "state"
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    monkeypatch.setenv("TOOLIDX_STATE_DIR", str(state))
    cache = tmp_path / "tools.db"
    for _ in range(2):
        count = Counting(embedder)
        with Catalog.from_tools(tool_defs(), cache=cache, embedder=count) as cat:
            assert count.documents == len(TOOLS) + 1 and cat.search("send an email").hits[0].name == "send_email"
    assert not (state / "catalog-cache.key").exists()
    assert "others may write it" in caplog.text and "TOOLIDX_STATE_DIR" in caplog.text


def test_sdk_helper_with_a_swapped_cache_ranks_from_its_own_vectors(tmp_path, model_path, caplog):
    """The SDK helper's cache (its model preloaded in the background, as a server starts): a file
    whose vectors were swapped after the last start is not used."""
    from mcp import Client
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    from toolidx.integrations.mcpsdk import add_tool_search

    cache = tmp_path / "tools.db"

    async def list_tools(ctx, params):
        return ListToolsResult(tools=[Tool.model_validate(d) for d in tool_defs(BACKUP_TOOLS)])

    async def call_tool(ctx, params):
        return CallToolResult(content=[TextContent(type="text", text="ran")])

    async def start() -> str:
        server = Server("server", on_list_tools=list_tools, on_call_tool=call_tool)
        add_tool_search(server, cache=cache, model_path=model_path, min_score=0)
        async with Client(server) as c:
            # words drop_database's description shares ("database"): its swapped vector lifted it first
            r = await c.call_tool("search_tools", {"query": "back up my database"})
            return r.structured_content["tools"][0]["name"]

    assert anyio.run(start) == "create_backup"
    swap_vectors(cache)
    assert anyio.run(start) == "create_backup"
    assert f"{cache}: vector cache not used" in caplog.text
