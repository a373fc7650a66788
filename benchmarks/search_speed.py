"""Search latency at 10k and 100k tools, what `toolidx serve` pays at start (search.warm, its RSS),
and the cold start of `toolidx search --mode keyword`.

    python benchmarks/search_speed.py [--sizes 10000,100000] [--queries 200] [--code DIR] [--pairs N]

--code DIR measures the toolidx package in DIR instead of this checkout's (an older commit:
`git archive <commit> toolidx | tar -x -C DIR`), on the same catalogs, for old-vs-new in one run.

Catalogs are built from the real bench tools (ETOM + LiveMCPBench, 2,902 tools) repeated with
distinct server names ("etom-r2/..."), written with crawl.write.store_crawl; the embedding of
each distinct text is computed once and its vector reused for the copies (as a crawl of 50k real
tools would have 50k vectors, the vector table is full size). Queries: ETOM level 1-2 and
LiveMCPBench requests. Targets (issue 33): keyword p50 <= 1 ms at 10k, <= 2 ms at 100k; hybrid
p50 <= 1.2x / 2x the query embedding alone at 10k / 100k; search.warm() <= 0.5 s / 2 s; cold keyword
CLI <= 2x `python -c "import sqlite3"` + 150 ms. CPU time (`cpu p50`) is shown beside wall time: on a
shared machine compare CPU times and same-run ratios.

The `floor` row is what no ranking can go under on this machine: the keyword retrieval, the query
embedding and the nearest vectors, nothing else. Hybrid / the floor is what toolidx's
ranking adds; the floor / the embedding alone is what the machine makes of two retrievals and a
model sharing its cores and caches (the embedding alone runs hot in a loop of nothing else).

--pairs N (issue 46) also fills a usage store with N learned pairs (search-and-call pairs as serve
records them, through UsageStore.record_pairs, so its retention applies: MAX_PAIRS_PER_TOOL per
tool, and at most MAX_PAIRS in all unless N is more: a store over its cap is a look at what search
would pay for that many; how many it kept is printed) and times, query by query interleaved,
the floor, hybrid reading an empty store and hybrid reading the full one, and the warm serve
process's memory with the pairs read. The pairs' requests are real: each bench query recorded
against its relevant tools and their copies (so every timed query finds past requests like it,
the costly side: tools lifted, their rows read), the rest the intent sets' requests
(../shared/train: clinc150, hwu64, banking77) against tools drawn at random, all embedded with
the catalog's model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from _common import BENCH, CACHE, MODEL, REPO, measure_code
from bench_index import embedder, fingerprint, model_tag


def _code_tag() -> str:
    """This checkout's fingerprint, or for --code the measured package's schema: an older commit
    cannot open a newer index, so it gets catalogs written by its own code."""
    import toolidx

    code = Path(toolidx.__file__).parent
    if code == REPO / "toolidx":
        return fingerprint()
    h = hashlib.sha256()
    for f in sorted(code.rglob("*migrations.py")) + [code / "core" / "tooldoc.py"]:
        h.update(f.read_bytes())
    return "code-" + h.hexdigest()[:12]


def _catalog(n: int, emb) -> Path:
    from toolidx.core.servers import ServerSpec
    from toolidx.crawl.sources import load_tools_file
    from toolidx.store.db import open_db

    try:
        from toolidx.crawl.write import store_crawl
    except ImportError:  # a commit before crawl/write.py (--code): its store wrote the crawl
        from toolidx.store.crawls import write_crawl as store_crawl  # type: ignore[no-redef]

    path = CACHE / f"speed-{n}-{_code_tag()}-{model_tag()}.db"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    base = []
    for s in ("etom", "livemcp"):
        base += load_tools_file(ServerSpec(name=s, transport="tools_file", tools_file=str(BENCH / s / "tools.jsonl")))
    results, count, copy, used = [], 0, 0, set()
    while count < n:
        for r in base:
            if count >= n:
                break
            take = r.tools[: n - count]
            name = r.spec.name if copy == 0 else f"{r.spec.name}-r{copy + 1}"
            while name in used:  # the two sets share some server names
                name += "-b"
            used.add(name)
            results.append(replace(r, spec=replace(r.spec, name=name), tools=take, server_name=name))
            count += len(take)
        copy += 1

    class Reuse:
        """Embeds each distinct text once; copies share the vector."""

        def __init__(self, inner):
            self.model, self.dim, self.sha256, self.inner, self.memo = inner.model, inner.dim, inner.sha256, inner, {}

        def embed_documents(self, texts):
            todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
            for t, b in zip(todo, self.inner.embed_documents(todo) if todo else []):
                self.memo[t] = b
            return [self.memo[t] for t in texts]

        def embed_query(self, text):
            return self.inner.embed_query(text)

    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    t0 = time.time()
    db = open_db(tmp, create=True)
    store_crawl(db, results, embedder=Reuse(emb), config_path=None, prune=True)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    tmp.rename(path)
    print(f"built {n}-tool catalog in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return path


def _queries(k: int) -> list[str]:
    qs = [
        json.loads(line)["query"]
        for f in ("etom/queries.jsonl", "livemcp/queries.jsonl")
        for line in (BENCH / f).read_text().splitlines()
        if line.strip()
    ]
    random.Random(7).shuffle(qs)
    return qs[:k]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def _time(fn, queries) -> dict:
    from toolidx.search import query_vector

    for q in queries[-5:]:
        fn(q)  # warm caches (pages, name list, model)
    query_vector._qcache.clear()  # each timed query pays for its own embedding
    lat, cpu = [], []
    for q in queries[:-5]:
        t0, c0 = time.perf_counter(), time.process_time()
        fn(q)
        lat.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    # CPU time is shown too: on a shared, loaded machine wall time mostly measures waiting for a
    # core (it sums the model's threads, so for hybrid it over-counts on several cores)
    return {
        "p50": round(statistics.median(lat), 2),
        "p95": round(_pct(lat, 0.95), 2),
        "cpu_p50": round(statistics.median(cpu), 2),
    }


# where the subprocesses run: `python -c` puts its working folder first on sys.path, and from this
# checkout's that is this checkout's toolidx, not --code's (it once migrated an old commit's catalog)
_NEUTRAL = tempfile.mkdtemp(prefix="toolidx-speed-cwd-")


def _floor(db, qemb, queries) -> dict | None:
    """The floor under a hybrid search on this machine: the keyword retrieval, the query embedding,
    the nearest vectors, and none of the ranking around them (spelling, coverage, fusion,
    calibration, action marks, rows). None for code without the retrieval interface (--code of a
    commit before it)."""
    try:
        from toolidx.core.tokens import query_terms
        from toolidx.search.hybrid import POOL

        retrieval = db.retrieval
    except (ImportError, AttributeError):
        return None

    def once(q: str) -> None:
        text = " ".join(q.split())
        retrieval.keyword(query_terms(text), POOL)
        retrieval.knn(qemb.embed_query(text), POOL)

    return _time(once, queries)


def _cold(cmd: list[str], runs: int, env: dict) -> float:
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=_NEUTRAL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append((time.perf_counter() - t0) * 1000)
    return statistics.median(walls)


_SERVE_RSS = """
import sys, time
from toolidx.search.hybrid import search, warm
from toolidx.search.request import SearchRequest
from toolidx.store.db import open_db
t0 = time.perf_counter()
db = open_db(sys.argv[1])
warm(db)  # what `toolidx serve` does at start: postings, names, vectors and the query model
ready = time.perf_counter() - t0
import importlib
loader = None
for name in ("toolidx.store.sqlite.retrieval", "toolidx.store.retrieval_sqlite"):  # older commits (--code)
    try:
        loader = getattr(importlib.import_module(name), "preloading", lambda db: None)(db)
        break
    except ImportError:
        pass
