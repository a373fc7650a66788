"""Heuristics for text in a tool definition that reads like instructions to the model rather than
documentation of the tool: prompt injection, tool poisoning, "rug pulls".

Shared by `toolidx diff` (a finding that appears in a new version is a risky change) and
`toolidx audit` (scan the index once, so a first crawl is checked too).

Every rule is a regular expression tuned against the descriptions of 16 real servers (330
tools), ETOM (2,375 tools) and LiveMCPBench (527 tools): it must fire on the attacks published
for MCP (Invariant Labs' tool-poisoning examples, hidden `<IMPORTANT>` blocks, invisible
Unicode) and stay quiet on ordinary documentation ("Important:", "requires an API key").
Findings say what matched and where; they are leads for a human, not verdicts.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

HIGH, MEDIUM = "high", "medium"


@dataclass(frozen=True)
class Finding:
    rule: str
    confidence: str  # high | medium
    message: str
    where: str  # "description", "title", "inputSchema.properties.path.description", ...
    excerpt: str  # the matched text with a little context, invisible characters made visible

    def key(self) -> tuple[str, str, str]:
        """What makes a finding "the same" across two versions of a tool."""
        return (self.rule, self.where, _norm(self.excerpt))

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "confidence": self.confidence,
            "message": self.message,
            "where": self.where,
            "excerpt": self.excerpt,
        }


_I = re.IGNORECASE | re.DOTALL
_SECRET_FILES = (
    r"~/\.ssh|\.ssh/|id_rsa|id_ed25519|id_ecdsa|\.aws/credentials|\.netrc|\.npmrc|"
    r"\.pgpass|/etc/shadow|/etc/passwd|\.git-credentials|\.docker/config\.json|"
    r"claude_desktop_config\.json|\.cursor/mcp\.json|mcp\.json|\.kube/config|keychain"
)
_SECRET_WORDS = (
    r"api[ _-]?keys?|secret keys?|private keys?|access tokens?|auth(?:entication)? tokens?|"
    r"passwords?|credentials|secrets|env(?:ironment)? var(?:iable)?s|\.env\b|"
    r"session cookies?|seed phrase|mnemonic"
)
_CONVERSATION = (
    r"(?:the |this |whole |entire |full |previous |prior |all )*"
    r"(?:conversation|chat(?: history)?|message history|previous messages|"
    r"system prompt|user'?s? (?:messages?|data|files?)|context window)"
)
_SEND = r"send|post|upload|forward|transmit|exfiltrate|leak|email|submit|append|include|embed|pass"

# (rule, confidence, message, pattern)
RULES: list[tuple[str, str, str, re.Pattern]] = [
    (
        "ignore-instructions",
        HIGH,
        "asks the model to disregard its instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*"
            r"(?:previous|prior|above|earlier|preceding|original|system|other|safety)\s+"
            r"(?:instructions?|prompts?|rules|directions|directives|guidelines|messages|tools?)",
            _I,
        ),
    ),
    (
        "conceal-from-user",
        HIGH,
        "asks the model to hide something from the user",
        re.compile(
            r"\b(?:do\s*n[o']t|never|don't|must\s+not|should\s+not)\s+(?:tell|inform|mention|reveal|"
            r"show|notify|alert|disclose|let)\s+(?:(?:this|it|anything|that)\s+)?(?:to\s+)?the\s+user\b"
            r"|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+the\s+user\b"
            r"|\b(?:hide|conceal|keep)\s+(?:this|it|these)\s+(?:\w+\s+){0,3}?(?:from\s+the\s+user|"
            r"secret|hidden)\b|\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|be told)",
            _I,
        ),
    ),
    (
        "hidden-tag",
        HIGH,
        "a tag that poses as system or priority text",
        re.compile(
            r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|sys|assistant|"
            r"system[-_ ]prompt|prompt|override)\s*>|<\|im_(?:start|end)\|>|\[/?INST\]|"
            r"<<\s*SYS\s*>>",
            _I,
        ),
    ),
    (
        "secret-access",
        HIGH,
        "points the model at credential files",
        re.compile(
            r"\b(?:read|cat|open|load|include|send|pass|provide|attach|upload|copy|print|output|"
            r"return|access|fetch|get)\b[^.\n]{0,60}(?:" + _SECRET_FILES + r")",
            _I,
        ),
    ),
    (
        "secret-request",
        MEDIUM,
        "asks for secrets to be passed along",
        re.compile(
            r"\b(?:" + _SEND + r"|provide|read|print|output|reveal|share)\s+(?:[\w'’]+\s+){0,4}?"
            r"(?:the\s+|all\s+|any\s+|your\s+|their\s+)*(?:contents?\s+of\s+)?(?:"
            + _SECRET_WORDS
            + r")\b[^.\n]{0,60}\b(?:to|into|in(?:side)?|as)\s+(?:the\s+|this\s+|a\s+|an\s+)?['\"`]?"
            r"(?:https?://|url\b|webhook|endpoint|sidenote|side note|note\b|notes\b|comment|metadata)",
            _I,
        ),
    ),
    (
        "exfiltration",
        HIGH,
        "asks for the conversation or files to be sent somewhere",
        re.compile(r"\b(?:" + _SEND + r")\s+(?:\w+\s+){0,3}?" + _CONVERSATION + r"[^.\n]{0,60}\b(?:to|into|in)\b", _I),
    ),
    (
        "tool-shadowing",
        MEDIUM,
        "tries to steer the use of other tools",
        re.compile(
            r"\b(?:when|whenever|before|after)\s+(?:using|calling|invoking|running)\s+(?:any|all|every|"
            r"the\s+other|other)\s+(?:other\s+)?(?:tools?|functions?|servers?)\b[^.\n]{0,80}"
            r"\b(?:must|always|first|instead)\b"
            r"|\b(?:instead\s+of|rather\s+than)\s+(?:using\s+)?(?:any|the)\s+other\s+(?:tools?|servers?)\b"
            r"|\bthis\s+tool\s+(?:must|should)\s+(?:always\s+)?be\s+(?:called|used)\s+"
            r"(?:before|instead\s+of)\s+(?:any|every|all)\s+(?:other\s+)?tools?",
            _I,
        ),
    ),
    (
        "role-override",
        MEDIUM,
        "tries to redefine the model's role or instructions",
        re.compile(
            r"\byou\s+are\s+now\s+(?:a|an|in)\b|\bnew\s+(?:system\s+)?instructions\s*:|"
            r"\b(?:reveal|print|output|repeat|show)\s+(?:\w+\s+){0,2}(?:your|the)\s+system\s+prompt",
            _I,
        ),
    ),
]

# zero-width and word joiners, bidi controls, BOM, tag characters, supplementary variation selectors
_INVISIBLE = re.compile(
    "[\u200b\u200c\u200e\u200f\u2060-\u2064\u206a-\u206f\ufeff\u00ad"
    "\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_ZWJ = "\u200d"
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=_-])")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 but tab/LF/CR, DEL, C1
_SHOW = re.compile(_INVISIBLE.pattern[:-1] + _ZWJ + "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Invisible characters shown as <U+XXXX> so a reviewer can see them."""
    return _SHOW.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", text)


