"""An example `arguments` object for a tool that validates against its input schema: the schema's
own const/examples/default/enum first, then format-, pattern-, constraint- and name-aware values;
checked with the validator, and repaired where conditional keywords ask for more."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

from ..tooldoc import split_name
from .refs import resolve
from .typed import MAX_DEPTH, dict_at, int_at, list_at, never
from .validation import validate, validation_errors

_TYPE_ORDER = ("object", "array", "string", "integer", "number", "boolean", "null")


_FORMATS = {
    "date-time": "2024-01-15T09:30:00Z",
    "date": "2024-01-15",
    "time": "09:30:00Z",
    "duration": "P1D",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uri-reference": "https://example.com",
    "iri": "https://example.com",
    "iri-reference": "https://example.com",
    "uri-template": "https://example.com/{id}",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "json-pointer": "/example",
    "relative-json-pointer": "0",
    "regex": "^example$",
    "byte": "ZXhhbXBsZQ==",
    "binary": "example",
    "password": "example-password",
    "int32": "1",
    "int64": "1",
}
# Plausible values by parameter name, for a value the schema says nothing more of (no format,
# pattern, enum, default or example): `"timezone": "Europe/Paris"` teaches a caller what
# `"timezone": "example"` does not. Keys are a name's words joined (`time_zone`, `timeZone` ->
# "timezone"); the whole name is tried first, then its last two words, then its last word, so
# `repo_path` is a path and `repo` a repository.
_STRING_HINTS: dict[str, str] = {
    **dict.fromkeys(("timezone", "tz"), "Europe/Paris"),
    **dict.fromkeys(("repo", "repository", "reponame", "repositoryname", "fullname"), "owner/repo"),
    **dict.fromkeys(("owner", "user", "username", "login", "author", "assignee"), "octocat"),
    **dict.fromkeys(("org", "organization", "organisation", "workspace", "team"), "example-org"),
    **dict.fromkeys(
        ("url", "uri", "link", "endpoint", "href", "website", "homepage", "webhook"), "https://example.com"
    ),
    **dict.fromkeys(("email", "mail", "emailaddress", "recipient", "cc", "bcc"), "user@example.com"),
    **dict.fromkeys(("path", "filepath", "fullpath"), "/tmp/example.txt"),
    **dict.fromkeys(("file", "filename"), "example.txt"),
    **dict.fromkeys(("dir", "directory", "folder", "cwd", "root", "workdir", "repopath", "repodir"), "/tmp/example"),
    **dict.fromkeys(("query", "q", "search", "searchterm", "keyword", "keywords", "term", "terms"), "example query"),
    **dict.fromkeys(("id", "identifier", "slug"), "abc123"),
    **dict.fromkeys(("name",), "example"),
    **dict.fromkeys(("title", "subject", "summary"), "Example title"),
    **dict.fromkeys(("text", "message", "content", "body", "comment", "note", "description", "prompt"), "Hello, world"),
    **dict.fromkeys(("language", "lang", "locale"), "en"),
    **dict.fromkeys(("country", "countrycode"), "FR"),
    **dict.fromkeys(("city", "location", "place"), "Paris"),
    **dict.fromkeys(("currency",), "EUR"),
    **dict.fromkeys(("date", "day", "startdate", "enddate", "since", "until"), "2024-01-15"),
    **dict.fromkeys(("time",), "09:30"),
    **dict.fromkeys(("datetime", "timestamp", "starttime", "endtime"), "2024-01-15T09:30:00Z"),
    **dict.fromkeys(("branch", "ref"), "main"),
    **dict.fromkeys(("commit", "sha", "revision", "rev"), "a1b2c3d"),
    **dict.fromkeys(("tag",), "v1.0.0"),
    **dict.fromkeys(("version",), "1.0.0"),
    **dict.fromkeys(("host", "hostname", "domain"), "example.com"),
    **dict.fromkeys(("ip", "ipaddress"), "192.0.2.1"),
    **dict.fromkeys(("phone", "phonenumber"), "+33123456789"),
    **dict.fromkeys(("color", "colour"), "#3366ff"),
    **dict.fromkeys(("sql", "statement"), "SELECT 1"),
    **dict.fromkeys(("command", "cmd"), "echo hello"),
    **dict.fromkeys(("code", "script", "expression"), "1 + 1"),
    **dict.fromkeys(("pattern", "glob"), "*.txt"),
    **dict.fromkeys(("regex", "regexp"), "^example$"),
    **dict.fromkeys(("mimetype", "mime", "contenttype", "mediatype"), "text/plain"),
    **dict.fromkeys(("method",), "GET"),
    **dict.fromkeys(("format", "outputformat"), "json"),
    **dict.fromkeys(("channel",), "#general"),
    **dict.fromkeys(("model",), "example-model"),
}
_NUMBER_HINTS: dict[str, float] = {
    **dict.fromkeys(
        (
            "limit",
            "count",
            "max",
            "maxresults",
            "numresults",
            "pagesize",
            "perpage",
            "size",
            "top",
            "topk",
            "k",
            "n",
            "results",
            "maxitems",
        ),
        10,
    ),
    **dict.fromkeys(("page", "pagenumber"), 1),
    **dict.fromkeys(("offset", "skip"), 0),
    **dict.fromkeys(("port",), 8080),
    **dict.fromkeys(("year",), 2024),
    **dict.fromkeys(("month",), 1),
    **dict.fromkeys(("day",), 15),
    **dict.fromkeys(("days",), 7),
    **dict.fromkeys(("hours",), 24),
    **dict.fromkeys(("timeout", "seconds"), 30),
    **dict.fromkeys(("latitude", "lat"), 48.8566),
    **dict.fromkeys(("longitude", "lon", "lng"), 2.3522),
}


# A file parameter's extension, from what the texts around it name (#45: an Excel server's `path`
# was "/tmp/example.txt"): an extension written out (`.xlsx`) or a format's name ("Excel workbook",
# "PNG"), only from these lists, so no other text of a server's reaches the example.
_EXTENSIONS = frozenset(
    (
        *("xlsx", "xlsm", "xltx", "xltm", "xls", "csv", "tsv", "docx", "doc", "pptx", "ppt", "pdf"),
        *("png", "jpg", "jpeg", "gif", "webp", "svg", "json", "yaml", "yml", "xml", "html", "md", "txt"),
        *("zip", "gz", "tar", "mp3", "wav", "mp4", "py", "js", "ts", "ipynb", "db", "sqlite", "parquet"),
        *("log", "toml", "ini"),
    )
)
_FORMAT_WORDS = {
    "excel": "xlsx",
    "workbook": "xlsx",
    "spreadsheet": "xlsx",
    "word document": "docx",
    "powerpoint": "pptx",
    "presentation": "pptx",
    "pdf": "pdf",
    "csv": "csv",
    "png": "png",
    "jpeg": "jpg",
    "jpg": "jpg",
    "image": "png",
}  # no output formats (JSON, HTML, Markdown): "a tree of the files as JSON" takes a folder
_WEAK_WORDS = frozenset({"image", "png", "jpeg", "jpg"})  # a tool's text names these inside documents too
_FILE_NAMING = re.compile(
    r"(?<![\w/.])\.([A-Za-z][A-Za-z0-9]{1,4})\b|\b("
    + "|".join(sorted(_FORMAT_WORDS, key=len, reverse=True))
    + r")s?\b",
    re.IGNORECASE,
)


def _extensions(text: Any, weak: bool = True) -> list[str]:
    """The file extensions `text` names, in its order (`.csv or .tsv file` -> csv, tsv). `weak`:
    also from words a text may use of what is inside a file ("an image on a sheet"): a
    parameter's own text, not its tool's."""
    if not isinstance(text, str):
        return []
    out = []
    for m in _FILE_NAMING.finditer(text[:4000]):
        if m.group(2) and not weak and m.group(2).lower() in _WEAK_WORDS:
            continue
        ext = m.group(1).lower() if m.group(1) else _FORMAT_WORDS[m.group(2).lower()]
        if ext in _EXTENSIONS and ext not in out:
            out.append(ext)
    return out


# Pairs of parameters of one kind that say two ends of something (`source_timezone` and
# `target_timezone`, `from` and `to`): the same value in both makes a pointless example (#45:
# convert_time from Europe/Paris to Europe/Paris), so the second end gets another one.
_ENDS = {
    ("source", "target"),
    ("source", "destination"),
    ("source", "dest"),
    ("src", "dst"),
    ("src", "dest"),
    ("from", "to"),
    ("origin", "destination"),
    ("old", "new"),
    ("start", "end"),
    ("begin", "end"),
    ("find", "replace"),
    ("search", "replace"),
}
_OTHER_END: dict[Any, Any] = {
    "Europe/Paris": "Asia/Tokyo",
    "EUR": "USD",
    "en": "fr",
    "FR": "JP",
    "Paris": "Tokyo",
    "2024-01-15": "2024-01-31",
    "09:30": "17:00",
    "09:30:00Z": "17:00:00Z",
    "2024-01-15T09:30:00Z": "2024-01-31T17:00:00Z",
    "main": "develop",
    "a1b2c3d": "e4f5a6b",
    "v1.0.0": "v2.0.0",
    "1.0.0": "2.0.0",
    "Hello, world": "Goodbye, world",
    "text/plain": "application/json",
    "json": "csv",
    "octocat": "hubot",
}


def _ends(a: str, b: str) -> bool:
    """Whether parameters `a` and `b` name two ends of one thing (source_x/target_x, x_from/x_to)."""
    wa, wb = split_name(a), split_name(b)
    if len(wa) != len(wb) or not wa:
        return False
    if wa[1:] == wb[1:] and (wa[0], wb[0]) in _ENDS:
        return True
    return len(wa) > 1 and wa[:-1] == wb[:-1] and (wa[-1], wb[-1]) in _ENDS


def _is_file_name(name: str) -> bool:
    """Whether a parameter of this name takes a file (its name hint is one: `path`, `csv_path`, `filename`)."""
    hint = _hint(name, _STRING_HINTS)
    return isinstance(hint, str) and hint.endswith(".txt")


def _other_end(v: Any) -> Any:
    if isinstance(v, str) and v in _OTHER_END:
        return _OTHER_END[v]
    if isinstance(v, str) and "example" in v:
        return v.replace("example", "example-2", 1)
    if _is_num(v):
        return v + 1
    return _vary(v, 2) if isinstance(v, str) else v


def _hint(name: str, table: dict[str, Any]) -> Any:
    """The table's value for parameter `name` (see _STRING_HINTS), or None."""
    words = split_name(name)
    for key in ("".join(words), "".join(words[-2:]), "".join(words[-1:])):
        if key in table:
            return table[key]
    return None


