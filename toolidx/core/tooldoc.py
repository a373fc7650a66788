"""A tool as toolidx sees it: validation of what a server sent, and everything derived from it
(id, tags, parameter names, words for the keyword index, the text that is embedded, the hash).

Pure functions: crawl, search and diff share them, so a tool is read the same way everywhere.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .taxonomy import categorize

# camelCase and ACRONYMWord boundaries; an acronym's plural stays one word (PDFs, URLs, IDs)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z](?!s(?![a-z]))[a-z])")
_SEP = re.compile(r"[_\-.\s/:]+")
MAX_EMBED_PARAMS = 8


def split_name(name: str) -> list[str]:
    """`getCurrentTime` / `get_current-time` / `API-post.page` -> lowercase words."""
    words: list[str] = []
    for part in _SEP.split(name or ""):
        if part:
            words.extend(w.lower() for w in _CAMEL.split(part) if w)
    return words


def canonical_json(value: Any) -> str:
    """The one spelling of a JSON value that hashes the same wherever it was read."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """JSON with no spaces, as shown to agents and in text tables, and as budgets count it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def definition_hash(definition: dict) -> str:
    return hashlib.sha256(canonical_json(definition).encode()).hexdigest()


# --- names made of a restricted alphabet (API tool names, function names) -----------------------------
def name_hash(text: str) -> str:
    """6 hex of `text`'s SHA-256: what a name that had to change carries, so it stays its tool's."""
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def server_name_parts(servers: Iterable[str], keep: str = "") -> dict[str, str]:
    """{server: its part of `server__tool` names}: each run of characters outside
    [A-Za-z0-9{keep}] as one `_`, none at the ends, so the first `__` of a name always ends its
    server part (a tool named `b__c` on server `a` never reads as tool `c` of a server `a__b`); a
    part two servers would share carries each one's hash (which servers exist is the user's config)."""
    base = {}
    for s in servers:
        b = re.sub(rf"[^0-9A-Za-z{keep}]+", "_", unicodedata.normalize("NFKD", s)).strip("_") or "server"
        base[s] = b
    shared = Counter(base.values())
    return {s: b if shared[b] == 1 else f"{b}_{name_hash(s)}" for s, b in base.items()}


def tool_name_part(tool_id: str, keep: str = "_") -> str:
    """A tool's part of its names, from its own id only: its name when made of [A-Za-z0-9{keep}]
    only (`del_ete`), else that name with each other character as `_` and a hash of the id
    (`del-ete` -> `del_ete_4f1c2a` where `-` is not kept), so a look-alike a server adds later never
    gets, nor takes over, the plain name a caller already uses."""
    name = tool_id.partition("/")[2]
    clean = re.sub(rf"[^0-9A-Za-z{keep}]", "_", unicodedata.normalize("NFKD", name))
    return name if name and clean == name else f"{clean}_{name_hash(tool_id)}"