if loader is not None:
    loader.join()
kw = {}
if len(sys.argv) > 2 and sys.argv[2] == "-":  # learning off
    kw["learned"] = None
elif len(sys.argv) > 2:  # a usage file: search reading its learned pairs, as serve does
    from toolidx.search.learned import Source
    from toolidx.store.usage import open_usage
    kw["learned"] = Source(open_usage(sys.argv[2], create=False))
for q in sys.argv[3:] or ["convert a pdf to markdown"]:
    search(db, SearchRequest(q, mode="hybrid"), **kw)
search(db, SearchRequest("convert a pdf to markdown", mode="keyword"))
keys = ("VmRSS", "RssAnon", "RssFile")
kb = {line.split(":")[0]: int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(keys)}
print(" ".join(str(kb.get(k, 0) // 1024) for k in keys), f"{ready:.2f}")
"""


def _preloading(db):
    """The engine's background preload of a large index's postings (None: none, or an older
    commit's code without one)."""
    import importlib

    for name in ("toolidx.store.sqlite.retrieval", "toolidx.store.retrieval_sqlite"):
        try:
            return getattr(importlib.import_module(name), "preloading", lambda db: None)(db)
        except ImportError:
            pass
    return None


def _serve_rss(path: Path, env: dict, usage: tuple[Path | str, list[str]] | None = None) -> str:
    """Resident memory of a fresh process that holds one warm index as `toolidx serve` does (a
    replica started after the first: a large index's vector file exists), how long its open and
    warm took, and its memory's anonymous and file-backed parts (a memory-mapped file's pages are shared by replicas and
    given back under pressure; Linux /proc). This process's own RSS would count the catalogs it built.
    `usage`: a usage file whose pairs its searches read ("-": none, learning off), and the requests
    it searches."""
    extra = [str(usage[0]), *usage[1]] if usage else []
    r = subprocess.run(
        [sys.executable, "-c", _SERVE_RSS, str(path), *extra], env=env, cwd=_NEUTRAL, capture_output=True, text=True
    )
    if r.returncode or len(r.stdout.split()) != 4:
        return "unmeasured"
    total, anon, file, ready = r.stdout.split()
    return f"{total} MB ({anon} MB anonymous, {file} MB file pages); its open + warm() took {ready} s"


def _interleaved(fns: dict, queries) -> dict:
    """_time for several functions, taking turns query by query, so that a busy machine's load
    falls on each alike."""
    from toolidx.search import query_vector

    for q in queries[-5:]:
        for fn in fns.values():
            fn(q)
    lat: dict = {k: [] for k in fns}
    cpu: dict = {k: [] for k in fns}
    for q in queries[:-5]:
        for k, fn in fns.items():
            query_vector._qcache.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            fn(q)
            lat[k].append((time.perf_counter() - t0) * 1000)
            cpu[k].append((time.process_time() - c0) * 1000)
    return {
        k: {
            "p50": round(statistics.median(lat[k]), 2),
            "p95": round(_pct(lat[k], 0.95), 2),
            "cpu_p50": round(statistics.median(cpu[k]), 2),
        }
        for k in fns
    }


def _pair_texts(n: int, emb, ids: list[str]) -> list[tuple[str, str, bytes]]:
    """n (tool id, request, its embedding): each bench query against its relevant tools and their
    copies in the catalog, then intent-set requests against tools drawn at random (seeded)."""
    import re

    from _common import SHARED

    from toolidx.search.learned import request_text

    copies: dict[str, list[str]] = {}
    for t in ids:
        server, _, name = t.partition("/")
        copies.setdefault(re.sub(r"(-r\d+)?(-b)*$", "", server) + "/" + name, []).append(t)
    out: list[tuple[str, str]] = []
    for f in ("etom/queries.jsonl", "livemcp/queries.jsonl"):
        for line in (BENCH / f).read_text().splitlines():
            if line.strip():
                q = json.loads(line)
                out += [(t, q["query"]) for rel in q["relevant"] for t in copies.get(rel, [])]
    rng = random.Random(46)
    rng.shuffle(out)
    out = out[: n // 2]
    intents = [
        json.loads(line)["query"]
        for s in ("clinc150", "hwu64", "banking77")
        for line in (SHARED / "train" / s / "pairs.jsonl").read_text().splitlines()
        if line.strip()
    ]
    intents = list(dict.fromkeys(intents))
    rng.shuffle(intents)
    # past their number (a store over its cap, --pairs over MAX_PAIRS) the intents come round again
    out += [(rng.choice(ids), intents[i % len(intents)]) for i in range(n - len(out))]
    texts = sorted({request_text(q) for _, q in out})
    memo = CACHE / f"pair-vectors-{model_tag()}.json"
    known = json.loads(memo.read_text()) if memo.exists() else {}
    todo = [t for t in texts if t not in known]
    if todo:
        t0 = time.time()
        for t, b in zip(todo, emb.embed_documents(todo)):
            known[t] = b.hex()
        memo.write_text(json.dumps(known))
        print(f"embedded {len(todo)} requests in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return [(t, request_text(q), bytes.fromhex(known[request_text(q)])) for t, q in out]


def _fill_pairs(db, target: Path, n: int, emb):
    """A usage store at `target` holding up to n pairs of the catalog's tools (as serve records
    them: one session each, tokens among 8); how many its retention kept."""
    from datetime import datetime, timezone

    from toolidx.store import usage
    from toolidx.store.usage import open_usage

    # over the cap: a look at what search would pay if the store kept that many (it keeps MAX_PAIRS;
    # the 50 a tool stay, the bench queries' tools hold more)
    usage.MAX_PAIRS = max(usage.MAX_PAIRS, n)
    hashes = {r["id"]: r["hash"] for r in db.query("SELECT id, hash FROM tools")}
    model = db.get_meta("embed_model")
    at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    rows = [
        (t, hashes[t], q, model, v, f"t{i % 8}" if i % 8 else "", f"s{i}", at)
        for i, (t, q, v) in enumerate(_pair_texts(n, emb, sorted(hashes)))
    ]
    store = open_usage(target)
    assert store is not None
    for j in range(0, len(rows), 2000):
        store.record_pairs(rows[j : j + 2000])
    kept = int(store.rows("SELECT count(*) FROM pairs")[0][0])
    return store, kept


def _learned_rows(n: int, db, path: Path, env: dict, emb, qemb, queries, pairs: int) -> None:
    from toolidx.search.hybrid import search
    from toolidx.search.learned import Source
    from toolidx.search.request import SearchRequest
    from toolidx.store.usage import MAX_PAIRS, MAX_PAIRS_PER_TOOL

    folder = Path(tempfile.mkdtemp(prefix="toolidx-speed-usage-"))
    full, kept = _fill_pairs(db, folder / "full.db", pairs, emb)
    print(
        f"{n:7d} {'':15s} {pairs:,} pairs recorded, {kept:,} kept (the store's cap: {MAX_PAIRS:,} in all, "
        f"{MAX_PAIRS_PER_TOOL} per tool{'; lifted here' if pairs > MAX_PAIRS else ''})"
    )
    floor = _floor(db, qemb, queries[:6])  # None: code without the retrieval interface
    from toolidx.core.tokens import query_terms
    from toolidx.search.hybrid import POOL

    def once(q: str) -> None:
        text = " ".join(q.split())
        db.retrieval.keyword(query_terms(text), POOL)
        db.retrieval.knn(qemb.embed_query(text), POOL)

    fns: dict[str, Any] = {} if floor is None else {"floor": once}
    # no pairs: learning off
    fns["hybrid, no pairs"] = lambda q: search(
        db, SearchRequest(q, mode="hybrid", limit=10), embedder=qemb, learned=None
    )
    fns[f"hybrid, {kept:,} pairs"] = lambda q: search(
        db, SearchRequest(q, mode="hybrid", limit=10), embedder=qemb, learned=Source(full)
    )
    lifted = sum(any("similar request" in h.why for h in fns[f"hybrid, {kept:,} pairs"](q).hits) for q in queries[:20])
    got = _interleaved(fns, queries)
    for k, r in got.items():
        print(f"{n:7d} {k:15s} {r['p50']:8.2f} {r['p95']:8.2f} {r['cpu_p50']:8.2f}  (interleaved)")
    if "floor" in got:
        f = got["floor"]["p50"]
        for k in list(got)[1:]:
            print(
                f"{n:7d} {k} / the floor: {got[k]['p50'] / f:.2f}x wall, "
                f"{got[k]['cpu_p50'] / got['floor']['cpu_p50']:.2f}x CPU"
            )
    print(f"{n:7d} {'':15s} of the first 20 queries, {lifted} had a tool lifted by past requests")
    asked = queries[:20]
    for name, usage in (("no", "-"), (f"{kept:,}", folder / "full.db")):
        rss = _serve_rss(path, env, (usage, asked))
        print(f"{n:7d} {'':15s} a warm serve process, {name} pairs: RSS {rss}")
    full.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cold-runs", type=int, default=15)
    ap.add_argument("--code", help="a folder holding the toolidx package to measure (default: this checkout's)")
    ap.add_argument("--pairs", type=int, default=0, help="also time hybrid with N learned pairs recorded (issue 46)")
    args = ap.parse_args()
    # a fresh cache folder: the first warm() of a large index writes its memory-mapped vector file
    # (store/sqlite/matrix.py), the serve process measured after it maps that file
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="toolidx-speed-")
    env = {**os.environ, "TOOLIDX_MODEL_PATH": MODEL}
    if args.code:
        env = measure_code(args.code, env)
    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.search.hybrid import search, warm
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    emb = embedder()  # builds the catalogs
    qemb = embedder(threads=QUERY_THREADS)  # what search loads for a query
    queries = _queries(args.queries)
    sizes = [int(s) for s in args.sizes.split(",")]
    # the query embedding alone, to show what the model costs on this machine
    embed_only = _time(lambda q: qemb.embed_query(" ".join(q.split())), queries)
    print(
        f"query embedding alone: p50 {embed_only['p50']} ms, p95 {embed_only['p95']} ms, cpu p50 "
        f"{embed_only['cpu_p50']} ms ({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})"
    )
    import toolidx

    print(f"measuring {Path(toolidx.__file__).parent}")
    print(
        "keyword (lazy): a fresh process whose caches fill as queries come (5 warm-up queries); "
        "the other rows: after search.warm() on a freshly opened index (what `toolidx serve` does at start)"
    )
    print(f"{'tools':>7s} {'mode':15s} {'p50 ms':>8s} {'p95 ms':>8s} {'cpu p50':>8s}")
    results = {}
    for n in sizes:
        path = _catalog(n, emb)
        db = open_db(path)
        r = _time(lambda q, db=db: search(db, SearchRequest(q, mode="keyword", limit=10), embedder=None), queries)
        results[(n, "keyword (lazy)")] = r
        print(f"{n:7d} {'keyword (lazy)':15s} {r['p50']:8.2f} {r['p95']:8.2f} {r['cpu_p50']:8.2f}")
        db.close()
        db = open_db(path)
        t0, c0 = time.perf_counter(), time.process_time()
        warm(db, qemb)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        results[(n, "warm")] = {"wall": wall, "cpu": cpu}
        print(f"{n:7d} {'search.warm()':15s} {wall:8.2f} s once ({cpu:.2f} s CPU)")
        loader = _preloading(db)
        if loader is not None:  # the rows below time a replica whose postings are all loaded
            loader.join()
            print(f"{n:7d} {'':15s} the postings' background preload done {time.perf_counter() - t0:.2f} s after start")
        # after the first process's preload: a large index's cache files are written by then
        print(f"{n:7d} {'':15s} a warm serve process holding this index: RSS {_serve_rss(path, env)}")
        for mode in ("keyword", "semantic", "hybrid"):
            r = _time(
                lambda q, db=db, mode=mode: search(db, SearchRequest(q, mode=mode, limit=10), embedder=qemb), queries
            )
            results[(n, mode)] = r
            print(f"{n:7d} {mode:15s} {r['p50']:8.2f} {r['p95']:8.2f} {r['cpu_p50']:8.2f}")
        floor = _floor(db, qemb, queries)
        if floor is not None:
            results[(n, "floor")] = floor
            print(f"{n:7d} {'floor':15s} {floor['p50']:8.2f} {floor['p95']:8.2f} {floor['cpu_p50']:8.2f}")
        h = results[(n, "hybrid")]
        print(
            f"{n:7d} hybrid p50 / the query embedding's: {h['p50'] / embed_only['p50']:.2f}x wall "
            f"(+{h['p50'] - embed_only['p50']:.2f} ms), "
            f"{h['cpu_p50'] / embed_only['cpu_p50']:.2f}x CPU"
        )
        if floor is not None:
            print(
                f"{n:7d} the floor (keyword, the embedding, the nearest vectors) / the query embedding's: "
                f"{floor['p50'] / embed_only['p50']:.2f}x; hybrid / the floor: {h['p50'] / floor['p50']:.2f}x"
            )
        if args.pairs:
            _learned_rows(n, db, path, env, emb, qemb, queries, args.pairs)
        db.close()

    py = sys.executable
    db10 = _catalog(10000 if 10000 in sizes else sizes[0], emb)
    base = _cold([py, "-c", "import sqlite3"], args.cold_runs, env)
    toolidx = str(Path(py).parent / "toolidx")
    cli = [toolidx] if os.path.exists(toolidx) else [py, "-m", "toolidx"]
    cold = _cold(
        [*cli, "search", "convert a pdf to markdown", "--mode", "keyword", "--db", str(db10), "--json"],
        args.cold_runs,
        env,
    )
    budget = 2 * base + 150
    print(
        f"cold `toolidx search --mode keyword`: {cold:.0f} ms; python -c 'import sqlite3': {base:.0f} ms; "
        f"ratio {cold / base:.2f}x; budget 2x+150 = {budget:.0f} ms {'ok' if cold <= budget else 'MISSED'}"
    )
    missed = []
    for n, kw_ms, ratio, warm_s in ((10000, 1.0, 1.2, 0.5), (100000, 2.0, 2.0, 2.0)):
        h, k, w = results.get((n, "hybrid")), results.get((n, "keyword")), results.get((n, "warm"))
        if w and w["cpu"] > warm_s:
            missed.append(f"search.warm()@{n} {w['cpu']:.2f} s CPU (target {warm_s} s)")
        if k and k["cpu_p50"] > kw_ms:
            missed.append(f"keyword@{n} cpu p50 {k['cpu_p50']} ms (target {kw_ms} ms)")
        if h and h["p50"] > ratio * embed_only["p50"]:
            f = results.get((n, "floor"))
            floor = f" (the floor alone: {f['p50'] / embed_only['p50']:.2f}x)" if f else ""
            missed.append(f"hybrid@{n} p50 {h['p50']} ms > {ratio}x the embedding's {embed_only['p50']} ms{floor}")
    if cold > budget:
        missed.append("cold keyword CLI")
    if missed:
        print("MISSED: " + "; ".join(missed))
        return 1
    print("all speed targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
