"""Typed wrapper modules for agents that write code instead of calling tools one by one ("code
execution with MCP"): `toolidx export --format python|typescript`.

Every tool in scope becomes one function named after its API-safe name (`server__tool`), with a
docstring / JSDoc from its description and parameters, and typed parameters derived from its input
schema (required first; optional ones keyword-only in Python, `?` in TypeScript). Each call goes
through toolidx's execute path (scope, validation against the stored schema, timeout): Python via
`toolidx.integrations.runtime`, TypeScript via a `toolidx serve` child process spoken to over
stdio (no npm dependency).

Tool names, parameter names and descriptions are untrusted text: they only ever reach the
generated code as escaped string literals or escaped comment text, never as code.
"""

from __future__ import annotations

import json
import keyword
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from ..core.filters import Filters
from ..core.schemas import deref, merge_all_of
from .common import ToolCatalog

MAX_TYPE_DEPTH = 4
MAX_UNION = 12
_PY_IDENT = re.compile(r"[^0-9A-Za-z_]")
_TS_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
# names the generated Python module defines itself (a tool or parameter must not shadow them)
_PY_RESERVED = {"Any", "Literal", "annotations", "configure", "ToolError", "client", "DB_PATH", "SCOPE",
                "TOOL_IDS", "_call", "_args", "_client", "_runtime", "None", "True", "False", "self",
                "str", "int", "float", "bool", "list", "dict", "object"}
_TS_RESERVED = {"break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do",
                "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "import",
                "in", "instanceof", "new", "null", "return", "super", "switch", "this", "throw", "true",
                "try", "typeof", "var", "void", "while", "with", "yield", "let", "static", "implements",
                "interface", "package", "private", "protected", "public", "await", "async", "any",
                "undefined", "arguments", "eval", "ToolError", "ToolidxClient", "callTool", "configure",
                "closeClient", "CallToolResult", "TOOL_IDS"}


# --- parameters of a tool ---------------------------------------------------------------------------
@dataclass
class Param:
    json_name: str  # the key in the arguments object
    ident: str  # a valid identifier in the target language
    schema: dict
    required: bool
    description: str


def _object_schema(schema: Any) -> tuple[dict, dict]:
    """(the input schema as one object schema, its root for $refs)."""
    root = schema if isinstance(schema, dict) else {}
    s, seen = deref(root, root)
    if isinstance(s, dict) and isinstance(s.get("allOf"), list):
        s = merge_all_of(s, root, seen)
    return (s if isinstance(s, dict) else {}), root


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def py_ident(text: str, taken: set[str], reserved: set[str] = _PY_RESERVED) -> str:
    """A valid, non-keyword, non-reserved ASCII Python identifier for `text`, unique in `taken`."""
    base = _PY_IDENT.sub("_", unicodedata.normalize("NFKD", text or "")) or "_"
    if base[0].isdigit():
        base = "_" + base
    if keyword.iskeyword(base) or keyword.issoftkeyword(base) or base in reserved or base.startswith("__"):
        base = base + "_"
    return _unique(base, taken)


def ts_ident(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^0-9A-Za-z_$]", "_", unicodedata.normalize("NFKD", text or "")) or "_"
    if base[0].isdigit():
        base = "_" + base
    if base in _TS_RESERVED:
        base = base + "_"
    return _unique(base, taken)


def params_of(schema: Any, ident: Any, order: list[str] | None = None) -> tuple[list[Param], dict]:
    """The top-level properties, required ones first (each group in the schema's order), with
    identifiers from `ident(json_name, taken)`; and the root for $refs."""
    s, root = _object_schema(schema)
    props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
    req = s.get("required") if isinstance(s.get("required"), list) else []
    if order:  # the server's own order (stored schemas have sorted keys)
        rank = {k: i for i, k in enumerate(order)}
        props = dict(sorted(props.items(), key=lambda kv: rank.get(kv[0], len(rank))))
    required = [k for k in props if k in req]
    optional = [k for k in props if k not in req]
    taken: set[str] = set()
    out = []
    for k in required + optional:
        sub = props[k] if isinstance(props[k], dict) else {}
        d, _ = deref(sub, root)
        desc = (d.get("description") if isinstance(d, dict) else None) or ""
        out.append(Param(str(k), ident(str(k), taken), sub, k in req, str(desc)))
    return out, root


# --- JSON Schema -> type expressions ----------------------------------------------------------------
def _types_of(s: dict) -> list[str]:
    t = s.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    return []


