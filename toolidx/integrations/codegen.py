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
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..core.filters import Filters
from ..core.schemas import resolve
from ..core.tooldoc import name_hash, safe_names, server_name_parts
from ..store.tools import list_servers
from .common import ToolCatalog

MAX_TYPE_DEPTH = 4
MAX_UNION = 12
_PY_IDENT = re.compile(r"[^0-9A-Za-z_]")
_TS_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")  # used with fullmatch: `$` would let "key\n" pass
# names the generated Python module defines itself (a tool or parameter must not shadow them)
_PY_RESERVED = {
    "Any",
    "Literal",
    "TypedDict",
    "cast",
    "annotations",
    "configure",
    "ToolError",
    "Client",
    "client",
    "DB_PATH",
    "SCOPE",
    "TOOL_IDS",
    "_call",
    "_args",
    "_client",
    "_runtime",
    "None",
    "True",
    "False",
    "self",
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "object",
}
_TS_RESERVED = {
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "new",
    "null",
    "return",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    "let",
    "static",
    "implements",
    "interface",
    "package",
    "private",
    "protected",
    "public",
    "await",
    "async",
    "any",
    "undefined",
    "arguments",
    "eval",
    "ToolError",
    "ToolidxClient",
    "callTool",
    "configure",
    "closeClient",
    "CallToolResult",
    "TOOL_IDS",
    "getClient",
    "TOOLIDX_DB",
    "SCOPE_ARGS",
    "client",
    "Pending",
}


# --- the names of the wrappers -----------------------------------------------------------------------
def wrapper_names(catalog: ToolCatalog) -> dict[str, str]:
    """{tool id: its function's name}, the same in Python and TypeScript: `server__tool`.

    A tool's name depends on its own id (and the index's server names), never on which other tools
    exist, so a tool a server adds later cannot take over a name that code already calls: the rule
    of every API-safe name (`core.tooldoc.safe_names`), here with [A-Za-z0-9_] for the tool part
    (`del-ete` -> `del_ete_4f1c2a`) and [A-Za-z0-9] for the server part, behind `_` where it would
    start with a digit."""
    servers = {r["name"] for r in list_servers(catalog.db)} | {i.partition("/")[0] for i in catalog.names}
    parts = {s: "_" + p if p[0].isdigit() else p for s, p in server_name_parts(sorted(servers)).items()}
    return safe_names(catalog.names, parts, keep="_")


