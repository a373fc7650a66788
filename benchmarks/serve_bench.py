"""What `toolidx serve` costs and saves, against baselines measured in the same run.

1. execute_tool overhead: the same real tool called (a) directly on a warm connection to its
   server and (b) through `toolidx serve` (spawned over stdio, backend warm), both with the SDK's
   `Client`, so the difference is the extra hop through toolidx. Target: <= 5 ms added at p50.
2. Start-up: spawn -> first `search_tools` answer (keyword while the model loads), and spawn ->
   first semantic answer; baseline: spawn -> first `tools/list` answer of mcp-server-time (a
   plain Python MCP server on the same SDK).
3. Context tokens: every real server's tool definitions versus the six meta-tools
   (`toolidx stats`, chars/4 approximation).
4. HTTP under load (`serve --http`, loopback, bearer token): C concurrent clients x N searches
   each, as `search_tools` over MCP Streamable HTTP (one session per client) and as
   `GET /v1/search`; throughput and p50/p95 latency, against the stdio path under the same load
   (C concurrent `search_tools` requests on one stdio session), measured in the same run.

    python benchmarks/serve_bench.py [--servers DIR] [--db INDEX] [--calls 300]
                                     [--only tokens|overhead|startup|http ...] [--clients 8] [--searches 50]

Without --db it crawls every server in DIR/servers.json into a temp index first. DIR: where
../shared/servers/setup.sh DIR installed the real servers, default $TOOLIDX_TEST_SERVERS or
~/.cache/toolidx/test-servers (where scripts/test.sh installs them).
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
from _common import MODEL, REPO, cli, servers_dir


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms"


def toolidx_params(db: Path, *extra: str, env: dict | None = None):
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "toolidx", "serve", "--db", str(db), *extra], env=env or {}, cwd=str(REPO)
    )


def model_env() -> dict:
    return {"TOOLIDX_MODEL_PATH": MODEL}


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
        async with (
            Client(stdio_client(direct_params, errlog=devnull), mode="legacy") as dc,
            Client(
                stdio_client(toolidx_params(db, "--server", server, env=model_env()), errlog=devnull), mode="legacy"
            ) as pc,
        ):

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
    return {
        "tool": f"{server}/{tool}",
        "calls": n,
        "direct_p50": pct(d, 50),
        "direct_p90": pct(d, 90),
        "serve_p50": pct(p, 50),
        "serve_p90": pct(p, 90),
        "added_p50": pct(p, 50) - pct(d, 50),
        "added_p90": pct(p, 90) - pct(d, 90),
        "paired_added_p50": pct(diffs, 50),
    }


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
    return {
        "runs": runs,
        "first_search_p50": statistics.median(first),
        "first_semantic_p50": statistics.median(semantic),
        "baseline_first_list_p50": statistics.median(base),
    }


QUERIES = [
    "what time is it in Tokyo",
    "read a file",
    "create a git branch",
    "store a memory entity",
    "list a directory",
    "echo a message",
    "convert time between zones",
    "search notes",
    "write a file to disk",
    "show the git log",
]


def load_stats(lat: list[float], wall: float) -> dict:
    return {"n": len(lat), "rps": len(lat) / wall, "p50": pct(lat, 50), "p95": pct(lat, 95)}


async def _clients_load(clients: int, searches: int, one_search) -> dict:
    """`clients` tasks, each running `searches` sequential requests with `one_search(client_no,
    i)`; latency per request and the wall time of the whole load."""
    lat: list[float] = []

    async def worker(k: int) -> None:
        for i in range(searches):
            t0 = time.perf_counter()
            await one_search(k, i)
            lat.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for k in range(clients):
            tg.start_soon(worker, k)
    return load_stats(lat, time.perf_counter() - t0)


def start_http(db: Path, token: str) -> tuple[subprocess.Popen, str]:
    """`toolidx serve --http 127.0.0.1:0` with one token; (process, base url) once it listens
    and its model is loaded."""
    import re
    import urllib.request

    err = Path(tempfile.mkdtemp()) / "serve-http.err"
    with open(err, "w") as errf:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolidx",
                "serve",
                "--db",
                str(db),
                "--http",
                "127.0.0.1:0",
                "--token-env",
                "BENCH_TOKEN",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errf,
            cwd=REPO,
            env={**os.environ, **model_env(), "BENCH_TOKEN": token},
        )
    deadline = time.monotonic() + 90
    base = None
    while time.monotonic() < deadline:
        text = err.read_text()
        m = re.search(r"MCP at (http://[^ ]+)/mcp", text)
        if m:
            base = m.group(1)
            with urllib.request.urlopen(base + "/healthz", timeout=10) as r:
                if json.loads(r.read())["model"] in ("ready", "unavailable"):
                    return proc, base
        elif proc.poll() is not None:
            raise SystemExit(f"serve --http did not start: {text.strip()}")
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("serve --http did not get ready in 90 s")


async def http_load(db: Path, base: str, token: str, clients: int, searches: int) -> dict:
    """The same load three ways: search_tools on one stdio session (C requests in flight),
    search_tools over HTTP (C sessions), GET /v1/search (C HTTP clients)."""
    from contextlib import AsyncExitStack

    import httpx2
    from mcp import Client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    out: dict = {}
    headers = {"Authorization": f"Bearer {token}"}
    async with Client(stdio_client(toolidx_params(db, env=model_env())), mode="legacy") as c:
        await wait_for_model(c)

        async def stdio_search(k: int, i: int) -> None:
            await c.call_tool("search_tools", {"query": QUERIES[(k + i) % len(QUERIES)]})

        await _clients_load(clients, 2, stdio_search)  # warm
        out["stdio search_tools"] = await _clients_load(clients, searches, stdio_search)

    async with AsyncExitStack() as stack:
        sessions = []
        for _ in range(clients):
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            sessions.append(
                await stack.enter_async_context(
                    Client(streamable_http_client(base + "/mcp", http_client=http), mode="legacy")
                )
            )

        async def mcp_search(k: int, i: int) -> None:
            await sessions[k].call_tool("search_tools", {"query": QUERIES[(k + i) % len(QUERIES)]})

        await _clients_load(clients, 2, mcp_search)
        out["http search_tools"] = await _clients_load(clients, searches, mcp_search)

    async with AsyncExitStack() as stack:
        webs = [
            await stack.enter_async_context(httpx2.AsyncClient(base_url=base, headers=headers, timeout=60))
            for _ in range(clients)
        ]

        async def api_search(k: int, i: int) -> None:
            r = await webs[k].get("/v1/search", params={"q": QUERIES[(k + i) % len(QUERIES)], "k": 5})
            r.raise_for_status()

        await _clients_load(clients, 2, api_search)
        out["http /v1/search"] = await _clients_load(clients, searches, api_search)
    return out


def crawl_all(servers_json: Path, tmp: Path) -> Path:
    db = tmp / "all.db"
    code, out, err = cli("crawl", "--config", servers_json, "--db", db, "--model-path", MODEL, "--json")
    if not out.strip():
        sys.exit(f"crawl failed (exit {code}): {err.strip()[-500:]}")
    summary = json.loads(out)
    print(f"crawled {summary['servers_ok']} servers ok, {summary['servers_failed']} failed, {summary['tools']} tools")
    return db


def main() -> None:
    ap = argparse.ArgumentParser()
    # where scripts/test.sh installs the real servers
    ap.add_argument(
        "--servers", default=servers_dir(), help="folder of the real servers, with servers.json (default: %(default)s)"
    )
    ap.add_argument("--db")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--startup-runs", type=int, default=5)
    ap.add_argument(
        "--only",
        action="append",
        choices=["tokens", "overhead", "startup", "http"],
        help="run only these sections (repeatable; default: all)",
    )
    ap.add_argument("--clients", type=int, default=8, help="HTTP load: concurrent clients")
    ap.add_argument("--searches", type=int, default=50, help="HTTP load: searches per client")
    a = ap.parse_args()
    only = set(a.only or ["tokens", "overhead", "startup", "http"])
    servers_json = Path(a.servers) / "servers.json"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(a.db) if a.db else crawl_all(servers_json, Path(tmp))
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (timings scale with load)")

        if "tokens" in only:
            tokens_section(db)
        if "overhead" in only:
            overhead_section(db, servers_json, a.calls)
        if "startup" in only:
            startup_section(db, servers_json, a.startup_runs)
        if "http" in only:
            http_section(db, a.clients, a.searches)


def tokens_section(db: Path) -> None:
    print("\n== context tokens (toolidx stats; chars/4 approximation)")
    from toolidx.serve.stats import index_stats
    from toolidx.store.db import open_db

    s = index_stats(open_db(db)).to_json()
    for row in s["servers"]:
        print(f"  {row['server']:<22} {row['tools']:>4} tools {row['tokens']:>7,} tokens")
    print(
        f"  all definitions: {s['tool_tokens']:,} tokens for {s['tools']} tools; meta-tools: {s['meta_tokens']:,}"
        f" -> saved {s['saved_tokens']:,} ({s['saving_pct']}%), {s['ratio']}x smaller"
    )


def overhead_section(db: Path, servers_json: Path, calls: int) -> None:
    print("\n== execute_tool overhead vs a direct call on a warm connection")
    for server, tool, args in [
        ("everything", "echo", {"message": "hello"}),
        ("time", "get_current_time", {"timezone": "Asia/Tokyo"}),
    ]:
        o = anyio.run(overhead, db, servers_json, server, tool, args, calls)
        ok = "OK" if o["added_p50"] <= 0.005 else "OVER TARGET"
        print(
            f"  {o['tool']:<24} direct p50 {ms(o['direct_p50'])} p90 {ms(o['direct_p90'])} | via serve "
            f"p50 {ms(o['serve_p50'])} p90 {ms(o['serve_p90'])} | added p50 {ms(o['added_p50'])} "
            f"p90 {ms(o['added_p90'])}, paired p50 {ms(o['paired_added_p50'])} "
            f"({o['serve_p50'] / o['direct_p50']:.2f}x) [{ok}: target <= 5 ms]"
        )


def startup_section(db: Path, servers_json: Path, runs: int) -> None:
    print("\n== start-up (spawn over stdio)")
    st = anyio.run(startup, db, servers_json, runs)
    print(
        f"  spawn -> first search_tools answer: p50 {st['first_search_p50']:.2f} s "
        f"({st['first_search_p50'] / st['baseline_first_list_p50']:.2f}x the baseline)"
    )
    print(f"  spawn -> first semantic (hybrid) answer: p50 {st['first_semantic_p50']:.2f} s")
    print(f"  baseline, spawn -> first tools/list of mcp-server-time: p50 {st['baseline_first_list_p50']:.2f} s")


def http_section(db: Path, clients: int, searches: int) -> None:
    import secrets

    print(
        f"\n== HTTP under load: {clients} concurrent clients x {searches} searches, loopback "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    token = secrets.token_urlsafe(24)
    proc, base = start_http(db, token)
    try:
        res = anyio.run(http_load, db, base, token, clients, searches)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    ref = res["stdio search_tools"]
    for name, r in res.items():
        vs = (
            ""
            if r is ref
            else (f" | {r['rps'] / ref['rps']:.2f}x the stdio throughput, p95 {r['p95'] / ref['p95']:.2f}x stdio's")
        )
        print(f"  {name:<20} {r['n']:>5} searches {r['rps']:>7.1f} /s  p50 {ms(r['p50'])}  p95 {ms(r['p95'])}{vs}")


if __name__ == "__main__":
    main()
