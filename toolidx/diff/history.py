"""Library entry points for `toolidx diff`, `history` and `audit`: pick the crawls, load the
snapshots, call the pure diff (snapshot.py) or the scanner (audit.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import NotFoundError, UsageError, check_servers
from ..store import history as store
from ..store.index import Reader
from .audit import AuditReport, audit_definitions
from .snapshot import DiffResult, Snapshot, ToolRef, diff_snapshots


def resolve_crawl(db: Reader, ref: str | int | None, *, default: int = -1) -> int:
    """A crawl id from `ref`: an id (`12`), `latest`/`last`, `previous`/`prev`, or `-N` (the
    Nth crawl from the end; -1 is the latest). None means `default` (as an offset from the end)."""
    ids = store.crawl_ids(db)
    if not ids:
        raise NotFoundError(
            "the index has no crawls", where=db.path, fix="run `toolidx crawl --config FILE --db PATH` first"
        )
    r = str(ref).strip().lower() if ref is not None else str(default)
    aliases = {"latest": "-1", "last": "-1", "newest": "-1", "previous": "-2", "prev": "-2"}
    r = aliases.get(r, r)
    try:
        n = int(r)
    except ValueError:
        raise UsageError(
            f"not a crawl: {ref!r}", fix="use a crawl id (see `toolidx history`), latest, previous, or -N"
        ) from None
    if n < 0:
        if -n > len(ids):
            raise NotFoundError(
                f"the index has only {len(ids)} crawl{'s' if len(ids) != 1 else ''}",
                where=db.path,
                fix="crawl again, or compare with another index: toolidx diff OLD.db NEW.db",
            )
        return ids[n]
    if n not in ids:
        near = ", ".join(map(str, ids[-10:]))
        raise NotFoundError(f"no crawl {n} in the index", where=db.path, fix=f"known crawls: {near}")
    return n


def load_snapshot(db: Reader, crawl_id: int, servers: list[str] | None = None) -> Snapshot:
    rows = store.snapshot_rows(db, crawl_id, servers)
    tools = {tid: ToolRef(tid, server, name, h, bool(stale)) for tid, server, name, h, stale in rows}
    srv = {r["server"]: r for r in store.crawl_server_rows(db, crawl_id)}
    c = store.get_crawl(db, crawl_id) or {}
    label = {"db": db.path, "crawl_id": crawl_id, "started_at": c.get("started_at"), "tools": len(tools)}
    return Snapshot(tools, srv, label, lambda hs: store.definitions(db, hs))


def _check_servers(snaps: list[Snapshot], servers: list[str] | None) -> None:
    if not servers:
        return
    known = set()
    for s in snaps:
        known |= {t.server for t in s.tools.values()} | set(s.servers)
    check_servers(servers, known, within="in either crawl")


def diff_crawls(
    db: Reader, from_ref: str | None = None, to_ref: str | None = None, servers: list[str] | None = None
) -> DiffResult:
    """Two crawls of one index; by default the last two (or the crawl before `to_ref`)."""
    to_id = resolve_crawl(db, to_ref, default=-1)
    if from_ref is None:
        ids = store.crawl_ids(db)
        before = [i for i in ids if i < to_id]
        if not before:
            raise NotFoundError(
                f"crawl {to_id} is the first crawl: nothing to compare it with",
                where=db.path,
                fix="crawl again later, or compare two files: toolidx diff OLD.db NEW.db (audit checks a first crawl)",
            )
        from_id = before[-1]
    else:
        from_id = resolve_crawl(db, from_ref)
    old, new = load_snapshot(db, from_id), load_snapshot(db, to_id)
    _check_servers([old, new], servers)
    return diff_snapshots(old, new, servers=servers)


def diff_files(
    old_db: Reader,
    new_db: Reader,
    from_ref: str | None = None,
    to_ref: str | None = None,
    servers: list[str] | None = None,
) -> DiffResult:
    """The latest crawl (or `from_ref`) of one index against the latest (or `to_ref`) of another."""
    old = load_snapshot(old_db, resolve_crawl(old_db, from_ref, default=-1))
    new = load_snapshot(new_db, resolve_crawl(new_db, to_ref, default=-1))
    _check_servers([old, new], servers)
    return diff_snapshots(old, new, servers=servers)


def diff(
    db_path: str | Path | None,
    old_path: str | Path | None = None,
    new_path: str | Path | None = None,
    *,
    from_ref: str | None = None,
    to_ref: str | None = None,
    servers: list[str] | None = None,
) -> DiffResult:
    """What `toolidx diff` runs: with no files, two crawls of `db_path`; with OLD only, OLD's latest
    crawl against `db_path`'s; with OLD and NEW, the two files."""
    from ..store.db import open_db

    if old_path is None:
        db = open_db(db_path)
        try:
            return diff_crawls(db, from_ref, to_ref, servers)
        finally:
            db.close()
    # baselines are often downloaded artifacts: never write to them
    old_db = open_db(old_path, readonly=True)
    new_db = open_db(new_path, readonly=True) if new_path is not None else open_db(db_path)
    try:
        return diff_files(old_db, new_db, from_ref, to_ref, servers)
    finally:
        old_db.close()
        new_db.close()


