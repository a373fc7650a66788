"""All output: rich tables on a terminal, plain text in pipes, versioned JSON for scripts.

JSON shape (every command): {"toolidx": JSON_VERSION, "command": NAME, ...payload}. The version
goes up only on an incompatible change; new keys may appear at any time.
Commands call `render.<command>(result, as_json)`; nothing else in toolidx prints.

Tool text is untrusted: everything written goes through `core.safetext` (control and invisible
characters escaped in every format; rich cells are `Text`, never markup; Markdown escaped).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..core.counts import plural
from ..core.safetext import visible
from ..core.tooldoc import compact_json, first_line
from ..core.vocabulary import JSON_VERSION

if TYPE_CHECKING:  # the result types only: render is imported on every start, they are not
    from pathlib import Path

    from ..catalog.approvals import Approval
    from ..catalog.describe import Description
    from ..catalog.listing import Categories, ToolPage
    from ..catalog.metrics import Metrics
    from ..catalog.similar import SimilarTools
    from ..crawl.client_configs import ClientConfigs
    from ..crawl.combine import MergeResult
    from ..crawl.run import EmbedResult
    from ..diff.audit import AuditReport
    from ..diff.history import CrawlHistory
    from ..diff.snapshot import DiffResult
    from ..health.doctor import DoctorReport
    from ..integrations.export import ExportResult
    from ..search.eval import EvalReport
    from ..search.hybrid import SearchResult
    from ..serve.preflight import CheckReport
    from ..serve.stats import IndexStats
    from ..store.crawls import CrawlSummary
    from .clients import ClientEntry

_out = None
_err = None


def out() -> Any:
    global _out
    if _out is None:
        from rich.console import Console

        _out = Console(highlight=False, soft_wrap=False)
    return _out


def err() -> Any:
    global _err
    if _err is None:
        from rich.console import Console

        _err = Console(stderr=True, highlight=False)
    return _err


def is_tty() -> bool:
    return sys.stdout.isatty()


def write(text: str, stream: Any = None) -> None:
    """Text to stdout (or `stream`), control and invisible characters made visible."""
    (stream or sys.stdout).write(visible(text))


def emit_json(command: str, payload: Mapping[str, Any]) -> None:
    # C1 controls, bidi and zero-width characters become \uXXXX: the same JSON, safe on a terminal
    write(
        json.dumps({"toolidx": JSON_VERSION, "command": command, **payload}, ensure_ascii=False, indent=2, default=str)
        + "\n"
    )


def _text(value: Any) -> Any:
    """A rich cell: plain text (never markup), control characters made visible."""
    from rich.text import Text

    return Text(visible("" if value is None else str(value)))


def error(exc: Exception, as_json: bool) -> None:
    """One line on stderr (and a JSON object on stdout with --json)."""
    line = str(exc)
    write(f"toolidx: error: {line}\n", sys.stderr)
    if as_json:
        to_json = getattr(exc, "to_json", None)
        emit_json("error", to_json() if to_json else {"error": type(exc).__name__, "message": line})


def _remark(text: str) -> None:
    """A line for a person on stderr. On a terminal it wraps between words, as a table's cells do
    (the terminal itself would cut `toolidx crawl --server` mid-word at the 80th column)."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        write(f"{text}\n", sys.stderr)
        return
    from rich.text import Text

    err().print(Text(visible(text)), overflow="fold")


def warning(message: str) -> None:
    _remark(f"toolidx: warning: {message}")


def note(message: str) -> None:
    """A human remark on stderr (never mixed into stdout data)."""
    _remark(message)


# Columns of names a person copies (tool ids, server names): never broken across lines, on an
# 80-column terminal the other columns wrap instead (#36 item 7: `playwright/browser_ta` / `ke_screenshot`)
WHOLE_COLUMNS = frozenset({"id", "tool", "server"})