def _pattern_string(pattern: str) -> str | None:
    """A short string matching `pattern`, built from Python's parse of it (None when unsure)."""
    try:
        # 3.11 moved sre_parse/sre_constants (deprecated names since) to re._parser/_constants,
        # private modules without stubs; typeshed types them under the old names
        if sys.version_info >= (3, 11):
            from re import _constants as c  # type: ignore[attr-defined]
            from re import _parser as sre_parse  # type: ignore[attr-defined]
        else:
            import sre_constants as c
            import sre_parse
        parsed = sre_parse.parse(pattern)
    except Exception:
        return None
    cats = {
        c.CATEGORY_DIGIT: "1",
        c.CATEGORY_WORD: "a",
        c.CATEGORY_SPACE: " ",
        c.CATEGORY_NOT_DIGIT: "a",
        c.CATEGORY_NOT_WORD: "-",
        c.CATEGORY_NOT_SPACE: "a",
    }

    def one_in(items: list) -> str | None:
        negate = any(op == c.NEGATE for op, _ in items)
        if negate:
            banned = set()
            for op, av in items:
                if op == c.LITERAL:
                    banned.add(chr(av))
                elif op == c.RANGE:
                    banned.update(chr(x) for x in range(av[0], min(av[1], av[0] + 300) + 1))
            return next((ch for ch in "ax1_-. " if ch not in banned), None)
        for op, av in items:
            if op == c.LITERAL:
                return chr(av)
            if op == c.RANGE:
                lo, hi = av
                for ch in "a1A":  # prefer readable characters inside the range
                    if lo <= ord(ch) <= hi:
                        return ch
                return chr(lo)
            if op == c.CATEGORY:
                return cats.get(av, "a")
        return None

    def gen(seq: Any, depth: int = 0) -> str | None:
        if depth > 50:
            return None
        out = []
        for op, av in seq:
            if op == c.LITERAL:
                out.append(chr(av))
            elif op == c.NOT_LITERAL:
                out.append("a" if chr(av) != "a" else "b")
            elif op == c.ANY:
                out.append("a")
            elif op == c.IN:
                ch = one_in(av)
                if ch is None:
                    return None
                out.append(ch)
            elif op == c.BRANCH:
                part = gen(av[1][0], depth + 1)
                if part is None:
                    return None
                out.append(part)
            elif op == c.SUBPATTERN:
                part = gen(av[-1], depth + 1)
                if part is None:
                    return None
                out.append(part)
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
                lo, _hi, sub = av
                part = gen(sub, depth + 1)
                if part is None:
                    return None
                out.append(part * lo)
            elif op == c.CATEGORY:
                out.append(cats.get(av, "a"))
            elif op in (c.AT, c.ASSERT, c.ASSERT_NOT):
                continue
            else:  # group references, conditionals: give up, the caller tries other values
                return None
        return "".join(out)

    return gen(parsed)


