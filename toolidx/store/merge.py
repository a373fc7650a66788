"""Merging index files (`toolidx merge`): read what each input holds, decide which input each
server comes from, and write tools, servers, crawl history, tool versions and vectors into a new,
empty index. Vectors are copied as stored (never re-embedded); the keyword index is rebuilt from
the merged tools.

Which input a server comes from: the one that crawled it last (the start of its last crawl,
`crawls.started_at` through `servers.last_crawl_id`); on a tie, the later input. The merged history
has one crawl per input crawl, in time order; each records the whole merged index as it stood after
that crawl (every input's latest snapshot up to then, each server from the input that had crawled
it last), so `toolidx diff` and `history` read a merged index like any other.

What an input says about itself is not taken on its word: every definition's hash is computed
again from the definition (tools, tool versions and crawl snapshots alike), and approvals are not
carried (they come only from `toolidx approve` on the merged index).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.servers import launch_hash
from ..core.tooldoc import build_tooldoc, canonical_json, fix_strings, server_words
from . import approvals, keywords, server_vectors, vectors
from .approvals import stored_hash
from .index import Index, Reader, own
from .tools import JSON_COLUMNS, SERVER_JSON_COLUMNS

Key = tuple[str, int]  # (when a server was crawled, input position): the larger one wins


@dataclass
class Source:
    """One input index, read whole (its crawl history as per-crawl server sets and tool rows)."""

    db: Index
    position: int
    model: tuple[str, int] | None  # (embed_model, embed_dim) of its vectors; None: no vectors
    servers: dict[str, dict]  # name -> servers row, in rowid order
    crawls: list[dict]  # crawls rows, by id
    tool_count: int = 0
    crawled: dict[int, list[dict]] = field(default_factory=dict)  # crawl id -> its crawl_servers rows
    snapshot: dict[int, dict[str, list[tuple]]] = field(default_factory=dict)  # crawl id -> server -> rows
    versions: dict[str, str] = field(default_factory=dict)  # its tool_versions hash -> the hash computed
    approvals: int = 0  # approvals it holds (not carried into the merged index)

    def last_crawled(self, server: str) -> Key:
        """When this input last crawled `server` (its servers row's last crawl)."""
        row = self.servers[server]
        started = next((c["started_at"] for c in self.crawls if c["id"] == row.get("last_crawl_id")), None)
        return (started or row.get("crawled_at") or "", self.position)

    def launch(self, server: str) -> dict:
        """What this input says starts `server`: {path, transport, command, args, url, hash}."""
        c = _connect(self.servers[server])
        return {
            "path": self.db.path,
            "transport": c.get("transport"),
            "command": c.get("command"),
            "args": c.get("args"),
            "url": c.get("url"),
            "hash": launch_hash(c),
        }


def _connect(row: dict) -> dict:
    c = row.get("connect")
    try:
        c = json.loads(c or "{}") if not isinstance(c, dict) else c
    except (TypeError, ValueError):
        return {}
    return c if isinstance(c, dict) else {}


_JSON_TEXT = frozenset(JSON_COLUMNS) | frozenset(SERVER_JSON_COLUMNS)


def _clean(value: Any, json_text: bool = False) -> Any:
    """A value read from an input, cleaned as a crawl cleans what it stores (`fix_strings`): an
    index from elsewhere, or one written before NUL was cleaned, may hold a NUL, which PostgreSQL
    refuses, in its text or as \\u0000 in its JSON (`json_text`: parsed, cleaned, written again)."""
    if not isinstance(value, str):
        return value
    value = fix_strings(value)
    if json_text and "\\u0000" in value:
        try:
            return canonical_json(fix_strings(json.loads(value)))
        except (ValueError, RecursionError):
            return value
    return value


def _clean_row(row: dict) -> dict:
    return {k: _clean(v, k in _JSON_TEXT) for k, v in row.items()}


def read_source(db: Reader, position: int) -> Source:
    db = own(db)
    model = None
    if vectors.has_table(db) and db.get_meta("embed_model") and db.get_meta("embed_dim"):
        model = (str(db.get_meta("embed_model")), int(str(db.get_meta("embed_dim"))))
    order = db.writer.written_order  # the rows in the order they were written
    src = Source(
        db,
        position,
        model,
        {r["name"]: r for r in map(_clean_row, db.query(f"SELECT * FROM servers ORDER BY {order['servers']}"))},
        [_clean_row(r) for r in db.query("SELECT * FROM crawls ORDER BY id")],
        int(db.scalar("SELECT count(*) FROM tools")),
    )
    for r in db.query(f"SELECT * FROM crawl_servers ORDER BY {order['crawl_servers']}"):
        src.crawled.setdefault(int(r["crawl_id"]), []).append(_clean_row(r))
    with db.lock:
        rows = db.conn.execute(
            f"SELECT crawl_id, tool_id, server, name, hash, stale FROM crawl_tools ORDER BY {order['crawl_tools']}"
        ).fetchall()
    for crawl_id, *row in rows:
        row = [_clean(v) for v in row]
        src.snapshot.setdefault(int(crawl_id), {}).setdefault(row[1], []).append(tuple(row))
    src.approvals = len(approvals.approvals(db))
    return src


def owners(sources: list[Source]) -> tuple[dict[str, Source], list[dict]]:
    """Which input each server comes from, and the conflicts (a server in several inputs; with
    `launch_differs` when the inputs say different things about how to start it)."""
    found: dict[str, list[Source]] = {}
    for s in sources:
        for name in s.servers:
            found.setdefault(name, []).append(s)
    owner: dict[str, Source] = {}
    conflicts = []
    for name, holders in found.items():
        ranked = sorted(holders, key=lambda s: s.last_crawled(name), reverse=True)
        owner[name] = ranked[0]
        if len(ranked) > 1:
            launches = [s.launch(name) for s in ranked]
            conflicts.append(
                {
                    "server": name,
                    "kept": ranked[0].db.path,
                    "kept_crawled_at": ranked[0].last_crawled(name)[0],
                    "dropped": [{"path": s.db.path, "crawled_at": s.last_crawled(name)[0]} for s in ranked[1:]],
                    "launch_differs": len({x["hash"] for x in launches}) > 1,
                    "launches": launches,
                }
            )
    return owner, conflicts


def _columns(db: Index, table: str) -> list[str]:
    return db.writer.columns(table)


def _insert(db: Index, table: str, row: dict[str, Any], columns: list[str]) -> None:
    """Insert one row (an id, tools' rowid or crawls' id, is the row's own: the merge numbers them)."""
    cols = [c for c in columns if c in row]
    db.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols])


