"""Plain cosine retrieval of a model folder beside the base model, through toolidx's own embedder
(the int8 ONNX files as toolidx loads them): R@1, R@5 and MRR@10 per catalog, validation sets
(settings are chosen here) apart from test sets (reported only), and how many tools of each test
catalog also stand in a training catalog.

    python training/evaluate.py toolidx/models/tool-minilm [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

BASE_INT8 = HERE.parents[1] / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"


def scores(embedder, cat) -> dict[str, float]:
    import numpy as np

    ids = sorted(cat.docs)
    docs = np.frombuffer(b"".join(embedder.embed_documents([cat.docs[i] for i in ids])), dtype=np.float32)
    docs = docs.reshape(len(ids), -1)
    r1 = r5 = mrr = 0.0
    for q, rel in cat.queries:
        qv = np.frombuffer(embedder.embed_query(q), dtype=np.float32)
        order = np.argsort(-(docs @ qv))[:10]
        ranks = [k for k, j in enumerate(order) if ids[j] in rel]
        first = ranks[0] if ranks else None
        r1 += first == 0
        r5 += first is not None and first < 5
        mrr += 1 / (first + 1) if first is not None else 0
    n = max(len(cat.queries), 1)
    return {"R@1": round(r1 / n, 3), "R@5": round(r5 / n, 3), "MRR@10": round(mrr / n, 3), "queries": len(cat.queries)}


def load(path: Path):
    from toolidx.core.embedding import load_embedder, resolve_model

    e = load_embedder(resolve_model(path=str(path)))  # a folder names its model (model.json), or is MiniLM
    if e is None:
        sys.exit(f"cannot load {path}")
    return e


def training_names() -> set[str]:
    from data import etom

    return {r["name"] for r in etom(train=True)[0].values()}


def overlap() -> dict[str, int]:
    """Tools of the test catalog whose text, or name, also stands in a training catalog (the same
    public server, or a common tool name like read_file, can appear in two sets)."""
    from data import etom, metatool, test_catalogs, tool_text

    seen = set(metatool(train=True)[0].values()) | {tool_text(r) for r in etom(train=True)[0].values()}
    cat = test_catalogs()[0]
    same_name = sum(tid.split("/", 1)[1] in training_names() for tid in cat.docs)
    return {
        "test tools": len(cat.docs),
        "same name in ETOM training half": same_name,
        "same text": sum(t in seen for t in cat.docs.values()),
    }


def without_overlap(cat):
    """The catalog's queries none of whose relevant tools shares a name with a training tool."""
    from data import Catalog

    names = training_names()
    return Catalog(
        f"{cat.name} (no name overlap)",
        cat.docs,
        [(q, rel) for q, rel in cat.queries if not any(t.split("/", 1)[1] in names for t in rel)],
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", type=Path)
    ap.add_argument("--base", type=Path, default=BASE_INT8)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from data import test_catalogs, validation_catalogs

    models = {"MiniLM": load(args.base), "tuned": load(args.model)}
    report: dict = {"validation": {}, "test": {}, "overlap": overlap()}
    tests = test_catalogs()
    for kind, cats in (("validation", validation_catalogs()), ("test", tests + [without_overlap(c) for c in tests])):
        for cat in cats:
            row = {name: scores(m, cat) for name, m in models.items()}
            report[kind][cat.name] = row
            b, t = row["MiniLM"], row["tuned"]
            print(
                f"{kind:<10} {cat.name:<28} n={b['queries']:<5} R@1 {b['R@1']:.3f} -> {t['R@1']:.3f}   "
                f"R@5 {b['R@5']:.3f} -> {t['R@5']:.3f}   MRR@10 {b['MRR@10']:.3f} -> {t['MRR@10']:.3f}",
                flush=True,
            )
    print("overlap:", report["overlap"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
