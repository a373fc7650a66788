"""Training and validation pairs for toolidx's retrieval model, read from ../shared (never copied).

Training sources (licenses allow it, see the model card):
  MetaTool (MIT)      requests -> ChatGPT plugin descriptions; 80 % of the plugins (split by a hash
                      of the plugin name), at most PER_TOOL requests each
  ETOM (MIT, README)  levels 1-2 requests whose relevant tools all sit on a training server (half
                      of ETOM's 491 servers, by a hash of the server name), plus one "name" pair per
                      training tool (its name as words, the way people half-remember a tool)
Validation (choose settings here; training never sees it):
  MetaTool's other 20 % of plugins, ETOM's other half of servers, ToolRet apibank and
  gorilla-huggingface (no license: validation only)
Never read for training or for choosing settings (the test sets): LiveMCPBench and
livemcp-natural (a catalog of 70 servers the model never saw), ETOM's levels 3-4 and impossible
requests.

A tool's text is toolidx's own (core.tooldoc.embed_text), so the model learns on what it reads
at crawl time. Every choice is seeded: the same inputs give the same pairs.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from toolidx.core.tooldoc import embed_text, param_docs, split_name

SHARED = Path(__file__).resolve().parents[2] / "shared"
PER_TOOL = 40  # MetaTool requests per plugin: ~100 for the common ones would drown the rest
TYPO_SHARE = 0.15  # requests copied with one or two realistic slips (drop, swap, double a letter)


def in_train(key: str, share: float) -> bool:
    """A stable split by name: the same server or plugin falls on the same side in every run."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


@dataclass
class Example:
    query: str
    positive: str
    negative: str  # a near miss where there is one (a sibling tool of the same server), else another tool


@dataclass
class Catalog:
    """A validation catalog: tool id -> text, and (query, relevant ids) pairs."""

    name: str
    docs: dict[str, str]
    queries: list[tuple[str, set[str]]] = field(default_factory=list)


def tool_text(row: dict) -> str:
    return embed_text(row["name"], None, row.get("description") or "", param_docs(row.get("input_schema")))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def typo(text: str, rng: random.Random) -> str:
    words = text.split()
    candidates = [i for i, w in enumerate(words) if len(w) > 3 and w.isalpha()]
    for i in rng.sample(candidates, min(len(candidates), rng.choice((1, 2)))):
        w, j = words[i], rng.randrange(1, len(words[i]) - 1)
        words[i] = rng.choice((w[:j] + w[j + 1 :], w[: j - 1] + w[j] + w[j - 1] + w[j + 1 :], w[:j] + w[j] + w[j:]))
    return " ".join(words)


