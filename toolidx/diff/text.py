"""Text in tool definitions: a word-level diff of two strings (descriptions, titles) and a walk over
every text a schema carries, with where it sits (what the audit scans). Pure functions, no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_TOKEN = re.compile(r"\s+|[\w'’-]+|[^\w\s]")
# difflib is quadratic: when the parts that differ hold more tokens than this, multiplied (two
# 5,000-token texts, ~15 KB each: 0.7 s with edits every 50 words; 20,000: 15 s), that part is one
# deletion and one insertion (a 10 MB description otherwise takes minutes, #42 item 9)
WORD_DIFF_CELLS = 25_000_000


def word_diff(old: str, new: str) -> list[dict]:
    """Word-level edit script: [{"op": "equal"|"delete"|"insert", "text": ...}]. Whitespace stays
    attached to words so joining the "equal"+"delete" parts gives `old` back."""
    import difflib

    a, b = _TOKEN.findall(old or ""), _TOKEN.findall(new or "")
    # most edits touch one spot: match the common head and tail first (linear), diff the middle
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    out: list[dict] = []
    if head:
        out.append({"op": "equal", "text": "".join(a[:head])})
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    tail_tokens = a[len(a) - tail :]
    opcodes: list[tuple[str, int, int, int, int]] = (
        [("replace", 0, len(mid_a), 0, len(mid_b))]
        if len(mid_a) * len(mid_b) > WORD_DIFF_CELLS
        else list(difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False).get_opcodes())
    )
    a, b = mid_a, mid_b
    for op, i1, i2, j1, j2 in opcodes:
        if op == "equal":
            out.append({"op": "equal", "text": "".join(a[i1:i2])})
            continue
        if op in ("delete", "replace"):
            out.append({"op": "delete", "text": "".join(a[i1:i2])})
        if op in ("insert", "replace"):
            out.append({"op": "insert", "text": "".join(b[j1:j2])})
    if tail:
        out.append({"op": "equal", "text": "".join(tail_tokens)})
    merged: list[dict] = []
    for w in out:  # neighbouring "equal" runs (head + middle + tail) read as one
        if merged and merged[-1]["op"] == w["op"] == "equal":
            merged[-1] = {"op": "equal", "text": merged[-1]["text"] + w["text"]}
        elif w["text"]:
            merged.append(w)
    return merged


def iter_texts(schema: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every description/title string in a schema, with where it sits (for the audit). Iterative
    (in document order): a schema of any depth cannot exhaust the stack."""
    stack: list[tuple[Any, str]] = [(schema, path)]
    while stack:
        node, at = stack.pop()
        later: list[tuple[Any, str]] = []
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("description", "title", "markdownDescription") and isinstance(v, str):
                    yield (f"{at}.{k}" if at else k), v
                elif k in ("enum", "examples", "default", "const"):
                    for i, item in enumerate(v if isinstance(v, list) else [v]):
                        if isinstance(item, str) and len(item) > 20:
                            yield f"{at}.{k}[{i}]" if at else f"{k}[{i}]", item
                elif isinstance(v, (dict, list)):
                    later.append((v, f"{at}.{k}" if at else k))
        elif isinstance(node, list):
            later = [(v, f"{at}[{i}]") for i, v in enumerate(node)]
        stack.extend(reversed(later))