def _fit_length(value: str, s: dict) -> str:
    lo = int_at(s, "minLength", 0)
    hi = int_at(s, "maxLength", None)
    if len(value) < lo:
        value = value + "x" * (lo - len(value))
    if hi is not None and len(value) > hi:
        value = value[:hi]
    return value


def _string(s: dict, name: str, ext: str | None = None) -> str:
    """`ext`: the extension a file name or path should have (what its texts name), replacing the
    name hints' `.txt`."""
    fmt = s.get("format")
    pattern = s.get("pattern")
    candidates: list[str] = []
    if isinstance(fmt, str) and fmt in _FORMATS:
        candidates.append(_FORMATS[fmt])
    if isinstance(pattern, str):
        p = _pattern_string(pattern)
        if p is not None:
            candidates.append(p)
    hint = _hint(name, _STRING_HINTS) if not candidates else None
    if isinstance(hint, str) and ext and _is_file_name(name):
        hint = hint[: -len("txt")] + ext
    if hint is not None:
        candidates.append(hint)
    candidates.append("example")
    for cand in candidates:
        v = _fit_length(cand, s)
        if not isinstance(pattern, str) or _matches(pattern, v):
            return v
    return _fit_length(candidates[0], s)


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return True  # an ECMA-only regex we cannot check; the final validation decides


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _bounds(s: dict) -> tuple[tuple[float, bool] | None, tuple[float, bool] | None]:
    """(lower, upper) as (value, exclusive); draft 4's boolean exclusiveMinimum/Maximum too."""
    lower = upper = None
    if _is_num(s.get("minimum")):
        lower = (s["minimum"], s.get("exclusiveMinimum") is True)
    if _is_num(s.get("exclusiveMinimum")) and (lower is None or s["exclusiveMinimum"] >= lower[0]):
        lower = (s["exclusiveMinimum"], True)
    if _is_num(s.get("maximum")):
        upper = (s["maximum"], s.get("exclusiveMaximum") is True)
    if _is_num(s.get("exclusiveMaximum")) and (upper is None or s["exclusiveMaximum"] <= upper[0]):
        upper = (s["exclusiveMaximum"], True)
    return lower, upper


