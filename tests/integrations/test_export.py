"""`toolidx export --format python | openapi | typescript`: the generated artifacts are checked by
their own tools (mypy, an OpenAPI validator, tsc) and the Python module runs a real call through
toolidx's execute path on a real stdio server (examples/notes_server.py)."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, _need, check_type_hints, run_cli, strings_outside_literal, type_expressions

HOSTILE = REPO / "tests" / "data" / "export_hostile_tools.json"


def _crawl(cfg: dict, d: Path, *extra: str) -> Path:
    (d / "servers.json").write_text(json.dumps({"mcpServers": cfg}))
    db = d / "idx.db"
    # keyword-only unless a test asks for more: exports need no vectors (and no model in the fast tier)
    r = run_cli("crawl", "--config", d / "servers.json", "--db", db, *(extra or ("--model", "none")))
    assert r.code == 0, r.stderr
    return db


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    """Tool names, descriptions and parameter names written to break out of generated code."""
    return _crawl({"evil": {"tools_file": str(HOSTILE)}}, tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def notes_db(tmp_path_factory) -> Path:
    """examples/notes_server.py (a real stdio MCP server) and the weather tool list."""
    cfg = {
        "notes": {
            "command": sys.executable,
            "args": [str(REPO / "examples" / "notes_server.py")],
            "category": "productivity",
        },
        "weather": {"tools_file": str(REPO / "examples" / "weather-tools.json")},
    }
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


def _mypy(path: Path, as_installed: bool = False) -> None:
    """mypy --strict on a file; `as_installed`: as a user runs it, finding toolidx only where it is
    installed (no MYPYPATH / PYTHONPATH pointing into the clone)."""
    if importlib.util.find_spec("mypy") is None:
        _need("mypy", "pip install -e .[test]")
    env = (
        {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
        if as_installed
        else {**os.environ, "PYTHONPATH": str(REPO), "MYPYPATH": str(REPO)}
    )
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=path.parent,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


# --- python -----------------------------------------------------------------------------------------
@pytest.mark.slow  # runs mypy, tsc or a real server: 5-10 s
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
    # a tool with an output schema returns its structuredContent typed; one without, Any
    assert ast.unparse(fns["notes__add_note"].returns) == "NotesAddNoteResult"
    assert "NotesAddNoteResult = TypedDict('NotesAddNoteResult', {\n    'result': str,\n})" in code
    assert ast.unparse(fns["weather__get_forecast"].returns) == "Any"
    (tmp_path / "use_ok.py").write_text(
        "from notes_tools import notes__search_notes\n\n\n"
        "def found() -> list[str]:\n    return notes__search_notes('x')['result']\n"
    )
    _mypy(tmp_path / "use_ok.py")
    (tmp_path / "use_bad.py").write_text(
        "from notes_tools import notes__add_note\n\n\n"
        "def saved() -> int:\n    return notes__add_note('a', 'b')['result']\n"
    )
    with pytest.raises(AssertionError, match="Incompatible return value type"):
        _mypy(tmp_path / "use_bad.py")
    try:
        assert mod.notes__add_note("groceries", "milk, eggs") == {"result": "saved 'groceries'"}
        assert mod.notes__search_notes("eggs") == {"result": ["groceries"]}  # same server kept
        assert mod.notes__search_notes("eggs", limit=0) == {"result": []}
        with pytest.raises(mod.ToolError, match="does not fit|not of type"):
            mod.notes__add_note("x", 3)  # validated by toolidx before the server sees it
    finally:
        if mod._client is not None:
            mod._client.close()


@pytest.mark.slow  # runs mypy, tsc or a real server: 5-10 s
def test_python_wrappers_type_check_against_the_installed_toolidx(notes_db, tmp_path):
    """A user's mypy finds toolidx.integrations.runtime in the environment toolidx is installed in
    (`pip install -e .`: with pyproject's package-dir a .pth path mypy follows; without it,
    setuptools' import hook, which mypy cannot see) and reads its types: the float below would be
    Any, an error under --strict, if it did not."""
    (tmp_path / "notes_tools.py").write_text(_export(notes_db, "python"))
    (tmp_path / "use_runtime.py").write_text(
        "from notes_tools import configure\n\n\ndef timeout() -> float:\n    return configure().timeout_s\n"
    )
    try:
        _mypy(tmp_path / "use_runtime.py", as_installed=True)
    except AssertionError as e:
        raise AssertionError(
            f"{e}\nmypy cannot see the installed toolidx: an editable install older than "
            "pyproject's package-dir? run `pip install -e .` again"
        ) from e


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


@pytest.mark.slow  # runs mypy, tsc or a real server: 5-10 s
def test_python_wrappers_escape_hostile_names_and_descriptions(hostile_db, tmp_path):
    code = _export(hostile_db, "python")
    path = tmp_path / "evil_tools.py"
    path.write_text(code)
    tree = ast.parse(code)  # no break-out: the module is plain definitions
    assert all(
        isinstance(n, (ast.ImportFrom, ast.Import, ast.FunctionDef, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr))
        for n in tree.body
    )
    assert not any(isinstance(n, ast.Import) for n in tree.body)
    assert all(isinstance(n.value, ast.Constant) for n in tree.body if isinstance(n, ast.Expr))
    _mypy(path)
    mod = _import(path, "evil_tools")
    fn = mod.evil__evil___tool_d22d3b  # a name that had to change carries the id's hash
    desc = json.loads(HOSTILE.read_text())["tools"][0]["description"]
    assert inspect.getdoc(fn).startswith(desc)  # the text itself, unchanged
    f = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "evil__evil___tool_d22d3b")
    names = [a.arg for a in f.args.args + f.args.kwonlyargs]
    assert names[:3] == ["class_", "a_b", "q_x"]
    assert len(set(names)) == len(names) and "_args" not in names and "Any" not in names
    for kept in ("'a-b': a_b", "'a_b'] = a_b_2", "'1st'] = _1st", "'q\"x': q_x", "'class': class_"):
        assert kept in code  # the JSON name in the call


@pytest.mark.slow  # runs mypy, tsc or a real server: 5-10 s
def test_python_wrappers_type_hostile_schema_values_as_literals(hostile_db, tmp_path, monkeypatch):
    """Schema const / enum values (`"all good"`, `__import__(...)`, quotes, backslashes, newlines,
    huge and non-string values) are Literal[...] of escaped literals: importing the module and
    get_type_hints() on every function and TypedDict run none of them, and mypy --strict passes."""
    monkeypatch.delenv("TOOLIDX_PWNED", raising=False)
    code = _export(hostile_db, "python")
    assert "from __future__ import annotations" not in code  # annotations are evaluated once, at import
    tree = ast.parse(code)
    types = type_expressions(tree)
    assert len(types) > 20 and [s for t in types for s in strings_outside_literal(t)] == []
    path = tmp_path / "evil_values.py"
    path.write_text(code)
    mod = _import(path, "evil_values")
    assert check_type_hints(mod) >= 6
    assert "TOOLIDX_PWNED" not in os.environ
    hints = __import__("typing").get_type_hints(mod.evil__values)
    assert repr(hints["a"]) == "typing.Literal['all good']"
    assert hints["import_"] is int  # 10**400: no literal type in mypy
    assert "Literal['x y']" in repr(hints["d"]) and hints["g"] is hints["h"] is __import__("typing").Any
    _mypy(path)


def export_names(tmp_path: Path, fmt: str, tools: list[str]) -> dict[str, str]:
    """{function name: tool id} of a fresh index of server `s` holding these tool names."""
    d = tmp_path / f"{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    (d / "tools.json").write_text(
        json.dumps({"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in tools]})
    )
    return json.loads(_export(_crawl({"s": {"tools_file": str(d / "tools.json")}}, d), fmt, "--json"))["names"]


LOOK_ALIKES = [["del_ete"], ["del-ete"], ["del.ete"], ["del_ete", "del-ete"], ["del-ete", "del ete"]]


@pytest.mark.parametrize("fmt", ["python", "typescript"])
def test_wrapper_names_stay_with_their_tools_when_look_alikes_arrive(tmp_path, fmt):
    """A tool's function name depends on its own id only: a look-alike a server adds later
    (`del-ete` beside `del_ete`, or the other way round) never takes over a name code calls."""
    everything = ["del_ete", "del-ete", "del.ete", "del ete", "DEL_ETE"]
    after = export_names(tmp_path, fmt, everything)
    assert len(after) == len(everything) and after["s__del_ete"] == "s/del_ete"
    for before in LOOK_ALIKES:
        names = export_names(tmp_path, fmt, before)
        assert {n: after.get(n) for n in names} == names, before
    assert export_names(tmp_path, fmt, ["del-ete"]) == {
        "s__del_ete_" + hashlib.sha256(b"s/del-ete").hexdigest()[:6]: "s/del-ete"
    }


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "openapi"])
def test_api_names_stay_with_their_tools_when_look_alikes_arrive(tmp_path, fmt):
    """The API-safe names (anthropic and openai tool names, OpenAPI operationIds) follow the
    wrappers' rule with `-` allowed: a look-alike added later never takes over a name."""
    everything = ["del_ete", "del-ete", "del.ete", "del ete", "DEL_ETE"]
    after = export_names(tmp_path, fmt, everything)
    assert len(after) == len(everything)
    for before in LOOK_ALIKES:
        names = export_names(tmp_path, fmt, before)
        assert {n: after.get(n) for n in names} == names, before


# --- openapi ----------------------------------------------------------------------------------------
def _openapi_valid(doc: dict) -> None:
    if importlib.util.find_spec("openapi_spec_validator") is None:
        _need("openapi-spec-validator", "pip install -e .[test]")
    from openapi_spec_validator import validate

    validate(doc)
    from urllib.parse import unquote

    def resolve(ref: str) -> object:
        node: object = doc
        for part in ref[2:].split("/"):
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                assert part.isdigit() and int(part) < len(node), ref
                node = node[int(part)]
            else:
                assert isinstance(node, dict) and part in node, ref
                node = node[part]
        return node

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "$ref" and isinstance(v, str):
                    assert v.startswith("#/components/schemas/"), v
                    resolve(v)
                elif not k.startswith("x-") and k not in ("enum", "const", "default", "examples", "example"):
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)


