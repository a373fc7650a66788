"""The one timestamp format toolidx writes (crawls, approvals, usage rows, history): ISO 8601 in UTC
with milliseconds and a `Z`, e.g. `2026-11-25T02:41:10.678Z`. Fixed width, so text order is time
order (the usage sorts and `max(at)` rely on it), and calls within one second keep their order."""

from __future__ import annotations

from datetime import datetime, timezone


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
