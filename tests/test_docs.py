"""The man page and shell completions are generated from the CLI: they must match it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_man_page_is_current():
    assert (REPO / "man" / "toolidx.1").read_text() == _gen().man_page(), \
        "run: .venv/bin/python scripts/gen_docs.py"


def test_man_page_names_every_command():
    page = (REPO / "man" / "toolidx.1").read_text()
    for cmd in ("crawl", "embed", "search", "describe", "list", "categories", "similar", "eval",
                "diff", "history", "audit", "serve", "stats"):
        assert f".SS toolidx {cmd}" in page


def test_completion_scripts_are_current():
    from typer._completion_shared import get_completion_script

    gen = _gen()
    for shell, fname in gen.SHELLS.items():
        expected = get_completion_script(prog_name="toolidx", complete_var="_TOOLIDX_COMPLETE", shell=shell)
        assert (REPO / "completions" / fname).read_text() == expected.rstrip() + "\n"


def test_bash_completion_answers():
    """What the bash script asks the program, the program answers (first word: a command)."""
    import subprocess
    import sys

    env = {"_TOOLIDX_COMPLETE": "complete_bash", "COMP_WORDS": "toolidx dif", "COMP_CWORD": "1",
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "toolidx"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["diff"]
