"""A FastMCP server of ~200 tools that shows three, with toolidx's search in front (one line: the
`add_transform` call at the bottom of `build`).

    pip install "toolidx[fastmcp]"
    python examples/fastmcp_server.py --demo "list all invoices"     # search it in-process, print the answer
    python examples/fastmcp_server.py                                 # serve it over stdio (for an MCP client)
    python examples/fastmcp_server.py --tools ../shared/bench/livemcp/tools.jsonl   # 200 real tool definitions

The tools are made at run time: by default 200 from the lists below (verbs x business objects,
each a function that says what it would do), or the first 200 of a tools.jsonl catalog (each
definition as is; calling one says what it was called with). Vectors are cached in
~/.cache/toolidx-example/tools.db, so the second start embeds nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools.base import Tool, ToolResult

from toolidx.integrations.fastmcp import ToolidxSearchTransform

VERBS = {
    "create": "Create a new {o}",
    "get": "Get one {o} by its id",
    "list": "List {o}s, newest first, with paging",
    "update": "Update the fields of an existing {o}",
    "delete": "Delete a {o} permanently",
    "archive": "Archive a {o} so it no longer shows in lists",
    "export": "Export {o}s to a CSV file",
    "search": "Search {o}s by keywords",
}
OBJECTS = {
    "invoice": "billing document sent to a customer",
    "customer": "person or company that buys from us",
    "ticket": "support request from a customer",
    "order": "purchase of products by a customer",
    "product": "item in the catalog with a price",
    "refund": "money returned to a customer for an order",
    "shipment": "parcel sent to a customer's address",
    "coupon": "discount code for orders",
    "employee": "person on the payroll",
    "meeting": "calendar event with attendees",
    "report": "sales or finance summary",
    "subscription": "recurring plan a customer pays for",
    "webhook": "URL called when an event happens",
    "warehouse": "place where stock is kept",
    "supplier": "company we buy products from",
    "contract": "signed agreement with a customer or supplier",
    "campaign": "marketing email sent to many customers",
    "payment": "money received from a customer",
    "note": "free-text remark attached to a record",
    "user": "account that can sign in to the dashboard",
    "role": "set of permissions given to users",
    "project": "piece of work with tasks and a deadline",
    "task": "to-do item in a project",
    "lead": "possible customer from a form or an event",
    "quote": "price offer sent before an order",
}


class EchoTool(Tool):
    """A tool whose definition came from a catalog: calling it says what it was called with."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(content=f"{self.name} called with {json.dumps(arguments, sort_keys=True)}")


def generated_tools(limit: int) -> list[Tool]:
    tools: list[Tool] = []
    for obj, what in OBJECTS.items():
        for verb, text in VERBS.items():
            name = f"{verb}_{obj}"
            props: dict[str, Any] = {"id": {"type": "string", "description": f"The {obj}'s id"}}
            if verb in ("create", "update"):
                props = {"fields": {"type": "object", "description": f"The {obj}'s fields"}}
            elif verb in ("list", "search", "export"):
                props = {"query": {"type": "string", "description": "Words to look for"}}
            schema = {"type": "object", "properties": props, "required": list(props)}
            tools.append(EchoTool(name=name, description=f"{text.format(o=obj)} (a {what}).", parameters=schema))
    return tools[:limit]


def catalog_tools(path: Path, limit: int) -> list[Tool]:
    tools: list[Tool] = []
    for line in path.read_text().splitlines():
        t = json.loads(line) if line.strip() else None
        schema = (t or {}).get("input_schema") or (t or {}).get("inputSchema")
        if not t or not isinstance(schema, dict) or schema.get("type") != "object":
            continue
        name = str(t.get("id", t["name"])).replace("/", "__")[:64]
        tools.append(EchoTool(name=name, description=t.get("description") or "", parameters=schema))
        if len(tools) == limit:
            break
    return tools


def build(tools_file: str | None = None, size: int = 200) -> tuple[FastMCP, ToolidxSearchTransform]:
    mcp = FastMCP("Example business API")
    for tool in catalog_tools(Path(tools_file), size) if tools_file else generated_tools(size):
        mcp.add_tool(tool)

    @mcp.tool
    def whoami() -> str:
        """Who the signed-in user is."""
        return "demo user"

    # the one line: list_tools now shows whoami, search_tools and call_tool
    search = ToolidxSearchTransform(always_visible=["whoami"], cache="~/.cache/toolidx-example/tools.db")
    mcp.add_transform(search)
    return mcp, search


async def demo(mcp: FastMCP, query: str) -> None:
    from fastmcp import Client

    async with Client(mcp) as client:
        print("tools/list:", [t.name for t in await client.list_tools()])
        found = (await client.call_tool("search_tools", {"query": query})).structured_content
        for t in found["tools"]:
            print(f"{t['score']:.2f}  {t['name']:28s} {t['description'][:60]}  ({t['why']})")
        if found["no_match"]:
            print("no good match:", "; ".join(found.get("notes", [])))
        else:
            best = found["tools"][0]
            args = {p: "x" for p in best["inputSchema"].get("required", [])}
            result = await client.call_tool("call_tool", {"name": best["name"], "arguments": args})
            print("call_tool:", result.content[0].text)


def say(line: str) -> None:
    print(f"example: {line}", file=sys.stderr, flush=True)  # stderr: served over stdio, stdout is MCP's


@contextmanager
def still(what: str, every: float = 10.0) -> Iterator[None]:
    """A line every `every` seconds while the block runs: a first start on a slow machine takes
    half a minute, and a person should not wonder whether it hangs."""
    done, start = threading.Event(), time.monotonic()

    def tick() -> None:
        while not done.wait(every):
            say(f"... still {what} ({time.monotonic() - start:.0f} s)")

    threading.Thread(target=tick, daemon=True).start()
    try:
        yield
    finally:
        done.set()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", help="a tools.jsonl catalog to take the tool definitions from")
    ap.add_argument("--size", type=int, default=200, help="how many tools (default 200)")
    ap.add_argument("--demo", metavar="QUERY", help="search in-process and print the answer, instead of serving")
    args = ap.parse_args()
    # measured on a 2-core machine: a first start 4-6 s (the model, then 200 tools embedded), ~30 s
    # on a slow one; a later start reads the vectors from the cache
    say(
        f"loading the model and embedding {args.size} tools (usually 5-30 s at the first start; "
        "later starts read them from ~/.cache/toolidx-example/tools.db)"
    )
    with still("loading the model and embedding"):
        mcp, search = build(args.tools, args.size)
        asyncio.run(search.prepare(mcp))  # embed (or read from the cache) now, not at the first search
    say("ready" + ("" if args.demo else ": serving over stdio (Ctrl-C to stop)"))
    if args.demo:
        asyncio.run(demo(mcp, args.demo))
    else:
        mcp.run(show_banner=False)  # stdio
    return 0


if __name__ == "__main__":
    sys.exit(main())