def _number(s: dict, integer: bool, name: str = "") -> int | float:
    """The usual value for a parameter of that name (`limit` 10, `page` 1, `port` 8080) when the
    bounds allow it, else 1 when they do; else the nearest allowed value (the middle of an open
    range), on a multiple of `multipleOf`."""
    import math

    lower, upper = _bounds(s)
    step = s["multipleOf"] if _is_num(s.get("multipleOf")) and s["multipleOf"] > 0 else None
    lo: float | None
    hi: float | None
    if integer:
        lo = None if lower is None else (math.floor(lower[0]) + 1 if lower[1] else math.ceil(lower[0]))
        hi = None if upper is None else (math.ceil(upper[0]) - 1 if upper[1] else math.floor(upper[0]))
    else:
        lo = None if lower is None else lower[0]
        hi = None if upper is None else upper[0]

    def ok(v: float) -> bool:
        if lower is not None and (v < lower[0] or (lower[1] and v == lower[0])):
            return False
        return upper is None or not (v > upper[0] or (upper[1] and v == upper[0]))

    hint = _hint(name, _NUMBER_HINTS)
    if (
        hint is not None
        and ok(hint)
        and (not integer or float(hint).is_integer())
        and (step is None or float(hint / step).is_integer())
    ):
        return int(hint) if float(hint).is_integer() else hint
    value: float = 1
    if not ok(value):
        if lo is not None and hi is not None:
            value = lo if integer else (lo + hi) / 2
        elif lo is not None:
            value = lo if ok(lo) else lo + 1
        elif hi is not None:
            value = hi if ok(hi) else hi - 1
    if step:
        up = math.ceil(value / step) * step
        down = math.floor(value / step) * step
        value = up if ok(up) else down
    if integer or float(value).is_integer():
        value = int(value)
    return value