def table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    """A rich table on a terminal; tab-separated lines (with a header) in a pipe."""
    if not is_tty():
        write("\t".join(columns) + "\n")
        for r in rows:
            write("\t".join("" if v is None else visible(str(v), keep_newlines=False) for v in r) + "\n")
        return
    from rich.table import Table

    t = Table(title=_text(title) if title else None, show_lines=False, header_style="bold")
    for i, c in enumerate(columns):
        if c in WHOLE_COLUMNS:
            longest = max((len(visible(str(r[i]), keep_newlines=False)) for r in rows if r[i] is not None), default=0)
            t.add_column(c, no_wrap=True, min_width=max(len(c), longest))
        else:
            t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(_text(v) for v in r))
    out().print(t)


# --- crawl / embed -----------------------------------------------------------------------------
def crawl_summary(summary: CrawlSummary, as_json: bool, sources: dict | None = None, index: str | None = None) -> None:
    """The crawl's table and its last lines; `index`: where it was written (a file, or the
    catalog's URL as public_url shows it), the summary's last line and the JSON's "index"."""
    d = summary.to_json()
    if index is not None:
        d["index"] = index
    if sources is not None:  # crawl --from: the files read, skipped and merged
        d["from"] = sources
    if as_json:
        emit_json("crawl", d)
        return
    rows = [
        [
            s["server"],
            s["status"],
            s["tools"] if s["tools"] is not None else "-",
            len(s["invalid_tools"]) or "",
            f"{s['duration_ms'] / 1000:.1f}s",
            s["error"] or "",
        ]
        for s in d["servers"]
    ]
    table(["server", "status", "tools", "invalid", "time", "error"], rows)
    _stderr_notes((s["server"], s["stderr"]) for s in d["servers"])
    note(
        f"crawl {d['crawl_id']}: {d['servers_ok']} ok, {d['servers_failed']} failed; "
        f"{plural(d['tools'], 'tool')} ({d['added']} added, {d['changed']} changed, {d['removed']} removed); "
        f"{d['embedded']} embedded" + ("" if d["semantic"] else " (keyword-only: no model)")
    )
    for r in d["removed_servers"]:
        note(
            f"removed server {_one(r['server'], 60)} ({plural(r['tools'], 'tool')}): "
            + (
                f"another config crawled it ({_one(r['owner'] or 'none recorded')}); --prune-other-configs"
                if r["other_config"]
                else "no longer in this config"
            )
        )
    for r in d["servers"]:
        if r.get("replaced_owner"):
            warning(
                f"server {_one(r['server'], 60)} was crawled by another config ({_one(r['replaced_owner'])}): "
                f"this crawl replaced it, it is {_one(r['owner'])}'s now (rename one of them to keep both)"
            )
    if d["other_configs_servers"]:
        note(
            f"kept {plural(d['other_configs_servers'], 'server')} that other configs crawled into this index "
            "(a crawl removes only its own config's servers; --prune-other-configs removes them too)"
        )
    if index is not None:
        note(f"index: {visible(index, keep_newlines=False)}")


def crawl_config(path: str) -> None:
    """`crawl` with no --config: which config it crawls (the one the index recorded)."""
    note(f"crawling {_one(path, 200)}, the config this index was crawled from (no --config given)")


def client_configs(found: ClientConfigs) -> None:
    """Which client files `crawl --from` read (on stderr, before the crawl), and what it merged."""
    for f in found.files:
        if f.skipped:  # one line each: which folder file, and the per-run opt-in that names it
            names = ", ".join(_one(n, 40) for n in f.servers[:5]) + (", …" if len(f.servers) > 5 else "")
            warning(
                f"skipped {f.path} ({f.client}): it came with this folder, not from you, so nothing in it "
                f"was run ({plural(len(f.servers), 'server')}{': ' + names if names else ''}); "
                f"to crawl it this once: --trust-folder-config {f.path}"
            )
        elif f.error:
            warning(f"{f.client}: {f.path}: left out: {f.error}")
        else:
            note(f"read {f.path} ({f.client}): {plural(len(f.servers), 'server')}")
        for name, where in f.declined.items():
            note(f"{_one(name, 60)} in {f.path}: declined in Claude Code ({where}: disabledMcpjsonServers): skipped")
    for kept, others in found.duplicates.items():
        note(f"{kept}: also listed as {', '.join(others)} (same launch line): crawled once")
    for new, was in found.renamed.items():
        note(f"{was}: another server has that name: crawled as {new}")