def test_openapi_of_real_servers_is_valid_and_stable(catalog_real_db):
    text = _export(catalog_real_db, "openapi")
    assert text == _export(catalog_real_db, "openapi")
    doc = json.loads(text)
    _openapi_valid(doc)
    env = json.loads(_export(catalog_real_db, "openapi", "--json"))
    assert env["document"] == doc and env["count"] == len(doc["paths"]) == len(env["names"])
    for path, item in doc["paths"].items():
        op = item["post"]
        assert env["names"][op["operationId"]] == op["x-toolidx-id"]
        server, _, name = op["x-toolidx-id"].partition("/")
        assert path.startswith("/tools/") and op["tags"][0] == server
        assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(".input")


def _all_refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref" and isinstance(v, str)] + [
            r for v in node.values() for r in _all_refs(v)
        ]
    return [r for v in node for r in _all_refs(v)] if isinstance(node, list) else []


def test_openapi_lifts_refs_and_keeps_the_scope(hostile_db, notes_db):
    doc = json.loads(_export(hostile_db, "openapi"))
    _openapi_valid(doc)
    schemas = doc["components"]["schemas"]
    evil = "evil__evil___tool_" + hashlib.sha256(b'evil/evil"""tool').hexdigest()[:6]  # `"` is not API-safe
    assert f"{evil}.input.Item" in schemas and "evil__evil_tool.input.X" in schemas
    props = schemas[f"{evil}.input"]["properties"]
    assert props["1st"]["items"]["$ref"] == f"#/components/schemas/{evil}.input.Item"
    assert props["tree"]["$ref"] == f"#/components/schemas/{evil}.input"
    assert "/tools/evil/evil%22%22%22tool" in doc["paths"]
    # refs are rewritten by schema position: properties named like value keywords are schemas
    refs = schemas["evil__refs.input"]["properties"]
    for name in ("enum", "examples"):
        assert refs[name] == {"$ref": "#/components/schemas/evil__refs.input.Item"}
    assert refs["default"]["properties"]["enum"] == {"$ref": "#/components/schemas/evil__refs.input"}
    # a ref out of the document is kept as text no resolver follows, values and extensions included
    assert refs["file"] == {"x-unfollowed-ref": "file:///etc/passwd"} and "$id" not in refs["based"]
    assert refs["vendor"]["x-vendor"] == {"x-unfollowed-ref": "file:///etc/shadow"}
    assert "file:///etc/hosts" not in json.dumps([r for r in _all_refs(doc)])
    notes = json.loads(_export(notes_db, "openapi", "--server", "notes"))
    _openapi_valid(notes)
    op = notes["paths"]["/tools/notes/search_notes"]["post"]
    assert op["x-mcp-annotations"] == {"readOnlyHint": True} and op["tags"] == ["notes", "productivity"]
    assert (
        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        == "#/components/schemas/notes__search_notes.output"
    )
    assert all(p.startswith("/tools/notes/") for p in notes["paths"])


