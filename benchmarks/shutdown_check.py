"""Claude Desktop-style restarts of `toolidx serve` (#31 item 3): each run starts serve over stdio
on an index of the real Node servers crawled with the model, initializes, runs execute_tool on each
Node backend, then closes stdin or sends SIGTERM at once, while the model may still be loading. It
counts aborts ('terminate called', 'Fatal Python error', -6), non-zero exits, and processes of
serve's tree (snapshotted from /proc before the stop) still alive 1 s after serve exited.

  python benchmarks/shutdown_check.py [--runs 20] [--how eof,sigterm] [--calls 4]

With PYTHONPATH naming another checkout, the serve under test is that checkout's (a baseline).

The index is crawled into a temporary folder first (memory, filesystem, everything,
sequential-thinking from $TOOLIDX_TEST_SERVERS/servers.json). Exit 0 when every run was clean.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import MODEL, REPO, cli, servers_dir

NODE = {
    "memory": ("memory/read_graph", {}),
    "filesystem": ("filesystem/list_allowed_directories", {}),
    "everything": ("everything/echo", {"message": "hi"}),
    "sequential-thinking": (
        "sequential-thinking/sequentialthinking",
        {"thought": "one", "nextThoughtNeeded": False, "thoughtNumber": 1, "totalThoughts": 1},
    ),
}


def tree_of(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                ppid = int(Path(f"/proc/{n}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(n))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def one(db: Path, how: str, env: dict, calls: int) -> dict:
    p = subprocess.Popen(
        [sys.executable, "-m", "toolidx", "serve", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=db.parent,
    )
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None

    def ask(msg: dict) -> dict | None:
        p.stdin.write((json.dumps(msg) + "\n").encode())  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
        return json.loads(p.stdout.readline()) if "id" in msg else None  # type: ignore[union-attr]

    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "check", "version": "1"}}
    ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
    calls_ok = 0
    for i, (tool, args) in enumerate(list(NODE.values())[:calls]):
        params = {"name": "execute_tool", "arguments": {"tool_name": tool, "arguments": args}}
        r = ask({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call", "params": params})
        calls_ok += bool(r and "result" in r and not r["result"].get("isError"))
    tree = tree_of(p.pid)
    t0 = time.monotonic()
    if how == "eof":
        p.stdin.close()
    else:
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    secs = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    time.sleep(1.0)
    left = [x for x in tree if alive(x)]
    for x in left:
        with contextlib.suppress(OSError):
            os.kill(x, signal.SIGKILL)
    aborted = "terminate called" in err or "Fatal Python error" in err or p.returncode == -6
    return {
        "how": how,
        "exit": p.returncode,
        "secs": round(secs, 2),
        "calls_ok": calls_ok,
        "tree": len(tree),
        "left": len(left),
        "aborted": aborted,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="runs per way of stopping (default 20)")
    ap.add_argument("--how", default="eof,sigterm", help="eof, sigterm or both (default eof,sigterm)")
    ap.add_argument(
        "--calls", type=int, default=len(NODE), help="execute_tool calls per run, one per server (1: stop sooner)"
    )
    a = ap.parse_args()
    src = json.loads((Path(servers_dir()) / "servers.json").read_text())["mcpServers"]
    with tempfile.TemporaryDirectory(prefix="toolidx-shutdown-") as tmp:
        d = Path(tmp)
        env = {
            **os.environ,
            "PYTHONPATH": os.environ.get("PYTHONPATH") or str(REPO),
            "XDG_STATE_HOME": str(d / "state"),
        }
        os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]  # the crawl's trust records, read by serve
        (d / "servers.json").write_text(json.dumps({"mcpServers": {n: src[n] for n in NODE}}))
        code, _, err = cli("crawl", "--config", d / "servers.json", "--db", d / "node.db", "--model-path", MODEL)
        if code != 0:
            print(f"crawl failed: {err.strip()[-300:]}", file=sys.stderr)
            return 1
        totals: dict[str, list[int]] = {}
        for _ in range(a.runs):
            for how in a.how.split(","):
                r = one(d / "node.db", how, env, a.calls)
                print(json.dumps(r), flush=True)
                t = totals.setdefault(how, [0, 0, 0, 0, 0])
                t[0] += 1
                t[1] += r["aborted"]
                t[2] += r["exit"] != 0
                t[3] += r["left"]
                t[4] += r["calls_ok"] != min(a.calls, len(NODE))
    bad = 0
    for how, (n, aborts, nonzero, left, failed_calls) in totals.items():
        print(
            f"{how}: {n} runs, {aborts} aborts, {nonzero} non-zero exits, {left} processes left, "
            f"{failed_calls} runs with a failed call"
        )
        bad += aborts + nonzero + left + failed_calls
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