def _stderr_notes(servers: Iterable[tuple[str, list[str] | None]]) -> None:
    """Under a table of servers: what each failed one last printed on stderr (`core.servers.stderr_lines`)."""
    for name, lines in servers:
        if lines:
            note(f"{name}: last stderr lines:\n" + "".join(f"  {ln}\n" for ln in lines).rstrip("\n"))


def embed_result(res: EmbedResult, as_json: bool) -> None:
    if as_json:
        emit_json("embed", res.to_json())
    else:
        note(f"embedded {plural(res.embedded, 'tool')} with {res.model}")


def _one(text: str, limit: int = 120) -> str:
    """An index's text on one line, cut (what an input says starts a server is untrusted)."""
    text = visible(text, keep_newlines=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def merge_result(res: MergeResult, as_json: bool) -> None:
    d = res.to_json()
    if as_json:
        emit_json("merge", d)
        return
    table(
        ["input", "servers", "tools", "crawls", "model"],
        [[i["path"], i["servers"], i["tools"], i["crawls"], i["embed_model"] or "-"] for i in d["inputs"]],
    )
    for c in d["conflicts"]:
        dropped = ", ".join(f"{x['path']} ({x['crawled_at']})" for x in c["dropped"])
        note(
            f"conflict: server {c['server']!r} kept from {c['kept']} (crawled {c['kept_crawled_at']}), "
            f"newer than {dropped}"
        )
        if c.get("launch_differs"):
            says = "; ".join(
                f"{x['path']}: {_one(str(x['command'] or x['url'] or x['transport']))}"
                + (f" {_one(' '.join(map(str, x['args'] or [])))}" if x.get("args") else "")
                for x in c["launches"]
            )
            note(f"launch line differs: server {c['server']!r} starts differently by input ({says})")
    if d.get("approvals_dropped"):
        note(
            f"{plural(d['approvals_dropped'], 'approval')} in the inputs not carried over: approvals come only from "
            f"`toolidx approve --db {d['output']}` on the merged index, after review (`toolidx diff --approved`)"
        )
    if d.get("untrusted"):
        note(
            f"{plural(len(d['untrusted']), 'server')} with launch lines no crawl on this machine wrote "
            f"({', '.join(d['untrusted'][:10])}{', …' if len(d['untrusted']) > 10 else ''}): serve and check "
            "start them only with --config naming their config, or --trust-index"
        )
    vecs = f"{d['vectors']} vectors copied ({d['embed_model']})" if d["embed_model"] else "no vectors (keyword-only)"
    if d["missing_vectors"] and d["embed_model"]:
        vecs += f"; {plural(d['missing_vectors'], 'tool')} without one: run `toolidx embed --db {d['output']}`"
    note(
        f"merged {plural(len(d['inputs']), 'index', 'indexes')} into {d['output']}: "
        f"{plural(d['servers'], 'server')}, {plural(d['tools'], 'tool')}, "
        f"{d['crawls']} crawls; {vecs}; {plural(len(d['conflicts']), 'conflict')}"
    )


# Sections below are per command group; keep each group's renderers together.


# --- catalog: describe / list / categories / similar -------------------------------------------
def _truncation_note(payload: Mapping[str, Any]) -> None:
    t = payload.get("truncated")
    if not t:
        return
    cut = [
        f"{t['descriptions_shortened']} descriptions shortened" if t.get("descriptions_shortened") else "",
        f"{t['schemas_dropped']} schemas dropped" if t.get("schemas_dropped") else "",
        f"{t['details_dropped']} hits' signals dropped" if t.get("details_dropped") else "",
        f"{t['items_dropped']} items dropped" if t.get("items_dropped") else "",
    ]
    note(
        f"shortened to fit ~{t['max_tokens']} tokens (now ~{t['estimated_tokens']}): "
        + ", ".join(c for c in cut if c)
        + ("" if t.get("fits") else "; still over budget")
    )


def _fit(payload: Mapping[str, Any], list_key: str | None, max_tokens: int | None) -> Mapping[str, Any]:
    """The one place the CLI applies a token budget (serve applies the same core.budget to its
    answers); the library returns whole results."""
    if max_tokens is None:
        return payload
    from ..core.budget import fit_budget

    return fit_budget(payload, list_key, max_tokens)


def describe_result(res: Description, as_json: bool, max_tokens: int | None = None) -> None:
    d = _fit(res.to_json(), None, max_tokens)
    if as_json:
        emit_json("describe", d)
        return
    if "example_arguments" in d and d.get("examples"):  # --detail full shows the generated one already
        d = {
            **d,
            "examples": [
                e for e in d["examples"] if e["source"] != "generated" or e["arguments"] != d["example_arguments"]
            ],
        }
    fields = [
        ("id", d["id"]),
        ("title", d.get("title")),
        ("description", d.get("description")),
        ("tags", ", ".join(d.get("tags") or [])),
        ("category", d.get("category")),
        ("hints", ", ".join(d.get("hints") or [])),
        ("required", ", ".join(d.get("required") or [])),
        ("params", ", ".join(d.get("params") or [])),
    ]
    if d.get("stale"):
        fields.append(("stale", d.get("stale_reason") or "its server failed at the last crawl"))
    info = d.get("server_info") or {}
    if info:
        fields.append(
            (
                "server",
                " ".join(
                    str(x)
                    for x in (
                        info.get("server_name"),
                        info.get("server_version"),
                        f"({info.get('transport')}, {info.get('status')})",
                    )
                    if x
                ),
            )
        )
    m = d.get("metrics")
    if m is not None:
        fields.append(("usage", _usage_line(m)))
    fields = [(k, v) for k, v in fields if v not in (None, "")]
    params = d.get("parameters")
    prow = [
        [
            p["name"],
            p["type"],
            "yes" if p["required"] else "",
            "" if p.get("default") is None else compact_json(p["default"]),
            "" if not p.get("enum") else ", ".join(compact_json(e) for e in p["enum"]),
            p.get("description") or "",
        ]
        for p in params or []
    ]
    pcols = ["parameter", "type", "required", "default", "enum", "description"]
    if not is_tty():
        for k, v in fields:
            write(f"{k}\t{visible(str(v), keep_newlines=False)}\n")
        if params is not None:
            write("\n")
            table(pcols, prow)
        if "example_arguments" in d:
            write(f"\nexample_arguments\t{compact_json(d['example_arguments'])}\n")
            for key in ("input_schema", "output_schema", "annotations"):
                if d.get(key) is not None:
                    write(f"{key}\t{compact_json(d[key])}\n")
        for e in d.get("examples") or []:
            write(
                f"example ({e['source']}{'' if e.get('valid', True) else ', does not validate'})\t"
                f"{visible(compact_json(e['arguments']), keep_newlines=False)}\n"
            )
        _truncation_note(d)
        return
    from rich.panel import Panel
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for k, v in fields:
        grid.add_row(k, _text(v))
    out().print(Panel(grid, title=_text(d["id"]), title_align="left"))
    if params is not None:
        if prow:
            table(pcols, prow, title="parameters")
        else:
            note("no parameters")
    if "example_arguments" in d:
        from rich.syntax import Syntax

        out().print("example arguments" + ("" if d.get("example_valid", True) else " (does not validate)"))
        out().print(Syntax(visible(json.dumps(d["example_arguments"], indent=2, ensure_ascii=False)), "json"))
        for key in ("input_schema", "output_schema", "annotations"):
            if d.get(key) is not None:
                out().print(key)
                out().print(Syntax(visible(json.dumps(d[key], indent=2, ensure_ascii=False)), "json"))
    if d.get("examples"):
        table(
            ["source", "arguments"],
            [
                [e["source"] + ("" if e.get("valid", True) else " (invalid)"), compact_json(e["arguments"])]
                for e in d["examples"]
            ],
            title="usage examples",
        )
    _truncation_note(d)


def _usage_line(m: Mapping[str, Any]) -> str:
    if not m.get("calls"):
        return "never called through toolidx serve"
    rate = "n/a" if m.get("success_rate") is None else f"{m['success_rate']:.0%}"
    return (
        f"{m['calls']} calls, {rate} ok, p50 {_ms(m.get('p50_ms'))}, p95 {_ms(m.get('p95_ms'))}, "
        f"last used {m.get('last_used')}"
    )


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:g} ms"


