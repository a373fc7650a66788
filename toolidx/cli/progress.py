"""Crawl and embed progress: a live rich display on a terminal, plain lines in CI logs and pipes,
nothing with --json. All of it goes to stderr: stdout is for the summary table or JSON document.

Which one: `--json` -> silent; stderr not a terminal, `CI` set, or TERM=dumb -> plain lines;
otherwise the live display (cleared when done, the summary table follows).

After the servers, a crawl may load the model and embed tools (tens of seconds on a large
catalog): the steps say so ("loading the model…", "embedding 64/330 tools"), live on a terminal,
and in a pipe as a plain line per step at most every PLAIN_EVERY seconds (and the last one).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core.counts import plural
from ..core.safetext import visible
from ..core.servers import ServerResult, ServerSpec
from ..crawl.run import QuietProgress

PLAIN_EVERY = 2.0  # seconds between two plain lines of the same step (a CI log stays short)


def step_text(what: str, done: int, total: int) -> str:
    """A step of the work after the servers, as a person reads it."""
    if what == "model":
        return "loading the model…" if done < total else "model loaded"
    if what == "embed":
        return f"embedding {done}/{total} tools"
    return f"{what}: {done}/{total}"


class _SafeStream:
    """Writes with control and invisible characters made visible (server names and errors are
    untrusted)."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> None:
        self._stream.write(visible(text))

    def flush(self) -> None:
        self._stream.flush()


class PlainProgress:
    def __init__(self, stream=None, prefix: str = "crawl"):
        self.stream = _SafeStream(stream if stream is not None else sys.stderr)
        self.prefix = prefix
        self._last: tuple[str, float] = ("", 0.0)  # the step last printed, and when

    def begin(self, specs: list[ServerSpec]) -> None:
        self.stream.write(f"crawl: {len(specs)} server(s)\n")
        self.stream.flush()

    def server_started(self, spec: ServerSpec) -> None:
        self.stream.write(f"crawl: {spec.name}: connecting ({spec.transport})\n")
        self.stream.flush()

    def server_finished(self, result: ServerResult) -> None:
        sec = result.duration_ms / 1000
        if result.ok:
            extra = f", {len(result.invalid_tools)} invalid" if result.invalid_tools else ""
            line = f"ok, {plural(len(result.tools), 'tool')}{extra} in {sec:.1f}s"
        else:
            line = f"FAILED in {sec:.1f}s: {result.error}"
        self.stream.write(f"crawl: {result.spec.name}: {line}\n")
        self.stream.flush()

    def step(self, what: str, done: int, total: int) -> None:
        now = time.monotonic()
        last, at = self._last
        if what == last and done < total and now - at < PLAIN_EVERY:
            return
        self._last = (what, now)
        self.stream.write(f"{self.prefix}: {step_text(what, done, total)}\n")
        self.stream.flush()


class _Row:
    __slots__ = ("name", "transport", "state", "started", "result")

    def __init__(self, name: str, transport: str):
        self.name, self.transport = name, transport
        self.state = "waiting"  # waiting | running | ok | failed
        self.started: float | None = None
        self.result: ServerResult | None = None


