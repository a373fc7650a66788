"""benchmarks/: one helper (benchmarks/_common.py) says where things are, and every benchmark starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

BENCHMARKS = sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.name != "_common.py")


def test_paths_and_the_model_are_named_in_one_place():
    """Six benchmarks once put the repository on sys.path and four spelled the model's default
    path: a new location (../shared moved, another default model) had to be found in each."""
    copies = [
        f"{p.name}: {m.group()}"
        for p in BENCHMARKS
        for m in re.finditer(r"sys\.path\.insert|all-MiniLM-L6-v2-onnx-int8|\"shared\"|parents\[1\]", p.read_text())
    ]
    assert not copies, f"use benchmarks/_common.py instead: {copies}"


def test_the_in_process_cli_is_the_tests_one(tmp_path):
    """_common.cli runs the real entry point as tests/conftest.py's run_cli does: same exit code,
    same output."""
    from conftest import run_cli

    sys.path.insert(0, str(REPO / "benchmarks"))
    import _common

    for args in (("search", "x", "--db", tmp_path / "none.db"), ("--version",)):
        want = run_cli(*args)
        assert _common.cli(*args) == (want.code, want.stdout, want.stderr)
    assert run_cli("search", "x", "--db", tmp_path / "none.db").code == 2  # the error case is one


@pytest.mark.parametrize("bench", ["crawl_bench.py", "serve_bench.py"])
def test_benchmarks_find_the_real_servers_where_the_tests_do(bench, tmp_path):
    """Without --servers, a benchmark reads the servers scripts/test.sh installs and conftest uses:
    $TOOLIDX_TEST_SERVERS, else $XDG_CACHE_HOME/toolidx/test-servers."""
    env = {k: v for k, v in os.environ.items() if k != "TOOLIDX_TEST_SERVERS"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / bench), "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert f"{tmp_path}/toolidx/test-servers" in " ".join(out.stdout.split()).replace("- ", "-")


@pytest.mark.parametrize("bench", [p.name for p in BENCHMARKS if "argparse" in p.read_text()])
def test_every_benchmark_starts(bench):
    """`--help` of each benchmark: its imports (of _common, of each other, of toolidx) resolve."""
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / bench), "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.startswith("usage:"), out.stderr[-2000:]