def _excerpt(text: str, start: int, end: int, pad: int = 30) -> str:
    a, b = max(0, start - pad), min(len(text), end + pad)
    s = " ".join(visible(text[a:b]).split())
    return ("…" if a else "") + (s if len(s) <= 200 else s[:199] + "…") + ("…" if b < len(text) else "")


def _emoji_like(c: str) -> bool:
    return bool(c) and (unicodedata.category(c) in ("So", "Sk") or 0x1F000 <= ord(c) <= 0x1FAFF or c == "\ufe0f")


def _invisible(text: str, where: str) -> list[Finding]:
    hits = [m.start() for m in _INVISIBLE.finditer(text)]
    # a zero-width joiner between emoji builds one emoji (👩‍💻): only a stray one is suspect
    for i in (m.start() for m in re.finditer(_ZWJ, text)):
        if not (i > 0 and i + 1 < len(text) and _emoji_like(text[i - 1]) and _emoji_like(text[i + 1])):
            hits.append(i)
    if not hits:
        return []
    tags = "".join(chr(ord(text[i]) - 0xE0000) for i in sorted(hits) if 0xE0020 <= ord(text[i]) <= 0xE007E)
    names = sorted({unicodedata.name(text[i], f"U+{ord(text[i]):04X}") for i in hits})
    msg = f"{len(hits)} invisible character{'s' if len(hits) > 1 else ''} ({', '.join(names[:3])})"
    if tags:
        msg += f"; tag characters spell {tags[:80]!r}"
    first = min(hits)
    return [Finding("invisible-unicode", HIGH, msg, where, _excerpt(text, first, first + 1))]


def _controls(text: str, where: str) -> list[Finding]:
    """Terminal control characters: ANSI CSI/OSC sequences (clear the screen, set the title, OSC 8
    hyperlinks, hidden text) start with ESC or a C1 control; no documentation needs them."""
    hits = [m.start() for m in _CONTROL.finditer(text)]
    if not hits:
        return []
    names = sorted({"ESC" if text[i] == "\x1b" else f"U+{ord(text[i]):04X}" for i in hits})
    seq = " (ANSI escape sequence)" if re.search("\x1b[\\[\\]PX^_]|\x9b|\x9d", text) else ""
    msg = f"{len(hits)} terminal control character{'s' if len(hits) > 1 else ''}{seq}: {', '.join(names[:3])}"
    return [Finding("control-characters", HIGH, msg, where, _excerpt(text, hits[0], hits[0] + 1))]


