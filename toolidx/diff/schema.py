"""Structural diff of two JSON Schemas (a tool's inputSchema or outputSchema).

The walk follows what a caller can send (or a consumer can receive): properties, `required`,
array `items`/`prefixItems`, `additionalProperties`, `$ref` into `$defs`/`definitions`, `allOf`
(merged), `anyOf`/`oneOf` (split into variants, paired by type), `type`, `enum`/`const`,
`default`, and the numeric/length/count/pattern/format constraints.

Every finding is classified from the caller's side. For an input schema, accepting less is
breaking (a call that used to validate may now fail) and accepting more is compatible. For an
output schema the polarity flips: a consumer breaks when the tool may return more (a wider type,
a field no longer guaranteed) and is safe when it returns less.
Description, title and default changes are "risky": they change behaviour without breaking
validation, and descriptions are read by the model (a rug pull can hide there).

Pure functions, no I/O. `$ref`s outside the document are compared as opaque strings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field as dataclass_field  # `field` is also a Change attribute
from typing import Any

from ..core.schemas import json_type, resolve, resolve_ref
from ..core.tooldoc import canonical_json as _canon
from .text import word_diff

BREAKING, RISKY, COMPATIBLE = "breaking", "risky", "compatible"
SEVERITIES = (BREAKING, RISKY, COMPATIBLE)

# keyword -> True when a larger value accepts less
_BOUNDS = {
    "minimum": True,
    "exclusiveMinimum": True,
    "minLength": True,
    "minItems": True,
    "minProperties": True,
    "minContains": True,
    "maximum": False,
    "exclusiveMaximum": False,
    "maxLength": False,
    "maxItems": False,
    "maxProperties": False,
    "maxContains": False,
}
_OPAQUE_CONSTRAINTS = ("pattern", "format", "multipleOf", "contentEncoding", "contentMediaType")
_TEXT_KEYS = ("description", "title")
_ANNOTATION_KEYS = {
    "description",
    "title",
    "default",
    "examples",
    "example",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "markdownDescription",
}
_MAX_DEPTH = 64


@dataclass
class Change:
    """One field-level finding. `path` names the parameter (`settings.calculation.mode`,
    `items[]`, `meta.*`); `field` is the tool field it lives in."""

    field: str
    kind: str
    severity: str
    message: str
    path: str = ""
    old: Any = None
    new: Any = None
    via: list[str] = dataclass_field(default_factory=list)  # $refs followed to get here
    words: list[dict] | None = None  # word diff for text changes

    def to_json(self) -> dict:
        d: dict[str, Any] = {
            "field": self.field,
            "path": self.path,
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "old": self.old,
            "new": self.new,
        }
        if self.via:
            d["via"] = self.via
        if self.words is not None:
            d["words"] = self.words
        return d


def _short(v: Any, limit: int = 80) -> str:
    s = v if isinstance(v, str) else _canon(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Walker:
    def __init__(self, old_root: dict, new_root: dict, fld: str, output: bool):
        self.roots = (old_root, new_root)
        self.field = fld
        self.output = output
        self.changes: list[Change] = []
        self._active: set[tuple] = set()  # ref pairs being compared (recursion guard)
        self._stable: dict[str, bool] = {}  # $ref -> same target on both sides

    # --- classification ------------------------------------------------------------------
    def sev(self, effect: str) -> str:
        """narrow: accepts/returns less; widen: more; change: neither contains the other."""
        if effect == "change":
            return BREAKING
        narrow_breaks = not self.output
        return BREAKING if (effect == "narrow") == narrow_breaks else COMPATIBLE

    def add(
        self,
        kind: str,
        severity: str,
        message: str,
        path: str,
        old: Any = None,
        new: Any = None,
        via: list[str] | None = None,
        words: list[dict] | None = None,
    ) -> None:
        self.changes.append(Change(self.field, kind, severity, message, path, old, new, list(via or []), words))

    def noun(self) -> str:
        return "field" if self.output else "parameter"

    def where(self, path: str) -> str:
        return f"{self.noun()} `{path}`" if path else "the schema"

    # --- $ref / allOf ------------------------------------------------------------------------
    def lookup(self, ref: str, side: int) -> dict | None:
        node = resolve_ref(self.roots[side], ref)
        return node if isinstance(node, dict) else None

    def resolve(self, s: Any, side: int, via: list[str]) -> tuple[Any, list[str], str | None]:
        """`s` through the one resolver (`core.schemas.resolve`), each time from an empty cycle
        guard: a recursive schema is compared once per ref pair (`_active`), not cut short.
        Returns (schema, `via` and the refs followed, an unresolvable ref or None)."""
        r = resolve(s, self.roots[side])
        return r.schema, [*via, *r.via], r.unresolved

    def refs_stable(self, s: Any) -> bool:
        """Whether every $ref reachable from `s` points at the same schema on both sides (then
        an unchanged subtree really is unchanged)."""
        todo = list(_refs_in(s))
        seen: set[str] = set()
        while todo:
            ref = todo.pop()
            if ref in seen:
                continue
            seen.add(ref)
            if ref in self._stable:
                if not self._stable[ref]:
                    return False
                continue
            a, b = self.lookup(ref, 0), self.lookup(ref, 1)
            ok = _canon(a) == _canon(b)
            self._stable[ref] = ok
            if not ok:
                return False
            todo.extend(_refs_in(a))
        return True

    # --- variants ----------------------------------------------------------------------------
    def variants(self, s: dict, side: int, via: list[str], depth: int = 0) -> list[tuple[str, dict]]:
        """(kind, schema) alternatives of a schema: anyOf/oneOf branches and `type` lists split
        up, so `{"type": ["string", "null"]}` and Pydantic's `anyOf: [X, {"type": "null"}]` read
        the same."""
        branches = None
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list) and s[key]:
                branches = s[key]
                break
        if branches is not None and depth < 8:
            outer = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf") and k not in _ANNOTATION_KEYS}
            out: list[tuple[str, dict]] = []
            for b in branches:
                b, _, _ = self.resolve(b, side, via)
                if not isinstance(b, dict):
                    out.append(("any", {}))
                    continue
                out.extend(self.variants({**outer, **b}, side, via, depth + 1))
            return out
        t = s.get("type")
        if isinstance(t, list) and t:
            return [(str(x), {**s, "type": x}) for x in t]
        if isinstance(t, str):
            return [(t, s)]
        if "properties" in s or "additionalProperties" in s or "required" in s:
            return [("object", s)]
        if "items" in s or "prefixItems" in s:
            return [("array", s)]
        values = s["enum"] if isinstance(s.get("enum"), list) else [s["const"]] if "const" in s else None
        if values:
            kinds = sorted({json_type(v) for v in values})
            if len(kinds) == 1:
                return [(kinds[0], s)]
        return [("any", s)]

    # --- the walk ----------------------------------------------------------------------------
    def compare(self, old: Any, new: Any, path: str, via: list[str], depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            # deeper than we walk: if anything below differs, its effect is unknown, so breaking
            if not deep_equal(old, new):
                self.add(
                    "schema_too_deep",
                    BREAKING,
                    f"{self.where(path)}: changed deeper than {_MAX_DEPTH} levels (compatibility unknown)",
                    path,
                    None,
                    None,
                    via,
                )
            return
        old, via_o, bad_o = self.resolve(old, 0, via)
        new, via_n, bad_n = self.resolve(new, 1, via)
        # a recursive schema (a tree node referring to itself) is compared once per ref pair
        followed = (tuple(via_o[len(via) :]), tuple(via_n[len(via) :]))
        if followed != ((), ()) and followed in self._active:
            return
        via = via_n if len(via_n) >= len(via_o) else via_o
        if (bad_o or bad_n) and (bad_o != bad_n):
            self.add(
                "ref_changed",
                BREAKING,
                f"{self.where(path)}: reference changed ({bad_o or 'inline'} → {bad_n or 'inline'})",
                path,
                bad_o,
                bad_n,
                via,
            )
            return
        if bad_o and bad_n:
            return  # the same unresolvable ref on both sides: nothing we can compare
        if old is True or old == {}:
            old = {}
        if new is True or new == {}:
            new = {}
        if not isinstance(old, dict) or not isinstance(new, dict):
            if old != new:
                self.add("schema_changed", BREAKING, f"{self.where(path)}: schema changed", path, old, new, via)
            return
        key = (_canon(old), _canon(new))
        if key[0] == key[1] and ('"$ref"' not in key[0] or self.refs_stable(old)):
            return
        if followed != ((), ()):
            self._active.add(followed)
        try:
            self.annotations(old, new, path, via)
            self.compare_variants(old, new, path, via, depth)
        finally:
            if followed != ((), ()):
                self._active.discard(followed)

    def annotations(self, old: dict, new: dict, path: str, via: list[str]) -> None:
        for k in _TEXT_KEYS:
            a, b = old.get(k), new.get(k)
            if a != b and (isinstance(a, str) or isinstance(b, str)):
                a_s, b_s = a if isinstance(a, str) else "", b if isinstance(b, str) else ""
                ws = " ".join(a_s.split()) == " ".join(b_s.split())
                self.add(
                    f"property_{k}_changed",
                    COMPATIBLE if ws else RISKY,
                    f"{self.where(path)}: {k} "
                    + ("whitespace changed" if ws else "added" if not a_s else "removed" if not b_s else "changed"),
                    path,
                    a,
                    b,
                    via,
                    words=word_diff(a_s, b_s),
                )
        if "default" in old or "default" in new:
            a, b = old.get("default"), new.get("default")
            if ("default" in old) != ("default" in new) or _canon(a) != _canon(b):
                what = "added" if "default" not in old else "removed" if "default" not in new else "changed"
                sev = COMPATIBLE if self.output else RISKY
                self.add(
                    "default_changed",
                    sev,
                    f"{self.where(path)}: default {what}"
                    + (f" ({_short(a)} → {_short(b)})" if what == "changed" else ""),
                    path,
                    a,
                    b,
                    via,
                )
        if bool(old.get("deprecated")) != bool(new.get("deprecated")):
            self.add(
                "deprecated_changed",
                COMPATIBLE,
                f"{self.where(path)}: " + ("now deprecated" if new.get("deprecated") else "no longer deprecated"),
                path,
                old.get("deprecated"),
                new.get("deprecated"),
                via,
            )

    def compare_variants(self, old: dict, new: dict, path: str, via: list[str], depth: int) -> None:
        vo = self.variants(old, 0, via)
        vn = self.variants(new, 1, via)
        if len(vo) == 1 and len(vn) == 1:
            (ko, so), (kn, sn) = vo[0], vn[0]
            effect = _type_effect(ko, kn)
            if effect:
                self.add(
                    f"type_{_EFFECT_WORD[effect]}",
                    self.sev(effect),
                    f"{self.where(path)}: type {_EFFECT_WORD[effect]} {ko} → {kn}",
                    path,
                    ko,
                    kn,
                    via,
                )
                if effect == "change":
                    return
            self.compare_one(so, sn, path, via, depth)
            return
        kinds_o = [k for k, _ in vo]
        kinds_n = [k for k, _ in vn]
        set_o, set_n = set(kinds_o), set(kinds_n)
        if set_o != set_n:
            effect = _set_effect(set_o, set_n)
            self.add(
                f"type_{_EFFECT_WORD[effect]}",
                self.sev(effect),
                f"{self.where(path)}: type {_EFFECT_WORD[effect]} {'|'.join(_order(set_o))} → "
                f"{'|'.join(_order(set_n))}",
                path,
                _order(set_o),
                _order(set_n),
                via,
            )
        # compare the alternatives that exist on both sides, kind by kind
        for kind in _order(set_o & set_n | _numeric_pair(set_o, set_n)):
            ao = [s for k, s in vo if k == kind or (kind == "number" and k == "integer" and "number" not in set_o)]
            an = [s for k, s in vn if k == kind or (kind == "number" and k == "integer" and "number" not in set_n)]
            pairs, left_o, left_n = _pair(ao, an)
            for i, j in pairs:
                sub = path if len(pairs) == 1 and not left_o and not left_n else f"{path}<{kind}#{i + 1}>"
                self.compare_one(ao[i], an[j], sub, via, depth)
            for i in left_o:
                self.add(
                    "variant_removed",
                    self.sev("narrow"),
                    f"{self.where(path)}: alternative removed ({kind}: {_short(ao[i], 60)})",
                    path,
                    ao[i],
                    None,
                    via,
                )
            for j in left_n:
                self.add(
                    "variant_added",
                    self.sev("widen"),
                    f"{self.where(path)}: alternative added ({kind}: {_short(an[j], 60)})",
                    path,
                    None,
                    an[j],
                    via,
                )

    def compare_one(self, old: dict, new: dict, path: str, via: list[str], depth: int) -> None:
        """One alternative against one alternative of the same (or a numeric) kind."""
        self.values(old, new, path, via)
        self.constraints(old, new, path, via)
        if (
            "properties" in old
            or "properties" in new
            or "required" in old
            or "required" in new
            or "additionalProperties" in old
            or "additionalProperties" in new
        ):
            self.object(old, new, path, via, depth)
        if any(k in old or k in new for k in ("items", "prefixItems")):
            self.array(old, new, path, via, depth)

    def values(self, old: dict, new: dict, path: str, via: list[str]) -> None:
        eo = _enum(old)
        en = _enum(new)
        if eo is None and en is None:
            return
        w = self.where(path)
        if eo is None:
            assert en is not None  # both None returned above
            self.add(
                "enum_added",
                self.sev("narrow"),
                f"{w}: now limited to {_short(list(en.values()))}",
                path,
                None,
                list(en.values()),
                via,
            )
        elif en is None:
            self.add(
                "enum_removed",
                self.sev("widen"),
                f"{w}: no longer limited to a list of values",
                path,
                list(eo.values()),
                None,
                via,
            )
        else:
            gone = [eo[k] for k in eo if k not in en]
            came = [en[k] for k in en if k not in eo]
            if gone:
                self.add(
                    "enum_values_removed",
                    self.sev("narrow"),
                    f"{w}: value{'s' if len(gone) > 1 else ''} {_short(gone)} removed",
                    path,
                    gone,
                    None,
                    via,
                )
            if came:
                self.add(
                    "enum_values_added",
                    self.sev("widen"),
                    f"{w}: value{'s' if len(came) > 1 else ''} {_short(came)} added",
                    path,
                    None,
                    came,
                    via,
                )

    def constraints(self, old: dict, new: dict, path: str, via: list[str]) -> None:
        w = self.where(path)
        for k, larger_is_tighter in _BOUNDS.items():
            a, b = old.get(k), new.get(k)
            if a == b or isinstance(a, bool) or isinstance(b, bool):
                if a != b:  # draft-4 boolean exclusiveMinimum/Maximum
                    eff = "narrow" if b else "widen"
                    self.add(f"constraint_{_BOUND_WORD[eff]}", self.sev(eff), f"{w}: {k} {a} → {b}", path, a, b, via)
                continue
            if a is None:
                eff = "narrow"
            elif b is None:
                eff = "widen"
            elif not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
                eff = "change"
            else:
                eff = "narrow" if (b > a) == larger_is_tighter else "widen"
            desc = f"{k} added ({b})" if a is None else f"{k} removed (was {a})" if b is None else f"{k} {a} → {b}"
            self.add(f"constraint_{_BOUND_WORD[eff]}", self.sev(eff), f"{w}: {desc}", path, a, b, via)
        for k in _OPAQUE_CONSTRAINTS:
            a, b = old.get(k), new.get(k)
            if a == b:
                continue
            eff = "narrow" if a is None else "widen" if b is None else "change"
            desc = (
                f"{k} added ({_short(b)})"
                if a is None
                else f"{k} removed (was {_short(a)})"
                if b is None
                else f"{k} {_short(a)} → {_short(b)}"
            )
            self.add(f"constraint_{_BOUND_WORD[eff]}", self.sev(eff), f"{w}: {desc}", path, a, b, via)
        if bool(old.get("uniqueItems")) != bool(new.get("uniqueItems")):
            eff = "narrow" if new.get("uniqueItems") else "widen"
            self.add(
                f"constraint_{_BOUND_WORD[eff]}",
                self.sev(eff),
                f"{w}: uniqueItems {bool(old.get('uniqueItems'))} → {bool(new.get('uniqueItems'))}",
                path,
                old.get("uniqueItems"),
                new.get("uniqueItems"),
                via,
            )

    def object(self, old: dict, new: dict, path: str, via: list[str], depth: int) -> None:
        po: dict[str, Any] = old["properties"] if isinstance(old.get("properties"), dict) else {}
        pn: dict[str, Any] = new["properties"] if isinstance(new.get("properties"), dict) else {}
        ro, rn = _required(old), _required(new)
        noun = self.noun()
        gone = [k for k in po if k not in pn]
        came = [k for k in pn if k not in po]
        renamed = _param_renames(po, pn, gone, came)
        for k in gone:
            p = _join(path, k)
            hint = f" (renamed to `{_join(path, renamed[k])}`?)" if k in renamed else ""
            if self.output:
                sev, why = (BREAKING, "consumers reading it break")
            else:
                sev, why = (BREAKING, "calls that send it break")
            self.add("property_removed", sev, f"{noun} `{p}` removed{hint}: {why}", p, po[k], None, via)
        for k in came:
            p = _join(path, k)
            if self.output:
                self.add("property_added", COMPATIBLE, f"{noun} `{p}` added", p, None, pn[k], via)
            elif k in rn:
                self.add(
                    "property_added",
                    BREAKING,
                    f"new required {noun} `{p}`: existing calls lack it",
                    p,
                    None,
                    pn[k],
                    via,
                )
            else:
                self.add("property_added", COMPATIBLE, f"new optional {noun} `{p}`", p, None, pn[k], via)
        for k in po:
            if k not in pn:
                continue
            p = _join(path, k)
            if k in rn and k not in ro:
                self.add(
                    "property_required",
                    BREAKING if not self.output else COMPATIBLE,
                    f"{noun} `{p}` is now required",
                    p,
                    False,
                    True,
                    via,
                )
            elif k in ro and k not in rn:
                self.add(
                    "property_optional",
                    COMPATIBLE if not self.output else BREAKING,
                    f"{noun} `{p}` is now optional",
                    p,
                    True,
                    False,
                    via,
                )
            self.compare(po[k], pn[k], p, via, depth + 1)
        # `required` names with no property schema (allowed by JSON Schema) still bind callers
        for k in sorted((rn - ro) - set(pn)):
            self.add(
                "property_required",
                self.sev("narrow"),
                f"{noun} `{_join(path, k)}` is now required",
                _join(path, k),
                False,
                True,
                via,
            )
        for k in sorted((ro - rn) - set(po)):
            self.add(
                "property_optional",
                self.sev("widen"),
                f"{noun} `{_join(path, k)}` is now optional",
                _join(path, k),
                True,
                False,
                via,
            )
        ao, an = old.get("additionalProperties"), new.get("additionalProperties")
        closed_o, closed_n = ao is False, an is False
        if closed_o != closed_n:
            eff = "narrow" if closed_n else "widen"
            self.add(
                f"additional_properties_{_BOUND_WORD[eff]}",
                self.sev(eff),
                f"{self.where(path)}: extra keys " + ("no longer allowed" if closed_n else "now allowed"),
                path,
                ao,
                an,
                via,
            )
        elif isinstance(ao, dict) and isinstance(an, dict):
            self.compare(ao, an, _join(path, "*"), via, depth + 1)
        elif isinstance(ao, dict) != isinstance(an, dict) and not (closed_o or closed_n):
            eff = "narrow" if isinstance(an, dict) else "widen"
            self.add(
                f"additional_properties_{_BOUND_WORD[eff]}",
                self.sev(eff),
                f"{self.where(path)}: extra keys "
                + ("now constrained" if isinstance(an, dict) else "no longer constrained"),
                path,
                ao,
                an,
                via,
            )

    def array(self, old: dict, new: dict, path: str, via: list[str], depth: int) -> None:
        io, in_ = old.get("items"), new.get("items")
        to = _tuple_items(old, io)
        tn = _tuple_items(new, in_)
        if to is not None or tn is not None:
            to, tn = to or [], tn or []
            for i in range(max(len(to), len(tn))):
                p = f"{path}[{i}]"
                if i >= len(to):
                    self.add("tuple_item_added", self.sev("widen"), f"{self.where(p)} added", p, None, tn[i], via)
                elif i >= len(tn):
                    self.add("tuple_item_removed", self.sev("narrow"), f"{self.where(p)} removed", p, to[i], None, via)
                else:
                    self.compare(to[i], tn[i], p, via, depth + 1)
        io = io if isinstance(io, (dict, bool)) else None
        in_ = in_ if isinstance(in_, (dict, bool)) else None
        if io is not None or in_ is not None:
            self.compare({} if io is None else io, {} if in_ is None else in_, f"{path}[]", via, depth + 1)


_EFFECT_WORD = {"narrow": "narrowed", "widen": "widened", "change": "changed"}
_BOUND_WORD = {"narrow": "tightened", "widen": "loosened", "change": "changed"}
_KIND_ORDER = ["object", "array", "string", "number", "integer", "boolean", "null", "any"]


def _refs_in(s: Any) -> Iterator[str]:
    if isinstance(s, dict):
        for k, v in s.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            elif isinstance(v, (dict, list)):
                yield from _refs_in(v)
    elif isinstance(s, list):
        for v in s:
            yield from _refs_in(v)


def _required(s: dict) -> set[str]:
    """The names in `required`; anything else in the list (a number, an object) names no property."""
    names = s.get("required")
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def _order(kinds: set[str]) -> list[str]:
    return sorted(kinds, key=lambda k: (_KIND_ORDER.index(k) if k in _KIND_ORDER else 99, k))


def _accepts(kinds: set[str]) -> set[str]:
    """Kinds with integer inside number and everything inside any."""
    out = set(kinds)
    if "number" in out:
        out.add("integer")
    return out


def _type_effect(a: str, b: str) -> str | None:
    if a == b:
        return None
    return _set_effect({a}, {b})


def _set_effect(a: set[str], b: set[str]) -> str:
    if "any" in a and "any" not in b:
        return "narrow"
    if "any" in b and "any" not in a:
        return "widen"
    aa, bb = _accepts(a), _accepts(b)
    if bb < aa or (bb == aa and len(b) < len(a)):
        return "narrow"
    if aa < bb or (aa == bb and len(a) < len(b)):
        return "widen"
    return "change"


def _numeric_pair(a: set[str], b: set[str]) -> set[str]:
    """number on one side and only integer on the other still compare as numbers."""
    if ("number" in a and "integer" in b and "number" not in b) or (
        "integer" in a and "number" in b and "number" not in a
    ):
        return {"number"}
    return set()


def _enum(s: dict) -> dict[str, Any] | None:
    if isinstance(s.get("enum"), list):
        return {_canon(v): v for v in s["enum"]}
    if "const" in s:
        return {_canon(s["const"]): s["const"]}
    return None


def _pair(a: list[dict], b: list[dict]) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pair alternatives of one kind (as indexes): identical ones first, then the most alike."""
    if len(a) == 1 and len(b) == 1:
        return [(0, 0)], [], []
    left_a, left_b = list(range(len(a))), list(range(len(b)))
    for i in range(len(a)):
        ci = _canon(a[i])
        for j in left_b:
            if _canon(b[j]) == ci:
                left_a.remove(i)
                left_b.remove(j)
                break
    scored = sorted(((_likeness(a[i], b[j]), -i, -j) for i in left_a for j in left_b), reverse=True)
    used_a: set[int] = set()
    used_b: set[int] = set()
    pairs = []
    for score, ni, nj in scored:
        i, j = -ni, -nj
        if score <= 0 or i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        pairs.append((i, j))
    return (sorted(pairs), [i for i in left_a if i not in used_a], [j for j in left_b if j not in used_b])


