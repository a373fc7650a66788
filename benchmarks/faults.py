"""The slow half of the fault suite (issue 13): huge inputs, each run through the real CLI, the real
SQLite index and real stdio servers, printing one figure per case and PASS/FAIL against its limit.
The fast half is `pytest tests/test_faults.py -q` (a figure per case at the end of the run).

  python benchmarks/faults.py [--only NAME ...]

Cases
  yaml-50mb        a 50 MB YAML config loads within 2x libyaml's own load of it (--yaml-mb N)
  tools-20k        a 20,000-tool catalog (tools_file) crawls, then a keyword search answers
  live-5000        a live stdio server with 5,000 tools in 50 pages crawls
  desc-5mb         a tool with a 5 MB description is indexed whole and `describe` shows it
  deep-live        a live server whose tools/list page holds a 300-level schema and a lone
                   surrogate: the page's valid tools are kept, no timeout
  serve-64mib      serve refuses a 65 MiB request line and a 10 MB tool_name, then still answers
  race             searches running while three crawls rewrite the index: every search answers

Exit 0 when every case passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from _common import REPO, cli

RAW = REPO / "tests" / "servers" / "rawmcp.py"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


def raw(mode: str, **extra: object) -> dict:
    return {"command": sys.executable, "args": [str(RAW), "--mode", mode], **extra}


def config(d: Path, servers: dict) -> Path:
    p = d / "c.json"
    p.write_text(json.dumps({"mcpServers": servers}))
    return p


def crawl(d: Path, servers: dict) -> tuple[int, dict, float]:
    t0 = time.perf_counter()
    code, out, err = cli("crawl", "--config", config(d, servers), "--db", d / "i.db", "--model", "none", "--json")
    return code, json.loads(out) if out.strip() else {"stderr": err}, time.perf_counter() - t0


# --- cases: each returns (figure, passed) ------------------------------------------------------------
YAML_MB = 50


def yaml_50mb(d: Path) -> tuple[str, bool]:
    """Against a baseline measured in the same run: libyaml's own load of the same file (the floor
    for any YAML config). Passes when toolidx's load (duplicate-key checks, validation, one
    ServerSpec per server) takes at most 2x that."""
    import yaml

    from toolidx.crawl.config import load_config

    per = (
        "  s{i}:\n    command: srv\n    args: [--port, '{i}', --verbose, --name, server-number-{i}]\n"
        "    env: {{TOKEN: '${{TOKEN:-none}}'}}\n    tags: [alpha, beta, gamma]\n"
    )
    n = YAML_MB * 1_000_000 // len(per.format(i=100000))
    (d / "big.yaml").write_text("mcpServers:\n" + "".join(per.format(i=i) for i in range(n)))
    t0 = time.perf_counter()
    cfg = load_config(d / "big.yaml")
    secs = time.perf_counter() - t0
    t0 = time.perf_counter()
    yaml.load((d / "big.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    base = time.perf_counter() - t0
    size = (d / "big.yaml").stat().st_size / 1e6
    return (
        f"{size:.0f} MB, {len(cfg.servers):,} servers loaded in {secs:.1f} s "
        f"(libyaml alone: {base:.1f} s, {secs / base:.2f}x)"
    ), len(cfg.servers) == n and secs <= 2 * base


def tools_20k(d: Path) -> tuple[str, bool]:
    rows = [
        json.dumps({"name": f"tool_{i:05d}", "description": f"Tool {i} handles record {i}.", "inputSchema": SCHEMA})
        for i in range(20_000)
    ]
    (d / "t.jsonl").write_text("\n".join(rows))
    code, out, secs = crawl(d, {"cat": {"tools_file": str(d / "t.jsonl")}})
    t0 = time.perf_counter()
    scode, sout, _ = cli("search", "handles record", "--db", d / "i.db", "--mode", "keyword", "--json")
    ssecs = time.perf_counter() - t0
    ok = code == 0 and out.get("tools") == 20_000 and scode == 0 and json.loads(sout)["hits"]
    return f"crawl {secs:.1f} s, first search {ssecs:.2f} s", bool(ok) and secs < 300


def live_5000(d: Path) -> tuple[str, bool]:
    code, out, secs = crawl(d, {"many": raw("many", timeout=120)})
    return f"{out.get('tools')} tools in {secs:.1f} s", code == 0 and out.get("tools") == 5000


def desc_5mb(d: Path) -> tuple[str, bool]:
    desc = "Large. " + "word " * 1_000_000
    (d / "b.json").write_text(json.dumps({"tools": [{"name": "huge", "description": desc, "inputSchema": SCHEMA}]}))
    code, _, secs = crawl(d, {"b": {"tools_file": str(d / "b.json")}})
    dcode, dout, _ = cli("describe", "b/huge", "--db", d / "i.db", "--json")
    whole = dcode == 0 and len(json.loads(dout)["description"]) == len(desc)
    return f"indexed in {secs:.1f} s, described whole: {whole}", code == 0 and whole


def deep_live(d: Path) -> tuple[str, bool]:
    code, out, secs = crawl(d, {"odd": raw("bad-strings", timeout=30)})
    s = (out.get("servers") or [{}])[0]
    return (
        f"{s.get('tools')} tools kept, {len(s.get('invalid_tools') or [])} rejected, {secs:.1f} s",
        s.get("status") == "ok" and s.get("tools") == 3 and secs < 25,
    )


def serve_64mib(d: Path) -> tuple[str, bool]:
    crawl(d, {"s": raw("ok")})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.Popen(
        [sys.executable, "-m", "toolidx", "serve", "--db", str(d / "i.db")],
        cwd=d,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert p.stdin is not None and p.stdout is not None

    def ask(line: bytes) -> tuple[dict, float]:
        t0 = time.perf_counter()
        p.stdin.write(line + b"\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
        return json.loads(p.stdout.readline()), time.perf_counter() - t0  # type: ignore[union-attr]

    def call(rid: int, name: str, args: dict) -> bytes:
        return json.dumps(
            {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}
        ).encode()

    try:
        ask(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "f", "version": "1"},
                    },
                }
            ).encode()
        )
        p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        big, t_big = ask(call(1, "search_tools", {"query": "x" * (65 << 20)}))
        name, t_name = ask(call(2, "execute_tool", {"tool_name": "t" * 10_000_000}))
        after, _ = ask(call(3, "list_tools", {}))
        ok = "error" in big and name["result"]["isError"] and not after["result"].get("isError")
        return f"65 MiB line refused in {t_big:.1f} s, 10 MB tool_name in {t_name:.2f} s, session alive", ok
    finally:
        p.stdin.close()
        p.wait(30)


def race(d: Path) -> tuple[str, bool]:
    rows = [
        json.dumps({"name": f"t{i}", "description": f"Reads file {i}.", "inputSchema": SCHEMA}) for i in range(2000)
    ]
    (d / "r.jsonl").write_text("\n".join(rows))
    crawl(d, {"r": {"tools_file": str(d / "r.jsonl")}})
    stop, answers, failures = threading.Event(), [0], [0]

    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def searcher() -> None:  # another process, as a user's shell or an agent's serve would be
        while not stop.is_set():
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "toolidx",
                    "search",
                    "reads file",
                    "--db",
                    str(d / "i.db"),
                    "--mode",
                    "keyword",
                    "--json",
                ],
                capture_output=True,
                text=True,
                env=env,
                cwd=d,
            )
            answers[0] += 1
            try:
                ok = r.returncode == 0 and bool(json.loads(r.stdout)["hits"])
            except ValueError:
                ok = False
            failures[0] += not ok

    t = threading.Thread(target=searcher)
    t.start()
    codes = [crawl(d, {"r": {"tools_file": str(d / "r.jsonl")}})[0] for _ in range(3)]
    stop.set()
    t.join()
    return f"{answers[0]} searches during 3 crawls, {failures[0]} failed", failures[0] == 0 and codes == [0, 0, 0]


CASES: dict[str, Callable[[Path], tuple[str, bool]]] = {
    "yaml-50mb": yaml_50mb,
    "tools-20k": tools_20k,
    "live-5000": live_5000,
    "desc-5mb": desc_5mb,
    "deep-live": deep_live,
    "serve-64mib": serve_64mib,
    "race": race,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="run only these cases")
    ap.add_argument("--yaml-mb", type=int, default=YAML_MB, help="size of the yaml case's config (MB)")
    a = ap.parse_args()
    globals()["YAML_MB"] = a.yaml_mb
    failed = 0
    for name in a.only or list(CASES):
        with tempfile.TemporaryDirectory(prefix=f"toolidx-fault-{name}-") as tmp:
            t0 = time.perf_counter()
            try:
                figure, ok = CASES[name](Path(tmp))
            except Exception as e:  # a case that crashes is a failed case, the others still run
                figure, ok = f"crashed: {type(e).__name__}: {e}", False
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'}  {name:<12} {figure}  [{time.perf_counter() - t0:.0f} s]", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
