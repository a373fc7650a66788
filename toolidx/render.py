"""All output: rich tables on a terminal, plain text in pipes, versioned JSON for scripts.

JSON shape (every command): {"toolidx": JSON_VERSION, "command": NAME, ...payload}. The version
goes up only on an incompatible change; new keys may appear at any time.
Commands call `render.<command>(result, as_json)`; nothing else in toolidx prints.
"""

from __future__ import annotations

import json
import sys
from typing import Any

JSON_VERSION = 1

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


def emit_json(command: str, payload: dict) -> None:
    sys.stdout.write(json.dumps({"toolidx": JSON_VERSION, "command": command, **payload},
                                ensure_ascii=False, indent=2, default=str) + "\n")


def error(exc: Exception, as_json: bool) -> None:
    """One line on stderr (and a JSON object on stdout with --json)."""
    line = str(exc)
    sys.stderr.write(f"toolidx: error: {line}\n")
    if as_json:
        to_json = getattr(exc, "to_json", None)
        emit_json("error", to_json() if to_json else {"error": type(exc).__name__, "message": line})


def warning(message: str) -> None:
    sys.stderr.write(f"toolidx: warning: {message}\n")


def note(message: str) -> None:
    """A human remark on stderr (never mixed into stdout data)."""
    sys.stderr.write(f"{message}\n")


def table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    """A rich table on a terminal; tab-separated lines (with a header) in a pipe."""
    if not is_tty():
        sys.stdout.write("\t".join(columns) + "\n")
        for r in rows:
            sys.stdout.write("\t".join("" if v is None else str(v).replace("\t", " ").replace("\n", " ")
                                       for v in r) + "\n")
        return
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold")
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*("" if v is None else str(v) for v in r))
    out().print(t)


# --- crawl / embed -----------------------------------------------------------------------------
def crawl_summary(summary: Any, as_json: bool) -> None:
    from dataclasses import asdict

    d = asdict(summary)
    if as_json:
        emit_json("crawl", d)
        return
    rows = [[s["server"], s["status"], s["tools"] if s["tools"] is not None else "-",
             len(s["invalid_tools"]) or "", f"{s['duration_ms'] / 1000:.1f}s", s["error"] or ""]
            for s in d["servers"]]
    table(["server", "status", "tools", "invalid", "time", "error"], rows)
    note(f"crawl {d['crawl_id']}: {d['servers_ok']} ok, {d['servers_failed']} failed; "
         f"{d['tools']} tools ({d['added']} added, {d['changed']} changed, {d['removed']} removed); "
         f"{d['embedded']} embedded" + ("" if d["semantic"] else " (keyword-only: no model)"))


def embed_result(count: int, model: str | None, as_json: bool) -> None:
    if as_json:
        emit_json("embed", {"embedded": count, "model": model})
    else:
        note(f"embedded {count} tools with {model}")

# Sections below are per command group; keep each group's renderers together.
