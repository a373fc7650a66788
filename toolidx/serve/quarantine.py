"""serve --quarantine: what is refused, and why. Tools no one approved are outside the scope
(`Filters.approved_only`), so every meta-tool hides them; a tool approved once but changed since
is visible and described, but `execute_tool` refuses it with the field-level diff (the one diff:
`diff.approved`, which calls `diff.snapshot.compare_tools`). What the agent reads of the tool's
server (title, instructions) is approved with it: once that text changes, the server's tools are
refused the same way, and describe_tool does not show the new text (`hide_server_text`)."""

from __future__ import annotations

from ..core.budget import fit_budget
from ..core.errors import CHANGED_SINCE_APPROVAL, NOT_APPROVED
from ..diff.approved import approval_json, approval_state, changes_since_approval, current_hash, server_changes
from ..store.approvals import approvals
from ..store.index import Reader
from .discovery import Answer

FIX = "a person reviews it (`toolidx diff --approved`) and approves it (`toolidx approve {id}`)"


def not_approved(db: Reader, tool_id: str) -> bool:
    """Whether `tool_id` is in the index but has never been approved (hidden by quarantine)."""
    from ..store.catalog import tool_exists

    return tool_exists(db, tool_id) and tool_id not in approvals(db, [tool_id])


def refusal(db: Reader, tool: dict, max_tokens: int) -> Answer | None:
    """None when the tool's definition is the approved one; otherwise the refusal, with the reason
    and each changed field."""
    approval = approvals(db, [tool["id"]]).get(tool["id"])
    server = server_changes(db, tool["server"])
    state = approval_state(tool, approval, server)
    if state == "approved":
        return None
    if approval is None:  # approved_only keeps these out of reach; a revoke can race a call
        payload = {
            "error": NOT_APPROVED,
            "code": NOT_APPROVED,
            "tool": tool["id"],
            "message": f"{tool['id']} is quarantined: no one approved it",
            "fix": FIX.format(id=tool["id"]),
        }
        return Answer(payload, f"Error: {payload['message']}\nFix: {payload['fix']}", is_error=True)
    changes = (
        [c.to_json() for c in changes_since_approval(db, tool, approval)]
        if current_hash(tool) != approval["hash"]
        else []
    )
    for c in changes:
        c.pop("words", None)  # old/new already say it; the word diff doubles the size
    # the server's new text is what is not approved: named, never sent to the agent
    changes += [{**c.to_json(), "old": None, "new": None} for c in server]
    a = approval_json(approval) or {}
    message = (
        f"not run: {tool['id']} changed since it was approved by {a['by']} at {a['at']} "
        f"({len(changes)} field change{'s' if len(changes) != 1 else ''})"
    )
    payload = {
        "error": CHANGED_SINCE_APPROVAL,
        "code": CHANGED_SINCE_APPROVAL,
        "tool": tool["id"],
        "message": message,
        "fix": FIX.format(id=tool["id"]),
        "approved": a,
        "hash": current_hash(tool),
        "changes": changes,
    }
    payload = fit_budget(payload, "changes", max_tokens)
    lines = [f"Error: {message}. What changed:"]
    lines += [f"- {c['severity']} {c['field']}: {c['message']}" for c in payload.get("changes", [])]
    lines.append(f"Fix: {payload['fix']}")
    return Answer(payload, "\n".join(lines), is_error=True)


def annotate(db: Reader, tool: dict, answer: Answer) -> None:
    """describe_tool under quarantine: `approval` {state, by, at} in the answer, and a line saying
    that a tool changed since its approval will be refused."""
    approval = approvals(db, [tool["id"]]).get(tool["id"])
    state = approval_state(tool, approval, server_changes(db, tool["server"]))
    answer.payload["approval"] = {"state": state, **(approval_json(approval) or {})}
    if state == "changed":
        answer.text += (
            f"\nQuarantine: changed since its approval: execute_tool refuses it until {FIX.format(id=tool['id'])}."
        )


def hide_server_text(db: Reader, tool: dict, described: dict) -> None:
    """describe_tool under quarantine: the server's title and instructions are shown only as
    approved; changed (or never approved) text is left out, with a note saying so."""
    info = described.get("server_info")
    if not isinstance(info, dict):
        return
    changed = {c.field.removeprefix("server.") for c in server_changes(db, tool["server"])}
    if not changed:
        return
    for key in ("server_title", "instructions"):
        if key.removeprefix("server_") in changed:
            info.pop(key, None)
    info["quarantine"] = (
        f"the server's {' and '.join(sorted(changed))} changed since approval: not shown "
        f"until {FIX.format(id=tool['id'])}"
    )