def safe_names(
    ids: Iterable[str], parts: dict[str, str], keep: str = "_", max_len: int | None = None
) -> dict[str, str]:
    """{tool id: `server part__tool part`} (`server_name_parts`, `tool_name_part`), cut to
    `max_len` with the id's hash where longer. Two ids share a name only when one was crafted to
    equal another's hashed form (or cut): the first in id order keeps it, the other gets `_2`."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for i in sorted(set(ids)):
        name = f"{parts[i.partition('/')[0]]}__{tool_name_part(i, keep)}"
        if max_len is not None and len(name) > max_len:
            name = f"{name[: max_len - 7]}_{name_hash(i)}"
        base, n = name, 2
        while name in taken:
            suffix = f"_{n}"
            name, n = (base if max_len is None else base[: max_len - len(suffix)]) + suffix, n + 1
        taken.add(name)
        out[i] = name
    return out


MAX_DEPTH = 200  # JSON nesting a tool may have (real schemas stay under 40; diff compares up to 200)
# what no index may store: lone surrogates (not encodable text) and NUL (PostgreSQL refuses it
# in text, and as \u0000 in jsonb); both become U+FFFD, on both engines (fix_strings)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# the longest word the keyword index keeps: PostgreSQL's btree holds at most ~2,700 bytes per
# posting key (one 6,000-character word rolled a whole crawl back); 128 characters are at most
# 512 bytes in UTF-8, and no real identifier is longer
MAX_WORD_CHARS = 128
# a run of characters that may form one keyword token (everything but white space and ASCII
# punctuation and controls): only such a long run is looked at character by character
_LONG_RUN = re.compile(f"[^\\s\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]{{{MAX_WORD_CHARS + 1},}}")


def json_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep `value` nests (a scalar is 0), counting no further than `limit` + 1. Iterative:
    a hostile document cannot exhaust the stack."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        stack.extend((x, d + 1) for x in items)
    return deepest


def fix_strings(value: Any) -> Any:
    """`value` (JSON) with lone surrogates (valid JSON `\\ud800`, not encodable text) and NUL
    (U+0000, which PostgreSQL cannot store) replaced by U+FFFD in every string and key: the one
    cleaning of text from elsewhere before either engine stores it (crawl's hand-off to the store,
    `ServerResult.mask_secrets`; merge; and what is looked up, so a look-up finds what was
    stored). Returns `value` itself when nothing needed fixing (or when it nests too deep to walk:
    such a tool is rejected by `validate_tool` anyway)."""
    try:
        return _fix(value)
    except RecursionError:
        return value


def _fix(value: Any) -> Any:
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value) if _UNSTORABLE.search(value) else value
    if isinstance(value, list):
        fixed = [_fix(v) for v in value]
        return value if all(a is b for a, b in zip(fixed, value)) else fixed
    if isinstance(value, dict):
        pairs = [(_fix(k), _fix(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items())):
            return value
        return dict(pairs)
    return value


def cap_words(text: str) -> str:
    """`text` with every word longer than MAX_WORD_CHARS cut to its first MAX_WORD_CHARS
    characters: what the keyword index stores (`ToolDoc.fts_row`, both engines) and what a query
    looks up (`core.tokens.query_terms`), so a long word matches itself. A word is a run of
    letters, digits, marks and private-use characters: at least what FTS5's unicode61 tokenizer
    reads as one token, so no token it cuts is longer."""
    if not _LONG_RUN.search(text):
        return text
    return _LONG_RUN.sub(lambda m: _cap_run(m.group(0)), text)


def _cap_run(run: str) -> str:
    out: list[str] = []
    n = 0
    for ch in run:
        cat = unicodedata.category(ch)
        n = n + 1 if cat[0] in "LNM" or cat == "Co" else 0
        if n <= MAX_WORD_CHARS:
            out.append(ch)
    return "".join(out)


def validate_tool(raw: Any) -> str | None:
    """Why this `tools/list` entry is not a valid MCP tool, or None. Lenient where servers differ
    harmlessly; strict where an index entry would be useless or misleading."""
    if not isinstance(raw, dict):
        return f"not an object ({type(raw).__name__})"
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        return "missing or empty `name`"
    if len(name) > 256:
        return "`name` longer than 256 characters"
    schema = raw.get("inputSchema")
    if not isinstance(schema, dict):
        return "missing `inputSchema` object"
    if json_depth(raw) > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    if schema.get("type") != "object":
        return "`inputSchema.type` is not \"object\""
    for key in ("description", "title"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            return f"`{key}` is not a string"
    for key in ("outputSchema", "annotations", "_meta"):
        if raw.get(key) is not None and not isinstance(raw[key], dict):
            return f"`{key}` is not an object"
    return None


def annotation_tags(annotations: dict | None) -> list[str]:
    a = annotations or {}
    tags = []
    if a.get("readOnlyHint") is True:
        tags.append("read-only")
    if a.get("destructiveHint") is True and a.get("readOnlyHint") is not True:
        tags.append("destructive")
    if a.get("idempotentHint") is True:
        tags.append("idempotent")
    if a.get("openWorldHint") is True:
        tags.append("open-world")
    return tags


def meta_tags(meta: dict | None) -> list[str]:
    """Tags servers put in `_meta` (FastMCP: `_meta._fastmcp.tags`; others: `_meta.tags`)."""
    out: list[str] = []
    if not isinstance(meta, dict):
        return out
    for holder in (meta, *(v for v in meta.values() if isinstance(v, dict))):
        tags = holder.get("tags")
        if isinstance(tags, list):
            out.extend(str(t) for t in tags if isinstance(t, (str, int)))
    return out


def param_docs(schema: dict | None) -> list[tuple[str, str]]:
    """Top-level (name, description) pairs of an input schema."""
    props = (schema or {}).get("properties")
    if not isinstance(props, dict):
        return []
    out = []
    for k, v in props.items():
        desc = v.get("description") if isinstance(v, dict) else None
        out.append((str(k), desc if isinstance(desc, str) else ""))
    return out


# a tool that says it is deprecated and names what replaces it: "DEPRECATED: Use read_text_file
# instead", "Deprecated; use `list_files` instead", "deprecated in favour of search_v2"
_REPLACED_BY = re.compile(
    r"\bdeprecated\b[^.;]{0,40}?[.:;,(-]?\s*(?:please\s+)?(?:use|in\s+favou?r\s+of|replaced\s+by|superseded\s+by)"
    r"\s+(?:the\s+)?[`'\"]?([A-Za-z_][\w.-]{0,127}?)[`'\"]?(?:\s+(?:tool\s+)?instead\b|[\s.,;)]|$)",
    re.IGNORECASE,
)


def replacement(description: str | None, title: str | None = None) -> str | None:
    """The name of the tool a deprecated tool's own text says replaces it, if it says one."""
    for text in (title, description):
        m = _REPLACED_BY.search(text or "")
        if m:
            return m.group(1).rstrip(".-")
    return None


