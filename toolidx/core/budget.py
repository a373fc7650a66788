"""Token budgets: make a JSON answer fit a context window, losing the least useful parts first.

`estimate_tokens` is deliberately a cheap approximation, ceil(len(compact JSON) / 4): no tokenizer
to load, the same answer on every machine, and it errs on the generous side for the English and
JSON that tool catalogs hold (see docs/catalog.md for its measured error against a real tokenizer).

`fit_budget` cuts in a fixed order, and only as far as needed:
1. descriptions shortened to their first sentence (<= 160 chars), then to <= 60 chars;
2. schemas dropped (raw input/output schemas, parameter tables, example arguments);
3. a hit's evidence details dropped (`signals`, `matched`: its one-line `why` stays);
4. items dropped from the end (results are ranked, so the end is the least relevant).
What it did is recorded in `payload["truncated"]`, so a reader always knows the answer is partial.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, TypeVar

from .tooldoc import compact_json, first_line

CHARS_PER_TOKEN = 4
# Keys holding schema-like bulk, dropped in step 2 (both wire and toolidx spellings).
SCHEMA_KEYS = (
    "input_schema",
    "output_schema",
    "inputSchema",
    "outputSchema",
    "parameters",
    "example_arguments",
    "icons",
    "_meta",
    "meta",
)
# Keys holding a search hit's evidence in detail, dropped in step 3 (`why` says it in one line).
DETAIL_KEYS = ("signals", "matched")
DESCRIPTION_LIMITS = (160, 60)


M = TypeVar("M", bound=Mapping[str, Any])


def estimate_tokens(obj: Any) -> int:
    """Approximate tokens of `obj` as compact JSON: ceil(chars / 4). A string counts as its
    JSON encoding (quotes included)."""
    return math.ceil(len(compact_json(obj)) / CHARS_PER_TOKEN)


def _items(payload: dict, items_key: str | None) -> list[dict]:
    if items_key is None:
        return [payload]
    items = payload.get(items_key)
    return items if isinstance(items, list) else []


def _shorten(text: Any, limit: int) -> Any:
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return first_line(text, limit)


def _shorten_descriptions(node: Any, limit: int) -> int:
    """Shorten every `description` string under `node` (tools and their parameters). Returns how
    many were cut."""
    n = 0
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "description" and isinstance(v, str):
                short = _shorten(v, limit)
                if short != v:
                    node[k] = short
                    n += 1
            else:
                n += _shorten_descriptions(v, limit)
    elif isinstance(node, list):
        for v in node:
            n += _shorten_descriptions(v, limit)
    return n


def _drop_keys(item: dict, keys: tuple[str, ...]) -> list[str]:
    dropped = [k for k in keys if k in item]
    for k in dropped:
        del item[k]
    return dropped


def fit_budget(payload: M, items_key: str | None, max_tokens: int) -> M | dict[str, Any]:
    """A copy of `payload` that fits `max_tokens` (as `estimate_tokens` counts), or as close as
    dropping every item gets. `items_key` names the ranked list (None: the payload is one item,
    e.g. a describe answer, which is shortened but never dropped). Untouched when it already fits;
    otherwise `truncated` says what was cut: {"max_tokens", "estimated_tokens",
    "descriptions_shortened", "schemas_dropped", "details_dropped", "items_dropped", "items_kept",
    "fits"}."""
    if max_tokens is None or estimate_tokens(payload) <= max_tokens:
        return payload
    out: dict[str, Any] = copy.deepcopy(dict(payload))
    record: dict[str, Any] = {
        "max_tokens": max_tokens,
        "estimated_tokens": 0,
        "descriptions_shortened": 0,
        "schemas_dropped": 0,
        "details_dropped": 0,
        "items_dropped": 0,
        "items_kept": len(_items(out, items_key)),
        "fits": True,
    }
    out["truncated"] = record

    def fits() -> bool:
        return estimate_tokens(out) <= max_tokens

    for limit in DESCRIPTION_LIMITS:
        if fits():
            break
        record["descriptions_shortened"] = max(record["descriptions_shortened"], _shorten_descriptions(out, limit))
    if not fits():
        for item in _items(out, items_key):
            if _drop_keys(item, SCHEMA_KEYS):
                record["schemas_dropped"] += 1
    if not fits() and items_key is not None:
        for item in _items(out, items_key):
            if _drop_keys(item, DETAIL_KEYS):
                record["details_dropped"] += 1
    if not fits() and items_key is not None:
        items = _items(out, items_key)
        # the largest prefix that fits: binary search, as each try serialises the payload
        lo, hi, full = 0, len(items), list(items)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            out[items_key] = full[:mid]
            record["items_kept"], record["items_dropped"] = mid, len(full) - mid
            if fits():
                lo = mid
            else:
                hi = mid - 1
        out[items_key] = full[:lo]
        record["items_kept"], record["items_dropped"] = lo, len(full) - lo
    record["estimated_tokens"] = estimate_tokens(out)
    # the record itself costs tokens; recount once with its final numbers in place
    record["estimated_tokens"] = estimate_tokens(out)
    record["fits"] = record["estimated_tokens"] <= max_tokens
    return out
