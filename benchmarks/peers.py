"""The searches users already have, reproduced, beside toolidx hybrid on every bench set.

    python benchmarks/peers.py [--sets etom,livemcp,livemcp-natural] [--json OUT.json]

Three peers, each a ranker over plain tool dicts ({id, server, name, description, input_schema}):

- `CodexBM25`: Codex's `tool_search` over MCP tools (codex-rs/core/src/tools/handlers/tool_search.rs,
  read in openai/codex). Each tool is one document, the space-joined fields: the qualified name
  `mcp__<server>__<tool>`, the tool name, the server name, the title, the description, and the
  input schema's property names. Ranked by the Rust `bm25` crate's `SearchEngine` with
  `Language::English` defaults (read in Michael-JB/bm25): text normalised to ASCII (deunicode),
  lowercased, cut at Unicode word boundaries (UAX #29, so `get_current_time` stays one word),
  NLTK English stop words removed, Snowball English stems; k1 = 1.2, b = 0.75, avgdl fitted to
  the corpus; idf = ln(1 + (N - df + 0.5) / (df + 0.5)) with df the documents holding the term;
  each query token (repeats included) adds idf * tf(k1 + 1) / (tf + k1(1 - b + b dl / avgdl)).
  Only tools sharing a token with the query are returned; Codex's default limit is 8. Ties (the
  crate's hash order) are broken here by the qualified name, the order Codex sorts its entries in.
- `ClaudeCodeKeyword`: Claude Code's ToolSearch keyword mode as its public tool description and
  documentation state it: `select:a,b` loads exactly those tools; a query equal to a tool name
  returns that tool; an `mcp__server` prefix returns that server's tools; `+term` requires the term
  in the tool name; otherwise each query word is scored against the tool's name parts (the
  `mcp__server__tool` name split on `__`, `_`, `-` and camelCase) above its description, best 5.
  The weights are this reproduction's reading of "name parts weighted over description": a name
  part equal to the word 10, a name part containing it 5, the whole name containing it 3, the
  description containing it as a word 2. Nothing public says it drops stop words, so it does not;
  `claude-code-kw-nostop` (reported, not counted as a peer) is the same search with English stop
  words left out of the query, to show how much of the gap that choice explains.
- `FastMCPBM25`: FastMCP's `BM25SearchTransform` itself (the `fastmcp` extra; left out without it),
  its search hook over FastMCP tools named `server__tool`; benchmarks/embedded.py measures it and
  toolidx's transform through a real `fastmcp.Client`.

toolidx hybrid runs on an index built with `toolidx crawl` from a tools_file config of the same
tools.jsonl (cached in $TOOLIDX_BENCH_CACHE, default /tmp/toolidx-bench), with min_score 0 (the
"no good match" gate off: recall is measured here, abstention in quality.py).

Prints R@1 and R@5 per set (and per ETOM level, per livemcp-natural style) and the paired sign
test of toolidx against each peer (queries where toolidx finds a relevant tool in the top k and
the peer does not, and the reverse). A query counts as served when any one of its relevant tools
is ranked (the sets' labels). Exits 1 when toolidx is not ahead of both peers on every set.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from _common import BENCH, CACHE, MODEL, REPO, cli

SETS = ("etom", "livemcp", "livemcp-natural")
KS = (1, 5)

# --- Codex: search_tool_bm25 ---------------------------------------------------------------------
# The NLTK English list (the `stop-words` crate's "nltk" feature, which the bm25 crate enables).
NLTK_STOP_WORDS = frozenset(
    {
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "you're",
        "you've",
        "you'll",
        "you'd",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "she's",
        "her",
        "hers",
        "herself",
        "it",
        "it's",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "that'll",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "don't",
        "should",
        "should've",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "ain",
        "aren",
        "aren't",
        "couldn",
        "couldn't",
        "didn",
        "didn't",
        "doesn",
        "doesn't",
        "hadn",
        "hadn't",
        "hasn",
        "hasn't",
        "haven",
        "haven't",
        "isn",
        "isn't",
        "ma",
        "mightn",
        "mightn't",
        "mustn",
        "mustn't",
        "needn",
        "needn't",
        "shan",
        "shan't",
        "shouldn",
        "shouldn't",
        "wasn",
        "wasn't",
        "weren",
        "weren't",
        "won",
        "won't",
        "wouldn",
        "wouldn't",
    }
)

# UAX #29 word segmentation, as far as English text needs it: letters, digits and the connector
# `_` (ExtendNumLet) make one word, kept together across a single `'`, `.`, `:` or `’` between
# letters/digits (MidLetter / MidNumLet), and `,` `;` between digits (MidNum).
_WORD = re.compile(r"\w+(?:(?:['.:\u2019]|(?<=\d)[,;](?=\d))\w+)*")
_stemmer = None


def _stem(word: str) -> str:
    global _stemmer
    if _stemmer is None:
        from py_rust_stemmers import SnowballStemmer  # the same rust-stemmers crate, via fastembed

        _stemmer = SnowballStemmer("english")
    return _stemmer.stem_word(word)


def _ascii(text: str) -> str:
    """deunicode's job for the text these sets hold: accents folded, other symbols dropped."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def codex_tokens(text: str) -> list[str]:
    words = _WORD.findall(_ascii(text).lower())
    return [_stem(w) for w in words if w not in NLTK_STOP_WORDS]