def list_result(page: ToolPage, as_json: bool, max_tokens: int | None = None) -> None:
    res = _fit(page.to_json(), "items", max_tokens)
    if as_json:
        emit_json("list", res)
        return
    if any("usage" in t for t in res["items"]):
        rows = [
            [
                t["id"],
                t["usage"]["calls"],
                "" if t["usage"]["success_rate"] is None else f"{t['usage']['success_rate']:.0%}",
                t["usage"]["last_used"] or "",
                t.get("description") or "",
            ]
            for t in res["items"]
        ]
        table(["id", "calls", "success", "last used", "description"], rows)
    elif res.get("sort") == "category":  # the order's key, shown: else the groups look arbitrary
        rows = [
            [t.get("category") or "-", t["id"], t.get("title") or "", t.get("description") or ""] for t in res["items"]
        ]
        table(["category", "id", "title", "description"], rows)
    else:
        rows = [[t["id"], t.get("title") or "", t.get("description") or ""] for t in res["items"]]
        table(["id", "title", "description"], rows)
    more = f"; next: --page {res['next_page']}" if res.get("next_page") else ""
    note(f"page {res['page']} of {max(res['pages'], 1)}, {plural(res['total'], 'tool')}{more}")
    for n in res.get("notes", []):
        note(n)
    _truncation_note(res)