def _history(out: Index, sources: list[Source]) -> dict[tuple[int, int], int]:
    """Write the merged crawls (one per input crawl, in time order) with their snapshots. Returns
    (input position, input crawl id) -> merged crawl id."""
    events = sorted(
        ((c["started_at"] or "", s.position, int(c["id"]), s, c) for s in sources for c in s.crawls),
        key=lambda e: e[:3],
    )
    crawl_cols = [c for c in _columns(out, "crawls") if c != "id"]
    server_cols = _columns(out, "crawl_servers")
    current: dict[int, int] = {}  # input position -> its latest crawl so far
    touched: dict[int, dict[str, str]] = {}  # input position -> server -> when it last crawled it
    ids: dict[tuple[int, int], int] = {}
    for started, pos, crawl_id, src, crawl in events:
        current[pos] = crawl_id
        for r in src.crawled.get(crawl_id, []):
            touched.setdefault(pos, {})[r["server"]] = started
        # every input's latest snapshot; each server from the input that crawled it last
        best: dict[str, tuple[Key, list[tuple]]] = {}
        for s in sources:
            if s.position not in current:
                continue
            cid = current[s.position]
            snap = s.snapshot.get(cid, {})
            present = set(snap) | {r["server"] for r in s.crawled.get(cid, [])}
            for server in present:
                key = (touched.get(s.position, {}).get(server, ""), s.position)
                if server not in best or key > best[server][0]:
                    best[server] = (key, snap.get(server, []))
        rows = [row for _, tools in best.values() for row in tools]
        # ids from 1, as in a new file (a catalog's sequence is moved past them: writer.after_merge)
        merged = len(ids) + 1
        _insert(out, "crawls", {**crawl, "id": merged, "tool_count": len(rows)}, ["id", *crawl_cols])
        ids[(pos, crawl_id)] = merged
        for r in src.crawled.get(crawl_id, []):
            _insert(out, "crawl_servers", {**r, "crawl_id": merged}, server_cols)
        out.conn.executemany(
            "INSERT INTO crawl_tools(crawl_id, tool_id, server, name, hash, stale) VALUES (?, ?, ?, ?, ?, ?)",
            [(merged, *row) for row in rows],
        )
    return ids