def metatool(train: bool) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """(plugin -> text, (query, plugin) pairs) for the training or the validation plugins."""
    root = SHARED / "train" / "metatool"
    des = json.loads((root / "plugin_des.json").read_text())
    docs = {p: embed_text(p, None, d, []) for p, d in des.items() if in_train("metatool:" + p, 0.8) == train}
    pairs: dict[str, list[str]] = {}
    with (root / "all_clean_data.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            q, p = (row.get("Query") or "").strip(), (row.get("Tool") or "").strip()
            if q and p in docs and q not in pairs.setdefault(p, []):
                pairs[p].append(q)
    rng = random.Random(7)
    out = []
    for p in sorted(pairs):
        qs = pairs[p]
        rng.shuffle(qs)
        out.extend((q, p) for q in qs[:PER_TOOL])
    return docs, out


def etom(train: bool) -> tuple[dict[str, dict], dict[str, tuple[str, set[str]]]]:
    """(tool id -> row, query id -> (query, relevant ids)) for the training or the validation half
    of the servers."""
    root = SHARED / "bench" / "etom"
    tools = {r["id"]: r for r in _jsonl(root / "tools.jsonl") if in_train("etom:" + r["server"], 0.5) == train}
    qs = {
        q["id"]: (q["query"], set(q["relevant"]))
        for q in _jsonl(root / "queries.jsonl")
        if q["relevant"] and set(q["relevant"]) <= tools.keys()
    }
    return tools, qs


def trained_on() -> dict[str, list[str]]:
    """The bench queries training read, by file (the model card lists them, and the benchmarks
    leave them out when they measure this model)."""
    return {"etom/queries.jsonl": sorted(etom(train=True)[1])}


def toolret(subset: str) -> Catalog:
    root = SHARED / "train" / "toolret" / subset
    docs = {}
    for t in json.loads((root / "tools.json").read_text()):
        d = t["documentation"]
        name = str(d.get("name") or d.get("api_name") or d.get("api_call") or t["id"])
        desc = str(d.get("description") or d.get("functionality") or "")
        params = d.get("parameters") if isinstance(d.get("parameters"), list) else []
        pnames = [(str(p.get("name", "")), "") for p in params if isinstance(p, dict)]
        docs[t["id"]] = embed_text(name, None, desc, pnames)
    qs = [(q["query"], {lab["id"] for lab in q["labels"]}) for q in json.loads((root / "queries.json").read_text())]
    return Catalog(f"toolret-{subset}", docs, [(q, rel) for q, rel in qs if rel & docs.keys()])


def _other(rng: random.Random, keys: list[str], not_this: str) -> str:
    while (k := rng.choice(keys)) == not_this:
        pass
    return k


def training_examples(seed: int = 13) -> list[Example]:
    rng = random.Random(seed)
    out: list[Example] = []
    docs, pairs = metatool(train=True)
    names = sorted(docs)
    for q, p in pairs:
        out.append(Example(q, docs[p], docs[_other(rng, names, p)]))
    tools, qs = etom(train=True)
    ids = sorted(tools)
    by_server: dict[str, list[str]] = {}
    for tid, r in tools.items():
        by_server.setdefault(r["server"], []).append(tid)
    for q, rel in qs.values():
        pos = sorted(rel)[0]
        siblings = [t for t in by_server[tools[pos]["server"]] if t not in rel]
        neg = rng.choice(siblings) if siblings else _other(rng, ids, pos)
        out.append(Example(q, tool_text(tools[pos]), tool_text(tools[neg])))
    for tid in ids:
        words = split_name(tools[tid]["name"])
        siblings = [t for t in by_server[tools[tid]["server"]] if t != tid]
        if len(words) >= 2:
            neg = rng.choice(siblings) if siblings else _other(rng, ids, tid)
            out.append(Example(" ".join(words), tool_text(tools[tid]), tool_text(tools[neg])))
    out.extend(Example(typo(e.query, rng), e.positive, e.negative) for e in rng.sample(out, int(len(out) * TYPO_SHARE)))
    rng.shuffle(out)
    return out


def validation_catalogs() -> list[Catalog]:
    docs, pairs = metatool(train=False)
    cats = [Catalog("metatool-heldout", docs, [(q, {p}) for q, p in pairs])]
    tools, qs = etom(train=False)
    cats.append(Catalog("etom-heldout", {t: tool_text(r) for t, r in tools.items()}, list(qs.values())))
    cats += [toolret("apibank"), toolret("gorilla-huggingface")]
    return cats


def test_catalogs() -> list[Catalog]:
    """The sets settings are never chosen on: reported, not optimised."""
    root = SHARED / "bench"
    tools = {r["id"]: tool_text(r) for r in _jsonl(root / "livemcp" / "tools.jsonl")}
    out = []
    for name, path in (
        ("livemcp", root / "livemcp" / "queries.jsonl"),
        ("livemcp-natural", root / "livemcp-natural" / "queries.jsonl"),
    ):
        out.append(Catalog(name, tools, [(q["query"], set(q["relevant"])) for q in _jsonl(path) if q["relevant"]]))
    return out


if __name__ == "__main__":
    ex = training_examples()
    print(f"training examples: {len(ex)}")
    for c in validation_catalogs() + test_catalogs():
        print(f"{c.name}: {len(c.docs)} tools, {len(c.queries)} queries")
