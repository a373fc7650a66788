"""What `toolidx serve` costs and saves, against baselines measured in the same run.

1. execute_tool overhead: the same real tool called (a) directly on a warm connection to its
   server and (b) through `toolidx serve` (spawned over stdio, backend warm), both with the SDK's
   `Client`, so the difference is the extra hop through toolidx. Target: <= 5 ms added at p50.
2. Start-up: spawn -> first `search_tools` answer (keyword while the model loads), and spawn ->
   first semantic answer; baseline: spawn -> first `tools/list` answer of mcp-server-time (a
   plain Python MCP server on the same SDK).
3. Context tokens: every real server's tool definitions versus the six meta-tools
   (`toolidx stats`, chars/4 approximation).

    python benchmarks/serve_bench.py [--servers /work/servers] [--db INDEX] [--calls 300]

Without --db it crawls every server in SERVERS/servers.json into a temp index first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms"


def toolidx_params(db: Path, *extra: str, env: dict | None = None):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "toolidx", "serve", "--db", str(db), *extra],
                                 env=env or {}, cwd=str(REPO))


def model_env() -> dict:
    p = os.environ.get("TOOLIDX_MODEL_PATH") or str(REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8")
    return {"TOOLIDX_MODEL_PATH": p}


async def timed_calls(call, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await call()
        out.append(time.perf_counter() - t0)
    return out


async def wait_for_model(c, limit: float = 60.0) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        r = await c.call_tool("search_tools", {"query": "warm up"})
        if r.structured_content.get("mode_used") == "hybrid":
            return
        await anyio.sleep(0.1)


async def overhead(db: Path, servers_json: Path, server: str, tool: str, args: dict, n: int) -> dict:
    """Direct and proxied calls interleaved (one of each, n times), both clients warm, so load
    swings on a busy machine hit both sides alike; the added cost is also taken pair by pair."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from toolidx.crawl.config import load_config
    from toolidx.crawl.connect import child_env

    spec = next(s for s in load_config(servers_json).servers if s.name == server)
    direct_params = StdioServerParameters(command=spec.command, args=spec.args, env=child_env(spec), cwd=spec.cwd)
    with open(os.devnull, "w") as devnull:
        async with Client(stdio_client(direct_params, errlog=devnull), mode="legacy") as dc, \
                Client(stdio_client(toolidx_params(db, "--server", server, env=model_env()), errlog=devnull),
                       mode="legacy") as pc:
            async def direct():
                r = await dc.call_tool(tool, args)
                assert not r.is_error, r

            async def proxied():
                r = await pc.call_tool("execute_tool", {"tool_name": f"{server}/{tool}", "arguments": args})
                assert not r.is_error, r

            await timed_calls(direct, 10)
            await timed_calls(proxied, 10)  # starts and warms the backend
            await wait_for_model(pc)  # steady state: not while the model loads in the background
            d, p = [], []
            for _ in range(n):
                d += await timed_calls(direct, 1)
                p += await timed_calls(proxied, 1)
    diffs = [b - a for a, b in zip(d, p)]
    return {"tool": f"{server}/{tool}", "calls": n,
            "direct_p50": pct(d, 50), "direct_p90": pct(d, 90),
            "serve_p50": pct(p, 50), "serve_p90": pct(p, 90),
            "added_p50": pct(p, 50) - pct(d, 50), "added_p90": pct(p, 90) - pct(d, 90),
            "paired_added_p50": pct(diffs, 50)}