def categories_result(cats: Categories, as_json: bool) -> None:
    res = cats.to_json()
    if as_json:
        emit_json("categories", res)
        return
    table(
        ["category", "tools", "definition"],
        [[c["name"] or "-", c["count"], c.get("definition") or ""] for c in res["categories"]],
    )
    if is_tty() or res["tags"]:
        table(["tag", "tools"], [[t["name"], t["count"]] for t in res["tags"]])
    table(
        ["server", "tools", "stale", "status", "error"],
        [[s["name"], s["count"], s["stale"] or "", s["status"], s.get("error") or ""] for s in res["servers"]],
    )
    _stderr_notes((s["name"], s.get("stderr")) for s in res["servers"])
    note(plural(res["total"], "tool"))


def similar_result(found: SimilarTools, as_json: bool, max_tokens: int | None = None) -> None:
    res = _fit(found.to_json(), "similar", max_tokens)
    if as_json:
        emit_json("similar", res)
        return
    rows = [[h["id"], f"{h['score']:.2f}", "yes" if h["likely_duplicate"] else "", h["reason"]] for h in res["similar"]]
    table(["id", "score", "duplicate", "why"], rows, title=f"like {res['tool']} ({res['method']})")
    note(
        f"{len(res['similar'])} similar to {res['tool']} by {res['method']} similarity; "
        f"{plural(res['duplicates'], 'likely duplicate')}"
    )
    _truncation_note(res)


# --- serve / stats -----------------------------------------------------------------------------
def serve_config(res: ClientEntry, as_json: bool) -> None:
    if as_json:
        emit_json("serve-config", res.to_json())
        return
    write(res.text)
    note(f"Merge this into your {res.client} config: " + "; ".join(res.where))
    if res.env_needed:
        note("Fill in the environment variables your servers need: " + ", ".join(res.env_needed))
    for line in res.notes:
        note(line)


def ui_link(url: str, as_json: bool) -> None:
    """`toolidx ui`'s one-time link, on stdout at once (the server keeps running after it)."""
    if as_json:
        emit_json("ui", {"url": url})
    else:
        write(f"{url}\n")
        note("Open this link in your browser to use the console (it works once); Ctrl-C to stop.")
    sys.stdout.flush()


