"""Rebuild toolidx's model end to end: data -> fine-tune -> ONNX -> int8 -> model.json and the
model card, into toolidx/models/tool-minilm-l6-v2/ (the default model, v2).

    python training/build.py [--steps 360] [--skip-train] [--out DIR --work DIR] [--v1]

--v1 rebuilds v1 (MetaTool and ETOM only) into toolidx/models/tool-minilm-l6/, kept in the package
for indexes embedded with it.

Every step is seeded; the log (build/train/) records pairs/second and minutes. After it, refit
search's constants for the model (benchmarks/fit_fusion.py --write with TOOLIDX_MODEL_PATH set to
the folder) and compare it with MiniLM (benchmarks/models.py): training/README.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

# v2, the default: v1's recipe and compute plus the staged licensed sets (data.SOURCES)
NAME = "toolidx/tool-minilm-l6-v2"
VERSION = "2"
OUT = REPO / "toolidx" / "models" / "tool-minilm-l6-v2"
# v1 (round 8): MetaTool and ETOM only; kept in the package for the indexes embedded with it
NAME_V1 = "toolidx/tool-minilm-l6-v1"
VERSION_V1 = "1"
OUT_V1 = REPO / "toolidx" / "models" / "tool-minilm-l6"
WORK = REPO / "build" / "train"


def run(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run([sys.executable, *cmd], check=True, cwd=REPO)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=360)
    ap.add_argument("--skip-train", action="store_true", help="export the checkpoint already in build/train")
    ap.add_argument("--out", type=Path, help="the model folder (default: the package's)")
    ap.add_argument("--work", type=Path, default=WORK, help="checkpoint and logs")
    ap.add_argument("--v1", action="store_true", help="rebuild v1: MetaTool and ETOM only, no staged sets")
    ap.add_argument(
        "--indirect", action="store_true", help="a candidate: the staged sets' goal-style requests first (data.py)"
    )
    args = ap.parse_args()
    work = args.work
    name, version, out = (NAME_V1, VERSION_V1, OUT_V1) if args.v1 else (NAME, VERSION, OUT)
    out = args.out or out
    if args.indirect:  # another model: never searched with v2's calibration constants
        name, version = name + "-indirect", version + "-indirect"
    from data import sources_used, trained_on
    from export import export

    t0 = time.time()
    ckpt = work / "checkpoint"
    if not args.skip_train:
        # stops the build when a training request is also measured
        run(str(HERE / "decontam.py"), *(["--indirect"] if args.indirect else []))
        run(
            str(HERE / "train.py"),
            "--out",
            str(ckpt),
            "--steps",
            str(args.steps),
            *(["--no-sources"] if args.v1 else []),
            *(["--indirect"] if args.indirect else []),
        )
    digest = export(ckpt, out)
    log = json.loads((ckpt / "train_log.json").read_text())
    card = {
        "name": name,
        "version": version,
        "architecture": "sentence-transformers/all-MiniLM-L6-v2",
        "sha256": digest,
        "dim": 384,
        "pooling": "mean, normalised",
        "base": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0)",
        "training": {k: log[k] for k in ("examples", "epochs", "minutes", "pairs_per_s", "torch")}
        | {
            "steps": log["args"]["steps"],
            "batch": log["args"]["batch"],
            "lr": log["args"]["lr"],
            "seed": log["args"]["seed"],
            "query_len": log["args"]["query_len"],
            "doc_len": log["args"]["doc_len"],
            # no flag: v1
            "sources": {}
            if log["args"].get("no_sources", True)
            else sources_used(indirect=log["args"].get("indirect", False)),
        },
        "trained_on": trained_on(),
    }
    (out / "model.json").write_text(json.dumps(card, indent=1) + "\n")
    # v2 is measured beside v1 too; scores are kept by model file in the cache, so MiniLM and v1
    # are measured once across builds
    ref = [] if args.v1 else ["--ref", str(OUT_V1)]
    run(
        str(HERE / "evaluate.py"),
        str(out),
        "--json",
        str(work / "eval.json"),
        "--cache",
        str(WORK / "eval-cache.json"),
        *ref,
    )
    from card import write_card

    write_card(out, card, json.loads((work / "eval.json").read_text()))
    print(f"built {name} in {(time.time() - t0) / 60:.1f} min -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