def first_line(text: str | None, limit: int = 160) -> str:
    t = " ".join((text or "").split())
    m = re.match(r"(.+?[.!?])(\s|$)", t)
    line = m.group(1) if m and len(m.group(1)) >= 20 else t
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for t in items:
        t = t.strip()
        if t and t.lower() not in seen:
            seen.add(t.lower())
            out.append(t)
    return out


@dataclass
class ToolDoc:
    """One tool ready for the index."""

    id: str
    server: str
    name: str
    title: str | None
    description: str
    definition: dict  # as sent (wire JSON)
    tags: list[str]
    category: str | None
    param_names: list[str]
    read_only: bool | None
    destructive: bool | None
    hash: str
    server_label: str = ""  # words naming the server, for the keyword index
    params_text: str = ""
    embed_text: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def input_schema(self) -> dict | None:
        return self.definition.get("inputSchema")

    def fts_row(self) -> dict[str, str]:
        row = {
            "name": " ".join([self.name, *split_name(self.name)]),
            "title": self.title or "",
            "description": self.description,
            "server": self.server_label,
            "tags": " ".join(self.tags),
            "params": self.params_text,
        }
        return {k: cap_words(v) for k, v in row.items()}


def server_words(server: str, *labels: str | None) -> str:
    words = split_name(server)
    for label in labels:
        if label:
            words.extend(split_name(label))
    return " ".join(_dedupe(words))


