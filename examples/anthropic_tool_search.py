"""toolidx as the custom tool search of the Anthropic Messages API: one whole round.

    python examples/anthropic_tool_search.py [--db INDEX]

Every tool of the index goes into `tools` with `defer_loading: true`, beside one ordinary tool,
`search_tools`. The model calls it; toolidx ranks the catalog and answers with `tool_reference`
blocks (the API then loads those definitions); the model calls the tool it wants; toolidx runs it
on its real MCP server and returns the `tool_result`.

Offline by default: the model's turns are replayed from recorded/anthropic_round.json (toolidx's
search and the tool call are real). With ANTHROPIC_API_KEY set, the real API answers instead
(model: $ANTHROPIC_MODEL, default claude-opus-4-6).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from _round import example_index, post, recorded, replay_stops

from toolidx.integrations.anthropic import AnthropicToolSearch
from toolidx.integrations.common import ToolCatalog


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="index to use (default: examples/live.yaml crawled into a temp folder)")
    args = ap.parse_args()
    search = AnthropicToolSearch(ToolCatalog(args.db or example_index()))
    tools = search.tools()
    key = os.environ.get("ANTHROPIC_API_KEY")
    script = recorded("anthropic_round.json")
    messages: list[dict] = [{"role": "user", "content": script["prompt"]}]
    print(f"mode: {'real API' if key else 'recorded model turns'}; {len(tools) - 1} deferred tools + search_tools")
    print(f"user: {script['prompt']}")
    loaded: set[str] = set()
    failed = False
    for step in range(8):
        if key:
            reply = post("https://api.anthropic.com/v1/messages",
                         {"x-api-key": key, "anthropic-version": "2023-06-01"},
                         {"model": os.environ.get("ANTHROPIC_MODEL", "claude-opus-4-6"), "max_tokens": 1024,
                          "tools": tools, "messages": messages})
            content = reply["content"]
        else:
            content = script["turns"][step]
        messages.append({"role": "assistant", "content": content})
        results = []
        for block in content:
            if block["type"] == "text":
                print(f"assistant: {block['text']}")
            elif block["type"] == "tool_use" and search.is_search(block):
                result = search.handle_search(block)
                names = [c["tool_name"] for c in result["content"] if c["type"] == "tool_reference"]
                loaded.update(names)
                print(f"search_tools({json.dumps(block['input'])}) -> tool_reference: {', '.join(names) or '(none)'}")
                results.append(result)
            elif block["type"] == "tool_use":
                if block["name"] not in loaded:
                    print(f"warning: {block['name']} was not loaded by a search", file=sys.stderr)
                result = search.execute_sync(block)
                print(f"{block['name']}({json.dumps(block['input'])}) -> {json.dumps(result['content'])}")
                results.append(result)
                if result.get("is_error"):
                    if not key:
                        return replay_stops(json.dumps(result["content"]))
                    failed = True  # the real model sees the error and answers for itself
        if not results:
            return 1 if failed else 0
        messages.append({"role": "user", "content": results})
    return 1


if __name__ == "__main__":
    sys.exit(main())