def _likeness(a: dict, b: dict) -> float:
    ka = set((a.get("properties") or {}) if isinstance(a.get("properties"), dict) else ()) | set(a)
    kb = set((b.get("properties") or {}) if isinstance(b.get("properties"), dict) else ()) | set(b)
    return len(ka & kb) / max(1, len(ka | kb))


def _param_renames(po: dict, pn: dict, gone: list[str], came: list[str]) -> dict[str, str]:
    """A removed and an added property with the same schema: probably a rename (a hint only)."""
    out: dict[str, str] = {}
    by_schema: dict[str, list[str]] = {}
    for k in came:
        by_schema.setdefault(_canon(pn[k]), []).append(k)
    for k in gone:
        c = by_schema.get(_canon(po[k]))
        if c and len(c) == 1 and sum(1 for g in gone if _canon(po[g]) == _canon(po[k])) == 1:
            out[k] = c[0]
    return out


# --- public API -----------------------------------------------------------------------------


def diff_schema(
    old: dict | None, new: dict | None, *, field: str = "inputSchema", output: bool | None = None
) -> list[Change]:
    """Classified changes between two versions of one schema (input or output)."""
    is_output = field == "outputSchema" if output is None else output
    if old is None and new is None:
        return []
    if old is None:
        return (
            [
                Change(
                    field,
                    "schema_added",
                    COMPATIBLE if is_output else BREAKING,
                    f"{field} added" + ("" if is_output else ": calls are now validated"),
                    "",
                    None,
                    new,
                )
            ]
            if is_output or (new or {}).get("properties") or (new or {}).get("required")
            else []
        )
    if new is None:
        return [
            Change(
                field,
                "schema_removed",
                BREAKING if is_output else COMPATIBLE,
                f"{field} removed" + (": structured results are no longer promised" if is_output else ""),
                "",
                old,
                None,
            )
        ]
    w = _Walker(old, new, field, is_output)
    w.compare(old, new, "", [])
    return w.changes


def deep_equal(a: Any, b: Any) -> bool:
    """JSON equality (1 and true differ, key order does not), iterative: any depth."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif (
            type(x) is not type(y)
            and not (
                isinstance(x, (int, float))
                and isinstance(y, (int, float))
                and not isinstance(x, bool)
                and not isinstance(y, bool)
            )
        ) or x != y:
            return False
    return True


def _tuple_items(schema: dict, items: Any) -> list | None:
    """The positional item schemas of a tuple array: `prefixItems`, or the draft-4 list form of `items`."""
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        return prefix
    return items if isinstance(items, list) else None