def codex_document(tool: dict) -> str:
    """Codex's search text for an MCP tool (build_app_search_text)."""
    parts = [f"mcp__{tool['server']}__{tool['name']}", tool["name"], tool["server"]]
    for key in ("title", "description"):
        if (tool.get(key) or "").strip():
            parts.append(tool[key])
    props = (tool.get("input_schema") or {}).get("properties")
    if isinstance(props, dict):
        parts.extend(props.keys())
    return " ".join(parts)


class CodexBM25:
    K1, B = 1.2, 0.75

    def __init__(self, tools: Iterable[dict]):
        entries = sorted(tools, key=lambda t: f"mcp__{t['server']}__{t['name']}")
        self.ids = [t["id"] for t in entries]
        self.docs: list[Counter] = []
        self.lengths: list[int] = []
        df: Counter = Counter()
        self.postings: dict[str, list[int]] = {}
        for n, t in enumerate(entries):
            toks = codex_tokens(codex_document(t))
            c = Counter(toks)
            self.docs.append(c)
            self.lengths.append(len(toks))
            for term in c:
                df[term] += 1
                self.postings.setdefault(term, []).append(n)
        self.n = len(entries)
        self.avgdl = (sum(self.lengths) / self.n) if self.n else 256.0
        if self.avgdl <= 0:
            self.avgdl = 256.0
        self.idf = {term: math.log(1 + (self.n - d + 0.5) / (d + 0.5)) for term, d in df.items()}

    def rank(self, query: str, k: int = 8) -> list[str]:
        q = codex_tokens(query)
        cands = {d for term in q for d in self.postings.get(term, ())}
        scores = {}
        for d in cands:
            doc, norm = self.docs[d], self.K1 * (1 - self.B + self.B * self.lengths[d] / self.avgdl)
            s = 0.0
            for term in q:  # every query token, repeats included
                tf = doc.get(term, 0)
                if tf:
                    s += self.idf[term] * tf * (self.K1 + 1) / (tf + norm)
            scores[d] = s
        order = sorted(scores, key=lambda d: (-scores[d], d))
        return [self.ids[d] for d in order[:k]]


# --- Claude Code: ToolSearch keyword mode ------------------------------------------------------------
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_parts(qualified: str) -> list[str]:
    parts = []
    for chunk in re.split(r"__|[_\-.\s]+", qualified):
        parts.extend(p.lower() for p in _CAMEL.split(chunk) if p)
    return parts


class ClaudeCodeKeyword:
    EXACT_PART, PARTIAL_PART, IN_NAME, IN_DESCRIPTION = 10, 5, 3, 2
    DEFAULT_MAX = 5

    def __init__(self, tools: Iterable[dict], drop_stop_words: bool = False):
        """`drop_stop_words`: a variant, not in the public description, that leaves out English
        stop words before scoring (a sensitivity check: natural-language queries are mostly them)."""
        self.drop_stop_words = drop_stop_words
        self.tools = []
        for t in tools:
            name = f"mcp__{t['server']}__{t['name']}"
            desc = (t.get("description") or "").lower()
            self.tools.append(
                {
                    "id": t["id"],
                    "name": name,
                    "lname": name.lower(),
                    "parts": name_parts(name),
                    "words": set(re.findall(r"[a-z0-9]+", desc)),
                }
            )
        self.by_lname = {t["lname"]: t for t in self.tools}
        self._points: dict[str, dict[int, int]] = {}

    def _term_points(self, w: str) -> dict[int, int]:
        """Tool index -> points for one query word (cached: words repeat across queries)."""
        got = self._points.get(w)
        if got is None:
            got = {}
            for n, t in enumerate(self.tools):
                s = 0
                if w in t["parts"]:
                    s += self.EXACT_PART
                elif any(w in p for p in t["parts"]):
                    s += self.PARTIAL_PART
                elif w in t["lname"]:
                    s += self.IN_NAME
                if w in t["words"]:
                    s += self.IN_DESCRIPTION
                if s:
                    got[n] = s
            self._points[w] = got
        return got

    def rank(self, query: str, k: int = DEFAULT_MAX) -> list[str]:
        q = query.strip()
        ql = q.lower()
        if ql.startswith("select:"):
            wanted = [w.strip().lower() for w in q[7:].split(",") if w.strip()]
            return [self.by_lname[w]["id"] for w in wanted if w in self.by_lname][:k]
        if ql in self.by_lname:
            return [self.by_lname[ql]["id"]]
        if ql.startswith("mcp__") and len(ql) > 5:
            hits = [t["id"] for t in self.tools if t["lname"].startswith(ql)]
            if hits:
                return hits[:k]
        terms = [w.strip(".,;:!?\"'()[]{}") for w in ql.split()]
        required = [w[1:] for w in terms if w.startswith("+") and len(w) > 1]
        terms = [w for w in terms if w and not w.startswith("+")] or required
        if self.drop_stop_words:
            terms = [w for w in terms if w not in NLTK_STOP_WORDS] or terms
        scores: Counter = Counter()
        for w in terms:
            scores.update(self._term_points(w))
        if required:
            scores = Counter({n: s for n, s in scores.items() if all(r in self.tools[n]["lname"] for r in required)})
        order = sorted(scores, key=lambda n: (-scores[n], n))
        return [self.tools[n]["id"] for n in order[:k]]