@dataclass
class CrawlHistory:
    """What `history` returns (`to_json()`: the `history --json` document's body): the crawls,
    newest first, each the store's row with its counts against the crawl before it."""

    db: str
    servers: list[str]  # the --server filter ([]: every server)
    crawls: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"db": self.db, "filter": {"servers": self.servers}, "crawls": self.crawls}


def history(db: Reader, limit: int | None = 20, servers: list[str] | None = None) -> CrawlHistory:
    return CrawlHistory(db.path, list(servers or []), store.crawl_history(db, limit, servers))


def audit(db: Reader, servers: list[str] | None = None, crawl: str | None = None) -> AuditReport:
    """Scan the index as it is now (or as of one crawl) for text that reads like instructions to
    the model."""
    if crawl is None:
        rows = store.current_definitions(db, servers)
        known = {r["server"] for r in rows}
        check_servers(servers, known, where=db.path, fix="see `toolidx history` or the crawl summary")
        items = ((r["id"], r["server"], r["name"], r["definition"]) for r in rows)
        return audit_definitions(items, {"db": db.path, "crawl_id": None}, servers)
    cid = resolve_crawl(db, crawl)
    snap = load_snapshot(db, cid, servers)
    defs = snap.load({t.hash for t in snap.tools.values()})
    items = (
        (t.id, t.server, t.name, defs[t.hash])
        for t in sorted(snap.tools.values(), key=lambda t: t.id)
        if t.hash in defs
    )
    return audit_definitions(items, {"db": db.path, "crawl_id": cid}, servers)


def tool_history(db: Reader, tool_id: str, limit: int = 30) -> list[dict[str, Any]]:
    """What the last `limit` crawls did to one tool, newest first: {crawl_id, started_at, change}
    with change added | changed | removed (its definition hash against the crawl before), for the
    crawls that changed it."""
    ids = store.crawl_ids(db)[-(limit + 1) :]
    seen = {r["crawl_id"]: r["hash"] for r in store.tool_rows(db, tool_id, ids)}
    out: list[dict[str, Any]] = []
    for before, cid in zip([None, *ids], ids):
        old, new = seen.get(before) if before is not None else None, seen.get(cid)
        change = (
            None
            if old == new or (before is None and new is not None and len(ids) > limit)
            else "added"
            if old is None
            else "removed"
            if new is None
            else "changed"
        )
        if change:
            out.append(
                {
                    "crawl_id": cid,
                    "previous": before,
                    "started_at": (store.get_crawl(db, cid) or {}).get("started_at"),
                    "change": change,
                }
            )
    return out[::-1]