class LiveProgress:
    """One row per server (spinner while connecting, then tools and time), refreshed in place."""

    def __init__(self, console: Any):
        self.console = console
        self.rows: dict[str, _Row] = {}
        self.embed: tuple[str, int, int] | None = None  # the step after the servers, if any
        self.live: Any = None

    # rich calls this on every refresh, from its own thread: it only reads.
    def __rich__(self) -> Any:
        from rich.spinner import Spinner
        from rich.table import Table
        from rich.text import Text

        t = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        for col in ("", "server", "status", "tools", "time", ""):
            t.add_column(col, no_wrap=col != "", overflow="ellipsis")
        now = time.perf_counter()
        done = ok = 0
        for row in list(self.rows.values()):
            r = row.result
            if row.state == "running":
                icon: Any = Spinner("dots", style="cyan")
                status, tools = Text("connecting", style="cyan"), ""
                secs = f"{now - (row.started or now):.1f}s"
                note = row.transport
            elif row.state == "waiting":
                icon, status, tools, secs, note = Text("·", style="dim"), Text("waiting", style="dim"), "", "", ""
            else:
                done += 1
                ok += row.state == "ok"
                good = row.state == "ok"
                icon = Text("✓" if good else "✗", style="green" if good else "red bold")
                status = Text("ok" if good else "failed", style="green" if good else "red")
                tools = str(len(r.tools)) if r and good else "-"
                secs = f"{(r.duration_ms if r else 0) / 1000:.1f}s"
                note = (
                    (f"{plural(len(r.invalid_tools), 'invalid tool')}" if r and r.invalid_tools else "")
                    if good
                    else (r.error or "")
                    if r
                    else ""
                )
            t.add_row(
                icon,
                Text(visible(row.name, keep_newlines=False)),
                status,
                tools,
                secs,
                Text(visible(note, keep_newlines=False), style="dim" if row.state != "failed" else "red"),
            )
        footer = f"{done}/{len(self.rows)} servers done, {done - ok} failed"
        if self.embed:
            footer += f"; {step_text(*self.embed)}"
        t.caption = footer
        return t

    def begin(self, specs: list[ServerSpec]) -> None:
        from rich.live import Live

        for s in specs:
            self.rows.setdefault(s.name, _Row(s.name, s.transport))
        self.live = Live(self, console=self.console, refresh_per_second=8, transient=True)
        self.live.start()

    def server_started(self, spec: ServerSpec) -> None:
        row = self.rows.setdefault(spec.name, _Row(spec.name, spec.transport))
        row.state, row.started = "running", time.perf_counter()

    def server_finished(self, result: ServerResult) -> None:
        # a tools_file catalog can yield servers that were not in the config
        row = self.rows.setdefault(result.spec.name, _Row(result.spec.name, result.spec.transport))
        row.result, row.state = result, ("ok" if result.ok else "failed")

    def entry_finished(self, spec: ServerSpec, results: list[ServerResult]) -> None:
        """A catalog entry whose tools were filed under other server names leaves no row behind."""
        if spec.name not in {r.spec.name for r in results}:
            self.rows.pop(spec.name, None)

    def step(self, what: str, done: int, total: int) -> None:
        self.embed = (what, done, total)
        if self.live is not None:  # each step drawn once, however soon the next comes (8 a second
            self.live.refresh()  # drew none of a step shorter than 1/8 s on a busy machine)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


class LiveSteps:
    """One live line (spinner and step) for a command that has steps but no servers (`embed`)."""

    def __init__(self, console: Any):
        self.console = console
        self.text = ""
        self.live: Any = None

    def __rich__(self) -> Any:
        from rich.spinner import Spinner
        from rich.text import Text

        return Spinner("dots", text=Text(self.text), style="cyan")

    def step(self, what: str, done: int, total: int) -> None:
        self.text = step_text(what, done, total)
        if self.live is None:
            from rich.live import Live

            self.live = Live(self, console=self.console, refresh_per_second=8, transient=True)
            self.live.start()
        self.live.refresh()  # each step drawn once, as LiveProgress.step does

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def use_live(stream: Any = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def crawl_progress(as_json: bool) -> Iterator[Any]:
    with _progress(as_json, PlainProgress, LiveProgress) as p:
        yield p


@contextmanager
def step_progress(as_json: bool, prefix: str) -> Iterator[Any]:
    """Progress of a command without servers (`embed`): its `step` method, shown as crawl's are."""
    with _progress(as_json, lambda: PlainProgress(prefix=prefix), LiveSteps) as p:
        yield p


@contextmanager
def _progress(as_json: bool, plain: Callable[[], Any], live_kind: Callable[[Any], Any]) -> Iterator[Any]:
    """Quiet under --json, plain lines in a pipe, a live display on a terminal (closed on the way out)."""
    if as_json:
        yield QuietProgress()
        return
    if not use_live():
        yield plain()
        return
    from rich.console import Console

    live = live_kind(Console(stderr=True, highlight=False))
    try:
        yield live
    finally:
        live.close()