# --- FastMCP: BM25SearchTransform -----------------------------------------------------------------
class FastMCPBM25:
    """FastMCP's own BM25SearchTransform (fastmcp.server.transforms.search.bm25), run, not
    reproduced: each tool a FastMCP Tool named `server__tool` (how a server that mounts others names
    their tools), ranked by the transform's search hook, what its `search_tools` runs on the listed
    catalog (the round trip through `fastmcp.Client` is benchmarks/embedded.py's). Needs the
    `fastmcp` extra; without it the peer is left out."""

    def __init__(self, tools: list[dict]):
        import asyncio

        from fastmcp.server.transforms.search import BM25SearchTransform
        from fastmcp.tools.base import Tool

        class Listed(Tool):
            async def run(self, arguments: dict[str, Any]) -> Any:
                raise NotImplementedError("ranked, never called")

        self.ids: dict[str, str] = {}
        self.tools = []
        for t in tools:
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{t.get('server')}__{t['name']}")[:128]
            if name in self.ids:
                continue
            schema = t.get("input_schema") if isinstance(t.get("input_schema"), dict) else {}
            self.ids[name] = t["id"]
            self.tools.append(Listed(name=name, description=t.get("description") or "", parameters=schema))
        self.transform = BM25SearchTransform()
        self.loop = asyncio.new_event_loop()

    def rank(self, query: str, k: int = 10) -> list[str]:
        self.transform._max_results = k
        found = self.loop.run_until_complete(self.transform._search(self.tools, query))
        return [self.ids[t.name] for t in found]


PEERS: dict[str, Callable[[list[dict]], Any]] = {
    "codex-bm25": CodexBM25,
    "claude-code-keyword": ClaudeCodeKeyword,
    "claude-code-kw-nostop": lambda tools: ClaudeCodeKeyword(tools, drop_stop_words=True),
}
FAITHFUL = ("codex-bm25", "claude-code-keyword")  # the variant is a sensitivity check, not a peer
if importlib.util.find_spec("fastmcp") is not None:  # the `fastmcp` extra (the test extra has it)
    PEERS["fastmcp-bm25"] = FastMCPBM25
    FAITHFUL += ("fastmcp-bm25",)


# --- toolidx hybrid ----------------------------------------------------------------------------------
def build_index(set_name: str) -> Path:
    """`toolidx crawl` of a tools_file config over the set's tools.jsonl (with vectors), cached by
    the tools and the code that decides what is indexed."""
    tools = BENCH / set_name / "tools.jsonl"
    h = hashlib.sha256(tools.read_bytes())
    for f in (
        "toolidx/core/tooldoc.py",
        "toolidx/store/sqlite/migrations.py",
        "toolidx/crawl/sources.py",
        "toolidx/store/crawls.py",
    ):
        p = REPO / f
        if p.is_file():
            h.update(p.read_bytes())
    db = CACHE / f"peers-{h.hexdigest()[:12]}.db"
    if db.is_file():
        return db
    CACHE.mkdir(parents=True, exist_ok=True)
    cfg = CACHE / f"peers-{set_name}.json"
    cfg.write_text(json.dumps({"mcpServers": {set_name: {"tools_file": str(tools)}}}))
    tmp = db.with_suffix(".tmp.db")
    tmp.unlink(missing_ok=True)
    print(f"indexing {tools} ...", file=sys.stderr, flush=True)
    code, _, err = cli("crawl", "--config", cfg, "--db", tmp, "--model-path", MODEL, "--json")
    if code != 0:
        sys.exit(f"crawl of {set_name} failed: {err.strip()[-500:]}")
    tmp.rename(db)
    return db


