"""What changed between two snapshots of the index, classified for review and CI gates.

Pure: two `Snapshot`s in, a `DiffResult` out. A snapshot holds (id, server, name, hash, stale)
per tool and a loader for definitions by hash, so only the definitions that differ are parsed
(two 10,000-tool crawls diff in well under a second).

Classification (see docs/diff.md):
- breaking: a tool removed or renamed, a parameter removed, a new required parameter, a type,
  enum or constraint narrowed (for output schemas: widened), an output field removed;
- risky: description or title changed, a default changed, an annotation lost read-only or gained
  destructive/open-world, text that reads like instructions to the model appeared (audit.py);
- compatible: a new tool, a new optional parameter, a widened type, loosened constraints, metadata.
A server that failed in the newer crawl is reported as failed; its tools are "unknown", never
"removed" (the store carries a failed server's previous tools over, marked stale).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.tooldoc import canonical_json as _canon
from ..core.tooldoc import split_name
from .audit import new_findings
from .schema import BREAKING, COMPATIBLE, RISKY, SEVERITIES, Change, diff_schema
from .text import word_diff

DIFF_FORMAT = 1  # the `diff` JSON payload version; bumped only on an incompatible change
RANK = {BREAKING: 0, RISKY: 1, COMPATIBLE: 2}
RENAME_MIN_SCORE = 0.72
_FUZZY_PAIR_CAP = 250_000  # removed x added pairs per server scored for renames


@dataclass(slots=True)
class ToolRef:
    id: str
    server: str
    name: str
    hash: str
    stale: bool = False


@dataclass
class Snapshot:
    """One side of a diff. `servers`: status of the servers crawled in that crawl
    ({"status": "ok"|"failed", "error", ...}); servers with tools but no entry were carried over
    from an earlier crawl. `load(hashes) -> {hash: definition}`."""

    tools: dict[str, ToolRef]
    servers: dict[str, dict]
    label: dict[str, Any]
    load: Callable[[set[str]], dict[str, dict]]

    def server_status(self, server: str, has_tools: bool) -> str | None:
        s = self.servers.get(server)
        if s is not None:
            return str(s.get("status") or "ok")
        return "not_crawled" if has_tools else None


@dataclass
class ToolDiff:
    id: str
    server: str
    name: str
    change: str  # added | removed | renamed | changed | unknown
    changes: list[Change] = field(default_factory=list)
    renamed_from: dict | None = None  # {"id", "name", "score", "certain", "reason"}
    note: str | None = None

    @property
    def severities(self) -> list[str]:
        return sorted({c.severity for c in self.changes}, key=RANK.__getitem__)

    @property
    def severity(self) -> str | None:
        s = self.severities
        return s[0] if s else None

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "server": self.server,
            "name": self.name,
            "change": self.change,
            "severity": self.severity,
            "severities": self.severities,
            "renamed_from": self.renamed_from,
            "note": self.note,
            "changes": [c.to_json() for c in self.changes],
        }


@dataclass
class ServerDiff:
    server: str
    state: str  # ok | added | removed | failed | recovered | not_crawled
    old_status: str | None
    new_status: str | None
    error: str | None = None
    old_tools: int = 0
    new_tools: int = 0
    unchanged: int = 0
    tools: list[ToolDiff] = field(default_factory=list)

    @property
    def notable(self) -> bool:
        return bool(self.tools) or self.state not in ("ok", "not_crawled")

    def to_json(self) -> dict:
        return {
            "server": self.server,
            "state": self.state,
            "old_status": self.old_status,
            "new_status": self.new_status,
            "error": self.error,
            "old_tools": self.old_tools,
            "new_tools": self.new_tools,
            "unchanged": self.unchanged,
            "tools": [t.to_json() for t in self.tools],
        }


@dataclass
class DiffResult:
    old: dict[str, Any]
    new: dict[str, Any]
    servers: list[ServerDiff]
    filter_servers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def tool_diffs(self) -> Iterable[ToolDiff]:
        for s in self.servers:
            yield from s.tools

    def counts(self) -> dict[str, Any]:
        tools = {k: 0 for k in ("added", "removed", "renamed", "changed", "unknown")}
        sev = {k: 0 for k in SEVERITIES}
        for t in self.tool_diffs():
            tools[t.change] += 1
            for sv in t.severities:
                sev[sv] += 1
        tools["unchanged"] = sum(s.unchanged for s in self.servers)
        states: dict[str, int] = {}
        for s in self.servers:
            if s.state != "ok":
                states[s.state] = states.get(s.state, 0) + 1
        return {"tools": tools, "severity": sev, "servers": states}

    @property
    def highest(self) -> str | None:
        found = {s for t in self.tool_diffs() for s in t.severities}
        return min(found, key=RANK.__getitem__) if found else None

    def matches(self, fail_on: Iterable[str]) -> bool:
        """Whether any change has a severity the gate fails on."""
        wanted = expand_fail_on(fail_on)
        return any(s in wanted for t in self.tool_diffs() for s in t.severities)

    def to_json(self, fail_on: Iterable[str] = ()) -> dict:
        fo = sorted(expand_fail_on(fail_on), key=RANK.__getitem__)
        return {
            "diff_format": DIFF_FORMAT,
            "from": self.old,
            "to": self.new,
            "filter": {"servers": self.filter_servers},
            "summary": self.counts(),
            "highest": self.highest,
            "fail_on": fo,
            "gate_failed": self.matches(fo),
            "notes": self.notes,
            "servers": [s.to_json() for s in self.servers if s.notable],
        }


def expand_fail_on(values: Iterable[str]) -> set[str]:
    """`breaking`, `risky`, `compatible`, `any` (all three), `none`; comma lists allowed."""
    out: set[str] = set()
    for v in values:
        for part in str(v).split(","):
            p = part.strip().lower()
            if not p or p == "none":
                continue
            if p == "any":
                out.update(SEVERITIES)
            elif p in SEVERITIES:
                out.add(p)
            else:
                from ..core.errors import UsageError

                raise UsageError(
                    f"unknown --fail-on value {part.strip()!r}",
                    fix="use breaking, risky, compatible, any or none (comma-separated)",
                )
    return out


# --- comparing two definitions of one tool --------------------------------------------------

_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_KNOWN_KEYS = {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}


def _text_change(fld: str, old: Any, new: Any, what: str) -> Change | None:
    a = old if isinstance(old, str) else ""
    b = new if isinstance(new, str) else ""
    if old == new or (a == b and (old is None) == (new is None)):
        return None
    ws = " ".join(a.split()) == " ".join(b.split())
    how = "whitespace changed" if ws else "added" if not a else "removed" if not b else "changed"
    return Change(
        fld,
        f"{fld.split('.')[-1]}_changed",
        COMPATIBLE if ws else RISKY,
        f"{what} {how}",
        "",
        old,
        new,
        words=word_diff(a, b),
    )


def _annotation_changes(old: dict, new: dict) -> list[Change]:
    out: list[Change] = []

    def add(hint: str, sev: str, msg: str) -> None:
        out.append(Change(f"annotations.{hint}", "annotation_changed", sev, msg, "", old.get(hint), new.get(hint)))

    ro_o, ro_n = old.get("readOnlyHint") is True, new.get("readOnlyHint") is True
    if ro_o and not ro_n:
        add("readOnlyHint", RISKY, "no longer read-only")
    elif ro_n and not ro_o:
        add("readOnlyHint", COMPATIBLE, "now read-only")
    do, dn = old.get("destructiveHint"), new.get("destructiveHint")
    if dn is True and do is not True:
        add("destructiveHint", RISKY, "now destructive")
    elif do is False and dn is not False:
        add("destructiveHint", RISKY, "no longer declared non-destructive")
    elif do is True and dn is not True:
        add("destructiveHint", COMPATIBLE, "no longer declared destructive")
    elif dn is False and do is not False:
        add("destructiveHint", COMPATIBLE, "now declared non-destructive")
    wo, wn = old.get("openWorldHint"), new.get("openWorldHint")
    if wn is True and wo is not True:
        add("openWorldHint", RISKY, "now reaches the outside world (openWorldHint)")
    elif wo != wn:
        add("openWorldHint", COMPATIBLE, f"openWorldHint {wo} → {wn}")
    io, in_ = old.get("idempotentHint"), new.get("idempotentHint")
    if io != in_:
        add("idempotentHint", COMPATIBLE, "no longer idempotent" if io is True else f"idempotentHint {io} → {in_}")
    t = _text_change("annotations.title", old.get("title"), new.get("title"), "annotation title")
    if t:
        out.append(t)
    for k in sorted(set(old) | set(new)):
        if k not in _HINTS and k != "title" and _canon(old.get(k)) != _canon(new.get(k)):
            out.append(
                Change(
                    f"annotations.{k}",
                    "annotation_changed",
                    COMPATIBLE,
                    f"annotation {k} changed",
                    "",
                    old.get(k),
                    new.get(k),
                )
            )
    return out


MAX_COMPARE_DEPTH = 200  # JSON nesting a definition may have to be compared field by field


def _opaque(d: dict | None) -> bool:
    """Too deep (or unreadable) to walk: only its hash says whether it changed."""
    from ..core.tooldoc import json_depth

    if not d:
        return False
    return "_toolidx_unreadable" in d or json_depth(d, MAX_COMPARE_DEPTH) > MAX_COMPARE_DEPTH


def compare_tools(old: dict, new: dict) -> list[Change]:
    """Field-level, classified changes between two definitions of one tool (name aside). A
    definition too deep to walk is "changed, compatibility unknown": breaking."""
    if _opaque(old) or _opaque(new):
        return [
            Change(
                "definition",
                "definition_too_deep",
                BREAKING,
                f"definition changed; nested deeper than {MAX_COMPARE_DEPTH} levels, so its compatibility is unknown",
                "",
                None,
                None,
            )
        ]
    out: list[Change] = []
    for k, what in (("title", "title"), ("description", "description")):
        c = _text_change(k, old.get(k), new.get(k), what)
        if c:
            out.append(c)
    ao: dict[str, Any] = old["annotations"] if isinstance(old.get("annotations"), dict) else {}
    an: dict[str, Any] = new["annotations"] if isinstance(new.get("annotations"), dict) else {}
    if _canon(ao) != _canon(an):
        out.extend(_annotation_changes(ao, an))
    for fld in ("inputSchema", "outputSchema"):
        a, b = old.get(fld), new.get(fld)
        if _canon(a) != _canon(b):
            out.extend(diff_schema(a if isinstance(a, dict) else None, b if isinstance(b, dict) else None, field=fld))
    out.extend(_injections(old, new))
    for k in sorted((set(old) | set(new)) - _KNOWN_KEYS):
        if _canon(old.get(k)) != _canon(new.get(k)):
            out.append(Change(k, "metadata_changed", COMPATIBLE, f"{k} changed", "", old.get(k), new.get(k)))
    if not out and _canon({**old, "name": ""}) != _canon({**new, "name": ""}):
        out.append(
            Change(
                "definition",
                "definition_changed",
                COMPATIBLE,
                "definition changed with no effect on calls (e.g. unused $defs)",
                "",
                None,
                None,
            )
        )
    return out


def _injections(old: dict | None, new: dict) -> list[Change]:
    if _opaque(old) or _opaque(new):
        return []
    return [
        Change(f.where, "injection_appeared", RISKY, f"{f.message} ({f.rule})", f.where, None, f.excerpt, words=None)
        for f in new_findings(old, new)
    ]


# --- renames ------------------------------------------------------------------------------


def _body_key(d: dict) -> str:
    return _canon({k: v for k, v in d.items() if k != "name"})


def _param_sig(schema: Any) -> set[str]:
    props = (schema or {}).get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return set()
    return {f"{k}:{v.get('type') if isinstance(v, dict) else ''}" for k, v in props.items()}


def _rename_score(old: dict, new: dict) -> tuple[float, str]:
    from rapidfuzz import fuzz

    da, db = old.get("description") or "", new.get("description") or ""
    desc = fuzz.token_sort_ratio(da, db) / 100 if (da or db) else 0.5
    if _canon(old.get("inputSchema")) == _canon(new.get("inputSchema")):
        schema = 1.0
    else:
        sa, sb = _param_sig(old.get("inputSchema")), _param_sig(new.get("inputSchema"))
        schema = len(sa & sb) / len(sa | sb) if (sa | sb) else 1.0
    name = fuzz.ratio(" ".join(split_name(old["name"])), " ".join(split_name(new["name"]))) / 100
    score = 0.45 * desc + 0.35 * schema + 0.20 * name
    if desc < 0.6 and not (schema >= 0.9 and name >= 0.5):
        score = min(score, RENAME_MIN_SCORE - 0.01)
    reason = f"description {desc:.0%} alike, parameters {schema:.0%} alike, name {name:.0%} alike"
    return round(score, 3), reason


def find_renames(
    removed: dict[str, dict],
    added: dict[str, dict],
) -> tuple[list[tuple[str, str, float, bool, str]], bool]:
    """Pairs (old name, new name, score, certain, reason) within one server. Certain: everything
    but the name is identical. Otherwise the most alike pairs above RENAME_MIN_SCORE, greedily.
    Returns (pairs, whether fuzzy matching was skipped for size)."""
    pairs = []
    by_body: dict[str, list[str]] = {}
    for n, d in added.items():
        by_body.setdefault(_body_key(d), []).append(n)
    left_r = dict(removed)
    left_a = dict(added)
    for n, d in removed.items():
        cands = [c for c in by_body.get(_body_key(d), []) if c in left_a]
        if cands:
            c = cands[0]
            pairs.append((n, c, 1.0, True, "same description and schema under a new name"))
            del left_r[n], left_a[c]
    if not left_r or not left_a:
        return pairs, False
    if len(left_r) * len(left_a) > _FUZZY_PAIR_CAP:
        return pairs, True
    scored = []
    for rn, rd in left_r.items():
        for an, ad in left_a.items():
            s, why = _rename_score(rd, ad)
            if s >= RENAME_MIN_SCORE:
                scored.append((s, rn, an, why))
    scored.sort(key=lambda x: (-x[0], x[1], x[2]))
    used_r: set[str] = set()
    used_a: set[str] = set()
    for s, rn, an, why in scored:
        if rn in used_r or an in used_a:
            continue
        used_r.add(rn)
        used_a.add(an)
        pairs.append((rn, an, s, False, why))
    return pairs, False


# --- the diff -----------------------------------------------------------------------------


def diff_snapshots(old: Snapshot, new: Snapshot, *, servers: list[str] | None = None) -> DiffResult:
    only = set(servers or [])
    by_server_o: dict[str, dict[str, ToolRef]] = {}
    by_server_n: dict[str, dict[str, ToolRef]] = {}
    for t in old.tools.values():
        if not only or t.server in only:
            by_server_o.setdefault(t.server, {})[t.name] = t
    for t in new.tools.values():
        if not only or t.server in only:
            by_server_n.setdefault(t.server, {})[t.name] = t
    names = (
        set(by_server_o)
        | set(by_server_n)
        | {s for s in new.servers if not only or s in only}
        | {s for s in old.servers if not only or s in only}
    )

    # first pass: what needs a definition
    plan = []
    need_o: set[str] = set()
    need_n: set[str] = set()
    for s in sorted(names):
        to, tn = by_server_o.get(s, {}), by_server_n.get(s, {})
        so, sn = old.server_status(s, bool(to)), new.server_status(s, bool(tn))
        if so is None and sn is None:
            continue
        if sn is None:
            state = "removed"
        elif so is None:
            state = "added"
        elif sn == "failed":
            state = "failed"
        elif so == "failed" or (to and all(r.stale for r in to.values()) and not any(r.stale for r in tn.values())):
            state = "recovered"
        elif sn == "not_crawled":
            state = "not_crawled"
        else:
            state = "ok"
        gone = [n for n in to if n not in tn]
        came = [n for n in tn if n not in to]
        changed = [n for n in to if n in tn and to[n].hash != tn[n].hash]
        plan.append((s, state, so, sn, to, tn, gone, came, changed))
        if state != "failed":
            need_o.update(to[n].hash for n in gone)
        need_n.update(tn[n].hash for n in came)
        need_o.update(to[n].hash for n in changed)
        need_n.update(tn[n].hash for n in changed)
    defs_o = old.load(need_o) if need_o else {}
    defs_n = new.load(need_n) if need_n else {}

    result = DiffResult(old.label, new.label, [], sorted(only))
    for s, state, so, sn, to, tn, gone, came, changed in plan:
        err = (new.servers.get(s) or {}).get("error") if state == "failed" else None
        sd = ServerDiff(s, state, so, sn, err, len(to), len(tn))
        sd.unchanged = sum(1 for n in to if n in tn and to[n].hash == tn[n].hash)
        if state == "failed":
            # no fresh list from this server: what the old side had and the new lacks is unknown
            for n in gone:
                sd.tools.append(
                    ToolDiff(
                        to[n].id,
                        s,
                        n,
                        "unknown",
                        note="server failed in the newer crawl; not known whether it still exists",
                    )
                )
            gone = []
        rem = {n: defs_o[to[n].hash] for n in gone if to[n].hash in defs_o}
        add = {n: defs_n[tn[n].hash] for n in came if tn[n].hash in defs_n}
        # renames are looked for among tools that can be compared
        rem_c = {n: d for n, d in rem.items() if not _opaque(d)}
        add_c = {n: d for n, d in add.items() if not _opaque(d)}
        pairs, skipped = find_renames(rem_c, add_c) if rem_c and add_c else ([], False)
        if skipped:
            result.notes.append(f"{s}: too many removed x added tools to look for close-match renames")
        for rn, an, score, certain, why in pairs:
            changes = [
                Change("name", "tool_renamed", BREAKING, f"renamed from `{rn}`: calls to `{rn}` break", "", rn, an)
            ]
            changes += compare_tools(rem[rn], add[an])
            sd.tools.append(
                ToolDiff(
                    tn[an].id,
                    s,
                    an,
                    "renamed",
                    changes,
                    {"id": to[rn].id, "name": rn, "score": score, "certain": certain, "reason": why},
                )
            )
            del rem[rn], add[an]
        for n in gone:
            if n in rem or to[n].hash not in defs_o:
                why = "server removed from the index" if state == "removed" else "no longer listed by the server"
                removal = Change("tool", "tool_removed", BREAKING, f"tool removed ({why})", "", n, None)
                sd.tools.append(ToolDiff(to[n].id, s, n, "removed", [removal]))
        for n in came:
            if n in add or tn[n].hash not in defs_n:
                d = defs_n.get(tn[n].hash) or {}
                changes = [Change("tool", "tool_added", COMPATIBLE, "new tool", "", None, n)]
                changes += _injections(None, d) if d else []
                sd.tools.append(ToolDiff(tn[n].id, s, n, "added", changes))
        for n in changed:
            a, b = defs_o.get(to[n].hash), defs_n.get(tn[n].hash)
            if a is None or b is None:
                continue
            note = "server failed in the newer crawl: this is its last good list" if state == "failed" else None
            sd.tools.append(ToolDiff(tn[n].id, s, n, "changed", compare_tools(a, b), note=note))
        order = {"removed": 0, "renamed": 1, "changed": 2, "added": 3, "unknown": 4}
        sd.tools.sort(key=lambda t: (order[t.change], RANK.get(t.severity or "", 9), t.name))
        result.servers.append(sd)
    return result