class _TypeMapper:
    """Shared walk; `lang` picks the spelling ("py" or "ts")."""

    def __init__(self, lang: str):
        self.lang = lang
        py = lang == "py"
        self.ANY = "Any" if py else "unknown"
        self.NULL = "None" if py else "null"
        self.names = {"string": "str" if py else "string", "integer": "int" if py else "number",
                      "number": "float" if py else "number", "boolean": "bool" if py else "boolean"}

    def literal(self, v: Any) -> str | None:
        if isinstance(v, bool):
            return ("True" if v else "False") if self.lang == "py" else ("true" if v else "false")
        if v is None:
            return self.NULL
        if isinstance(v, int):
            return repr(v)
        if isinstance(v, str):
            return repr(v) if self.lang == "py" else json.dumps(v, ensure_ascii=True)
        return None  # floats, objects: no literal type

    def union(self, parts: list[str]) -> str:
        seen: list[str] = []
        for p in parts:
            if p not in seen:
                seen.append(p)
        if not seen or self.ANY in seen or len(seen) > MAX_UNION:
            return self.ANY
        return " | ".join(seen)

    def array(self, item: str) -> str:
        if self.lang == "py":
            return f"list[{item}]"
        return f"{item}[]" if re.fullmatch(r"[\w.<>\[\]]+", item) else f"Array<{item}>"

    def obj(self, value: str) -> str:
        return f"dict[str, {value}]" if self.lang == "py" else f"Record<string, {value}>"

    def map(self, schema: Any, root: Any, seen: frozenset = frozenset(), depth: int = 0) -> str:
        if schema is True or schema == {}:
            return self.ANY
        if not isinstance(schema, dict) or depth > MAX_TYPE_DEPTH:
            return self.ANY
        s, seen = deref(schema, root, seen)
        if not isinstance(s, dict):
            return self.ANY
        if isinstance(s.get("allOf"), list):
            s = merge_all_of(s, root, seen)
        if "const" in s:
            lit = self.literal(s["const"])
            return lit if lit is not None else self.ANY
        if isinstance(s.get("enum"), list) and s["enum"]:
            lits = [self.literal(v) for v in s["enum"]]
            if all(x is not None for x in lits) and len(lits) <= 64:
                strs = [x for x in lits if x is not None and x != self.NULL]
                head = (f"Literal[{', '.join(strs)}]" if self.lang == "py" else " | ".join(strs)) if strs else ""
                parts = [head] if head else []
                if self.NULL in lits:
                    parts.append(self.NULL)
                return " | ".join(parts) if parts else self.ANY
            return self.ANY
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list) and s[key]:
                return self.union([self.map(v, root, seen, depth + 1) for v in s[key]])
        types = _types_of(s)
        if not types:
            if isinstance(s.get("properties"), dict):
                types = ["object"]
            elif "items" in s:
                types = ["array"]
            else:
                return self.ANY
        parts = []
        for t in types:
            if t in self.names:
                parts.append(self.names[t])
            elif t == "null":
                parts.append(self.NULL)
            elif t == "array":
                items = s.get("items")
                parts.append(self.array(self.map(items, root, seen, depth + 1) if isinstance(items, dict)
                                        else self.ANY))
            elif t == "object":
                ap = s.get("additionalProperties")
                value = self.map(ap, root, seen, depth + 1) if isinstance(ap, dict) and not s.get("properties") \
                    else self.ANY
                parts.append(self.obj(value))
            else:
                return self.ANY
        return self.union(parts)


# --- escaping untrusted text -------------------------------------------------------------------------
def _clean(text: str) -> str:
    """Newlines normalised, other control and line/paragraph separator characters dropped."""
    text = str(text or "").replace("\r\n", "\n").replace("\r", "\n")
    return "".join(c for c in text if c in "\n\t" or (unicodedata.category(c)[0] != "C"
                                                          and c not in "\u2028\u2029\x85"))


def py_docstring(text: str, indent: str) -> str:
    """A triple-quoted docstring literal that cannot be closed early: backslashes and every `"`
    escaped, so no `\"\"\"` can appear inside."""
    body = _clean(text).replace("\t", "    ").replace("\\", "\\\\").replace('"', '\\"')
    lines = body.split("\n")
    out = [lines[0]] + [(indent + ln) if ln.strip() else "" for ln in lines[1:]]
    return '"""' + "\n".join(out).rstrip() + "\n" + indent + '"""'


def py_comment(text: str) -> str:
    return " ".join(_clean(text).split())


