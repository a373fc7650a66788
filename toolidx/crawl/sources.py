"""`tools_file` sources: a saved tool list indexed as if a server had returned it.

Accepted shapes:
- JSON: a `tools/list` result (`{"tools": [...]}`), a JSON-RPC response holding one, or a list.
- JSONL: one tool per line, wire shape (`inputSchema`) or the bench shape
  (`{"id", "server", "server_title", "name", "description", "input_schema"}`).
Rows that name their own `server` (a catalog of many servers) are indexed under that server;
the rest under the config entry's name.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.clock import now_iso
from ..core.files import NotRegularFile, open_regular
from ..core.servers import ServerResult, ServerSpec, server_name_problem
from ..core.tooldoc import fix_strings, validate_tool

_BENCH_KEYS = {"input_schema": "inputSchema", "output_schema": "outputSchema"}
_DROP = {"id", "server", "server_title"}


def _rows(path: Path) -> list[Any]:
    with open_regular(path, "r", encoding="utf-8") as f:  # a FIFO swapped in after the config check
        text = f.read()
    stripped = text.lstrip()
    if path.suffix.lower() != ".jsonl" and stripped[:1] in ("{", "["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None  # maybe JSONL whose first line is an object
        except RecursionError:
            raise ValueError("JSON nests too deep to read") from None
        if data is not None:
            if isinstance(data, dict) and isinstance(data.get("result"), dict):
                data = data["result"]
            if isinstance(data, dict) and isinstance(data.get("tools"), list):
                return data["tools"]
            if isinstance(data, list):
                return data
            if isinstance(data, dict) and "name" in data:
                return [data]
            raise ValueError("JSON has no `tools` list")
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"line {n}: invalid JSON ({e.msg})") from None
            except RecursionError:  # one unreadable row is reported; the others are kept
                rows.append(_Unreadable(n))
    return rows


class _Unreadable:
    """A JSONL row nested too deep for the JSON parser."""

    def __init__(self, line: int):
        self.line = line


def _wire(row: dict) -> dict:
    return {_BENCH_KEYS.get(k, k): v for k, v in row.items() if k not in _DROP}


def load_tools_file(spec: ServerSpec) -> list[ServerResult]:
    t0 = time.perf_counter()
    started = now_iso()
    path = Path(spec.tools_file or "")

    def done(r: ServerResult) -> ServerResult:
        r.duration_ms = round((time.perf_counter() - t0) * 1000, 1)
        return r

    try:
        rows = _rows(path)
    except FileNotFoundError:
        return [done(ServerResult(spec, "failed", started, error=f"tools_file not found: {path}"))]
    except NotRegularFile as e:
        return [done(ServerResult(spec, "failed", started, error=f"tools_file {path} {e.strerror}"))]
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return [done(ServerResult(spec, "failed", started, error=f"tools_file {path}: {e}"))]

    groups: dict[str, ServerResult] = {}
    seen: dict[str, set[str]] = {}
    own: list[dict] = []  # rows rejected for their `server`, reported on the entry's own result
    for row in rows:
        if isinstance(row, _Unreadable):
            own.append({"name": None, "reason": f"line {row.line}: JSON nests too deep to read"})
            continue
        row = fix_strings(row)  # a lone surrogate (\ud800) is replaced, the row kept
        server = row.get("server") if isinstance(row, dict) and isinstance(row.get("server"), str) else None
        bad = server_name_problem(server) if server else None
        if bad:
            tool_name = row.get("name") if isinstance(row, dict) and isinstance(row.get("name"), str) else None
            own.append({"name": tool_name, "reason": bad})
            continue
        name = server or spec.name
        if name not in groups:
            sub = spec if server is None else replace(spec, name=server)
            title = row.get("server_title") if server else None
            groups[name] = ServerResult(
                sub, "ok", started, server_name=name, server_title=title if isinstance(title, str) else None
            )
        res = groups[name]
        tool = _wire(row) if isinstance(row, dict) else row
        if isinstance(tool, dict) and tool.get("description") is None and "description" in tool:
            tool.pop("description")
        reason = validate_tool(tool)
        if reason:
            res.invalid_tools.append(
                {"name": str(tool.get("name")) if isinstance(tool, dict) else None, "reason": reason}
            )
            continue
        if tool["name"] in seen.setdefault(name, set()):
            res.invalid_tools.append({"name": tool["name"], "reason": "duplicate name"})
            continue
        seen[name].add(tool["name"])
        res.tools.append(tool)
    if not groups or (own and spec.name not in groups):
        groups[spec.name] = ServerResult(spec, "ok", started)
    if own:
        groups[spec.name].invalid_tools.extend(own)
    return [done(r) for r in groups.values()]