def export_result(res: ExportResult, as_json: bool, output: Path | None = None) -> None:
    """The bare tool list, document or module (or, with --json, the envelope) on stdout or into
    `output`."""
    if as_json:
        text = json.dumps({"toolidx": JSON_VERSION, "command": "export", **res.to_json()}, ensure_ascii=False, indent=2)
        text += "\n"
    else:
        text = res.text()
    if output is None:
        sys.stdout.write(text)
        return
    from pathlib import Path

    Path(output).write_text(text, encoding="utf-8")
    note(f"wrote {plural(res.count, 'tool')} ({res.format}) to {output}")


def check_result(report: CheckReport, as_json: bool) -> None:
    if as_json:
        emit_json("check", report.to_json())
        return

    def yn(v: bool | str | None) -> str:
        return "-" if v is None else "yes" if v is True else "no" if v is False else str(v)

    rows = [
        [
            t.id or t.requested,
            yn(t.indexed),
            yn(t.in_scope),
            yn(t.approved),
            yn(t.server_started),
            yn(t.listed),
            yn(t.definition),
            yn(t.callable),
            (t.reason or "") + (f" (did you mean {', '.join(t.suggestions[:3])}?)" if t.suggestions else ""),
        ]
        for t in report.tools
    ]
    table(["tool", "indexed", "in scope", "approved", "server starts", "listed", "definition", "callable", "why"], rows)
    note(f"check: {report.callable} callable, {report.not_callable} not" + ("" if report.ok else " (exit 1)"))


def stats_result(s: IndexStats, as_json: bool) -> None:
    if as_json:
        emit_json("stats", s.to_json())
        return
    rows = [[r.server, r.status or "", r.tools, r.tokens, r.max_tool_tokens] for r in s.servers]
    table(["server", "status", "tools", "tokens", "largest tool"], rows)
    head = (
        f"{s.tools} tool definitions: ~{s.tool_tokens:,} tokens; toolidx serve's {s.meta_tools} "
        f"meta-tools: ~{s.meta_tokens:,} tokens."
    )
    if s.saved_tokens >= 0:
        note(f"{head} Saved: ~{s.saved_tokens:,} tokens ({s.saving_pct}%, {s.ratio}x smaller). Tokens: {s.tokenizer}.")
    else:  # a small catalog: the meta-tools cost more than the definitions they stand for
        note(
            f"{head} Serving costs ~{-s.saved_tokens:,} tokens more than the definitions themselves: "
            f"the meta-tools pay off from about {s.break_even} tools of this size. Tokens: {s.tokenizer}."
        )
    u = s.usage
    if u is not None:

        def row(name: str, m: Metrics) -> list[Any]:
            rate = "" if m.success_rate is None else f"{m.success_rate:.0%}"
            return [name, m.calls, rate, _ms(m.p50_ms), _ms(m.p95_ms), m.last_used or ""]

        cols = ["calls", "success", "p50", "p95", "last used"]
        if u.tools or u.servers:  # else one line, not two empty tables
            table(["tool", *cols], [row(tid, m) for tid, m, _ in u.tools], title="usage per tool")
            table(["server", *cols], [row(name, m) for name, m in u.servers], title="usage per server")
        if u.learned:
            table(
                ["tool", "pairs", "tokens", "last", "newest request"],
                [
                    [
                        t["id"],
                        t["pairs"],
                        ", ".join(f"{k or '(stdio)'} {n}" for k, n in t["tokens"].items()),
                        t["last"],
                        t["requests"][0] if t["requests"] else "",
                    ]
                    for t in u.learned
                ],
                title="learned from usage (toolidx forget deletes it)",
            )
        for n in u.notes:
            note(n)
        if u.tools or u.servers:
            note(f"{plural(u.calls, 'call')} recorded in {u.usage_file}")
        elif not u.notes:
            note(f"no calls recorded {'for these servers ' if s.filters else ''}in {u.usage_file}")


