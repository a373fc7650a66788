"""Text and Markdown views of a diff, a crawl history and an audit, built from their JSON payloads
(so every format shows the same facts). render.py decides where they go; this module only
builds strings. `rich=True` adds rich markup for a terminal."""

from __future__ import annotations

from typing import Any

from ..core import safetext

ICON = {"breaking": "🔴", "risky": "🟠", "compatible": "🟢", None: "⚪"}
COLOR = {"breaking": "red", "risky": "yellow", "compatible": "green", None: "dim"}
CONTEXT_WORDS = 8


def _esc_rich(s: str) -> str:
    return safetext.markup(s)


def _esc_md(s: str) -> str:
    return safetext.markdown(s)


def _clip_equal(text: str, first: bool, last: bool) -> str:
    """Keep a few words of context around edits in long descriptions."""
    words = text.split(" ")
    if len(words) <= 2 * CONTEXT_WORDS:
        return text
    if first:
        return "… " + " ".join(words[-CONTEXT_WORDS:])
    if last:
        return " ".join(words[:CONTEXT_WORDS]) + " …"
    return " ".join(words[:CONTEXT_WORDS]) + " … " + " ".join(words[-CONTEXT_WORDS:])


def words_inline(words: list[dict], style: str) -> str:
    """A word diff on one line: git-style `[-old-]{+new+}`, rich colours, or Markdown."""
    parts = []
    for i, word in enumerate(words):
        raw = word["text"]
        text = " ".join(raw.split()) if word["op"] != "equal" else " ".join(raw.replace("\n", " ").split(" "))
        if word["op"] == "equal":
            text = _clip_equal(text, i == 0, i == len(words) - 1)
            parts.append(_esc_md(text) if style == "md" else _esc_rich(text) if style == "rich" else text)
        elif not text.strip():
            parts.append(" ")
        elif word["op"] == "delete":
            parts.append(
                f"~~{_esc_md(text)}~~"
                if style == "md"
                else f"[red strike]{_esc_rich(text)}[/]"
                if style == "rich"
                else f"[-{text}-]"
            )
        else:
            if style != "plain" and i and words[i - 1]["op"] == "delete":
                parts.append(" ")  # "~~old~~ **new**" reads better than "~~old~~**new**"
            parts.append(
                f"**{_esc_md(text)}**"
                if style == "md"
                else f"[green]{_esc_rich(text)}[/]"
                if style == "rich"
                else f"{{+{text}+}}"
            )
    line = "".join(parts).strip()
    return line if len(line) <= 600 else line[:599] + "…"


def _side(d: dict) -> str:
    if d.get("side") == "approved":
        return f"{d.get('db')} approvals ({d.get('tools')} tools approved)"
    if d.get("side") == "index":
        return f"{d.get('db')} now ({d.get('tools')} tools, crawl {d.get('crawl_id')})"
    cid = d.get("crawl_id")
    return f"{d.get('db')} crawl {cid}" + (f" ({d['started_at']})" if d.get("started_at") else "")


def summary_line(payload: dict) -> str:
    sv = payload["summary"]["severity"]
    t = payload["summary"]["tools"]
    parts = [f"{sv['breaking']} breaking", f"{sv['risky']} risky", f"{sv['compatible']} compatible"]
    tools = ", ".join(f"{t[k]} {k}" for k in ("added", "removed", "renamed", "changed", "unknown") if t[k])
    states = ", ".join(
        f"{n} server{'s' if n > 1 else ''} {k}" for k, n in payload["summary"]["servers"].items() if k != "not_crawled"
    )
    return (
        "; ".join(parts)
        + f" — tools: {tools or 'no changes'}, {t['unchanged']} unchanged"
        + (f"; {states}" if states else "")
    )


