"""serve leaves no process behind (#42 item 5), the issue's exact scenario, many times: the MCP SDK's
`stdio_client` runs `toolidx serve`, calls execute_tool on three backends that will not go away
(tests/servers/lingering.py: one outlives its stdin, one ignores SIGTERM and SIGINT, one ignores
them and has a child that ignores SIGTERM), then leaves its `async with` ("client": the SDK's stop,
stdin closed, 2 s, SIGTERM to serve's group, 2 s, SIGKILL), or first sends serve SIGKILL ("sigkill")
or SIGTERM ("sigterm"). It counts the processes the run started (serve, what serve started, the pids
the backends wrote) still alive exactly 1 s after the client returned, and times the client's exit.
The scenario is tests/serve/test_no_orphans.py's `scenario` (the test runs it once per stop).

  python benchmarks/no_orphans.py [--runs 20] [--stops client,sigkill,sigterm] [--code FOLDER]

--code FOLDER measures the toolidx package in FOLDER instead (a baseline: `git archive a67a9a8
toolidx | tar -x -C FOLDER`). Exit 0 when no run left a process. Linux (/proc).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from _common import REPO, measure_code

sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "serve")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--stops", default="client,sigkill,sigterm")
    ap.add_argument("--code", default=None, help="measure the toolidx package in this folder")
    a = ap.parse_args()
    code = REPO
    if a.code:
        measure_code(a.code, {})
        code = Path(a.code).resolve()
    from test_no_orphans import hostile_index, kill_all, noted, scenario

    import toolidx

    print(f"toolidx under test: {Path(toolidx.__file__).parent}", flush=True)

    failed = False
    with tempfile.TemporaryDirectory(prefix="toolidx-orphans-") as tmp:
        folder = Path(tmp)
        db, pids = hostile_index(folder)
        for stop in a.stops.split(","):
            lefts, secs = [], []
            for _ in range(a.runs):
                pids.write_text("")
                procs: set[int] = set()
                try:
                    procs, left, took = scenario(folder, db, pids, stop, 1.0, code)
                    lefts.append(left)
                    secs.append(took)
                except BaseException:
                    err = folder / "serve.err"
                    print("serve's stderr:", *err.read_text().splitlines()[-15:] if err.exists() else [], sep="\n  ")
                    raise
                finally:
                    kill_all(procs | noted(pids))
            failed |= any(lefts)
            print(
                f"{stop:8s} runs {len(lefts):3d}  processes left 1 s after the client returned: total {sum(lefts)}, "
                f"runs with any {sum(1 for x in lefts if x)}  (of {len(procs)} started per run)  "
                f"client back after the stop in {statistics.median(secs):.2f} s median, {max(secs):.2f} s max",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
