"""`toolidx approve`: record (or revoke) a person's approval of tools' current definitions. Names
go through the one resolver (resolve.py), so an unknown id fails with the closest ids before
anything is written."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Any

from ..core.errors import UsageError, check_servers
from ..store import approvals as store
from ..store.index import Reader
from ..store.tools import list_servers
from .resolve import resolve_tool_id


def approver() -> str:
    """The user name from the environment (LOGNAME, USER, LNAME, USERNAME, else the account)."""
    try:
        return getpass.getuser()
    except Exception:  # no name anywhere (a bare container): still record who, as unknown
        return "unknown"


def _targets(db: Reader, ids: list[str], servers: list[str], everything: bool, revoke: bool) -> list[str]:
    if not ids and not servers and not everything:
        raise UsageError("nothing to approve", fix="name tools (SERVER/TOOL), --server S, or --all")
    if everything:
        return sorted(set(store.current_hashes(db)) | (set(store.approvals(db)) if revoke else set()))
    # a revoke may name an approval whose tool has left the index; anything else goes through the
    # resolver, which raises UnknownToolError with the closest ids (exit 2)
    kept = store.approvals(db, ids) if revoke else {}
    out = [i if i in kept else resolve_tool_id(db, i) for i in ids]
    if servers:
        check_servers(servers, {s["name"] for s in list_servers(db)}, where=db.path)
        out += sorted(store.current_hashes(db, servers=servers))
    return list(dict.fromkeys(out))


@dataclass
class Approval:
    """What `approve` did (`to_json()`: the `approve --json` document's body). `tools`: per tool,
    its id and, approving, its hash and what it was before ("unapproved", "approved": unchanged,
    "changed"); revoking, whether it had an approval."""

    action: str  # approve | revoke
    db: str
    by: str
    at: str
    tools: list[dict[str, Any]]
    count: int  # approved, or approvals revoked

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "db": self.db,
            "by": self.by,
            "at": self.at,
            "tools": self.tools,
            "count": self.count,
        }


def approve(
    db: Reader,
    ids: list[str],
    *,
    servers: list[str] | None = None,
    everything: bool = False,
    revoke: bool = False,
    by: str | None = None,
    expect: dict[str, str] | None = None,
    expect_texts: dict[str, str] | None = None,
) -> Approval:
    """Approve (or with `revoke`, un-approve) tools. `expect`: id -> the definition hash its
    approver was shown (the console), `expect_texts` server -> its title and instructions' hash
    as shown: a change since raises store's ChangedSinceShown and nothing is approved (the CLI
    approves what is current, which it shows)."""
    from ..core.clock import now_iso

    targets = _targets(db, list(ids), list(servers or []), everything, revoke)
    who, at = by or approver(), now_iso()
    if revoke:
        had = set(store.revoke(db, targets))
        return Approval("revoke", db.path, who, at, [{"id": t, "revoked": t in had} for t in targets], len(had))
    rows = store.record(db, targets, who, at, expect=expect, expect_texts=expect_texts)
    tools = [
        {
            "id": r["id"],
            "hash": r["hash"],
            "was": "unapproved"
            if r["previous_hash"] is None
            else "approved"
            if r["previous_hash"] == r["hash"]
            else "changed",
        }
        for r in rows
    ]
    return Approval("approve", db.path, who, at, tools, len(tools))
