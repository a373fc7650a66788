"""An MCP stdio server that will not go away when asked, for serve's and crawl's shutdown tests
(issue 42 items 5 and 16). One tool, `ping`; every process it starts appends its pid to --pids, so a
test counts the survivors by pid.

Hand-written JSON-RPC (stdlib only, as rawmcp.py): it starts in ~30 ms instead of the SDK's ~1 s.

--how:
  stays       keeps running after its stdin closes (SIGTERM ends it)
  deaf        stays, and ignores SIGTERM and SIGINT (only SIGKILL ends it)
  deaf-child  deaf, with a child that ignores SIGTERM too (in its process group)
  daemon      exits on stdin EOF like a good server, but first double-forks a helper into a session
              of its own (a daemon, reparented away from the server) that ignores SIGTERM and SIGHUP
--slow-list S: answer tools/list only after S seconds (a crawl still running when it is killed).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time


def note(path: str) -> None:
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")


def deaf() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def forever() -> None:
    while True:
        time.sleep(3600)


def child(pids: str) -> None:
    """A child that ignores SIGTERM, in the server's group (fork: nothing to import, nothing to
    exec)."""
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        note(pids)
        os.closerange(0, 3)  # holds none of the server's pipes
        forever()


def daemon(pids: str) -> None:
    """The classic double fork: the helper ends up in a session of its own, its parent gone."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            note(pids)
            os.closerange(0, 3)
            forever()
        os._exit(0)
    os.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--how", required=True, choices=["stays", "deaf", "deaf-child", "daemon"])
    ap.add_argument("--pids", required=True)
    ap.add_argument("--slow-list", type=float, default=0.0)
    a = ap.parse_args()
    note(a.pids)
    if a.how in ("deaf", "deaf-child"):
        deaf()
    if a.how == "deaf-child":
        child(a.pids)
    if a.how == "daemon":
        daemon(a.pids)

    def send(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    tool = {"name": "ping", "description": "Answers pong.", "inputSchema": {"type": "object", "properties": {}}}
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue
        if method == "initialize":
            info = {"name": f"lingering-{a.how}", "version": "1.0.0"}
            result: dict = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            time.sleep(a.slow_list)
            result = {"tools": [tool]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": f"pong from {a.how}"}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"no method {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    if a.how != "daemon":  # stdin closed: a lingering server keeps running
        forever()


if __name__ == "__main__":
    main()
