"""One search request for every front-end: the CLI (`toolidx search`), serve's `search_tools`
meta-tool, `/v1/search` and the web console (which asks `/v1/search`'s function).

Each parameter is described once (`PARAMS`) and rendered into typer's help, the meta-tool's JSON
schema and the OpenAPI document; each front-end only spells the names its own way (`--min-score`,
`filters.min_score`, `min_score=`). A request is validated in one place (`SearchRequest.check`),
whichever front-end built it. No numpy, no MCP here: `toolidx stats` imports it to count the
meta-tools' tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import UsageError
from ..core.filters import Filters, compile_pattern
from ..core.tokens import MAX_QUERY_CHARS
from ..core.vocabulary import SEARCH_MODES

CLI, META, HTTP = "cli", "meta", "http"  # the front-ends that spell the parameters their own way


@dataclass(frozen=True)
class Param:
    """One search parameter: its doc (written once), its JSON Schema and its name per front-end
    (None where that front-end does not take it)."""

    key: str  # the SearchRequest field, or the Filters field for a filter
    doc: str
    schema: dict
    names: dict[str, str | None]
    filter: bool = False  # a Filters field (the meta-tool has it under "filters")

    @property
    def many(self) -> bool:
        return self.schema.get("type") == "array"

    def help(self, front: str) -> str:
        """The doc as `front` shows it: a repeated CLI option or query parameter says so."""
        if self.many and front == CLI:
            return f"{self.doc} (repeatable)."
        if self.many and front == HTTP:
            return f"{self.doc} (repeat the parameter)."
        return f"{self.doc}."


def _p(key: str, doc: str, schema: dict, cli: str | None, http: str | None, meta: str | None, **kw: Any) -> Param:
    return Param(key, doc, schema, {CLI: cli, HTTP: http, META: meta}, **kw)


def _list(key: str, doc: str, cli: str, http: str) -> Param:
    return _p(key, doc, {"type": "array", "items": {"type": "string"}}, cli, http, f"filters.{key}", filter=True)


def _flag(key: str, doc: str, cli: str, http: str) -> Param:
    return _p(key, doc, {"type": "boolean", "default": False}, cli, http, f"filters.{key}", filter=True)


# Defaults and bounds of `limit` differ by reader: an agent's context is small (5, at most 50), a
# gateway may page further (100), a person at a terminal asks for what they like.
LIMITS = {CLI: (10, None), META: (5, 50), HTTP: (10, 100)}
MODE_DOC = "hybrid (best, default): meaning + keywords; semantic: meaning only; keyword: exact words only"

PARAMS: tuple[Param, ...] = (
    _p(
        "query",
        'The task in plain words, e.g. "current time in Tokyo" or "list files in a folder"; '
        "tool names and keywords also work",
        {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
        "QUERY",
        "q",
        "query",
    ),
    _p("limit", "How many matches at most", {"type": "integer", "minimum": 1}, "--limit", "k", "limit"),
    _p(
        "mode",
        MODE_DOC,
        {"type": "string", "enum": list(SEARCH_MODES), "default": "hybrid"},
        "--mode",
        "mode",
        "search_type",
    ),
    _list("servers", "Only these servers", "--server", "server"),
    _list("tags", "Only tools with any of these tags (e.g. read-only)", "--tag", "tag"),
    _list("exclude_tags", "Drop tools with any of these tags (e.g. destructive)", "--exclude-tag", "exclude_tag"),
    _list("categories", "Only these categories", "--category", "category"),
    _p(
        "name_pattern",
        "Regex on the tool name (RE2, case-insensitive)",
        {"type": "string"},
        "--name-pattern",
        "name_pattern",
        "filters.name_pattern",
        filter=True,
    ),
    _p(
        "description_contains",
        "Text the description must contain",
        {"type": "string"},
        "--description-contains",
        "description_contains",
        "filters.description_contains",
        filter=True,
    ),
    _flag("read_only", "Only tools marked read-only", "--read-only", "read_only"),
    _flag(
        "no_destructive",
        "Only tools that are not destructive by MCP's defaults: read-only, or destructiveHint: false",
        "--no-destructive",
        "no_destructive",
    ),
    _flag(
        "has_examples",
        "Only tools with usage examples (from their schema, a saved list or recorded calls)",
        "--has-examples",
        "has_examples",
    ),
    _p(
        "min_score",
        "Drop matches scoring below this (0..1); default: the calibrated no-match threshold",
        {"type": "number", "minimum": 0, "maximum": 1},
        "--min-score",
        "min_score",
        "filters.min_score",
    ),
)
PARAM = {p.key: p for p in PARAMS}
FILTER_KEYS = tuple(p.key for p in PARAMS if p.filter)


def name(key: str, front: str) -> str:
    """`key` as `front` spells it (e.g. min_score: `--min-score`, `filters.min_score`)."""
    spelled = PARAM[key].names[front]
    assert spelled is not None, f"{front} has no {key}"
    return spelled


def json_schema(key: str, front: str) -> dict:
    """`key`'s JSON Schema with its doc, as `front` (META or HTTP) publishes it."""
    p = PARAM[key]
    schema = dict(p.schema)
    if key == "limit":
        default, most = LIMITS[front]
        schema["default"] = default
        if most is not None:
            schema["maximum"] = most
    schema["description"] = p.help(front)
    return schema