def _type_stems(names: dict[str, str]) -> dict[str, str]:
    """{tool id: the stem of its type names} (`NotesAddNote` for `notes__add_note`); a stem two
    tools would share carries each one's hash, so no tool's type name passes to another."""
    stem = {i: _pascal(fn) for i, fn in names.items()}
    shared = Counter(stem.values())
    return {i: s if shared[s] == 1 else f"{s}{name_hash(i)}" for i, s in stem.items()}


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
    return resolve(root, root).obj, root


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
    """The top-level properties, required ones first (each group in `order`, else the schema's),
    with identifiers from `ident(json_name, taken)` (None: the JSON name); and the root for $refs."""
    s, root = _object_schema(schema)
    props: dict = s["properties"] if isinstance(s.get("properties"), dict) else {}
    req: list = s["required"] if isinstance(s.get("required"), list) else []
    if order:  # the server's own order (stored schemas have sorted keys)
        rank = {k: i for i, k in enumerate(order)}
        props = dict(sorted(props.items(), key=lambda kv: rank.get(kv[0], len(rank))))
    required = [k for k in props if k in req]
    optional = [k for k in props if k not in req]
    taken: set[str] = set()
    out = []
    for k in required + optional:
        sub = props[k] if isinstance(props[k], dict) else {}
        desc = resolve(sub, root).obj.get("description") or ""
        out.append(Param(str(k), ident(str(k), taken) if ident else str(k), sub, k in req, str(desc)))
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
        self.names = {
            "string": "str" if py else "string",
            "integer": "int" if py else "number",
            "number": "float" if py else "number",
            "boolean": "bool" if py else "boolean",
        }

    def literal(self, v: Any) -> str | None:
        """A JSON value as literal text (repr / JSON escaped), None where no literal type exists."""
        if isinstance(v, bool):
            return ("True" if v else "False") if self.lang == "py" else ("true" if v else "false")
        if isinstance(v, int):  # mypy takes no literal beyond 64 bits; a JavaScript number none beyond 2**53
            return repr(v) if abs(v) < (2**63 if self.lang == "py" else 2**53 + 1) else None
        if isinstance(v, str):
            return repr(v) if self.lang == "py" else json.dumps(v, ensure_ascii=True)
        return None  # floats, objects: no literal type

    def literal_type(self, values: list) -> str:
        """The type of exactly these values: `Literal[...]` in Python (never a bare string, which
        typing.get_type_hints would evaluate as code), a union of literals in TypeScript; widened
        to `int` / `number` for a huge integer, to Any for a value with no literal type."""
        if len(values) > 64:
            return self.ANY
        lits: list[str] = []
        wide: list[str] = []
        for v in values:
            lit = None if v is None else self.literal(v)
            if lit is not None:
                lits.append(lit)
            elif v is None or (isinstance(v, int) and not isinstance(v, bool)):
                wide.append(self.NULL if v is None else self.names["integer"])
            else:
                return self.ANY
        head = (f"Literal[{', '.join(lits)}]" if self.lang == "py" else " | ".join(lits)) if lits else None
        return self.union(([head] if head else []) + sorted(wide, key=lambda w: w == self.NULL))

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
        r = resolve(schema, root, seen)
        s, seen = r.obj, r.seen
        if "const" in s or (isinstance(s.get("enum"), list) and s["enum"]):
            return self.literal_type([s["const"]] if "const" in s else s["enum"])
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
                parts.append(
                    self.array(self.map(items, root, seen, depth + 1) if isinstance(items, dict) else self.ANY)
                )
            elif t == "object":
                ap = s.get("additionalProperties")
                value = (
                    self.map(ap, root, seen, depth + 1)
                    if isinstance(ap, dict) and not s.get("properties")
                    else self.ANY
                )
                parts.append(self.obj(value))
            else:
                return self.ANY
        return self.union(parts)


# --- escaping untrusted text -------------------------------------------------------------------------
def _clean(text: str) -> str:
    """Newlines normalised, other control and line/paragraph separator characters dropped."""
    text = str(text or "").replace("\r\n", "\n").replace("\r", "\n")
    return "".join(
        c for c in text if c in "\n\t" or (unicodedata.category(c)[0] != "C" and c not in "\u2028\u2029\x85")
    )


def py_docstring(text: str, indent: str) -> str:
    """A triple-quoted docstring literal that cannot be closed early: backslashes and every `"`
    escaped, so no `\"\"\"` can appear inside."""
    body = _clean(text).replace("\t", "    ").replace("\\", "\\\\").replace('"', '\\"')
    lines = body.split("\n")
    out = [lines[0]] + [(indent + ln) if ln.strip() else "" for ln in lines[1:]]
    return '"""' + "\n".join(out).rstrip() + "\n" + indent + '"""'


def js_comment(text: str, indent: str = "") -> str:
    """JSDoc lines (` * ...`) that cannot close the comment: `*/` broken as `*\\/`."""
    body = _clean(text).replace("\t", "    ").replace("*/", "*\\/")
    return "\n".join(f"{indent} *" + (" " + ln if ln.strip() else "") for ln in body.rstrip().split("\n"))


def js_string(text: str) -> str:
    return json.dumps(str(text), ensure_ascii=True)  # also escapes U+2028/2029


# --- what a tool returns ----------------------------------------------------------------------------
def result_shape(output_schema: Any) -> tuple[list[Param], dict] | None:
    """The declared result of a tool with an output schema: (its properties, as Params, and the
    schema's root for $refs) when it is an object with properties, ([], root) for any other
    declared result, None without an output schema. Per the MCP spec such a tool returns its
    result as structuredContent conforming to the schema, so the wrappers can type it."""
    if not isinstance(output_schema, dict) or not output_schema:
        return None
    return params_of(output_schema, None)