def forget_result(n: int, tool: str | None, token: str | None, usage_file: str, as_json: bool) -> None:
    if as_json:
        emit_json("forget", {"forgot": n, "tool": tool, "token": token, "usage_file": usage_file})
        return
    what = " and ".join(
        x for x in (f"tool {tool}" if tool is not None else "", f"token {token!r}" if token is not None else "") if x
    )
    note(f"forgot {plural(n, 'learned pair')}{' of ' + what if what else ''} in {usage_file}")


# --- diff / history / audit --------------------------------------------------------------------
def approve_result(approval: Approval, as_json: bool) -> None:
    res = approval.to_json()
    if as_json:
        emit_json("approve", res)
        return
    if res["action"] == "revoke":
        for t in res["tools"]:
            write(f"{t['id']}\t{'revoked' if t['revoked'] else 'was not approved'}\n")
        note(f"revoked {plural(res['count'], 'approval')} in {res['db']}")
        return
    was = {
        "unapproved": "approved (new)",
        "changed": "approved (changed since the last approval)",
        "approved": "already approved (unchanged)",
    }
    for t in res["tools"]:
        write(f"{t['id']}\t{was[t['was']]}\n")
    note(f"approved {plural(res['count'], 'tool')} as {res['by']} at {res['at']} in {res['db']}")


def diff_result(result: DiffResult, fmt: str, fail_on: list[str], show_compatible: bool = True) -> None:
    """`fmt`: text (rich on a terminal), json, markdown (a pull-request comment)."""
    from . import diffview

    payload = result.to_json(fail_on)
    if fmt == "json":
        emit_json("diff", payload)
    elif fmt == "markdown":
        write(diffview.diff_markdown(payload))
    elif is_tty():
        out().print(diffview.diff_text(payload, "rich", show_compatible))  # tool text escaped in diffview
    else:
        write(diffview.diff_text(payload, "plain", show_compatible) + "\n")
    if fmt != "json" and payload["gate_failed"]:
        note(f"--fail-on {','.join(payload['fail_on'])}: matching changes found (exit 1)")


def history_result(res: CrawlHistory, as_json: bool) -> None:
    from . import diffview

    if as_json:
        emit_json("history", res.to_json())
        return
    table(diffview.HISTORY_COLUMNS, diffview.history_rows(res.crawls))
    if not res.crawls:
        note("no crawls yet: run `toolidx crawl --config FILE`")


def audit_result(report: AuditReport, fmt: str) -> None:
    from . import diffview

    payload = report.to_json()
    if fmt == "json":
        emit_json("audit", payload)
        return
    if fmt == "markdown":
        write(diffview.audit_markdown(payload))
        return
    if payload["findings"]:
        table(diffview.AUDIT_COLUMNS, diffview.audit_rows(payload))
    note(
        f"audit: {plural(payload['findings'], 'finding')} in {payload['flagged_tools']} of {payload['scanned']} tools"
        + (f" ({', '.join(f'{k} {v}' for k, v in payload['by_rule'].items())})" if payload["by_rule"] else "")
    )


# --- search / eval -----------------------------------------------------------------------------
def doctor_result(report: DoctorReport, as_json: bool) -> None:
    if as_json:
        emit_json("doctor", report.to_json())
        return
    table(["status", "area", "check", "detail"], [[c.status, c.area, c.name, c.detail] for c in report.checks])
    fixes = [c for c in report.checks if c.fix and c.status in ("fail", "warn")]
    for c in fixes:
        note(f"{c.status}: {c.area}/{c.name}: {c.fix}")
    counts = report.to_json()["counts"]
    note(
        f"doctor: {counts['fail']} failed, {counts['warn']} warning(s), {counts['ok']} ok"
        + ("" if report.ok else " (exit 1)")
    )


