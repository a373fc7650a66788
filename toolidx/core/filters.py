"""Tool filters shared by search, list, categories and serve's scope: one dataclass, so every
command filters the same way. Its SQL is the store's (`store.tools.where`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from typing import Any

from .errors import UsageError

# name_pattern arrives from agents and HTTP clients. Python's `re` backtracks: `(a+)+$` against a
# long name runs for minutes inside SQLite's REGEXP with the GIL held, stalling every client of
# serve --http. RE2 matches in time linear in the name; its compile time and memory are bounded by
# the pattern's length and max_mem (1 MiB: the worst patterns found compile in ~0.25 s and fail
# fast beyond it; ordinary name patterns need a few KB).
MAX_PATTERN_CHARS = 500
_RE2_MAX_MEM = 1 << 20


@lru_cache(maxsize=64)
def compile_pattern(pattern: str, option: str = "--name-pattern") -> Any:
    """`pattern` compiled by RE2, case-insensitive, or a one-line UsageError: too long, not RE2
    syntax (no look-around or back-references), or too large to compile within bounds. `option`:
    the pattern's name as the caller wrote it (`--name-pattern`, search's `spelling`: an agent's
    `filters.name_pattern`, an HTTP client's `name_pattern`)."""
    import re2

    if len(pattern) > MAX_PATTERN_CHARS:
        raise UsageError(
            f"invalid {option} regex: longer than {MAX_PATTERN_CHARS} characters",
            fix="use a shorter regular expression, e.g. '^git_' or 'pdf|docx'",
        )
    options = re2.Options()
    # log_errors off: RE2 would print each bad pattern to stderr besides raising
    for name, value in (("case_sensitive", False), ("log_errors", False), ("max_mem", _RE2_MAX_MEM)):
        setattr(options, name, value)
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        why = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise UsageError(
            f"invalid {option} regex {pattern[:200]!r}: {why}",
            fix="use an RE2 regular expression (no look-around or back-references), e.g. '^git_' or 'pdf|docx'",
        ) from None


@dataclass
class Filters:
    servers: list[str] = field(default_factory=list)  # any of
    tags: list[str] = field(default_factory=list)  # any of
    exclude_tags: list[str] = field(default_factory=list)  # none of
    categories: list[str] = field(default_factory=list)  # any of
    name_pattern: str | None = None  # regex searched in the tool name (case-insensitive)
    description_contains: str | None = None  # case-insensitive substring
    read_only: bool = False  # only tools annotated readOnlyHint: true
    # only tools MCP counts as not destructive: readOnlyHint true, or destructiveHint false (a tool
    # that is not read-only is destructive by default; unannotated tools are dropped)
    no_destructive: bool = False
    include_stale: bool = True  # tools whose server failed at the last crawl
    approved_only: bool = False  # tools a person approved (`toolidx approve`; serve --quarantine)
    has_examples: bool = False  # only tools with valid examples of their own (catalog/examples.py)
    # with has_examples: the ids of those tools (catalog.examples.example_tool_ids: whether an
    # example validates is a JSON Schema check SQL cannot make), filled in by whoever reads
    example_ids: list[str] = field(default_factory=list)
    # the request asked only for servers, tags or categories outside a fixed scope (narrowed_by):
    # no tool passes, whatever the other filters say
    nothing: bool = False

    def __post_init__(self) -> None:
        from .tooldoc import fix_strings

        # what the index holds was cleaned so (NUL, lone surrogates): a value is looked up as it
        # would have been stored, the same on both engines (PostgreSQL refuses NUL outright)
        for f in ("servers", "tags", "exclude_tags", "categories", "description_contains", "name_pattern"):
            setattr(self, f, fix_strings(getattr(self, f)))
        if self.name_pattern:
            compile_pattern(self.name_pattern)

    def is_empty(self) -> bool:
        return self == Filters()

    def narrowed_by(self, scope: Filters | None) -> Filters:
        """These filters inside a fixed scope (serve's --server/--tag/--category/--read-only, a token's,
        a Catalog's): a request can narrow the scope, never widen it. A name_pattern or
        description_contains the scope sets cannot be replaced by another (UsageError)."""
        if scope is None or scope.is_empty():
            return self

        outside = False

        def within(mine: list[str], theirs: list[str]) -> list[str]:
            nonlocal outside
            if not theirs:
                return mine
            if not mine:
                return list(theirs)
            inside = [v for v in mine if v in theirs]
            if not inside:  # asked only for things outside the scope: `nothing`, and a reader
                outside = True  # that looks at the lists alone still stays inside the scope
                return list(theirs)
            return inside

        def fixed(option: str, mine: str | None, theirs: str | None) -> str | None:
            # one value per field: a request's would replace the scope's and widen it
            if mine and theirs and mine != theirs:
                raise UsageError(
                    f"{option} is fixed by this scope ({theirs!r}); a request cannot set another ({mine!r})",
                    fix=f"leave {option} out: the scope's applies",
                )
            return mine or theirs

        narrowed = replace(
            self,
            servers=within(self.servers, scope.servers),
            tags=within(self.tags, scope.tags),
            categories=within(self.categories, scope.categories),
            exclude_tags=sorted(set(self.exclude_tags) | set(scope.exclude_tags)),
            name_pattern=fixed("name_pattern", self.name_pattern, scope.name_pattern),
            description_contains=fixed("description_contains", self.description_contains, scope.description_contains),
            read_only=self.read_only or scope.read_only,
            no_destructive=self.no_destructive or scope.no_destructive,
            include_stale=self.include_stale and scope.include_stale,
            approved_only=self.approved_only or scope.approved_only,
            has_examples=self.has_examples or scope.has_examples,
            example_ids=self.example_ids or scope.example_ids,
        )
        narrowed.nothing = narrowed.nothing or outside or scope.nothing
        return narrowed

    def to_json(self, *, complete: bool = False) -> dict:
        """The filters that are set, as JSON, in field order: what answers and reports show
        (`include_stale` always, `example_ids` never: ids derived from `has_examples`). `complete`:
        every field that differs from its default, `example_ids` included, so that `Filters(**d)`
        gives these filters back (a generated module's scope)."""
        default = Filters()
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if complete:
                keep = v != getattr(default, f.name)
            else:
                keep = f.name != "example_ids" and (v != getattr(default, f.name) or f.name == "include_stale")
            if keep:
                out[f.name] = v
        return out