# what a server's text (server_text) keeps of its instructions: their opening says what the server
# is for; the rest is how to call it, and the model reads 256 tokens anyway
SERVER_INSTRUCTIONS_CHARS = 300
SERVER_TOOL_NAMES = 30  # the tool names a server's text lists at most
# words that name no server apart: nearly every serverInfo name has one
_SERVER_FILLER = frozenset({"mcp", "server", "servers", "model", "context", "protocol"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def server_text(
    server: str, server_name: str | None, title: str | None, instructions: str | None, tools: Iterable[str] = ()
) -> str:
    """The text of a server that is embedded (search.server_match: evidence for its tools): its config
    name, serverInfo name and title as words, the opening of its instructions and the names of its
    first tools. Server-controlled, so bounded: controls and format characters dropped, white space
    collapsed, the instructions cut at SERVER_INSTRUCTIONS_CHARS and every part at MAX_WORD_CHARS a
    word; it is only ever embedded, never shown."""
    words = [w for w in _dedupe(server_words(server, server_name, title).split()) if w.lower() not in _SERVER_FILLER]
    parts = [" ".join(words[:24]) or " ".join(split_name(server))]
    said = " ".join(_CONTROL.sub(" ", instructions or "").split())[:SERVER_INSTRUCTIONS_CHARS]
    if said:
        parts.append(said)
    names = [" ".join(split_name(t)) for t in list(tools)[:SERVER_TOOL_NAMES]]
    if names:
        parts.append(", ".join(names))
    return cap_words(" ".join(_CONTROL.sub(" ", fix_strings(". ".join(parts))).split()))


def embed_text(name: str, title: str | None, description: str, params: list[tuple[str, str]]) -> str:
    """The text that is embedded (README: "Embedded text"). Name as words first, because short
    models weigh the start; the description cut at ~1,000 chars (MiniLM reads 256 tokens anyway);
    then up to 8 parameter names as words."""
    parts = [" ".join(split_name(name))]
    if title and title.strip().lower() != " ".join(split_name(name)):
        parts.append(title.strip())
    desc = " ".join(description.split())
    if desc:
        parts.append(desc[:1000])
    pnames = [" ".join(split_name(p)) for p, _ in params[:MAX_EMBED_PARAMS]]
    if pnames:
        parts.append("Parameters: " + ", ".join(pnames))
    return ". ".join(p.rstrip(".") for p in parts if p)


def build_tooldoc(
    raw: dict,
    server: str,
    *,
    config_tags: list[str] | None = None,
    category: str | None = None,
    server_label: str = "",
    trust_server_tags: bool = False,
) -> ToolDoc:
    """Derive a ToolDoc from a validated tool dict (wire JSON as sent). `category`: the config's
    (server-wide or for this tool); without one, core.taxonomy derives it.

    Tags (which `serve --tag` scopes by) come from the config and from toolidx's own reading of
    the annotations; tags a server claims in `_meta` count only with `trust_server_tags` (the
    config's `trust_server_tags: true`): otherwise any server could put its tools in a scope."""
    definition = dict(raw)
    name = str(raw["name"])
    ann = raw.get("annotations") if isinstance(raw.get("annotations"), dict) else None
    title = raw.get("title") or (ann or {}).get("title") or None
    description = raw.get("description") or ""
    params = param_docs(raw.get("inputSchema"))
    claimed = meta_tags(raw.get("_meta")) if trust_server_tags else []
    tags = _dedupe([*(config_tags or []), *annotation_tags(ann), *claimed])
    read_only = ann.get("readOnlyHint") if ann and isinstance(ann.get("readOnlyHint"), bool) else None
    destructive = ann.get("destructiveHint") if ann and isinstance(ann.get("destructiveHint"), bool) else None
    params_text = " ".join(" ".join([*split_name(p), d]) for p, d in params)
    server_label = server_label or server_words(server)
    if not category:  # the config did not say: the taxonomy derives it from the tool's words
        category = categorize(name, description, title, server_label)
    return ToolDoc(
        id=f"{server}/{name}",
        server=server,
        name=name,
        title=title,
        description=description,
        definition=definition,
        tags=tags,
        category=category,
        param_names=[p for p, _ in params],
        read_only=read_only,
        destructive=destructive,
        hash=definition_hash(definition),
        server_label=server_label,
        params_text=params_text,
        embed_text=embed_text(name, title, description, params),
    )
