"""What a person approved against what the index holds now: `toolidx diff --approved` (every tool
awaiting approval, field by field) and serve --quarantine's refusal of a tool changed since its
approval. One comparison: the approved definitions form a `Snapshot`, the index's tools another,
and `snapshot.diff_snapshots` / `compare_tools` do the rest."""

from __future__ import annotations

from typing import Any

from ..core.counts import plural
from ..core.errors import check_servers
from ..core.tooldoc import definition_hash
from ..store import approvals as store
from ..store import history
from ..store.index import Reader
from .schema import BREAKING, RISKY, Change
from .snapshot import DiffResult, Snapshot, ToolDiff, ToolRef, compare_tools, diff_snapshots


def approved_snapshot(db: Reader, servers: list[str] | None = None) -> Snapshot:
    """The approved definitions as one side of a diff."""
    rows = store.approvals(db)
    tools: dict[str, ToolRef] = {}
    for tid, r in rows.items():
        server, _, name = tid.partition("/")
        if not servers or server in servers:
            tools[tid] = ToolRef(tid, server, name, r["hash"])
    label = {"db": db.path, "side": "approved", "tools": len(tools)}
    return Snapshot(
        tools, {t.server: {"status": "ok"} for t in tools.values()}, label, lambda hs: history.definitions(db, hs)
    )


def current_snapshot(db: Reader, servers: list[str] | None = None) -> Snapshot:
    """The tools in the index now as the other side."""
    from ..store.tools import list_servers

    hashes = store.current_hashes(db, servers=servers)
    tools = {tid: ToolRef(tid, tid.partition("/")[0], tid.partition("/")[2], h) for tid, h in hashes.items()}
    srv = {
        s["name"]: {"status": s["status"], "error": s.get("error")}
        for s in list_servers(db)
        if not servers or s["name"] in servers
    }
    label = {"db": db.path, "side": "index", "crawl_id": db.get_meta("last_crawl_id"), "tools": len(tools)}
    return Snapshot(tools, srv, label, lambda hs: history.definitions(db, hs))


def awaiting_approval(db: Reader, servers: list[str] | None = None) -> DiffResult:
    """Tools never approved (added) and tools changed since their approval (changed, field by
    field), per server. Approved tools no longer in the index are not listed: nothing awaits."""
    if servers:
        from ..store.tools import list_servers

        check_servers(servers, {s["name"] for s in list_servers(db)}, where=db.path)
    result = diff_snapshots(approved_snapshot(db, servers), current_snapshot(db, servers), servers=servers)
    approved = store.approvals(db)
    for s in result.servers:
        s.tools = [t for t in s.tools if t.change != "removed"]
        text = server_changes(db, s.server)
        if text:  # every approved tool of it awaits: quarantine refuses them all
            diffs = {t.id: t for t in s.tools}
            present = set(store.current_hashes(db, servers=[s.server]))
            for tid in sorted(i for i in approved if i.partition("/")[0] == s.server):
                if tid not in diffs and tid in present:
                    diffs[tid] = ToolDiff(tid, s.server, tid.partition("/")[2], "changed")
                    s.tools.append(diffs[tid])
                    s.unchanged = max(0, s.unchanged - 1)
                if tid in diffs:
                    diffs[tid].changes.extend(text)
        if s.state == "added":  # a server none of whose tools was approved
            s.state = "ok"
    result.notes.append(f"{plural(len(store.approvals(db)), 'tool')} approved; approve with `toolidx approve ID…`")
    return result


def changes_since_approval(db: Reader, tool: dict, approval: dict) -> list[Change]:
    """Field-level changes between the approved definition of `tool` and its definition now."""
    defs = history.definitions(db, [approval["hash"]])
    old = defs.get(approval["hash"])
    if old is None:  # kept by `approve`, but a hand-edited file may lack it
        return [
            Change(
                "definition",
                "definition_changed",
                BREAKING,
                "definition changed; the approved text is not in the index to compare",
                "",
                None,
                None,
            )
        ]
    return compare_tools(old, tool["definition"])


def current_hash(tool: dict) -> str:
    """The hash of `tool`'s definition as it is now, computed from the definition: `tools.hash` is
    only what the file says (a merged or hand-edited index may hold one that does not match)."""
    d = tool.get("definition")
    if isinstance(d, dict):
        return definition_hash(d)
    return store.stored_hash(d if isinstance(d, str) else None)


def server_changes(db: Reader, server: str) -> list[Change]:
    """What the agent reads of `server` (its title and instructions) against what was approved with
    its tools: one change per field that differs. A server whose text was never approved (tools
    approved before toolidx recorded it) counts as changed, unless it has no such text."""
    now = store.server_texts(db, [server]).get(server)
    if now is None:
        return []
    approved = store.server_approvals(db, [server]).get(server)
    if approved is None:
        approved = {"title": None, "instructions": None}
        if now == approved:
            return []
    elif store.text_hash(approved["title"], approved["instructions"]) == store.text_hash(**now):
        return []
    out = []
    for key, name in (("title", "title"), ("instructions", "instructions")):
        if approved[key] != now[key]:
            out.append(
                Change(
                    f"server.{name}",
                    f"server_{name}_changed",
                    RISKY,
                    f"the server's {name} (what the agent reads) changed since its tools were approved",
                    "",
                    approved[key],
                    now[key],
                )
            )
    return out


def approval_state(tool: dict, approval: dict | None, server: list[Change] | None = None) -> str:
    """approved | changed (since approval: the definition, or its server's text in `server`) |
    unapproved."""
    if approval is None:
        return "unapproved"
    return "approved" if approval["hash"] == current_hash(tool) and not server else "changed"


def approval_json(approval: dict | None) -> dict[str, Any] | None:
    if approval is None:
        return None
    return {"hash": approval["hash"], "by": approval["approved_by"], "at": approval["approved_at"]}
