"""toolidx as the client-executed tool_search of the OpenAI Responses API: one whole round.

    python examples/openai_tool_search.py [--db INDEX]

The request holds one `{"type": "tool_search", "execution": "client"}` tool. The model emits a
`tool_search_call`; toolidx ranks the catalog and answers with a `tool_search_output` holding the
full function definitions of the best tools, grouped into namespaces (one per server, fewer than
10 functions each); the model emits a `function_call` (namespace + name); toolidx runs it on its
real MCP server and answers with `function_call_output`.

Offline by default: the model's turns are replayed from recorded/openai_round.json (toolidx's
search and the tool call are real). With OPENAI_API_KEY set, the real API answers instead
(model: $OPENAI_MODEL, default gpt-5.4).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from _round import example_index, post, recorded, replay_stops

from toolidx.integrations.common import ToolCatalog
from toolidx.integrations.openai import OpenAIToolSearch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="index to use (default: examples/live.yaml crawled into a temp folder)")
    args = ap.parse_args()
    search = OpenAIToolSearch(ToolCatalog(args.db or example_index()))
    key = os.environ.get("OPENAI_API_KEY")
    script = recorded("openai_round.json")
    items: list[dict] = [{"role": "user", "content": script["prompt"]}]
    print(f"mode: {'real API' if key else 'recorded model turns'}; {len(search.catalog)} tools behind tool_search")
    print(f"user: {script['prompt']}")
    failed = False
    for step in range(8):
        if key:
            reply = post("https://api.openai.com/v1/responses", {"authorization": f"Bearer {key}"},
                         {"model": os.environ.get("OPENAI_MODEL", "gpt-5.4"), "input": items,
                          "tools": search.tools(), "parallel_tool_calls": False})
            output = reply["output"]
        else:
            output = script["turns"][step]
        items.extend(output)
        answers = []
        for item in output:
            if item["type"] == "message":
                print("assistant: " + "".join(c.get("text", "") for c in item["content"]))
            elif search.is_search(item):
                answer = search.handle_search(item)
                loaded = [f"{ns['name']}.{f['name']}" for ns in answer["tools"] for f in ns["tools"]]
                print(f"tool_search({json.dumps(item['arguments'])}) -> {', '.join(loaded) or '(none)'}")
                answers.append(answer)
            elif item["type"] == "function_call":
                answer = search.execute_sync(item)
                print(f"{item.get('namespace')}.{item['name']}({item['arguments']}) -> {answer['output']}")
                answers.append(answer)
                if answer["output"].startswith("Error"):  # function_call_output's mark of isError
                    if not key:
                        return replay_stops(answer["output"])
                    failed = True  # the real model sees the error and answers for itself
        if not answers:
            return 1 if failed else 0
        items.extend(answers)
    return 1


if __name__ == "__main__":
    sys.exit(main())