# --- the modules --------------------------------------------------------------------------------------
def _param_doc(p: Param) -> str:
    d = " ".join(_clean(p.description).split())
    opt = "" if p.required else " (optional)"
    name = p.ident if p.ident == p.json_name else f"{p.ident} ({p.json_name!r} in the call)"
    return f"{name}{opt}: {d}" if d else f"{name}{opt}"


def _scope_json(scope: Filters) -> dict:
    return scope.to_json(complete=True)


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
        "from typing import Any, Literal, TypedDict, cast",
        "",
        "from toolidx.integrations.runtime import Client, ToolError",
        "",
        f"DB_PATH = {db_path!r}",
        f"SCOPE: dict[str, Any] = {scope!r}",
        "_client: Client | None = None",
        "",
        "",
        "def configure(db_path: str | None = None, *, timeout_s: float = 30.0) -> Client:",
        '    """Bind the wrappers to an index (default: the one they were exported from); the servers',
        '    started for the previous binding are stopped."""',
        "    global _client",
        "    if _client is not None:",
        "        _client.close()",
        "    _client = Client(db_path or DB_PATH, scope=SCOPE, timeout_s=timeout_s)",
        "    return _client",
        "",
        "",
        "def _call(tool_id: str, args: dict[str, Any], structured: bool = False) -> Any:",
        "    return (_client or configure()).call(tool_id, args, structured=structured)",
        "",
        "",
        "__all__ = [\"ToolError\", \"configure\", \"TOOL_IDS\"]",
    ]
    body: list[str] = []
    wrappers = wrapper_names(catalog)
    stems = _type_stems(wrappers)
    fn_taken: set[str] = set(wrappers.values())
    names: dict[str, str] = {}
    for tool_id, fn in wrappers.items():
        t = catalog.tool(tool_id)
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
            doc += ["", "Args:"] + ["    " + _param_doc(p) for p in params]
        returns, shape = "Any", result_shape(t.get("output_schema"))
        if shape is not None:
            fields, out_root = shape
            if fields:  # a TypedDict in functional form: any JSON key is allowed
                returns = py_ident(stems[tool_id] + "Result", fn_taken)
                # total=False unless every key is required (NotRequired needs Python 3.11)
                total = "" if all(f.required for f in fields) else ", total=False"
                body += ["", "", f"{returns} = TypedDict({returns!r}, {{"]
                body += [f"    {f.json_name!r}: {mapper.map(f.schema, out_root)}," for f in fields]
                body.append(f"}}{total})")
                doc += ["", "Returns:"] + [
                    "    " + _param_doc(f).replace(" (optional)", " (may be absent)") for f in fields
                ]
            else:
                returns = mapper.map(t["output_schema"], out_root)
        body += ["", "", f"def {fn}({', '.join(sig)}) -> {returns}:", "    " + py_docstring("\n".join(doc), "    ")]
        req = [p for p in params if p.required]
        opt = [p for p in params if not p.required]
        body.append("    _args: dict[str, Any] = {" + ", ".join(f"{p.json_name!r}: {p.ident}" for p in req) + "}")
        for p in opt:
            body.append(f"    if {p.ident} is not None:")
            body.append(f"        _args[{p.json_name!r}] = {p.ident}")
        if returns == "Any":
            body.append(f"    return _call({tool_id!r}, _args)")
        else:  # ToolError if the tool sends no structuredContent despite its schema
            body.append(f"    return cast({returns}, _call({tool_id!r}, _args, structured=True))")
    body += ["", "", "TOOL_IDS: dict[str, str] = {"]
    body += [f"    {fn!r}: {i!r}," for fn, i in names.items()]
    body += ["}", "__all__ += list(TOOL_IDS)", ""]
    return "\n".join(head + body), names


def _ts_runtime() -> str:
    """The client every TypeScript module carries (`runtime.ts`, shipped as package data): it starts
    `toolidx serve` as a child over stdio and defines ToolError, configure and closeClient. It reads
    TOOLIDX_DB and SCOPE_ARGS, which the module defines after it, so it does not compile alone."""
    return resources.files("toolidx.integrations").joinpath("runtime.ts").read_text(encoding="utf-8")