def _base64(text: str, where: str) -> list[Finding]:
    out = []
    for m in _BASE64.finditer(text):
        blob = m.group(0)
        if not (re.search(r"[a-z]", blob) and re.search(r"[A-Z]", blob) and re.search(r"[0-9+/]", blob)):
            continue  # hex digests, long words, paths: not base64 payloads
        decoded = None
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
            s = raw.decode("utf-8")
            if sum(ch.isprintable() or ch.isspace() for ch in s) >= 0.95 * len(s):
                decoded = s
        except (binascii.Error, ValueError, UnicodeDecodeError):
            pass
        if decoded is None and len(blob) < 80:
            continue
        msg = "base64 text" + (
            f" decoding to {(' '.join(decoded.split()))[:80]!r}" if decoded else f" ({len(blob)} chars)"
        )
        out.append(
            Finding("base64-blob", HIGH if decoded else MEDIUM, msg, where, _excerpt(text, m.start(), m.end(), 0))
        )
    return out


def scan_text(text: str, where: str = "description") -> list[Finding]:
    """Findings in one piece of text."""
    if not text:
        return []
    out = _invisible(text, where) + _controls(text, where)
    flat = visible(text)
    for rule, conf, msg, rx in RULES:
        m = rx.search(flat)
        if m:
            out.append(Finding(rule, conf, msg, where, _excerpt(flat, m.start(), m.end())))
    out.extend(_base64(text, where))
    return out


def texts_of(definition: dict) -> Iterable[tuple[str, str]]:
    """Every piece of text a model reads in a tool definition, with where it sits."""
    from .text import iter_texts

    for k in ("description", "title"):
        if isinstance(definition.get(k), str):
            yield k, definition[k]
    ann = definition.get("annotations")
    if isinstance(ann, dict) and isinstance(ann.get("title"), str):
        yield "annotations.title", ann["title"]
    for fld in ("inputSchema", "outputSchema"):
        if isinstance(definition.get(fld), dict):
            for path, text in iter_texts(definition[fld]):
                yield f"{fld}.{path}", text
    name = definition.get("name")
    if isinstance(name, str) and (_INVISIBLE.search(name) or _CONTROL.search(name)):
        yield "name", name


def scan_tool(definition: dict) -> list[Finding]:
    out: list[Finding] = []
    for where, text in texts_of(definition):
        out.extend(scan_text(text, where))
    return out


def new_findings(old: dict | None, new: dict) -> list[Finding]:
    """Findings in `new` that `old` did not have (the same rule on the same text is not new).
    Only texts that differ from the old version are scanned."""
    old_texts = dict(texts_of(old)) if old else {}
    changed = [(w, t) for w, t in texts_of(new) if old_texts.get(w) != t]
    if not changed:
        return []
    found_new = [f for w, t in changed for f in scan_text(t, w)]
    if not found_new:
        return []
    found_old = [f for w, _ in changed if w in old_texts for f in scan_text(old_texts[w], w)]
    before = {f.key() for f in found_old}
    before_rules = {(f.rule, f.where) for f in found_old}
    out = []
    for f in found_new:
        if f.key() in before:
            continue
        # the same rule already firing on the same field with slightly edited text is not news,
        # except invisible characters, whose count is the story
        if (f.rule, f.where) in before_rules and f.rule != "invisible-unicode":
            continue
        out.append(f)
    return out


# --- the `toolidx audit` report ------------------------------------------------------------


@dataclass
class AuditReport:
    source: dict[str, Any]
    scanned: int
    tools: list[dict]  # [{"id", "server", "name", "findings": [Finding...]}]
    servers: list[str] | None = None

    @property
    def findings(self) -> int:
        return sum(len(t["findings"]) for t in self.tools)

    def to_json(self) -> dict:
        by_rule: dict[str, int] = {}
        for t in self.tools:
            for f in t["findings"]:
                by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        return {
            "source": self.source,
            "scanned": self.scanned,
            "flagged_tools": len(self.tools),
            "findings": self.findings,
            "by_rule": dict(sorted(by_rule.items())),
            "filter": {"servers": self.servers or []},
            "tools": [
                {
                    "id": t["id"],
                    "server": t["server"],
                    "name": t["name"],
                    "findings": [f.to_json() for f in t["findings"]],
                }
                for t in self.tools
            ],
        }


def audit_definitions(
    items: Iterable[tuple[str, str, str, dict]], source: dict[str, Any], servers: list[str] | None = None
) -> AuditReport:
    """Scan (id, server, name, definition) items."""
    scanned = 0
    flagged: list[dict] = []
    for tool_id, server, name, definition in items:
        scanned += 1
        found = scan_tool(definition)
        if found:
            flagged.append({"id": tool_id, "server": server, "name": name, "findings": found})
    flagged.sort(key=lambda t: t["id"])
    return AuditReport(source, scanned, flagged, servers)
