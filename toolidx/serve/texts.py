"""The agent-facing text of serve's answers: the compact block beside each structured payload
(`Answer.text`), what an agent reads first. Built from the payload after its token budget, so the
text never says more than the payload holds."""

from __future__ import annotations

from ..core.counts import plural
from ..core.tooldoc import compact_json


def trunc_note(payload: dict) -> str:
    t = payload.get("truncated")
    if not t:
        return ""
    parts = []
    if t.get("items_dropped"):
        parts.append(f"{t['items_dropped']} items dropped")
    if t.get("schemas_dropped"):
        parts.append("schemas dropped")
    if t.get("details_dropped"):
        parts.append("match details dropped")
    if t.get("descriptions_shortened"):
        parts.append("descriptions shortened")
    return f"\n(Shortened to fit {t.get('max_tokens')} tokens: {', '.join(parts)}.)"


def search_text(p: dict) -> str:
    if p["no_match"]:
        lines = [f"No good match for {p['query']!r}. {p.get('message', '')}"]
        if p["hits"]:
            lines.append("Weak candidates: " + ", ".join(f"{h['id']} ({h.get('score')})" for h in p["hits"][:3]))
    else:
        lines = [f"{len(p['hits'])} match(es) for {p['query']!r} ({p.get('mode_used')}):"]
        for n, h in enumerate(p["hits"], 1):
            lines.append(f"{n}. {h['id']} ({h.get('score')}) — {h.get('description', '')}")
            if h.get("note"):
                lines.append(f"   {h['note']}")
            if h.get("cautions"):
                lines.append("   caution: " + "; ".join(h["cautions"]))
            if "input_schema" in h:
                lines.append(f"   input schema: {compact_json(h['input_schema'])}")
        lines.append("Next: describe_tool for the arguments, then execute_tool.")
    for n in p.get("notes", []):
        lines.append(f"Note: {n}")
    return "\n".join(lines) + trunc_note(p)


def list_text(p: dict, sort: str, order: str) -> str:
    items = p["items"]
    first = ((p.get("page") or 1) - 1) * (p.get("page_size") or len(items)) + 1
    then = f"next_page: {p['next_page']}" if p["next_page"] else "last page"
    if p["next_page"] and p.get("page_size_asked"):  # the budget shortened the page: ask the next as long
        then += f" with page_size {p['page_size']}"
    head = (
        f"Tools {first}-{first + len(items) - 1} of {p['total']} (page {p['page']}/{p['pages']}, "
        f"by {sort} {order}); {then}"
        if items
        else f"No tools on page {p.get('page')} (total {p['total']})."
    )
    lines = [head]
    for t in items:
        flags = "".join(f" [{f}]" for f in ("read_only", "destructive", "stale") if t.get(f))
        u = t.get("usage")
        rate = f", {u['success_rate']:.0%} ok" if u and u.get("success_rate") is not None else ""
        used = f" ({plural(u['calls'], 'call')}{rate})" if u else ""
        lines.append(f"- {t['id']}{flags}{used} — {t.get('description', '')}")
        if "input_schema" in t:
            lines.append(f"  input schema: {compact_json(t['input_schema'])}")
    return "\n".join(lines) + trunc_note(p)


def describe_text(p: dict) -> str:
    lines = []
    head = p.get("id") or p.get("tool") or ""
    title = p.get("title")
    lines.append(f"{head}" + (f" — {title}" if title else ""))
    if p.get("description"):
        lines.append(str(p["description"]))
    ann = p.get("annotations")
    if ann:
        lines.append(f"Annotations: {compact_json(ann)}")
    params = p.get("parameters")
    if isinstance(params, list) and params:
        lines.append("Parameters:")
        for r in params:
            bits = [str(r.get("type") or "any"), "required" if r.get("required") else "optional"]
            if r.get("default") is not None:
                bits.append(f"default {compact_json(r['default'])}")
            if r.get("enum"):
                bits.append("one of " + compact_json(r["enum"]))
            desc = f": {r['description']}" if r.get("description") else ""
            lines.append(f"- {r.get('name')} ({', '.join(bits)}){desc}")
    elif isinstance(params, list):
        lines.append("Parameters: none")
    elif p.get("params"):
        req = set(p.get("required") or [])
        lines.append(
            "Parameters: "
            + ", ".join(f"{n}{' (required)' if n in req else ''}" for n in p["params"])
            + " (describe_tool with detail \"schema\" for types)"
        )
    if p.get("hints"):
        lines.append("Hints: " + ", ".join(p["hints"]))
    if "example_arguments" in p:
        lines.append(f"Example arguments: {compact_json(p['example_arguments'])}")
    if "input_schema" in p:
        lines.append(f"Input schema: {compact_json(p['input_schema'])}")
    for e in p.get("examples") or []:
        lines.append(f"Example ({e.get('source')}): {compact_json(e.get('arguments'))}")
    m = p.get("metrics")
    if m:
        rate = "n/a" if m.get("success_rate") is None else f"{m['success_rate']:.0%}"
        lines.append(
            f"Usage: {plural(m.get('calls', 0), 'call')}, {rate} ok, p50 {m.get('p50_ms')} ms, "
            f"p95 {m.get('p95_ms')} ms, last used {m.get('last_used') or 'never'}"
        )
    if p.get("output_schema"):
        lines.append(f"Output schema: {compact_json(p['output_schema'])}")
    return "\n".join(lines) + trunc_note(p)


def categories_text(p: dict) -> str:
    def fmt(rows: list[dict], status: bool = False) -> str:
        return (
            ", ".join(
                f"{r.get('name') or '(none)'} ({r.get('count')}"
                + (f", {r['status']}" if status and r.get("status") not in (None, "ok") else "")
                + ")"
                for r in rows
            )
            or "none"
        )

    lines = [f"{plural(p['total_tools'], 'tool')}.", f"Categories: {fmt(p['categories'])}"]
    if "tags" in p:
        lines.append(f"Tags: {fmt(p['tags'])}")
    if "servers" in p:
        lines.append(f"Servers: {fmt(p['servers'], status=True)}")
    return "\n".join(lines) + trunc_note(p)


def similar_text(p: dict) -> str:
    if not p["similar"]:
        return f"No similar tools to {p['tool']} here."
    lines = [f"Similar to {p['tool']} ({p.get('method')}):"]
    for n, s in enumerate(p["similar"], 1):
        dup = ", likely duplicate" if s.get("likely_duplicate") else ""
        why = f" — {s['reason']}" if s.get("reason") else ""
        lines.append(f"{n}. {s['id']} ({s.get('score')}{dup}){why}")
    return "\n".join(lines) + trunc_note(p)


def invalid_arguments_text(tool_id: str, errors: list[dict], p: dict) -> str:
    """execute_tool's refusal of arguments that do not fit the tool's input schema: every error
    as found, the example and the schema as far as the budgeted payload `p` kept them."""
    lines = [f"Not run: the arguments do not fit the input schema of {tool_id}:"]
    lines += [f"- {e['path']}: {e['message']}" for e in errors]
    if "example_arguments" in p:
        lines.append(f"Example arguments: {compact_json(p['example_arguments'])}")
    if "input_schema" in p:
        lines.append(f"Input schema: {compact_json(p['input_schema'])}")
    return "\n".join(lines)