@pytest.mark.slow
def test_openapi_of_the_etom_catalog_is_valid(bench_dir, tmp_path):
    """2,375 real tool definitions with draft-04/07 schemas, local refs and invalid defaults."""
    db = _crawl({"etom": {"tools_file": str(bench_dir / "etom" / "tools.jsonl")}}, tmp_path)
    doc = json.loads(_export(db, "openapi"))
    assert len(doc["paths"]) == 2375
    _openapi_valid(doc)


# --- typescript -------------------------------------------------------------------------------------
TSC_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolidx" / "tsc"


@pytest.fixture(scope="module")
def tsc() -> Path:
    """typescript and @types/node, installed once into ~/.cache/toolidx/tsc (outside the clone)."""
    exe = TSC_DIR / "node_modules" / ".bin" / "tsc"
    if not exe.is_file() or not (TSC_DIR / "node_modules" / "@types" / "node").is_dir():
        if shutil.which("npm") is None or shutil.which("node") is None:
            _need("node and npm", "install node >= 18 (npm installs typescript into ~/.cache/toolidx/tsc)")
        r = subprocess.run(
            ["npm", "install", "--prefix", str(TSC_DIR), "--no-audit", "--no-fund", "typescript@5", "@types/node@20"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if r.returncode != 0 or not exe.is_file():
            _need("typescript", f"npm install --prefix {TSC_DIR} typescript @types/node failed: {r.stderr[-500:]}")
    return exe


def _tsc(exe: Path, d: Path, *files: str, emit: bool = False) -> None:
    link = d / "node_modules"
    if not link.exists():
        link.symlink_to(TSC_DIR / "node_modules")  # @types/node for the generated import of node:*
    args = [
        str(exe),
        "--strict",
        "--target",
        "es2022",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--types",
        "node",
        *(["--outDir", "out"] if emit else ["--noEmit"]),
        *files,
    ]
    r = subprocess.run(args, capture_output=True, text=True, cwd=d, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow  # builds a wheel: 5 s
def test_the_typescript_runtime_ships_in_the_wheel(tmp_path):
    """Every TypeScript module carries integrations/runtime.ts, read as package data: a wheel
    without it would export nothing."""
    import zipfile

    # built from a copy: a checkout's build/ keeps files an earlier build copied, which the wheel would carry
    src = tmp_path / "src"
    shutil.copytree(REPO / "toolidx", src / "toolidx", ignore=shutil.ignore_patterns("__pycache__", "models"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    with zipfile.ZipFile(next(tmp_path.glob("toolidx-*.whl"))) as z:
        shipped = z.read("toolidx/integrations/runtime.ts")
    assert shipped == (REPO / "toolidx" / "integrations" / "runtime.ts").read_bytes()


@pytest.mark.slow  # runs mypy, tsc or a real server: 5-10 s
def test_typescript_wrappers_compile_strict_and_escape_hostile_text(hostile_db, tsc, tmp_path):
    code = _export(hostile_db, "typescript")
    assert code == _export(hostile_db, "typescript")
    (tmp_path / "evil.ts").write_text(code)
    _tsc(tsc, tmp_path, "evil.ts")
    # the hostile description stays inside its comment: the only `*/` are the comments' own ends
    for line in code[code.index("export const TOOLIDX_DB") :].splitlines():  # the generated part
        if "*/" in line:
            assert line.strip() == "*/" or line.strip().startswith("/**") or '"*/"' in line, line
    assert "*\\/ process.exit(1) /*" in code and '"q\\"x": "it\'s" | "a\\"b" | "*/" | null;' in code
    assert "export function evil__evil___tool_d22d3b(args: EvilEvilToolD22d3bArgs)" in code
    assert "export function evil__evil_tool(args: EvilEvilToolArgs = {})" in code


@pytest.mark.slow  # runs mypy, tsc or a real server: 5-10 s
def test_typescript_wrappers_run_a_real_call_through_toolidx_serve(notes_db, tsc, tmp_path):
    (tmp_path / "notes_tools.mts").write_text(_export(notes_db, "typescript", "--server", "notes"))
    _tsc(tsc, tmp_path, "notes_tools.mts", emit=True)
    (tmp_path / "run.mjs").write_text("""
import * as t from "./out/notes_tools.mjs";
t.configure({ command: JSON.parse(process.env.TOOLIDX_CMD) });
const out = {};
out.add = await t.notes__add_note({ title: "groceries", text: "milk, eggs" });
out.search = await t.notes__search_notes({ query: "eggs" });
try { await t.notes__add_note({ title: "x", text: 3 }); out.bad = "no error"; }
catch (e) { out.bad = e.name; }
try { await t.getClient().call("weather/get_alerts", { region: "x" }); out.scope = "no error"; }
catch (e) { out.scope = e.message; }
console.log(JSON.stringify(out));
t.closeClient();
""")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TOOLIDX_CMD": json.dumps([sys.executable, "-m", "toolidx"])}
    r = subprocess.run(["node", "run.mjs"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["add"] == {"result": "saved 'groceries'"} and out["search"] == {"result": ["groceries"]}
    code = (tmp_path / "notes_tools.mts").read_text()
    assert "export interface NotesAddNoteResult {\n  result: string;\n}" in code
    assert "export function notes__add_note(args: NotesAddNoteArgs): Promise<NotesAddNoteResult>" in code
    assert out["bad"] == "ToolError" and "scope" in out["scope"]