def _pick_type(s: dict) -> str | None:
    t = s.get("type")
    if isinstance(t, list):
        real = [x for x in t if x != "null"]
        return (sorted(real, key=lambda x: _TYPE_ORDER.index(x) if x in _TYPE_ORDER else 99) or ["null"])[0]
    if isinstance(t, str):
        return t
    if "properties" in s or "required" in s or "additionalProperties" in s:
        return "object"
    if "items" in s or "prefixItems" in s:
        return "array"
    if any(k in s for k in ("minLength", "maxLength", "pattern", "format")):
        return "string"
    if any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return None


class _Gen:
    def __init__(self, root: dict, optional: bool, about: tuple[str, ...] = ()):
        self.root = root
        self.optional = optional  # also fill optional properties (when an object needs none)
        self.about = about  # the tool's own texts, then its server's: what file kinds it works on
        # extensions another parameter's own description claims (export_csv's csv_path: .csv),
        # so the tool's "CSV" does not make its workbook `path` a .csv too
        self.claimed = {
            e
            for name, p in dict_at(root, "properties").items()
            if isinstance(p, dict) and _is_file_name(name)
            for e in self._own_extension(p, name)
        }

    @staticmethod
    def _own_extension(s: dict, name: str) -> list[str]:
        """What a file parameter's own description or name says it takes (`image_path`: png)."""
        return (_extensions(s.get("description")) or _extensions(" ".join(split_name(name))))[:1]

    def _extension(self, s: dict, name: str) -> str | None:
        own = self._own_extension(s, name)
        if own:
            return own[0]
        for text in self.about:
            for ext in _extensions(text, weak=False):
                if ext not in self.claimed:
                    return ext
        return None

    def valid(self, value: Any, schema: Any) -> bool:
        return validate(value, schema, self.root) is None

    def value(self, schema: Any, name: str, seen: frozenset, depth: int) -> Any:
        r = resolve(schema, self.root, seen)
        s, seen = r.obj, r.seen
        if "const" in s:
            return s["const"]
        # values the schema author gave are the best examples, when they validate
        for cand in self._given(s):
            if self.valid(cand, s):
                return cand
        for key in ("anyOf", "oneOf"):
            branches = s.get(key)
            if isinstance(branches, list) and branches:
                base = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
                # a real value over null, then the first branch whose value the whole schema takes
                order = sorted(
                    (i for i in range(len(branches)) if not never(branches[i])),
                    key=lambda i: resolve(branches[i], self.root, seen).obj.get("type") == "null",
                )
                first = None
                for i in order:
                    b = resolve(branches[i], self.root, seen).obj
                    v = self.value({**base, **b} if base else b, name, seen, depth)
                    first = v if first is None else first
                    if self.valid(v, s):
                        return v
                return first
        t = _pick_type(s)
        if t == "object" or (t is None and depth == 0):
            return self.obj(s, seen, depth)
        if t == "array":
            return self.arr(s, name, seen, depth)
        if t == "string":
            return _string(s, name, self._extension(s, name))
        if t == "integer":
            return _number(s, True, name)
        if t == "number":
            return _number(s, False, name)
        if t == "boolean":
            return True
        if t == "null":
            return None
        return _string(s, name, self._extension(s, name))  # untyped: anything goes; a string reads best

    @staticmethod
    def _given(s: dict) -> Iterator[Any]:
        if isinstance(s.get("examples"), list):
            yield from s["examples"][:3]
        if "example" in s:
            yield s["example"]
        if "default" in s and s["default"] not in ("", None):  # an empty default shows nothing
            yield s["default"]
        if isinstance(s.get("enum"), list):
            enum = s["enum"]
            yield from [v for v in enum if v is not None][:5] or enum[:1]

    def obj(self, s: dict, seen: frozenset, depth: int) -> dict:
        props = dict_at(s, "properties")
        req = [r for r in (s.get("required") or []) if isinstance(r, str)]
        out: dict[str, Any] = {}
        if depth >= MAX_DEPTH + 4:
            return out
        names = list(req)
        min_props = int_at(s, "minProperties", 0)
        if (self.optional and not req and depth == 0) or len(names) < min_props:
            extra = [p for p in props if p not in names]
            want = max(min_props - len(names), 3 if (self.optional and not req and depth == 0) else 0)
            names += extra[:want]
        for key in names:
            out[key] = self.value(self._prop_schema(s, key, props), key, seen, depth + 1)
        while len(out) < min_props:  # open objects: invent keys the schema allows
            key = f"key{len(out) + 1}"
            out[key] = self.value(self._prop_schema(s, key, props), key, seen, depth + 1)
        if "owner" in {k.lower() for k in out}:  # owner and repository asked apart: the repository is a name
            for k in [k for k, v in out.items() if v == "owner/repo"]:
                if self.valid("example-repo", resolve(self._prop_schema(s, k, props), self.root, seen).obj):
                    out[k] = "example-repo"
        keys = list(out)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                if out[a] == out[b] and not isinstance(out[b], bool) and (_ends(a, b) or _ends(b, a)):
                    other = _other_end(out[b])
                    sub = resolve(self._prop_schema(s, b, props), self.root, seen).obj
                    if other != out[b] and self.valid(other, sub):
                        out[b] = other
        return out

    def _distinct(self, sub: Any, v: Any, taken: list, seen: frozenset) -> Any:
        """An element not yet in `taken` that the item schema still accepts (uniqueItems)."""
        s = resolve(sub, self.root, seen).obj
        for i in range(len(taken), len(taken) + 3):
            for cand in _distinct_candidates(s, v, i):
                if cand not in taken and self.valid(cand, s):
                    return cand
        return _vary(v, len(taken))

    @staticmethod
    def _prop_schema(s: dict, key: str, props: dict) -> Any:
        if key in props:
            return props[key]
        for pat, sub in (s.get("patternProperties") or {}).items():
            if _matches(pat, key):
                return sub
        extra = s.get("additionalProperties")
        return extra if isinstance(extra, dict) else {}

    def arr(self, s: dict, name: str, seen: frozenset, depth: int) -> list:
        lo = int_at(s, "minItems", 0)
        hi = int_at(s, "maxItems", None)
        prefix = list_at(s, "prefixItems") if isinstance(s.get("prefixItems"), list) else list_at(s, "items")
        items = (
            s.get("items")
            if isinstance(s.get("items"), dict)
            else (s.get("additionalItems") if isinstance(s.get("additionalItems"), dict) else {})
        )
        count = max(lo, len(prefix), 1)
        if hi is not None:
            count = min(count, hi)
        if depth >= MAX_DEPTH + 4:
            count = min(count, lo)
        singular = name[:-1] if name.endswith("s") else name
        out: list[Any] = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            v = self.value(sub, singular, seen, depth + 1)
            if s.get("uniqueItems") and v in out:
                v = self._distinct(sub, v, out, seen)
            out.append(v)
        return out


