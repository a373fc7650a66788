"""Regenerate man/toolidx.1 and completions/ from the CLI itself, so they never drift:
.venv/bin/python scripts/gen_docs.py          (tests/test_docs.py checks they are current)
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer.main
from typer._completion_shared import get_completion_script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolidx import __version__  # noqa: E402
from toolidx.cli.main import app  # noqa: E402

SHELLS = {"bash": "toolidx.bash", "zsh": "_toolidx", "fish": "toolidx.fish"}


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace("-", "\\-").replace("'", "\\(aq")


def _opts(cmd) -> list[str]:
    lines = []
    for p in cmd.params:
        # typer vendors its own click: compare by kind, not by class
        kind = getattr(p, "param_type_name", "")
        if kind == "option" and not getattr(p, "hidden", False):
            names = ", ".join(p.opts + p.secondary_opts)
            meta = "" if getattr(p, "is_flag", False) else f" {p.name.upper()}"
            lines += [".TP", f"\\fB{_esc(names)}\\fR{_esc(meta)}", _esc((p.help or "").strip())]
        elif kind == "argument":
            lines += [".TP", f"\\fI{_esc(p.name.upper())}\\fR", "argument"]
    return lines


def man_page() -> str:
    group = typer.main.get_command(app)
    ctx = group.make_context("toolidx", ["--help"], resilient_parsing=True)
    out = [
        f'.TH TOOLIDX 1 "" "toolidx {__version__}" "User Commands"',
        ".SH NAME",
        "toolidx \\- " + _esc(group.help or ""),
        ".SH SYNOPSIS",
        "\\fBtoolidx\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        _esc(
            "toolidx crawls MCP servers into one SQLite file (FTS5 + sqlite-vec) and finds, "
            "describes, diffs and serves their tools. Every command takes --json."
        ),
        ".SH COMMANDS",
    ]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        out += [".SS " + _esc(f"toolidx {name}"), _esc((cmd.help or "").strip().split("\n\n")[0])]
        out += _opts(cmd)
    out += [
        ".SH EXIT STATUS",
        ".TP",
        "0",
        "success",
        ".TP",
        "1",
        _esc("a failure was found (a server failed during crawl, diff/audit matched)"),
        ".TP",
        "2",
        _esc("usage error: bad arguments, config or index file; nothing changed"),
        ".SH ENVIRONMENT",
        ".TP",
        "TOOLIDX_DB",
        "index file (default ~/.local/share/toolidx/tools.db)",
        ".TP",
        "TOOLIDX_CONFIG",
        "crawl config",
        ".TP",
        "TOOLIDX_MODEL, TOOLIDX_MODEL_PATH",
        "embedding model name and local directory",
        ".TP",
        "TOOLIDX_CACHE_DIR",
        "model cache (default ~/.cache/toolidx/models)",
        ".SH SEE ALSO",
        "README.md in the source distribution.",
    ]
    return "\n".join(out) + "\n"


def main() -> None:
    (ROOT / "man").mkdir(exist_ok=True)
    (ROOT / "man" / "toolidx.1").write_text(man_page())
    (ROOT / "completions").mkdir(exist_ok=True)
    for shell, fname in SHELLS.items():
        script = get_completion_script(prog_name="toolidx", complete_var="_TOOLIDX_COMPLETE", shell=shell)
        (ROOT / "completions" / fname).write_text(script.rstrip() + "\n")
    print("wrote man/toolidx.1 and completions/")


if __name__ == "__main__":
    main()