async def startup(db: Path, servers_json: Path, runs: int) -> dict:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from toolidx.crawl.config import load_config
    from toolidx.crawl.connect import child_env

    first, semantic, base = [], [], []
    spec = next(s for s in load_config(servers_json).servers if s.name == "time")
    with open(os.devnull, "w") as devnull:
        for _ in range(runs):
            t0 = time.perf_counter()
            async with Client(stdio_client(toolidx_params(db, env=model_env()), errlog=devnull), mode="legacy") as c:
                r = await c.call_tool("search_tools", {"query": "current time in Tokyo"})
                first.append(time.perf_counter() - t0)
                while r.structured_content.get("mode_used") != "hybrid":
                    await anyio.sleep(0.05)
                    r = await c.call_tool("search_tools", {"query": "current time in Tokyo"})
                    if time.perf_counter() - t0 > 60:
                        break
                semantic.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            params = StdioServerParameters(command=spec.command, args=spec.args, env=child_env(spec))
            async with Client(stdio_client(params, errlog=devnull), mode="legacy") as c:
                await c.list_tools()
                base.append(time.perf_counter() - t0)
    return {"runs": runs, "first_search_p50": statistics.median(first),
            "first_semantic_p50": statistics.median(semantic),
            "baseline_first_list_p50": statistics.median(base)}


def crawl_all(servers_json: Path, tmp: Path) -> Path:
    db = tmp / "all.db"
    r = subprocess.run([sys.executable, "-m", "toolidx", "crawl", "--config", str(servers_json), "--db", str(db),
                        "--json"], capture_output=True, text=True, cwd=REPO, env={**os.environ, **model_env()})
    summary = json.loads(r.stdout)
    print(f"crawled {summary['servers_ok']} servers ok, {summary['servers_failed']} failed, {summary['tools']} tools")
    return db


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", default=os.environ.get("TOOLIDX_TEST_SERVERS", str(REPO.parent / "servers")))
    ap.add_argument("--db")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--startup-runs", type=int, default=5)
    a = ap.parse_args()
    servers_json = Path(a.servers) / "servers.json"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(a.db) if a.db else crawl_all(servers_json, Path(tmp))
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (timings scale with load)")

        print("\n== context tokens (toolidx stats; chars/4 approximation)")
        from toolidx.serve.stats import index_stats
        from toolidx.store.db import open_db

        s = index_stats(open_db(db))
        for row in s["servers"]:
            print(f"  {row['server']:<22} {row['tools']:>4} tools {row['tokens']:>7,} tokens")
        print(f"  all definitions: {s['tool_tokens']:,} tokens for {s['tools']} tools; meta-tools: {s['meta_tokens']:,}"
              f" -> saved {s['saved_tokens']:,} ({s['saving_pct']}%), {s['ratio']}x smaller")

        print("\n== execute_tool overhead vs a direct call on a warm connection")
        for server, tool, args in [("everything", "echo", {"message": "hello"}),
                                   ("time", "get_current_time", {"timezone": "Asia/Tokyo"})]:
            o = anyio.run(overhead, db, servers_json, server, tool, args, a.calls)
            ok = "OK" if o["added_p50"] <= 0.005 else "OVER TARGET"
            print(f"  {o['tool']:<24} direct p50 {ms(o['direct_p50'])} p90 {ms(o['direct_p90'])} | via serve "
                  f"p50 {ms(o['serve_p50'])} p90 {ms(o['serve_p90'])} | added p50 {ms(o['added_p50'])} "
                  f"p90 {ms(o['added_p90'])}, paired p50 {ms(o['paired_added_p50'])} "
                  f"({o['serve_p50'] / o['direct_p50']:.2f}x) [{ok}: target <= 5 ms]")

        print("\n== start-up (spawn over stdio)")
        st = anyio.run(startup, db, servers_json, a.startup_runs)
        print(f"  spawn -> first search_tools answer: p50 {st['first_search_p50']:.2f} s "
              f"({st['first_search_p50'] / st['baseline_first_list_p50']:.2f}x the baseline)")
        print(f"  spawn -> first semantic (hybrid) answer: p50 {st['first_semantic_p50']:.2f} s")
        print(f"  baseline, spawn -> first tools/list of mcp-server-time: p50 {st['baseline_first_list_p50']:.2f} s")


if __name__ == "__main__":
    main()
