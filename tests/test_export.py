"""`toolidx export --format python | openapi | typescript`: the generated artifacts are checked by
their own tools (mypy, an OpenAPI validator, tsc) and the Python module runs a real call through
toolidx's execute path on a real stdio server (examples/notes_server.py)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, _need, run_cli

HOSTILE = REPO / "tests" / "data" / "export_hostile_tools.json"


def _crawl(cfg: dict, d: Path, *extra: str) -> Path:
    (d / "servers.json").write_text(json.dumps({"mcpServers": cfg}))
    db = d / "idx.db"
    r = run_cli("crawl", "--config", d / "servers.json", "--db", db, *extra)
    assert r.code == 0, r.stderr
    return db


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    """Tool names, descriptions and parameter names written to break out of generated code."""
    return _crawl({"evil": {"tools_file": str(HOSTILE)}}, tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def notes_db(tmp_path_factory) -> Path:
    """examples/notes_server.py (a real stdio MCP server) and the weather tool list."""
    cfg = {"notes": {"command": sys.executable, "args": [str(REPO / "examples" / "notes_server.py")],
                     "category": "productivity"},
           "weather": {"tools_file": str(REPO / "examples" / "weather-tools.json")}}
    return _crawl(cfg, tmp_path_factory.mktemp("notes"))


def _export(db: Path, fmt: str, *extra: str) -> str:
    r = run_cli("export", "-f", fmt, "--db", db, *extra)
    assert r.code == 0, r.stderr
    return r.stdout


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _mypy(path: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        _need("mypy", "pip install -e .[dev]")
    env = {**os.environ, "PYTHONPATH": str(REPO), "MYPYPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                        "--follow-imports=silent", str(path)],
                       capture_output=True, text=True, env=env, cwd=path.parent, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


# --- python -----------------------------------------------------------------------------------------
def test_python_wrappers_pass_mypy_and_run_a_real_call(notes_db, tmp_path):
    code = _export(notes_db, "python")
    assert code == _export(notes_db, "python")  # stable byte for byte
    path = tmp_path / "notes_tools.py"
    path.write_text(code)
    _mypy(path)
    mod = _import(path, "notes_tools")
    tree = ast.parse(code)
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    # required first, optional keyword-only with None; enums as Literal; JSON names kept in the call
    search = fns["notes__search_notes"]
    assert [a.arg for a in search.args.args] == ["query"] and [a.arg for a in search.args.kwonlyargs] == ["limit"]
    assert ast.unparse(search.args.kwonlyargs[0].annotation) == "int | None"
    conv = fns["weather__convertTemperature"]
    assert "from_" in [a.arg for a in conv.args.args] and "Literal[" in ast.unparse(conv.args.args[1].annotation)
    assert "'from': from_" in code
    assert "Find notes whose title or text contains the query" in (mod.notes__search_notes.__doc__ or "")
    assert mod.TOOL_IDS["notes__add_note"] == "notes/add_note"
    try:
        assert mod.notes__add_note("groceries", "milk, eggs") == {"result": "saved 'groceries'"}
        assert mod.notes__search_notes("eggs") == {"result": ["groceries"]}  # same server kept
        assert mod.notes__search_notes("eggs", limit=0) == {"result": []}
        with pytest.raises(mod.ToolError, match="does not fit|not of type"):
            mod.notes__add_note("x", 3)  # validated by toolidx before the server sees it
    finally:
        if mod._client is not None:
            mod._client.close()


def test_python_wrappers_keep_the_scope(notes_db, tmp_path):
    code = _export(notes_db, "python", "--server", "weather")
    assert "def notes__" not in code and "def weather__get_forecast" in code
    path = tmp_path / "weather_tools.py"
    path.write_text(code)
    mod = _import(path, "weather_tools")
    c = mod.configure()
    try:
        res = c.call_result("notes/add_note", {"title": "a", "text": "b"})  # outside the scope
        assert res["isError"] is True and "scope" in json.dumps(res)
    finally:
        c.close()


def test_python_wrappers_escape_hostile_names_and_descriptions(hostile_db, tmp_path):
    code = _export(hostile_db, "python")
    path = tmp_path / "evil_tools.py"
    path.write_text(code)
    tree = ast.parse(code)  # no break-out: the module is plain definitions
    assert all(isinstance(n, (ast.ImportFrom, ast.Import, ast.FunctionDef, ast.Assign, ast.AnnAssign,
                              ast.AugAssign, ast.Expr)) for n in tree.body)
    assert not any(isinstance(n, ast.Import) for n in tree.body)
    assert all(isinstance(n.value, ast.Constant) for n in tree.body if isinstance(n, ast.Expr))
    _mypy(path)
    mod = _import(path, "evil_tools")
    fn = mod.evil__evil___tool
    desc = json.loads(HOSTILE.read_text())["tools"][0]["description"]
    assert inspect.getdoc(fn).startswith(desc)  # the text itself, unchanged
    f = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "evil__evil___tool")
    names = [a.arg for a in f.args.args + f.args.kwonlyargs]
    assert names[:3] == ["class_", "a_b", "q_x"]
    assert len(set(names)) == len(names) and "_args" not in names and "Any" not in names
    for kept in ("'a-b': a_b", "'a_b'] = a_b_2", "'1st'] = _1st", "'q\"x': q_x", "'class': class_"):
        assert kept in code  # the JSON name in the call
