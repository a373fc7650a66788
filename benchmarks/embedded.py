"""toolidx inside a FastMCP server against FastMCP's own BM25SearchTransform, in one run (#34).

    python benchmarks/embedded.py [--sets etom,livemcp,livemcp-natural] [--queries 300]
                                  [--sizes 100,1000] [--json OUT.json]

Two FastMCP servers hold the same tools (a bench set's tools.jsonl, each tool named
`server__tool` so both searches see the server name, as FastMCP users name merged servers' tools):
one with `ToolidxSearchTransform` (toolidx's hybrid, the model in TOOLIDX_MODEL_PATH, min_score 0:
recall is measured here, "no good match" in quality.py), one with `BM25SearchTransform`. Both are
queried through `fastmcp.Client` in this process, max_results 5:

- quality: R@1 and R@5 on every set (a query is served by any one of its relevant tools; ETOM levels
  1-2, the first `--queries` of each set in file order, all when 0), and the milliseconds per
  `search_tools` call, warm (the first search of each server, which builds its index, not counted);
- scale: for each of `--sizes` tools (the first N of ETOM), in a fresh process each: start-up (the
  server made, then its first `search_tools` answered: the model loaded and the tools' vectors read
  from the cache file, which an earlier start filled; BM25 builds its index; `search_s` is the second
  part alone), milliseconds per warm search (50 queries) and the process's peak RSS.

The model is TOOLIDX_MODEL_PATH's (default all-MiniLM-L6-v2 int8, trained on none of the sets); for
toolidx's own, `TOOLIDX_MODEL_PATH=toolidx/models/tool-minilm-l6` (trained on part of ETOM: its
ETOM recall is no test of it, its speed is).

Vectors are kept in cache files under $TOOLIDX_BENCH_CACHE (default /tmp/toolidx-bench), one per
set: the first run embeds every tool (minutes for ETOM on two shared cores), later runs none.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import BENCH, CACHE, MODEL

SETS = ("etom", "livemcp", "livemcp-natural")
MAX_RESULTS = 5


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def set_tools(set_name: str) -> tuple[list[dict], dict[str, str]]:
    """The set's valid tools as FastMCP tool definitions, and their names -> bench ids."""
    from toolidx.core.tooldoc import validate_tool

    tools, ids, seen = [], {}, set()
    src = "livemcp" if set_name == "livemcp-natural" else set_name  # the same 527 tools
    for t in load_jsonl(BENCH / src / "tools.jsonl"):
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", t["id"].replace("/", "__"))[:128]
        d = {"name": name, "description": t.get("description") or "", "inputSchema": t.get("input_schema")}
        if name in seen or validate_tool(d):
            continue
        seen.add(name)
        tools.append(d)
        ids[name] = t["id"]
    return tools, ids


def server(tools: list[dict], kind: str, cache: Path | None):
    from fastmcp import FastMCP
    from fastmcp.server.transforms.search import BM25SearchTransform
    from fastmcp.tools.base import Tool, ToolResult

    class Stub(Tool):
        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            return ToolResult(content=self.name)

    mcp = FastMCP("bench")
    for t in tools:
        mcp.add_tool(Stub(name=t["name"], description=t["description"], parameters=t["inputSchema"]))
    if kind == "toolidx":
        from toolidx.integrations.fastmcp import ToolidxSearchTransform

        mcp.add_transform(
            ToolidxSearchTransform(
                max_results=MAX_RESULTS, min_score=0.0, cache=cache, model_path=MODEL, server="bench"
            )
        )
    else:
        mcp.add_transform(BM25SearchTransform(max_results=MAX_RESULTS))
    return mcp


def names_of(result: Any) -> list[str]:
    """The tool names a search_tools answer lists, best first (either transform's shape)."""
    data = result.structured_content
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    elif isinstance(data, dict) and "result" in data:  # FastMCP wraps a list answer
        data = data["result"]
    return [t["name"] for t in data]


async def run_queries(mcp, queries: list[str]) -> tuple[list[list[str]], float, list[float]]:
    """(answers, seconds to the first answer, milliseconds of each later search)."""
    from fastmcp import Client

    answers, times = [], []
    async with Client(mcp) as c:
        t0 = time.perf_counter()
        answers.append(names_of(await c.call_tool("search_tools", {"query": queries[0]})))
        first = time.perf_counter() - t0
        for q in queries[1:]:
            t0 = time.perf_counter()
            answers.append(names_of(await c.call_tool("search_tools", {"query": q})))
            times.append((time.perf_counter() - t0) * 1000)
    return answers, first, times