def _change_line(c: dict, style: str) -> str:
    sev = c["severity"]
    where = c["field"]
    msg = c["message"]
    if msg.startswith(where.split(".")[-1] + " "):
        msg = msg[len(where.split(".")[-1]) + 1 :]  # "description changed" under "description:"
    if c.get("via"):
        msg += " (via " + ", ".join(f"`{v}`" for v in c["via"]) + ")"
    # the message is ours (escape it for the format); the detail after it quotes the tool's text
    msg = _md_msg(msg) if style == "md" else _esc_rich(msg) if style == "rich" else msg
    words = c.get("words")
    if words and any(w["op"] != "equal" for w in words) and c["kind"].endswith("_changed"):
        msg += ": " + words_inline(words, style)
    elif c["kind"] == "injection_appeared" and c.get("new"):
        ex = c["new"]
        msg += f": “{_esc_md(ex) if style == 'md' else _esc_rich(ex) if style == 'rich' else ex}”"
    if style == "md":
        return f"{ICON[sev]} **{sev}** · {_esc_md(where)} · {msg}"
    if style == "rich":
        return f"[{COLOR[sev]}]{sev:<10}[/] {_esc_rich(where)}: {msg}"
    return f"{sev:<10} {where}: {msg}"


def _md_msg(msg: str) -> str:
    # keep `code` spans from the message; escape the rest
    out, inside = [], False
    for chunk in msg.split("`"):
        out.append(safetext.code(chunk) if inside else _esc_md(chunk))
        inside = not inside
    return "".join(out)


def _tool_head(t: dict, style: str) -> str:
    sev = t["severity"]
    rn = t.get("renamed_from")
    extra = ""
    if rn:
        how = "certain" if rn["certain"] else f"{rn['score']:.0%} sure"
        extra = f" ← `{rn['name']}` ({how}: {rn['reason']})"
    if t.get("note"):
        extra += f" — {t['note']}"
    if style == "md":
        return f"- {ICON[sev]} **{t['change']}** {safetext.code(t['id'])}{_md_msg(extra) if extra else ''}"
    if style == "rich":
        return f"  [{COLOR[sev]}]{(sev or '-'):<10}[/] [bold]{t['change']:<8}[/] {_esc_rich(t['id'])}{_esc_rich(extra)}"
    return f"  {(sev or '-'):<10} {t['change']:<8} {t['id']}{extra}"


def _server_head(server: dict, style: str) -> str:
    state = server["state"]
    counts: dict[str, int] = {}
    for tool in server["tools"]:
        counts[tool["change"]] = counts.get(tool["change"], 0) + 1
    changes = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no tool changes"
    err = f" ({server['error']})" if server.get("error") else ""
    what = {
        "failed": "FAILED in the newer crawl — tools not removed, just unknown",
        "removed": "server removed",
        "added": "new server",
        "recovered": "recovered (failed before)",
        "not_crawled": "not crawled in the newer crawl",
        "ok": "ok",
    }.get(state, state)
    if style == "md":
        return f"#### {safetext.code(server['server'])} — {_esc_md(what + err)}: {changes}"
    if style == "rich":
        return f"[bold]{_esc_rich(server['server'])}[/]: {_esc_rich(what + err)} — {changes}"
    return f"{server['server']}: {what}{err} — {changes}"


def diff_text(payload: dict, style: str = "plain", show_compatible: bool = True) -> str:
    esc = _esc_rich if style == "rich" else (lambda x: x)  # plain text is made visible where written
    lines = [f"from {esc(_side(payload['from']))}", f"to   {esc(_side(payload['to']))}"]
    for server in payload["servers"]:
        lines.append("")
        lines.append(_server_head(server, style))
        for tool in server["tools"]:
            lines.append(_tool_head(tool, style))
            if tool["change"] in ("added", "removed", "unknown"):
                detail = [change for change in tool["changes"] if change["kind"] not in ("tool_added", "tool_removed")]
            else:
                detail = [change for change in tool["changes"] if change["kind"] != "tool_renamed"]
            for change in detail:
                if change["severity"] == "compatible" and not show_compatible:
                    continue
                lines.append("      " + _change_line(change, style))
    for note in payload.get("notes") or []:
        lines.append(f"note: {esc(note)}")
    lines.append("")
    lines.append(summary_line(payload))
    return "\n".join(lines)