def _serve_scope_args(scope: Filters) -> list[str]:
    """`toolidx serve` flags for the part of the scope serve can enforce (servers, tags,
    categories, read-only); the wrappers themselves only cover the exported tools."""
    args: list[str] = []
    for flag, values in (("--server", scope.servers), ("--tag", scope.tags), ("--category", scope.categories)):
        for v in values:
            args += [flag, v]
    if scope.read_only:
        args.append("--read-only")
    return args


def _pascal(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"_+", name) if p) or "Tool"


def _ts_interface(name: str, comment: str, fields: list[Param], root: dict, mapper: _TypeMapper) -> list[str]:
    """An exported interface: JSON names as keys (quoted when no identifier), JSDoc from the
    descriptions, `?` on optional keys."""
    out = ["", "/**", js_comment(comment), " */", f"export interface {name} {{"]
    for f in fields:
        key = f.json_name if _TS_IDENT.fullmatch(f.json_name) else js_string(f.json_name)
        if f.description:
            out += ["  /**", js_comment(f.description, "  "), "   */"]
        out.append(f"  {key}{'' if f.required else '?'}: {mapper.map(f.schema, root)};")
    return out + ["}"]


def typescript_module(catalog: ToolCatalog, db_path: str) -> tuple[str, dict[str, str]]:
    """The module text and {function name: tool id}."""
    mapper = _TypeMapper("ts")
    scope_args = _serve_scope_args(catalog.scope)
    out = [
        "/**",
        " * Typed wrappers for the tools of a toolidx index (generated by `toolidx export --format typescript`).",
        " *",
        " * Each function runs its tool through `toolidx serve`'s execute_tool (scope, argument validation,",
        " * timeout), started once as a child process over stdio: it resolves to the tool's structuredContent,",
        " * else its text, and rejects with ToolError when the tool fails or toolidx refuses the call.",
        " * Needs node >= 18 and `toolidx` on PATH (or $TOOLIDX_COMMAND, or configure({ command })).",
        " * Call closeClient() when done.",
        " */",
        "",
        _ts_runtime().rstrip(),
        "",
        "/** The index the wrappers were exported from. */",
        f"export const TOOLIDX_DB: string = {js_string(db_path)};",
        f"const SCOPE_ARGS: string[] = {json.dumps(scope_args, ensure_ascii=True)};",
    ]
    wrappers = wrapper_names(catalog)
    stems = _type_stems(wrappers)
    taken: set[str] = set(wrappers.values())
    names: dict[str, str] = {}
    for tool_id, fn in wrappers.items():
        t = catalog.tool(tool_id)
        iface = ts_ident(stems[tool_id] + "Args", taken)
        names[fn] = tool_id
        params, root = params_of(catalog.input_schema(tool_id), None, t.get("param_names"))
        out += _ts_interface(
            iface, f"Arguments of {tool_id} (JSON names as the tool takes them).", params, root, mapper
        )
        desc = t.get("description") or t.get("title") or t["name"]
        doc = [desc, "", f"Tool: {tool_id}"]
        doc += [f"@param args.{p.json_name} {' '.join(_clean(p.description).split())}".rstrip() for p in params]
        default = "" if any(p.required for p in params) else " = {}"
        returns, shape = "unknown", result_shape(t.get("output_schema"))
        if shape is not None:
            fields, out_root = shape
            if fields:
                returns = ts_ident(stems[tool_id] + "Result", taken)
                out += _ts_interface(returns, f"What {tool_id} returns (its output schema).", fields, out_root, mapper)
            else:
                returns = mapper.map(t["output_schema"], out_root)
            doc.append(f"@returns the tool's structuredContent ({returns})")
        call = (
            f"  return callTool({js_string(tool_id)}, args);"
            if returns == "unknown"
            else f"  return callTool({js_string(tool_id)}, args, true) as Promise<{returns}>;"
        )
        out += [
            "",
            "/**",
            js_comment("\n".join(doc)),
            " */",
            f"export function {fn}(args: {iface}{default}): Promise<{returns}> {{",
            call,
            "}",
        ]
    out += ["", "/** Function name -> toolidx tool id. */", "export const TOOL_IDS: Record<string, string> = {"]
    out += [f"  {js_string(fn)}: {js_string(i)}," for fn, i in names.items()]
    out += ["};", ""]
    return "\n".join(out), names
