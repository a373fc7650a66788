"""What the benchmarks share: where things are (this checkout, ../shared, its bench sets, the model,
the real servers, the index cache) and toolidx's CLI run in-process.

Imported first by every benchmark (`from _common import ...`: a script's own folder is on sys.path),
it puts this checkout ahead of any installed toolidx, so a benchmark always measures the code beside it.

- the model: TOOLIDX_MODEL_PATH, default ../shared/models/all-MiniLM-L6-v2-onnx-int8 (the model the
  first constants were fitted on); toolidx's own are `toolidx/models/tool-minilm-l6-v2` (PACKAGED, the default) and
  `toolidx/models/tool-minilm-l6` (PACKAGED_V1)
- the bench sets: TOOLIDX_BENCH_DIR, default ../shared/bench
- indexes built from them: TOOLIDX_BENCH_CACHE, default /tmp/toolidx-bench
- the real servers: TOOLIDX_TEST_SERVERS, default ~/.cache/toolidx/test-servers (where
  scripts/test.sh installs them and tests/conftest.py looks)
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BENCH = Path(os.environ.get("TOOLIDX_BENCH_DIR", SHARED / "bench"))
CACHE = Path(os.environ.get("TOOLIDX_BENCH_CACHE", "/tmp/toolidx-bench"))
MODEL = os.environ.get("TOOLIDX_MODEL_PATH") or str(SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8")
PACKAGED = str(REPO / "toolidx" / "models" / "tool-minilm-l6-v2")  # the default model
PACKAGED_V1 = str(REPO / "toolidx" / "models" / "tool-minilm-l6")  # kept for indexes embedded with it
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def measure_code(folder: str, env: dict[str, str]) -> dict[str, str]:
    """Measure the toolidx package in `folder` (an older commit: `git archive <commit> toolidx | tar
    -x -C folder`) instead of this checkout's: put it first here and in `env` for subprocesses."""
    code = str(Path(folder).resolve())
    sys.path.insert(0, code)
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [code, env.get("PYTHONPATH")]))}


def servers_dir() -> str:
    """The folder of the real servers (with servers.json), as scripts/test.sh and the tests find it."""
    return os.environ.get("TOOLIDX_TEST_SERVERS") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolidx" / "test-servers"
    )


def cli(*args: object) -> tuple[int, str, str]:
    """`toolidx ARGS...` in this process (tests/conftest.py's run_cli): (exit code, stdout, stderr)."""
    from toolidx.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, out.getvalue(), err.getvalue()
