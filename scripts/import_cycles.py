"""The import circles between toolidx's files, drawn from every import each file makes (at its top
or inside a function; not those under `if TYPE_CHECKING:`, which never run).

    python scripts/import_cycles.py [--list]

A circle is a set of files each of which reaches every other by imports (a strongly connected
component of more than one file). It fails (exit 1) when a circle crosses folders of the package
(rooms: store/, search/, ...), holds more than MAX_FILES files, or when there are more than
MAX_CIRCLES circles: a file that needs another that needs it back is one job cut in two, and a
circle grows by itself. `--list` prints every circle even when none fails. scripts/check.sh runs it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "toolidx"
MAX_CIRCLES = 2
MAX_FILES = 2
# Circles known and not yet cut, each tolerated exactly as it is (never grown) and not counted:
# none since issue 44 (before it: store/'s 11 files, search's request path, the console and http).
PENDING: tuple[set[str], ...] = ()


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST):
    """Every Import/ImportFrom in `tree`, but under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                stack.extend(child.orelse)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            stack.append(child)


def graph() -> dict[str, set[str]]:
    files = {module_of(p): p for p in ROOT.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
                if not node.level:
                    base = node.module or ""
                # `from pkg import name`: the module pkg.name when there is one, else pkg itself
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for t in targets:
                while t and t not in files and "." in t:
                    t = t.rpartition(".")[0]
                if t in files and t != mod:
                    edges[mod].add(t)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def room(mod: str) -> str:
    return mod.split(".")[1] if mod.count(".") else ""


def problems(found: list[list[str]], pending: tuple[set[str], ...] = PENDING) -> list[str]:
    bad = []
    found = [c for c in found if set(c) not in pending]
    for c in found:
        rooms = sorted({room(m) for m in c})
        if len(rooms) > 1:
            bad.append(f"a circle between rooms {', '.join(rooms)}: {' '.join(c)}")
        elif len(c) > MAX_FILES:
            bad.append(f"a circle of {len(c)} files (at most {MAX_FILES}): {' '.join(c)}")
    if len(found) > MAX_CIRCLES:
        bad.append(f"{len(found)} circles (at most {MAX_CIRCLES})")
    return bad


def main(argv: list[str]) -> int:
    found = circles(graph())
    bad = problems(found)
    if "--list" in argv or bad:
        for c in found:
            print(f"{len(c)} files{' (pending, #44)' if set(c) in PENDING else ''}: {' '.join(c)}")
    for line in bad:
        print(f"import circles: {line}; fix: move what both need where neither imports it back", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