def _rehash(src: Source, row: tuple) -> tuple:
    """A crawl_tools row (tool_id, server, name, hash, stale) with the hash its definition has."""
    return (*row[:3], src.versions.get(row[3], row[3]), *row[4:])


_CLEARED = (
    "tool_terms",
    "tool_docsize",
    "crawl_tools",
    "crawl_servers",
    "crawls",
    "tools",
    "servers",
    "tool_versions",
    "approvals",
    "server_approvals",
    "server_vectors",
)
# what makes a PostgreSQL catalog ours; its usage tables (store/usage.py) are not the catalog's and
# stay, as a usage file beside an index stays when the index is replaced
_KEPT_META = ("application", "schema_version", "data_version", "usage_schema_version")


def _clear(out: Index) -> None:
    """Empty a PostgreSQL catalog inside the merge's transaction: readers see the old catalog or
    the merged one. (A file output is a new file renamed over the old one.) Only row deletes,
    which readers do not wait for: no DROP, TRUNCATE or ALTER, whose exclusive lock would stall
    every replica's searches until the merge commits (#31 item 8). The vector table stays (rows
    deleted) unless the merged vectors need another one (`_vector_table`, at the end)."""
    if vectors.has_table(out):
        out.execute(f"DELETE FROM {vectors.TABLE}")
    for table in _CLEARED:
        out.execute(f"DELETE FROM {table}")
    out.execute(f"DELETE FROM meta WHERE key NOT IN ({', '.join('?' * len(_KEPT_META))})", _KEPT_META)


def _vector_table(out: Index, model: tuple[str, int] | None, kept: bool) -> None:
    """Make the vector table fit the merged vectors, at the end of the merge (its final swap):
    a table of another dimension, or one the merged index has no vectors for, is dropped here, so
    the exclusive lock that takes is held only until the commit that follows. A table that fits
    (`kept`: same dimension) was only emptied."""
    if kept and model is not None:
        out.set_meta("embed_model", model[0])
        out.set_meta("embed_dim", str(model[1]))
        return
    if vectors.has_table(out):
        out.execute(f"DROP TABLE {vectors.TABLE}")
    if model is not None:
        vectors.ensure_table(out, *model)


