"""Crawl progress: a live rich display per server on a terminal, plain lines in CI logs and pipes,
nothing with --json (stdout is for the JSON document; lines go to stderr)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

from .config import ServerSpec
from .results import ServerResult


class PlainProgress:
    def __init__(self, stream=sys.stderr):
        self.stream = stream

    def server_started(self, spec: ServerSpec) -> None:
        self.stream.write(f"crawl: {spec.name}: connecting ({spec.transport})\n")
        self.stream.flush()

    def server_finished(self, result: ServerResult) -> None:
        sec = result.duration_ms / 1000
        if result.ok:
            extra = f", {len(result.invalid_tools)} invalid" if result.invalid_tools else ""
            line = f"ok, {len(result.tools)} tools{extra} in {sec:.1f}s"
        else:
            line = f"FAILED in {sec:.1f}s: {result.error}"
        self.stream.write(f"crawl: {result.spec.name}: {line}\n")
        self.stream.flush()

    def step(self, what: str, done: int, total: int) -> None:
        self.stream.write(f"crawl: {what}: {done}/{total}\n")
        self.stream.flush()


class SilentProgress(PlainProgress):
    def server_started(self, spec: ServerSpec) -> None:
        pass

    def server_finished(self, result: ServerResult) -> None:
        pass

    def step(self, what: str, done: int, total: int) -> None:
        pass


@contextmanager
def crawl_progress(as_json: bool) -> Iterator[PlainProgress]:
    if as_json:
        yield SilentProgress()
    else:
        yield PlainProgress()