def diff_markdown(payload: dict, max_tools: int = 200) -> str:
    """A pull-request comment: headline, a per-server table, then the details (folded)."""
    sv = payload["summary"]["severity"]
    head = payload.get("highest")
    title = (
        f"{ICON[head]} **{sv['breaking']} breaking**, {sv['risky']} risky, {sv['compatible']} compatible"
        if head
        else "✅ no tool changes"
    )
    out = [
        "### toolidx diff",
        "",
        title,
        "",
        f"{safetext.code(_side(payload['from']))} → {safetext.code(_side(payload['to']))}",
        "",
    ]
    servers = payload["servers"]
    if servers:
        out += [
            "| server | state | added | removed | renamed | changed | unknown | breaking | risky |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for server in servers:
            n = {
                k: sum(1 for tool in server["tools"] if tool["change"] == k)
                for k in ("added", "removed", "renamed", "changed", "unknown")
            }
            breaking = sum(1 for tool in server["tools"] if "breaking" in tool["severities"])
            risky = sum(1 for tool in server["tools"] if "risky" in tool["severities"])
            out.append(
                f"| {safetext.code(server['server'])} | {server['state']} | {n['added']} | {n['removed']} | "
                f"{n['renamed']} | {n['changed']} | {n['unknown']} | {breaking} | {risky} |"
            )
        out.append("")
        shown = 0
        for server in servers:
            if not server["tools"] and server["state"] in ("ok", "not_crawled"):
                continue
            out.append(_server_head(server, "md"))
            out.append("")
            for tool in server["tools"]:
                if shown >= max_tools:
                    break
                shown += 1
                out.append(_tool_head(tool, "md"))
                for change in tool["changes"]:
                    if change["kind"] in ("tool_added", "tool_removed", "tool_renamed"):
                        continue
                    out.append("  - " + _change_line(change, "md"))
            out.append("")
        total = sum(len(server["tools"]) for server in servers)
        if shown < total:
            out.append(f"_{total - shown} more tool changes not shown; see the JSON output._")
    for n in payload.get("notes") or []:
        out.append(f"> note: {_esc_md(n)}")
    out.append("")
    out.append(f"<sub>{_esc_md(summary_line(payload))}</sub>")
    return "\n".join(out) + "\n"


def history_rows(crawls: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for crawl in crawls:
        failed = crawl["failed_servers"]
        rows.append(
            [
                crawl["id"],
                (crawl.get("started_at") or "")[:19].replace("T", " "),
                f"{crawl['servers_crawled'] - len(failed)}/{crawl['servers_crawled']}",
                crawl["tools"],
                crawl["stale"] or "",
                "-" if crawl["added"] is None else f"+{crawl['added']}",
                "-" if crawl["removed"] is None else f"-{crawl['removed']}",
                "-" if crawl["changed"] is None else f"~{crawl['changed']}",
                ", ".join(failed),
            ]
        )
    return rows


HISTORY_COLUMNS = [
    "crawl",
    "started (UTC)",
    "servers ok",
    "tools",
    "stale",
    "added",
    "removed",
    "changed",
    "failed servers",
]


def audit_markdown(payload: dict) -> str:
    n = payload["findings"]
    out = [
        "### toolidx audit",
        "",
        (
            f"🟠 **{n} finding{'s' if n != 1 else ''}** in {payload['flagged_tools']} of {payload['scanned']} tools"
            if n
            else f"✅ no findings in {payload['scanned']} tools"
        ),
        "",
    ]
    if n:
        out += ["| tool | rule | confidence | where | finding | excerpt |", "|---|---|---|---|---|---|"]
        for t in payload["tools"]:
            for f in t["findings"]:
                out.append(
                    f"| {safetext.code(t['id'])} | {f['rule']} | {f['confidence']} | {_esc_md(f['where'])} | "
                    f"{_esc_md(f['message'])} | {_esc_md(f['excerpt'])} |"
                )
    return "\n".join(out) + "\n"


def audit_rows(payload: dict) -> list[list[Any]]:
    return [
        [t["id"], f["rule"], f["confidence"], f["where"], f["message"], f["excerpt"]]
        for t in payload["tools"]
        for f in t["findings"]
    ]


AUDIT_COLUMNS = ["tool", "rule", "confidence", "where", "finding", "excerpt"]