def quality(set_name: str, n_queries: int) -> dict:
    tools, ids = set_tools(set_name)
    queries = [q for q in load_jsonl(BENCH / set_name / "queries.jsonl") if q.get("relevant")]
    if set_name == "etom":
        queries = [q for q in queries if q.get("level") in (1, 2, "1", "2")] or queries
    if n_queries and len(queries) > n_queries:  # every k-th: ETOM's file runs level 1 first, then level 2
        queries = queries[:: -(-len(queries) // n_queries)]
    out: dict[str, Any] = {"set": set_name, "tools": len(tools), "queries": len(queries)}
    for kind in ("toolidx", "fastmcp-bm25"):
        cache = cache_file("livemcp" if set_name == "livemcp-natural" else set_name)
        CACHE.mkdir(parents=True, exist_ok=True)
        answers, first, times = asyncio.run(run_queries(server(tools, kind, cache), [q["query"] for q in queries]))
        rec = {1: 0, 5: 0}
        for q, names in zip(queries, answers):
            got = [ids.get(n) for n in names]
            for k in rec:
                rec[k] += any(g in q["relevant"] for g in got[:k])
        out[kind] = {
            "R@1": rec[1] / len(queries),
            "R@5": rec[5] / len(queries),
            "first_s": round(first, 2),
            "ms_mean": round(statistics.mean(times), 2),
            "ms_p50": round(statistics.median(times), 2),
        }
    return out


def peak_rss_mb() -> int:
    """This process's peak RSS: VmHWM, of this process's own memory (getrusage's ru_maxrss carries a
    parent's peak across exec, so a child of a big parent would report the parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def child(kind: str, size: int, cache: str, n_queries: int) -> None:
    """One start of a server of `size` tools, in this fresh process: prints its figures as JSON."""
    tools, _ = set_tools("etom")
    queries = [q["query"] for q in load_jsonl(BENCH / "etom" / "queries.jsonl")][: n_queries + 1]
    t0 = time.perf_counter()
    mcp = server(tools[:size], kind, Path(cache))
    made = time.perf_counter() - t0
    _, first, times = asyncio.run(run_queries(mcp, queries))
    print(
        json.dumps(
            {
                "startup_s": round(made + first, 3),
                "search_s": round(first, 3),
                "ms_mean": round(statistics.mean(times), 2),
                "ms_p50": round(statistics.median(times), 2),
                "rss_mb": peak_rss_mb(),
            }
        )
    )


def cache_file(name: str) -> Path:
    """The vectors of a set's tools, one file per set and model (TOOLIDX_MODEL_PATH)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    return CACHE / f"embedded-{name}-{Path(MODEL).name}.db"


def scale(sizes: list[int], n_queries: int) -> list[dict]:
    full = cache_file("etom")
    if not full.is_file():  # ETOM's quality run fills it; else the first max(sizes) tools are embedded here
        print(f"embedding the first {max(sizes)} ETOM tools into {full} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, __file__, "--child", "toolidx", str(max(sizes)), str(full), "1"], check=True)
    rows = []
    for size in sizes:
        row: dict[str, Any] = {"tools": size}
        cache = cache_file(f"etom-{size}")
        for kind in ("toolidx", "fastmcp-bm25"):
            if kind == "toolidx":  # the set's vectors, cut to these tools by a first start (not timed)
                for suffix in ("", "-wal"):  # the file as its last writer left it
                    Path(f"{cache}{suffix}").unlink(missing_ok=True)
                    if Path(f"{full}{suffix}").is_file():
                        shutil.copy(f"{full}{suffix}", f"{cache}{suffix}")
                Path(f"{cache}-shm").unlink(missing_ok=True)
                subprocess.run([sys.executable, __file__, "--child", kind, str(size), str(cache), "1"], check=True)
            p = subprocess.run(
                [sys.executable, __file__, "--child", kind, str(size), str(cache), str(n_queries)],
                check=True,
                capture_output=True,
                text=True,
            )
            row[kind] = json.loads(p.stdout.strip().splitlines()[-1])
        rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description="toolidx's FastMCP transform vs FastMCP's BM25SearchTransform")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--queries", type=int, default=300, help="queries per set (0: all)")
    ap.add_argument("--sizes", default="100,1000", help="tool counts for start-up, latency and memory")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, size, cache, n = args.child
        child(kind, int(size), cache, int(n))
        return 0
    results: dict[str, Any] = {"model": Path(MODEL).name, "quality": [], "scale": []}
    for s in [s.strip() for s in args.sets.split(",") if s.strip()]:
        r = quality(s, args.queries)
        results["quality"].append(r)
        print(
            f"{s:16s} {r['tools']:5d} tools {r['queries']:4d} queries | "
            + " | ".join(
                f"{k}: R@1 {r[k]['R@1']:.3f} R@5 {r[k]['R@5']:.3f} {r[k]['ms_mean']:.1f} ms/search (p50 "
                f"{r[k]['ms_p50']:.1f}), first {r[k]['first_s']:.1f} s"
                for k in ("toolidx", "fastmcp-bm25")
            ),
            flush=True,
        )
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    if sizes:
        results["scale"] = scale(sizes, 50)
        for row in results["scale"]:
            print(
                f"{row['tools']:6d} tools | "
                + " | ".join(
                    f"{k}: start-up {row[k]['startup_s']:.2f} s (first search {row[k]['search_s']:.2f} s), "
                    f"{row[k]['ms_mean']:.1f} ms/search (p50 "
                    f"{row[k]['ms_p50']:.1f}), peak RSS {row[k]['rss_mb']} MB"
                    for k in ("toolidx", "fastmcp-bm25")
                )
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