def search_result(result: SearchResult, as_json: bool, max_tokens: int | None = None) -> None:
    payload = _fit(result.to_json(), "hits", max_tokens)
    if as_json:
        emit_json("search", payload)
        return
    for n in payload["notes"]:
        note(n)
    if payload["hits"]:
        # a runner-up far below the best is still shown (an alternative), but "0.00" would read
        # as a bug: say it is under 0.01
        rows = [
            [
                f"{h['score']:.2f}" if h["score"] >= 0.005 else "<0.01",
                h["id"],
                h.get("description", ""),
                "; ".join(filter(None, (h.get("note"), h.get("why")))),
            ]
            for h in payload["hits"]
        ]
        table(["score", "tool", "description", "why"], rows)
    _truncation_note(payload)
    if payload["no_match"] and not payload["notes"]:
        note("no good match")


def eval_report(report: EvalReport, as_json: bool, misses: int = 0) -> None:
    """The metrics table, one paired-comparison line per mode pair, and with `misses` > 0 up to
    that many missed queries per mode (JSON always carries them all)."""
    if as_json:
        emit_json("eval", report.to_json())
        return
    ks = report.k
    extra = ["All@10"] if report.labels != "any" else []  # with "any" labels it equals R@10
    keys = [*[f"R@{k}" for k in ks], *extra, "MRR@10", "nDCG@10", "R@5@threshold"]
    cols = ["mode", "ran", *[k.replace("@threshold", "@thr") for k in keys], "abstain"]
    rows = []
    for mode, e in report.modes.items():
        m = e.metrics
        ab = e.abstention
        rows.append([mode, e.mode_used, *[f"{m.get(k, 0):.3f}" for k in keys], f"{ab['rate']:.3f}" if ab else "-"])
        for g, gm in (e.groups or {}).items():
            rows.append([f"  {g}", f"n={gm['n']}", *[f"{gm.get(k, 0):.3f}" for k in keys], ""])
    table(cols, rows, title=f"{report.evaluated} queries ({report.infeasible} with no relevant tool)")
    _lines([_paired_line(p) for p in report.paired])
    if misses > 0:
        _misses_table(report, misses)
    counts = {mode: len(e.misses) for mode, e in report.modes.items()}
    more = {mode: n - misses for mode, n in counts.items() if n > misses}
    if more:
        what = "queries whose relevant tool is not ranked 1st" if misses == 0 else "more misses not shown"
        note(
            f"{what}: "
            + ", ".join(f"{mode} {n}" for mode, n in more.items())
            + ("; --misses N lists them" if misses == 0 else "; --json lists them all")
        )
    if report.unresolved["count"]:
        note(
            f"{report.unresolved['count']} queries skipped: none of their relevant tools is in the index "
            f"(e.g. {report.unresolved['queries'][0]['id']})"
        )
    if report.partly_unresolved["count"]:
        note(f"{report.partly_unresolved['count']} queries name relevant tools missing from the index")


def _lines(lines: list[str]) -> None:
    """Plain result lines after a table (a blank line first in a pipe, as `show` separates blocks)."""
    if not lines:
        return
    if is_tty():
        for line in lines:
            out().print(_text(line))
    else:
        write("\n" + "\n".join(lines) + "\n")


def _p_value(p: float) -> str:
    return f"{p:.2f}" if p >= 0.1 else f"{p:.2g}"


def _paired_line(pair: dict) -> str:
    parts = [
        f"{key} +{s['better']}/-{s['worse']} ({'sign test p' if i == 0 else 'p'}={_p_value(s['p'])})"
        for i, (key, s) in enumerate(pair["metrics"].items())
    ]
    return f"{pair['mode']} vs {pair['vs']}: " + ", ".join(parts)


def _misses_table(report: EvalReport, limit: int) -> None:
    depth = report.depth
    rows = [
        [
            mode,
            m["id"],
            m["rank"] if m["rank"] is not None else f">{depth}",
            m["top"][0] if m["top"] else "-",
            m.get("found") or (m["relevant"][0] if m["relevant"] else "-"),
            first_line(m["query"], 60),
        ]
        for mode, e in report.modes.items()
        for m in e.misses[:limit]
    ]
    if not rows:
        return
    if not is_tty():
        write("\n")
    table(
        ["mode", "query", "rank", "top hit", "relevant", "text"],
        rows,
        title=f"misses: the first relevant tool is not ranked 1st (up to {limit} per mode)",
    )
