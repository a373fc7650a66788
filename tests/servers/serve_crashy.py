"""A tiny MCP server over stdio for serve's tests: a backend that can be told to die mid-session.

Hand-written JSON-RPC (plain Python starts in ~30 ms; the SDK takes ~1 s). Tools:
  echo(text)  -> the text back, as content and structuredContent
  pid()       -> this process's id (tells a restarted backend from the first one)
  sleep(s)    -> answers after s seconds (a slow tool, for timeouts)
  crash(code) -> exits at once without answering (a backend dying during a call)
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = [
    {
        "name": "echo",
        "description": "Echo a text back unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "pid",
        "description": "The backend process id.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "sleep",
        "description": "Wait some seconds, then answer.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "crash",
        "description": "Exit the server process immediately (for tests).",
        "inputSchema": {"type": "object", "properties": {"code": {"type": "integer"}}},
        "annotations": {"destructiveHint": True},
    },
]


def reply(msg_id, result=None, error=None) -> None:
    out = {"jsonrpc": "2.0", "id": msg_id}
    out.update({"error": error} if error else {"result": result})
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def call(name: str, args: dict) -> dict:
    if name == "echo":
        return {"content": [{"type": "text", "text": args["text"]}], "structuredContent": {"text": args["text"]}}
    if name == "pid":
        return {"content": [{"type": "text", "text": str(os.getpid())}]}
    if name == "sleep":
        time.sleep(float(args["seconds"]))
        return {"content": [{"type": "text", "text": "awake"}]}
    if name == "crash":
        sys.stderr.write("serve_crashy: crashing on request\n")
        sys.stderr.flush()
        os._exit(int(args.get("code", 7)))
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # notifications
        if method == "initialize":
            reply(
                msg_id,
                {
                    "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "serve-crashy", "version": "1"},
                },
            )
        elif method == "tools/list":
            reply(msg_id, {"tools": TOOLS})
        elif method == "tools/call":
            p = msg.get("params") or {}
            if p.get("name") == "echo" and (p.get("arguments") or {}).get("text") == "refuse":
                # a JSON-RPC error, as a server whose service behind it is unreachable answers
                reply(msg_id, error={"code": -32603, "message": "fetch failed: getaddrinfo ENOTFOUND api.example.com"})
                continue
            reply(msg_id, call(p.get("name"), p.get("arguments") or {}))
        elif method == "ping":
            reply(msg_id, {})
        else:
            reply(msg_id, error={"code": -32601, "message": "Method not found"})


if __name__ == "__main__":
    main()