class ToolidxHybrid:
    def __init__(self, db_path: Path):
        from toolidx.core.embedding import QUERY_THREADS, load_embedder, resolve_model
        from toolidx.search.hybrid import warm
        from toolidx.store.db import open_db

        self.db = open_db(db_path)
        self.embedder = load_embedder(resolve_model(path=MODEL), threads=QUERY_THREADS)
        warm(self.db, self.embedder)

    def rank(self, query: str, k: int = 10) -> list[str]:
        from toolidx.search.hybrid import search
        from toolidx.search.request import SearchRequest

        res = search(self.db, SearchRequest(query, mode="hybrid", limit=k, min_score=0), embedder=self.embedder)
        return [h.id for h in res.hits]


# --- evaluation --------------------------------------------------------------------------------------
def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sign_test(better: int, worse: int) -> float:
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1))
    return min(1.0, 2 * tail / 2**n)


def hits_at(ranked: list[str], relevant: set[str]) -> dict[int, int]:
    return {k: int(any(r in relevant for r in ranked[:k])) for k in KS}


def evaluate_set(set_name: str) -> dict:
    tools = load_jsonl(BENCH / set_name / "tools.jsonl")
    queries = [q for q in load_jsonl(BENCH / set_name / "queries.jsonl") if q.get("relevant")]
    rankers = {"toolidx-hybrid": ToolidxHybrid(build_index(set_name))}
    rankers.update({name: cls(tools) for name, cls in PEERS.items()})
    per: dict[str, list[dict[int, int]]] = {name: [] for name in rankers}
    seconds: dict[str, float] = {}
    for name, r in rankers.items():
        t0 = time.perf_counter()
        for q in queries:
            per[name].append(hits_at(r.rank(q["query"], max(KS)), set(q["relevant"])))
        seconds[name] = time.perf_counter() - t0
    group_key = {"etom": "level", "livemcp-natural": "style"}.get(set_name)
    groups: dict[str, list[int]] = {"all": list(range(len(queries)))}
    if group_key:
        for n, q in enumerate(queries):
            groups.setdefault(f"{group_key}={q.get(group_key)}", []).append(n)
    out: dict = {"set": set_name, "tools": len(tools), "queries": len(queries), "groups": {}, "seconds": seconds}
    for g, idx in groups.items():
        res: dict = {"n": len(idx), "recall": {}, "paired": {}}
        for name in rankers:
            res["recall"][name] = {f"R@{k}": sum(per[name][i][k] for i in idx) / len(idx) for k in KS}
        for peer in PEERS:
            res["paired"][peer] = {}
            for k in KS:
                better = sum(1 for i in idx if per["toolidx-hybrid"][i][k] > per[peer][i][k])
                worse = sum(1 for i in idx if per["toolidx-hybrid"][i][k] < per[peer][i][k])
                res["paired"][peer][f"R@{k}"] = {"better": better, "worse": worse, "p": sign_test(better, worse)}
        out["groups"][g] = res
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="toolidx hybrid vs the searches users already have")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated: " + ", ".join(SETS))
    ap.add_argument("--json", help="also write the full results here")
    args = ap.parse_args()
    results = [evaluate_set(s.strip()) for s in args.sets.split(",") if s.strip()]
    names = ["toolidx-hybrid", *PEERS]
    print(f"{'set':28s} {'n':>5s} " + " ".join(f"{n + ' R@' + str(k):>24s}" for n in names for k in KS))
    behind = []
    for r in results:
        for g, res in r["groups"].items():
            label = r["set"] + ("" if g == "all" else f" {g}")
            row = " ".join(f"{res['recall'][n][f'R@{k}']:24.3f}" for n in names for k in KS)
            print(f"{label:28s} {res['n']:5d} {row}")
    print("\npaired (queries toolidx serves and the peer does not / the reverse; exact sign test):")
    for r in results:
        for g, res in r["groups"].items():
            label = r["set"] + ("" if g == "all" else f" {g}")
            cells = []
            for peer in PEERS:
                for k in KS:
                    p = res["paired"][peer][f"R@{k}"]
                    cells.append(f"{peer} R@{k}: +{p['better']}/-{p['worse']} p={p['p']:.2g}")
                    if g == "all" and peer in FAITHFUL and not (p["better"] > p["worse"]):
                        behind.append(f"{r['set']} {peer} R@{k}")
            print(f"{label:28s} " + "; ".join(cells))
    for r in results:
        print(
            f"{r['set']}: seconds per ranker over {r['queries']} queries: "
            + ", ".join(f"{n} {s:.1f}" for n, s in r["seconds"].items()),
            file=sys.stderr,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if behind:
        print("\nnot ahead: " + ", ".join(behind))
    return 1 if behind else 0


if __name__ == "__main__":
    sys.exit(main())