@dataclass(frozen=True)
class Spelling:
    """How a front-end names search's options in the hints and errors it passes on: an agent over
    MCP sets `filters.min_score`, an HTTP client `min_score=`, a person `--min-score`."""

    names: tuple[tuple[str, str], ...]  # (option, as the front-end writes it)
    sep: str = " "  # between that name and a value
    # what "no good match" says after its threshold to a reader who cannot set min_score (an agent
    # over an embedding server's search_tools); "": how to show the best tools anyway
    instead: str = ""

    def name(self, option: str) -> str:
        return dict(self.names).get(option, option)

    def setting(self, option: str, value: Any) -> str:
        return f"{self.name(option)}{self.sep}{value}"

    def below_threshold(self) -> str:
        """What the "no good match" note says after the threshold it names."""
        return self.instead or f" ({self.setting('min_score', 0)} shows it anyway)"


def _spelling(front: str, sep: str) -> Spelling:
    return Spelling(tuple((p.key, n) for p in PARAMS if (n := p.names[front]) is not None), sep)


SPELLINGS = {CLI: _spelling(CLI, " "), META: _spelling(META, ": "), HTTP: _spelling(HTTP, "=")}


@dataclass
class SearchRequest:
    """What a search asks, whichever front-end it came from: built by the front-end, checked once
    (`check`), and handed to `search.hybrid.search`. `filters.has_examples` needs the ids of the
    tools with examples (`filters.example_ids`), which the front-end reads (its usage file, its
    scope's recorded calls) before it searches."""

    query: str
    mode: str = "hybrid"
    limit: int = 10
    min_score: float | None = None
    filters: Filters = field(default_factory=Filters)

    def check(self, front: str = CLI, *, cut_long: bool = False) -> SearchRequest:
        """This request, or a one-line UsageError naming the parameter as `front` spells it. A
        query over MAX_QUERY_CHARS is refused, as every front-end does (the CLI used to cut it
        without a word); `cut_long`: let it through, to be read up to the limit (the library's
        `search`, an eval over a bench file's queries)."""
        query = self.query.strip()
        if not query:
            raise UsageError(
                f"{name('query', front)}: the query is empty: nothing to search for",
                fix='say what the tool should do, e.g. "convert a pdf to text"',
            )
        if not cut_long and len(query) > MAX_QUERY_CHARS:
            raise UsageError(
                f"{name('query', front)}: {len(query):,} characters, the limit is {MAX_QUERY_CHARS:,}",
                fix="ask in fewer words",
            )
        if self.mode not in SEARCH_MODES:
            raise UsageError(
                f"{name('mode', front)}: unknown search mode {self.mode!r}",
                fix=f"use one of: {', '.join(SEARCH_MODES)}",
            )
        most = LIMITS[front][1]
        if self.limit < 1 or (most is not None and self.limit > most):
            bound = f"1..{most}" if most is not None else "at least 1"
            raise UsageError(f"{name('limit', front)}: must be {bound} (got {self.limit})")
        if self.min_score is not None and not 0.0 <= self.min_score <= 1.0:
            raise UsageError(f"{name('min_score', front)}: must be between 0 and 1 (got {self.min_score})")
        return self


def from_http(params: Any) -> SearchRequest:
    """The request of `/v1/search`'s query parameters (a multi-dict: `getlist`, `get`)."""
    get = params.get

    def number(key: str, kind: Any, default: Any) -> Any:
        raw = get(name(key, HTTP))
        if raw in (None, ""):
            return default
        try:
            return kind(raw)
        except ValueError:
            raise UsageError(f"{name(key, HTTP)}: not a number ({raw[:40]!r})") from None

    def flag(key: str) -> bool:
        raw = (get(name(key, HTTP)) or "").lower()
        if raw in ("", "0", "false", "no"):
            return False
        if raw in ("1", "true", "yes"):
            return True
        raise UsageError(f"{name(key, HTTP)}: must be true or false (got {raw[:40]!r})")

    f: dict[str, Any] = {}
    for key in FILTER_KEYS:
        p = PARAM[key]
        if p.many:
            f[key] = params.getlist(name(key, HTTP))
        elif p.schema["type"] == "boolean":
            f[key] = flag(key)
        else:
            f[key] = get(name(key, HTTP)) or None
    return SearchRequest(
        query=(get("q") or "").strip(),
        mode=get("mode") or "hybrid",
        limit=number("limit", int, LIMITS[HTTP][0]),
        min_score=number("min_score", float, None),
        filters=filters_of(f, HTTP),
    ).check(HTTP)


def from_meta(args: dict) -> SearchRequest:
    """The request of `search_tools`' arguments (already checked against its schema)."""
    f = dict(args.get("filters") or {})
    min_score = f.pop("min_score", None)
    return SearchRequest(
        query=args["query"],
        mode=args.get("search_type", "hybrid"),
        limit=args.get("limit", LIMITS[META][0]),
        min_score=min_score,
        filters=filters_of(f, META),
    ).check(META)


def filters_of(f: dict[str, Any], front: str) -> Filters:
    """`Filters` of a front-end's filter values (keyed as Filters names them)."""
    if f.get("name_pattern"):  # checked before Filters does, to name it as the caller wrote it
        compile_pattern(f["name_pattern"], name("name_pattern", front))
    return Filters(**f)