def _distinct_candidates(s: dict, v: Any, i: int) -> Iterator[Any]:
    for key in ("enum", "examples"):
        if isinstance(s.get(key), list):
            yield from s[key]
    yield _vary(v, i)


def _vary(v: Any, i: int) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + i
    if isinstance(v, str):
        return f"{v}{i}"
    if isinstance(v, dict):
        return {**v, f"key{i}": i}
    return v


def _schema_at(root: dict, path: list) -> dict:
    """The (normalised) schema of the instance at `path` (property names and array indexes)."""
    r = resolve(root, root, frozenset())
    s, seen = r.obj, r.seen
    for part in path:
        if isinstance(part, int):
            items = s.get("items") if isinstance(s.get("items"), dict) else {}
            r = resolve(items, root, seen)
            s, seen = r.obj, r.seen
        else:
            r = resolve(_Gen._prop_schema(s, part, s.get("properties") or {}), root, seen)
            s, seen = r.obj, r.seen
    return s


def _walk(errors: list) -> Iterator:
    for e in errors:
        yield e
        yield from _walk(list(e.context or []))


def _repair(value: dict, schema: dict, rounds: int = 8) -> dict:
    """Fix what conditional keywords (if/then, dependencies, oneOf of required lists) demand and
    the generator cannot see: add properties reported missing, drop ones reported unexpected."""
    for _ in range(rounds):
        errors = validation_errors(value, schema)
        if not errors:
            return value
        changed = False
        for e in _walk(errors):
            target: Any = value
            try:
                for part in e.absolute_path:
                    target = target[part]
            except (KeyError, IndexError, TypeError):
                continue
            if not isinstance(target, dict):
                continue
            path = list(e.absolute_path)
            if e.validator in ("required", "dependentRequired", "dependencies"):
                wanted = e.validator_value
                if isinstance(wanted, dict):  # dependencies: {prop: [needed]}
                    wanted = [n for k, v in wanted.items() if k in target and isinstance(v, list) for n in v]
                for key in [k for k in (wanted if isinstance(wanted, list) else []) if k not in target]:
                    target[key] = _Gen(schema, False).value(
                        _schema_at(schema, [*path, key]), key, frozenset(), len(path) + 1
                    )
                    changed = True
            elif e.validator == "additionalProperties" and e.validator_value is False:
                props = (e.schema.get("properties") or {}) if isinstance(e.schema, dict) else {}
                for key in [k for k in target if k not in props]:
                    del target[key]
                    changed = True
        if not changed:
            break
    return value


def example_arguments(schema: dict | None, about: tuple[str | None, ...] = ()) -> dict:
    """An example `arguments` object for a tool: every required parameter (and, when none is
    required, a few optional ones), using the schema's own const/examples/default/enum first,
    then format- and constraint-aware values. Checked with jsonschema, and repaired where
    conditional keywords ask for more; when filling optional parameters breaks validation, only
    the required ones are kept. `about`: the tool's texts (description, title, then its server's
    instructions and name), read in that order for the kind of file a path parameter takes (`.xlsx` for an Excel
    server's `path`); a parameter's own description comes first."""
    if not isinstance(schema, dict):
        return {}
    value: dict = {}
    texts = tuple(t for t in about if isinstance(t, str) and t)
    for optional in (True, False):
        v = _Gen(schema, optional, texts).value(schema, "", frozenset(), 0)
        value = _repair(v if isinstance(v, dict) else {}, schema)
        if validate(value, schema) is None:
            return value
    return value