def write_merged(
    out: Reader,
    sources: list[Source],
    owner: dict[str, Source],
    model: tuple[str, int] | None,
    model_path: str | None,
    *,
    replace: bool = False,
) -> dict[str, int]:
    """Fill the empty index `out` (one transaction; `replace`: empty a PostgreSQL catalog first,
    in the same transaction). Returns counts: servers, tools, crawls, vectors (copied) and
    missing_vectors (tools that need `toolidx embed`)."""
    out = own(out)
    counts = {"servers": 0, "tools": 0, "crawls": 0, "vectors": 0, "missing_vectors": 0}
    pending: list[tuple[int, bytes]] = []  # vectors, written once the table fits (_vector_table)
    with out.transaction():
        kept = False
        if replace:
            kept = model is not None and vectors.has_table(out) and out.get_meta("embed_dim") == str(model[1])
            _clear(out)
        if model_path and model is not None:
            out.set_meta("embed_model_path", model_path)
        for s in sources:
            with s.db.lock:
                versions = s.db.conn.execute("SELECT hash, definition FROM tool_versions").fetchall()
            versions = [(h, _clean(d, json_text=True)) for h, d in versions]
            # keyed by the hash of the text, whatever key the input gave it
            s.versions = {h: stored_hash(d) for h, d in versions}
            s.snapshot = {
                cid: {server: [_rehash(s, r) for r in rows] for server, rows in snap.items()}
                for cid, snap in s.snapshot.items()
            }
            out.conn.executemany(
                "INSERT INTO tool_versions(hash, definition) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(s.versions[h], d) for h, d in versions],
            )
        ids = _history(out, sources)
        counts["crawls"] = len(ids)
        next_rowid = [1]
        server_rows: list[tuple[str, str, bytes]] = []  # each server's text vector, from its owner
        server_cols, tool_cols = _columns(out, "servers"), [c for c in _columns(out, "tools") if c != "rowid"]
        for s in sources:
            mine = [name for name in s.servers if owner[name] is s]
            for name in mine:
                row = dict(s.servers[name])
                row["owner"] = row.get("owner") or _crawl_config(s, row.get("last_crawl_id"))
                row["last_crawl_id"] = ids.get((s.position, row.get("last_crawl_id") or -1))
                _insert(out, "servers", row, server_cols)
                counts["servers"] += 1
                _copy_tools(out, s, row, tool_cols, model is not None and s.model == model, counts, pending, next_rowid)
            if model is not None and s.model == model:
                server_rows += server_vectors.stored(s.db, mine)
        if ids:
            out.set_meta("last_crawl_id", str(max(ids.values())))
        if replace or model is not None:
            _vector_table(out, model, kept)
        for rowid, blob in pending:
            vectors.put(out, rowid, blob)
        server_vectors.put(out, server_rows)
        out.writer.after_merge()
    return counts


def _crawl_config(src: Source, crawl_id: Any) -> str | None:
    """The config an input's crawl recorded: the owner of a server from an index made before
    servers recorded one (servers.owner, migration 4)."""
    return next((c.get("config_path") for c in src.crawls if c["id"] == crawl_id), None)


def _copy_tools(
    out: Index,
    src: Source,
    server: dict,
    columns: list[str],
    with_vectors: bool,
    counts: dict[str, int],
    pending: list[tuple[int, bytes]],
    next_rowid: list[int],
) -> None:
    label = server_words(server["name"], server.get("server_name"), server.get("server_title"))
    fts_rows: list[tuple[int, dict[str, str]]] = []
    for row in src.db.query("SELECT rowid AS _rowid, * FROM tools WHERE server = ? ORDER BY rowid", (server["name"],)):
        old = row.pop("_rowid")
        row = _clean_row(row)
        row["hash"] = stored_hash(row["definition"])  # the input's own hash column is not evidence
        out.execute(
            "INSERT INTO tool_versions(hash, definition) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (row["hash"], row["definition"]),
        )
        blob = vectors.get(src.db, old) if with_vectors and row.get("embed_hash") else None
        if blob is None:
            row["embed_hash"] = None
            counts["missing_vectors"] += 1
        row["rowid"], next_rowid[0] = next_rowid[0], next_rowid[0] + 1  # from 1, as in a new file
        rowid = row["rowid"]
        _insert(out, "tools", row, ["rowid", *columns])
        if blob is not None:
            pending.append((rowid, blob))
            counts["vectors"] += 1
        # the keyword row, derived again from the definition exactly as a crawl derives it
        doc = build_tooldoc(
            json.loads(row["definition"]), server["name"], category=row.get("category"), server_label=label
        )
        doc.tags = json.loads(row["tags"] or "[]")
        fts_rows.append((rowid, doc.fts_row()))
        counts["tools"] += 1
    keywords.put_many(out, fts_rows)