def js_comment(text: str, indent: str = "") -> str:
    """JSDoc lines (` * ...`) that cannot close the comment: `*/` broken as `*\\/`."""
    body = _clean(text).replace("\t", "    ").replace("*/", "*\\/")
    return "\n".join(f"{indent} *" + (" " + ln if ln.strip() else "") for ln in body.rstrip().split("\n"))


def js_string(text: str) -> str:
    return json.dumps(str(text), ensure_ascii=True)  # also escapes U+2028/2029


# --- the modules --------------------------------------------------------------------------------------
def _first_para(text: str) -> str:
    return text.strip()


def _param_doc(p: Param, mapper: _TypeMapper, root: Any) -> str:
    d = " ".join(_clean(p.description).split())
    opt = "" if p.required else " (optional)"
    name = p.ident if p.ident == p.json_name else f"{p.ident} ({p.json_name!r} in the call)"
    return f"{name}{opt}: {d}" if d else f"{name}{opt}"


def _scope_json(scope: Filters) -> dict:
    from dataclasses import asdict

    return {k: v for k, v in asdict(scope).items() if v != getattr(Filters(), k)}


def python_module(catalog: ToolCatalog, db_path: str) -> tuple[str, dict[str, str]]:
    """The module text and {function name: tool id}."""
    mapper = _TypeMapper("py")
    scope = _scope_json(catalog.scope)
    head = [
        '"""Typed wrappers for the tools of a toolidx index (generated by `toolidx export --format python`).',
        "",
        "Each function runs its tool through toolidx's execute path (scope, argument validation, timeout):",
        "it returns the tool's structuredContent, else its text, and raises ToolError when the tool fails",
        "or toolidx refuses the call. Point it at another index with `configure(db_path)`.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Literal",
        "",
        "from toolidx.integrations.runtime import Client, ToolError",
        "",
        f"DB_PATH = {db_path!r}",
        f"SCOPE: dict[str, Any] = {scope!r}",
        "_client: Client | None = None",
        "",
        "",
        "def configure(db_path: str | None = None, *, timeout_s: float = 30.0) -> Client:",
        '    """Bind the wrappers to an index (default: the one they were exported from)."""',
        "    global _client",
        "    _client = Client(db_path or DB_PATH, scope=SCOPE, timeout_s=timeout_s)",
        "    return _client",
        "",
        "",
        "def _call(tool_id: str, args: dict[str, Any]) -> Any:",
        "    return (_client or configure()).call(tool_id, args)",
        "",
        "",
        "__all__ = [\"ToolError\", \"configure\", \"TOOL_IDS\"]",
    ]
    body: list[str] = []
    fn_taken: set[str] = set()
    names: dict[str, str] = {}
    for tool_id in sorted(catalog.names):
        t = catalog.tool(tool_id)
        fn = py_ident(catalog.names[tool_id], fn_taken)
        names[fn] = tool_id
        params, root = params_of(catalog.input_schema(tool_id), py_ident, t.get("param_names"))
        sig = []
        star = False
        for p in params:
            ann = mapper.map(p.schema, root)
            if p.required:
                sig.append(f"{p.ident}: {ann}")
            else:
                if not star:
                    sig.append("*")
                    star = True
                ann = ann if ann == "Any" or ann.endswith("| None") or ann == "None" else f"{ann} | None"
                sig.append(f"{p.ident}: {ann} = None")
        desc = t.get("description") or t.get("title") or t["name"]
        doc = [f"{desc}", "", f"Tool: {tool_id}"]
        if params:
            doc += ["", "Args:"] + ["    " + _param_doc(p, mapper, root) for p in params]
        body += ["", "", f"def {fn}({', '.join(sig)}) -> Any:", "    " + py_docstring("\n".join(doc), "    ")]
        req = [p for p in params if p.required]
        opt = [p for p in params if not p.required]
        body.append("    _args: dict[str, Any] = {" + ", ".join(f"{p.json_name!r}: {p.ident}" for p in req) + "}")
        for p in opt:
            body.append(f"    if {p.ident} is not None:")
            body.append(f"        _args[{p.json_name!r}] = {p.ident}")
        body.append(f"    return _call({tool_id!r}, _args)")
    body += ["", "", "TOOL_IDS: dict[str, str] = {"]
    body += [f"    {fn!r}: {i!r}," for fn, i in names.items()]
    body += ["}", "__all__ += list(TOOL_IDS)", ""]
    return "\n".join(head + body), names
