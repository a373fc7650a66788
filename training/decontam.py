"""Re-verify that training reads nothing the model is measured on; build.py runs it before
training and stops on a finding.

    python training/decontam.py [--cosine]

Checks, each against what ../shared holds today (nothing is copied here):
  1. no training request, normalised (data.norm), is a request of a validation or test set
     (the validation catalogs, each source's held-out split, LiveMCPBench, livemcp-natural and
     ETOM's multi-tool, level-4 and impossible requests);
  2. no tool of a staged source has the normalised name and description of a test or validation
     catalog's tool;
  3. every staged source was checked against the four held-out catalogs (real, real2, bfcl, real3:
     kept outside this repository) by ../shared/train/_scripts/decontam.py, and what that check
     dropped is not back in its files (overlap.json: dropped tool ids; a dropped request whose
     pairs are all still there);
  4. with --cosine, no training request has MiniLM cosine >= COSINE with a test request (the staged
     check's threshold; int8 MiniLM through toolidx's embedder).
Exits 1 with one line per finding, 0 when clean.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

HELDOUT = {"real", "real2", "bfcl", "real3"}  # the sets the staged check read (SOURCE.md)
COSINE = 0.90


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _tool_key(row: dict) -> str:
    from data import norm

    return norm(f"{row['name']} {row.get('description') or ''}")


def findings(cosine: bool, indirect: bool = False) -> list[str]:
    from data import SHARED, SOURCES, norm, source, test_catalogs, training_examples, validation_catalogs

    out = []
    train_q = {norm(e.query): e.query for e in training_examples(indirect=indirect)}
    bench = SHARED / "bench"
    measured = {norm(q) for c in validation_catalogs() + test_catalogs() for q, _ in c.queries}
    for extra in ("etom/queries_multi.jsonl", "etom/queries_level4.jsonl", "etom/queries_infeasible.jsonl"):
        measured |= {norm(q["query"]) for q in _jsonl(bench / extra)}
    if (bench / "livemcp-natural" / "queries_infeasible.jsonl").exists():
        measured |= {norm(q["query"]) for q in _jsonl(bench / "livemcp-natural" / "queries_infeasible.jsonl")}
    out += [f"training request also measured: {train_q[n]!r}" for n in sorted(train_q.keys() & measured)]

    measured_tools = {_tool_key(r) for r in _jsonl(bench / "livemcp" / "tools.jsonl")}
    measured_tools |= {_tool_key(r) for r in _jsonl(bench / "etom" / "tools.jsonl")}
    for name in SOURCES:
        src = source(name)
        out += [
            f"{name}: tool {t} is also a bench tool" for t, r in src.tools.items() if _tool_key(r) in measured_tools
        ]
        rep = json.loads((SHARED / "train" / name / "overlap.json").read_text())
        if missing := HELDOUT - set(rep["heldout_sets"]):
            out.append(f"{name}: the staged check did not read {sorted(missing)}")
        out += [f"{name}: dropped tool {t} is back" for t in set(rep["dropped_tool_ids"]) & src.tools.keys()]
        # a request is listed when one of its pairs was dropped; its other tools' pairs may stay
        # (a tool overlapped), but not all n_tools of them (then the request itself overlapped)
        rows: dict[str, list[dict]] = {}
        for p in _jsonl(SHARED / "train" / name / "pairs.jsonl"):
            rows.setdefault(p["qid"], []).append(p)
        out += [
            f"{name}: dropped request {q} is back"
            for q in set(rep["dropped_pair_qids"]) & rows.keys()
            if len(rows[q]) >= rows[q][0].get("n_tools", 1)
        ]
    if cosine:
        out += _near(list(train_q.values()), [q for c in test_catalogs() for q, _ in c.queries])
    return out


def _near(train: list[str], test: list[str]) -> list[str]:
    import numpy as np
    from evaluate import BASE_INT8, load

    emb = load(BASE_INT8)

    def mat(texts: list[str]):
        return np.frombuffer(b"".join(emb.embed_documents(texts)), dtype=np.float32).reshape(len(texts), -1)

    sims = mat(train) @ mat(test).T
    return [
        f"training request near a test request (cosine {sims[i].max():.2f}): {train[i]!r}"
        for i in np.nonzero(sims.max(1) >= COSINE)[0]
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cosine", action="store_true", help=f"also MiniLM cosine >= {COSINE} against test requests")
    ap.add_argument("--indirect", action="store_true", help="check build.py --indirect's training requests")
    args = ap.parse_args()
    found = findings(args.cosine, args.indirect)
    for line in found:
        print(line)
    print(f"decontamination: {len(found)} finding(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
