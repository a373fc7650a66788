"""BFCL (the Berkeley Function-Calling Leaderboard's questions, ShishirPatil/gorilla, Apache-2.0) as
one retrieval catalog: every function of its single-turn categories pooled (deduplicated by name
and description), each question searched against all of them (issue 43: "BFCL R@1 >= .68" on
1,998 tools; our training data was decontaminated against BFCL, train/SOURCE.md).

Nothing of BFCL is in the repository or the shared folder: point `--gorilla` at a checkout (or a
bare mirror: the files are read with `git show`), and the conversion is written once into the
index cache ($TOOLIDX_BENCH_CACHE/bfcl/). Per model: hybrid, semantic and keyword R@1 / R@5 of the
questions with one wanted function (simple, multiple, live simple / multiple, Java, JavaScript)
and, labels "all", of those calling several (parallel multiple).

    python benchmarks/bfcl.py --gorilla /path/to/gorilla [--models v2,MiniLM] [--json OUT] [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import CACHE, MODEL, PACKAGED, measure_code

MODELS = {"v2": PACKAGED, "MiniLM": MODEL}
DATA = "berkeley-function-call-leaderboard/bfcl_eval/data"
ONE = ("simple_python", "multiple", "live_simple", "live_multiple", "simple_java", "simple_javascript")
SEVERAL = ("parallel_multiple", "live_parallel_multiple")
# BFCL writes Python's types; a catalog of MCP tools has JSON Schema's
TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string", "String": "string"}


def _read(repo: Path, name: str) -> list[dict]:
    rel = f"{DATA}/{name}"
    path = repo / rel
    if path.is_file():
        text = path.read_text()
    else:  # a bare mirror
        git = repo if (repo / "HEAD").is_file() else repo / ".git"
        text = subprocess.run(
            ["git", "--git-dir", str(git), "show", f"HEAD:{rel}"], capture_output=True, text=True, check=True
        ).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _schema(node):
    if isinstance(node, dict):
        out = {k: _schema(v) for k, v in node.items()}
        if isinstance(out.get("type"), str):
            out["type"] = TYPES.get(out["type"], out["type"])
        return out
    if isinstance(node, list):
        return [_schema(v) for v in node]
    return node


def convert(repo: Path) -> Path:
    """BFCL as a bench set folder: tools.jsonl, queries.jsonl (one wanted), queries_multi.jsonl."""
    out = CACHE / "bfcl"
    if (out / "queries_multi.jsonl").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    tools: dict[tuple[str, str], dict] = {}
    names: dict[str, int] = {}

    def tool_id(fn: dict) -> str:
        key = (str(fn["name"]), str(fn.get("description") or ""))
        if key not in tools:
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", key[0])
            n = names[name] = names.get(name, 0) + 1  # one name, several descriptions: several tools
            tid = f"bfcl/{name}" + (f"~{n}" if n > 1 else "")
            tools[key] = {
                "id": tid,
                "server": "bfcl",
                "name": tid.split("/", 1)[1],
                "description": key[1],
                "input_schema": _schema(fn.get("parameters") or {"type": "object"}),
            }
        return tools[key]["id"]

    queries: dict[str, list[dict]] = {"queries": [], "queries_multi": []}
    for group, cats in (("queries", ONE), ("queries_multi", SEVERAL)):
        for cat in cats:
            answers = {a["id"]: a["ground_truth"] for a in _read(repo, f"possible_answer/BFCL_v4_{cat}.json")}
            for q in _read(repo, f"BFCL_v4_{cat}.json"):
                ids: dict[str, str] = {}
                for f in q["function"]:  # the first function of a name is the one its answer calls
                    ids.setdefault(str(f["name"]), tool_id(f))
                rel = sorted({ids[name] for call in answers.get(q["id"], []) for name in call if name in ids})
                turns = [m["content"] for turn in q["question"] for m in turn if m.get("role") == "user"]
                if not rel or not turns:
                    continue
                if (group == "queries") != (len(rel) == 1):
                    continue
                queries[group].append({"id": q["id"], "query": turns[-1][:2000], "relevant": rel, "category": cat})
    with open(out / "tools.jsonl", "w") as f:
        for t in tools.values():
            f.write(json.dumps(t) + "\n")
    for group, rows in queries.items():  # queries_multi last: its presence marks a whole conversion
        with open(out / f"{group}.jsonl", "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gorilla", required=True, help="a checkout (or bare mirror) of ShishirPatil/gorilla")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--code", help="measure the toolidx package in this folder (git archive COMMIT toolidx)")
    args = ap.parse_args()
    if args.code:
        measure_code(args.code, {})
    from bench_index import build, embedder
    from models import run_set

    from toolidx.core.embedding import QUERY_THREADS

    folder = convert(Path(args.gorilla))
    one = _rows(folder / "queries.jsonl")
    several = _rows(folder / "queries_multi.jsonl")
    n_tools = len(_rows(folder / "tools.jsonl"))
    print(f"BFCL: {n_tools} tools, {len(one)} questions with one wanted function, {len(several)} with several")
    t0, rows = time.time(), {}
    for label in args.models.split(","):
        path = MODELS[label]
        db = build("bfcl", model=path, root=folder.parent)
        emb = embedder(threads=QUERY_THREADS, model=path)
        for mode in ("hybrid", "semantic", "keyword"):
            rows[f"{label} {mode} one"] = run_set(db, one, "any", mode, emb)
            rows[f"{label} {mode} several"] = run_set(db, several, "all", mode, emb)
        print(f"{label}: measured ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)

    def mean(rs, k):
        return sum(r[k] for r in rs) / len(rs) if rs else 0.0

    print(f"{'model mode':18s} {'one: R@1/R@5':>14s} {'answered':>9s} {'several: R@1/R@5':>17s}")
    for label in args.models.split(","):
        for mode in ("hybrid", "semantic", "keyword"):
            a, b = rows[f"{label} {mode} one"], rows[f"{label} {mode} several"]
            print(
                f"{label + ' ' + mode:18s} {mean(a, 'R@1'):.3f}/{mean(a, 'R@5'):.3f} {mean(a, 'answered'):9.3f} "
                f"{mean(b, 'R@1'):.3f}/{mean(b, 'R@5'):.3f}"
            )
    # by category: the live ones are users' own functions, many defined again with other words in
    # other questions (one name, several descriptions), so a pooled catalog holds near-copies
    for label in args.models.split(","):
        for mode in ("hybrid", "semantic", "keyword"):
            by: dict[str, list[dict]] = {}
            for q, r in zip(one, rows[f"{label} {mode} one"]):
                by.setdefault(q["category"], []).append(r)
            print(f"{label + ' ' + mode:18s} " + "  ".join(f"{c} {mean(rs, 'R@1'):.3f}" for c, rs in by.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