def checkpoint(db: Reader) -> None:
    """Fold the file's write-ahead log into it and empty the log, so the file alone is the index
    (merge renames it into place)."""
    db = own(db)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def malformed_row(db: Reader) -> str | None:
    """The first row of `db` whose JSON columns cannot be parsed ("tool s/t: its tags are not
    JSON"), or None. Read-only: an input is checked whole before anything is written. The
    catalog's JSON columns are text too (store/pg/migrations.py), so a row written by hand can be
    malformed there as well: PostgreSQL 15 cannot test text for JSON without failing the
    statement (no IS JSON, no pg_input_is_valid), so its rows are parsed (`malformed_parsed`), by
    the rules a file's SQL checks (store/sqlite/writer.py)."""
    db = own(db)
    return db.writer.malformed_row()


_CHECK_CHUNK = 500  # tools parsed per query: a catalog's definitions are never all in memory at once


def malformed_parsed(db: Reader) -> str | None:
    """malformed_row for PostgreSQL: store/sqlite/writer.py's _MALFORMED_SERVER and _MALFORMED_TOOL's
    rules, in Python."""
    db = own(db)
    for row in db.query("SELECT name, tags, invalid_tools, connect, capabilities FROM servers ORDER BY name"):
        why = _server_why(row)
        if why:
            return f"server {row['name']!r}: {why}"
    after = -(2**63)
    while True:
        rows = db.query(
            "SELECT rowid, id, definition, tags, param_names, input_schema, output_schema, annotations, icons, meta "
            "FROM tools WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (after, _CHECK_CHUNK),
        )
        for row in rows:
            why = _tool_why(row)
            if why:
                return f"tool {row['id']!r}: {why}"
        if len(rows) < _CHECK_CHUNK:
            return None
        after = rows[-1]["rowid"]


_NOT_JSON = object()
_SERVER_OPTIONAL = (("connect", "its connect record is not JSON"), ("capabilities", "its capabilities are not JSON"))
_TOOL_OPTIONAL = (
    ("input_schema", "its input_schema is not JSON"),
    ("output_schema", "its output_schema is not JSON"),
    ("annotations", "its annotations are not JSON"),
    ("icons", "its icons are not JSON"),
    ("meta", "its _meta is not JSON"),
)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parsed(text: Any) -> Any:
    """`text` parsed as strict JSON (as SQLite's json_valid: no NaN or Infinity), else _NOT_JSON."""
    if not isinstance(text, str):
        return _NOT_JSON
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _server_why(row: dict) -> str | None:
    if not isinstance(_parsed(row["tags"]), list):
        return "its tags are not a JSON array"
    if _parsed(row["invalid_tools"]) is _NOT_JSON:
        return "its invalid_tools are not JSON"
    return next((why for c, why in _SERVER_OPTIONAL if row[c] is not None and _parsed(row[c]) is _NOT_JSON), None)


def _tool_why(row: dict) -> str | None:
    definition = _parsed(row["definition"])
    if definition is _NOT_JSON:
        return "its definition is not JSON"
    if not isinstance(definition, dict):
        return "its definition is not a JSON object"
    tags = _parsed(row["tags"])
    if tags is _NOT_JSON:
        return "its tags are not JSON"
    if not isinstance(tags, list):
        return "its tags are not a JSON array"
    if not all(isinstance(t, str) for t in tags):
        return "its tags are not all strings"
    if _parsed(row["param_names"]) is _NOT_JSON:
        return "its param_names are not JSON"
    return next((why for c, why in _TOOL_OPTIONAL if row[c] is not None and _parsed(row[c]) is _NOT_JSON), None)
