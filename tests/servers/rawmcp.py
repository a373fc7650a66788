"""A misbehaving MCP server over stdio, for crawl tests. One script, one behaviour per `--mode`.

Hand-written JSON-RPC instead of the SDK's low-level Server on purpose: the SDK validates what a
server sends (it could not publish a spec-invalid tool), and plain Python starts in ~30 ms instead
of ~1 s, which keeps the suite fast on 2 cores.

Modes:
  ok             three valid tools (the baseline)
  hang           never answers `initialize`
  crash-start    writes to stderr and exits 3 before reading anything
  crash-mid-list serves page 1 of tools/list, then exits 4 when page 2 is asked for
  invalid-tool   two valid tools and one whose inputSchema has no "type": "object"
  junk           prints non-JSON lines on stdout before and between answers
  many           5,000 tools in pages of 100 (nextCursor)
  big            one tool with a 1 MB description
  slow-list      answers initialize, then takes 60 s over tools/list
  hostile        tools and serverInfo whose text holds ANSI/OSC sequences, C1 controls, rich
                 markup and bidi overrides (terminal injection)
  bad-strings    a page with valid tools, one with a lone surrogate (\ud800) in its description,
                 one whose schema nests 300 levels deep
  nul            NUL (U+0000) in a description, a parameter name, a schema's strings, serverInfo
                 and instructions, and a tool whose description holds one 6,000-character word
  crash-nul      like crash-start, with a NUL in what it writes to stderr
Calls: arguments {"die": true} exit 5; {"sleep": S} answer after S s; {"rpc_error": CODE,
"message": M} answer with that JSON-RPC error; {"huge_mb": N} answer with N MiB of text on one line
(with "id_last": true, the id written after the result).
Options: --tools N (ok mode), --version V, --prefix P (renames the tools), --desc-suffix S (changes
the first tool's description), --init-delay SEC (slow start), --say-env NAME (instructions report
that variable, to check what environment a server gets), --init-error CODE:MESSAGE (answer
initialize with that JSON-RPC error), --stubborn PIDFILE (starts a child process, writes both pids
to PIDFILE, ignores SIGTERM and keeps running after stdin closes: a backend only SIGKILL stops),
--leave-child PIDFILE (starts a child in a session of its own, as a launched browser is, writes its
pid to PIDFILE and exits on stdin EOF without stopping it: the child outlives the server).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

HOSTILE = (
    "Reads a file.\x1b[2J\x1b]0;pwned\x07 [link=https://evil.example/x]click[/link] "
    "\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\ \x9b31mred \u202edesrever\u202c "
    "[bold]loud[/bold]\x1b[8mhidden\x1b[0m"
)


def tool(name: str, desc: str, **extra) -> dict:
    t = {
        "name": name,
        "description": desc,
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A path"}},
            "required": ["path"],
        },
    }
    t.update(extra)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--version", default="1.0.0")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--tools", type=int, default=3)
    ap.add_argument("--desc-suffix", default="")
    ap.add_argument("--init-delay", type=float, default=0.0)
    ap.add_argument("--say-env", action="append", default=[])
    ap.add_argument("--init-error", default=None)
    ap.add_argument("--stubborn", default=None)
    ap.add_argument("--leave-child", default=None)
    a = ap.parse_args()
    mode = a.mode
    if a.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(a.stubborn, "w") as f:
            f.write(f"{os.getpid()} {child.pid}\n")

    if a.leave_child:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True)
        with open(a.leave_child, "a") as f:
            f.write(f"{child.pid}\n")

    if mode in ("crash-start", "crash-nul"):
        nul = "\x00" if mode == "crash-nul" else ""
        sys.stderr.write(f"fatal: cannot open configuration /nonexistent/config.{nul}toml\n")
        sys.stderr.flush()
        sys.exit(3)
    sys.stderr.write(f"rawmcp starting in mode {mode}\n")
    if os.environ.get("RAWMCP_ECHO_ENV"):  # a careless server that logs its secret
        sys.stderr.write(f"token is {os.environ.get(os.environ['RAWMCP_ECHO_ENV'])}\n")
    sys.stderr.flush()

    out = sys.stdout

    def send(obj: dict) -> None:
        if mode == "junk":
            out.write("Server starting... please wait\n")
        out.write(json.dumps(obj) + "\n")
        out.flush()

    if mode == "junk":
        out.write("Welcome to the noisy server v1!\n")
        out.write("{not json at all\n")
        out.flush()

    if mode == "ok":
        tools = [tool(f"{a.prefix}tool_{i}", f"Tool number {i} reads a file.") for i in range(a.tools)]
        tools[0]["annotations"] = {"readOnlyHint": True, "title": "First tool"}
        tools[0]["_meta"] = {"tags": ["alpha"]}
        tools[0]["description"] += a.desc_suffix
    elif mode == "invalid-tool":
        tools = [
            tool("good_one", "A valid tool."),
            {"name": "bad_schema", "description": "Schema is not an object.", "inputSchema": {"type": "string"}},
            tool("good_two", "Another valid tool."),
        ]
    elif mode == "many":
        tools = [tool(f"bulk_tool_{i:04d}", f"Bulk tool {i} does thing {i}.") for i in range(5000)]
    elif mode == "hostile":
        tools = [tool("read_file", HOSTILE, title="Read \x1b[31mfile\x1b[0m"), tool("clean_tool", "A harmless tool.")]
        tools[0]["inputSchema"]["properties"]["path"]["description"] = (
            "The path [link=https://evil.example]x[/link]\x1b[2J"
        )
    elif mode == "bad-strings":
        deep: dict = {"type": "string"}
        for _ in range(300):
            deep = {"type": "object", "properties": {"x": deep}}
        tools = [
            tool("good_one", "A valid tool."),
            tool("surrogate", "Broken \ud800 text."),
            tool("deep_schema", "Deep schema.", inputSchema=deep),
            tool("good_two", "Another valid tool."),
        ]
    elif mode == "nul":
        tools = [
            tool("nul_desc", "Reads a\x00 file with a NUL."),
            tool("nul_param", "A NUL in a parameter name."),
            tool("long_word", "Decodes " + "zq" * 3000 + " blobs."),
            tool("plain", "A plain tool."),
        ]
        props = tools[1]["inputSchema"]["properties"]
        props["pa\x00th"] = props.pop("path")
        props["pa\x00th"].update(default="a\x00b", enum=["a\x00b", "c"])
        tools[1]["inputSchema"]["required"] = ["pa\x00th"]
    elif mode == "big":
        tools = [tool("huge_doc", "Large description. " + "x" * (1024 * 1024)), tool("small", "Small.")]
    else:
        tools = [tool("only_tool", "The only tool.")]
    page_size = 100 if mode in ("many", "crash-mid-list") else len(tools) or 1
    if mode == "crash-mid-list":
        tools = [tool(f"paged_{i}", f"Paged tool {i}.") for i in range(250)]

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue  # notifications
        if method == "initialize":
            if a.init_error:
                code, _, message = a.init_error.partition(":")
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": int(code), "message": message}})
                continue
            if mode == "hang":
                time.sleep(3600)
            time.sleep(a.init_delay)
            said = "; ".join(f"{n}={os.environ.get(n, '<unset>')}" for n in a.say_env)
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                        "serverInfo": {
                            "name": f"rawmcp-{mode}" + ("\x00" if mode == "nul" else ""),
                            "version": a.version,
                            "title": "Raw MCP" + (HOSTILE if mode == "hostile" else "\x00" if mode == "nul" else ""),
                        },
                        "instructions": f"Test server in {mode} mode.{chr(0) if mode == 'nul' else ''} {said}".strip(),
                    },
                }
            )
        elif method == "tools/list":
            if mode == "slow-list":
                time.sleep(60)
            cursor = (msg.get("params") or {}).get("cursor")
            start = int(cursor) if cursor else 0
            if mode == "crash-mid-list" and start > 0:
                sys.stderr.write("segfault while listing page 2\n")
                sys.stderr.flush()
                os._exit(4)
            page = tools[start : start + page_size]
            result = {"tools": page}
            if start + page_size < len(tools):
                result["nextCursor"] = str(start + page_size)
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tools/call":
            params = msg.get("params") or {}
            if params.get("name") not in {t["name"] for t in tools}:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": mid,
                        "error": {"code": -32602, "message": f"Unknown tool: {params.get('name')}"},
                    }
                )
                continue
            args = params.get("arguments") or {}
            if args.get("die"):
                os._exit(5)
            if "rpc_error" in args:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": mid,
                        "error": {"code": int(args["rpc_error"]), "message": args.get("message", "tool exploded")},
                    }
                )
                continue
            if "huge_mb" in args:
                head, tail = '{"jsonrpc": "2.0", ', f', "id": {json.dumps(mid)}}}\n'
                if not args.get("id_last"):
                    head, tail = f'{{"jsonrpc": "2.0", "id": {json.dumps(mid)}, ', "}\n"
                out.write(head + '"result": {"content": [{"type": "text", "text": "')
                block = "x" * (1 << 20)
                for _ in range(int(args["huge_mb"])):
                    out.write(block)
                out.write('"}]}' + tail)
                out.flush()
                continue
            time.sleep(float(args.get("sleep", 0)))
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "content": [
                            {
                                "type": "text",
                                "text": f"called {params.get('name')} with "
                                f"{json.dumps(params.get('arguments'), sort_keys=True)}",
                            }
                        ],
                        "structuredContent": {"ok": True},
                    },
                }
            )
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
    if "--stubborn" in sys.argv:  # stdin closed: a stubborn server keeps running
        time.sleep(3600)
