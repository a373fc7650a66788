"""No test asserts wall-clock time (#42 item 19): `assert secs < 2 * base + 0.5` failed a newcomer's
test run on a busy machine, where it measured the load, not the code. Timings are figures (the
`figure` fixture) or benchmarks (benchmarks/); a test checks what happened: which loader ran, in
which order things answered, how many were in flight at once."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
CLOCKS = {"perf_counter", "monotonic", "time", "current_time", "perf_counter_ns", "monotonic_ns"}


def _reads_clock(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute | ast.Name)
        and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in CLOCKS
        for n in ast.walk(node)
    )


def _diff(node: ast.AST) -> bool:
    return any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.Sub) and _reads_clock(b) for b in ast.walk(node))


def stopwatch_asserts(source: str) -> list[int]:
    """Lines of `assert`s that compare a duration (a clock read minus a clock read): written in the
    assert, or through what was assigned one (`secs = ...`, `out["s"] = ...`) or a list one was
    appended to (`took.append(...)`, then `max(took) < 2`). A deadline loop's `monotonic() < deadline`
    is no assertion."""
    tree = ast.parse(source)
    found: set[int] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        timed: set[str] = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign) and n.value is not None and _diff(n.value):
                for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                    timed |= {ast.unparse(x) for x in (t.elts if isinstance(t, ast.Tuple | ast.List) else [t])}
            elif (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "append"
                and any(_diff(a) and not isinstance(a, ast.Tuple) for a in n.args)
            ):
                timed.add(ast.unparse(n.func.value))
        for n in ast.walk(fn):
            if not isinstance(n, ast.Assert):
                continue
            for cmp in (c for c in ast.walk(n.test) if isinstance(c, ast.Compare)):
                sides = [cmp.left, *cmp.comparators]
                if any(
                    _diff(s) or any(ast.unparse(x) in timed for x in ast.walk(s) if isinstance(x, ast.expr))
                    for s in sides
                ):
                    found.add(n.lineno)
                    break
    return sorted(found)


def test_the_check_finds_a_stopwatch():
    before = (
        "def test_x():\n    t0 = time.perf_counter()\n    load()\n    secs = time.perf_counter() - t0\n"
        "    assert ok and secs < 2 * base + 0.5\n"
        "def test_y():\n    t = time.monotonic()\n    go()\n    assert time.monotonic() - t < 2\n"
        "def test_z():\n    deadline = time.monotonic() + 5\n    while time.monotonic() < deadline:\n        pass\n"
        "    assert done\n"
        "def test_w():\n    took = []\n    for _ in range(3):\n        t0 = time.perf_counter()\n        go()\n"
        "        took.append(time.perf_counter() - t0)\n    assert max(took) < 2.0\n"
        "def test_v():\n    out = {}\n    out['s'] = time.perf_counter() - t0\n    assert out['tools'] == []\n"
        "    assert out['s'] < 20\n"
    )
    assert stopwatch_asserts(before) == [5, 9, 21, 26]


def test_no_test_asserts_wall_clock_time():
    found = [
        f"{p.relative_to(TESTS)}:{line}"
        for p in sorted(TESTS.rglob("test_*.py"))
        for line in stopwatch_asserts(p.read_text())
    ]
    assert not found, found
