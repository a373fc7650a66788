"""The supervisor every stdio MCP server toolidx starts runs under (crawl, serve's execute_tool), so
that nothing a server started outlives toolidx, even when toolidx is killed with SIGKILL.

    python -I -S supervisor.py LIFELINE_FD STATUS_FD COMMAND [ARG ...]

It is the process the MCP SDK's stdio transport starts (in a session of its own: the SDK's stop,
stdin closed then SIGTERM / SIGKILL to that process group, reaches it and the server alike) and
starts the server as its child, handing it its stdin, stdout and stderr, then lets go of stdin and
stdout itself (so the server's exit still closes the pipe the SDK reads). On Linux it is a child
subreaper (PR_SET_CHILD_SUBREAPER): whatever the server starts, double-forked daemons and
`setsid` helpers included, is reparented to it when its own parent exits, so it stays in the tree
that is stopped. It stops that tree, server first:

- when the server exits: what it left behind gets SIGTERM, then SIGKILL TERM_GRACE_S later;
- on SIGTERM, SIGINT or SIGHUP (toolidx's own stop right after closing the server's stdin, or the
  SDK's group signal): EOF_GRACE_S for the server to exit on its stdin EOF, then SIGTERM to every
  process of the tree, then SIGKILL to what is left TERM_GRACE_S later;
- when toolidx dies, however (LIFELINE_FD is the read end of a pipe only toolidx holds the write
  end of: its end of file is toolidx's death, SIGKILL included): the same, with ORPHAN_GRACE_S
  (the server saw its stdin close at the same instant).

It then exits as the server did (its code, or killed by the same signal), so an exit code reported
for the server is the server's. STATUS_FD gets "0" once the server is started, or the errno of the
failed start (then it exits 127): toolidx raises the error the start would have raised.

Elsewhere than Linux (macOS: no prctl) there is no subreaper: the tree is the server's descendants
(by `ps`) and the members of its process group; a helper that double-forks into a session of its
own is reparented to launchd and escapes.

Standard library only, and no import of toolidx: it runs with -I -S (no site, no PYTHON* variables
from the server's environment) and starts in about 20 ms. toolidx imports it for `descendants`.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable

EOF_GRACE_S = 0.5
ORPHAN_GRACE_S = 0.2
TERM_GRACE_S = 0.5
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_CHILD_SUBREAPER = 36


# --- the tree -------------------------------------------------------------------------------------
def proc_stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, pgrp, ...), None for a process
    that is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].decode().split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields


def _table() -> list[tuple[int, int, int, str]] | None:
    """(pid, ppid, pgrp, start) of every live process: from /proc, else from ps (start: "" there);
    None when neither can be read."""
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        names = []
    if names:
        rows = []
        for n in names:
            st = proc_stat(int(n))
            if st is not None:
                rows.append((int(n), int(st[1]), int(st[2]), st[19]))
        return rows
    import subprocess  # (not imported at start: what it imports costs a third of the start-up)

    try:
        out = subprocess.run(
            ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "pgid=", "-o", "stat="],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[3][:1] != "Z" and all(p.isdigit() for p in parts[:3]):
            rows.append((int(parts[0]), int(parts[1]), int(parts[2]), ""))
    return rows


def descendants(pid: int, group: bool = False) -> list[tuple[int, str]]:
    """(pid, start time) of every live descendant of `pid` (and, with `group`, of every member of
    the process group `pid` leads), `pid` itself left out: the start time tells a process from a
    later one given the same pid."""
    rows = _table() or []
    children: dict[int, list[tuple[int, str]]] = {}
    for p, ppid, _, start in rows:
        children.setdefault(ppid, []).append((p, start))
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child, start in children.get(todo.pop(), []):
            if child not in found:
                found[child] = start
                todo.append(child)
    if group:
        found.update({p: start for p, _, pgrp, start in rows if pgrp == pid})
    found.pop(pid, None)
    return list(found.items())


def same(pid: int, started: str) -> bool:
    """Is `pid` still the live process that started at `started` ("": any process with that pid)?"""
    if not started:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    stat = proc_stat(pid)
    return stat is not None and stat[19] == started


# --- the supervisor -------------------------------------------------------------------------------
class _Supervisor:
    def __init__(self, child: int):
        self.child = child
        self.status: int | None = None  # the server's wait status, once it exited

    def reap(self) -> None:
        """Collect every exited child: the server, and orphans reparented here."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child:
                self.status = status

    def tree(self) -> list[tuple[int, str]]:
        return descendants(os.getpid(), group=True)

    def _wait(self, seconds: float, done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self.reap()
            if done() or time.monotonic() >= deadline:
                return
            time.sleep(0.02)

    def stop(self, eof_grace: float) -> None:
        """The server's own exit first (it has seen its stdin close), then SIGTERM, then SIGKILL."""
        self._wait(eof_grace, lambda: self.status is not None)
        termed: set[int] = set()

        def term_new() -> bool:
            left = self.tree()
            for p, _ in left:
                if p not in termed:
                    termed.add(p)
                    with contextlib.suppress(OSError):
                        os.kill(p, signal.SIGTERM)
            return not left

        if not term_new():
            self._wait(TERM_GRACE_S, term_new)
        for _ in range(200):  # what forks while it is killed is killed on the next pass
            left = self.tree()
            if not left:
                break
            for p, _ in left:
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
            self._wait(0.05, lambda: not self.tree())
        self.reap()

    def run(self, lifeline: int, wake: int) -> None:
        while True:
            self.reap()
            if self.status is not None:
                self.stop(0.0)
                return
            ready, _, _ = select.select([wake, lifeline], [], [])
            if wake in ready:
                signals = set(os.read(wake, 512))
                if signals & {int(s) for s in STOP_SIGNALS}:
                    self.stop(EOF_GRACE_S)
                    return
            if lifeline in ready and not os.read(lifeline, 512):
                self.stop(ORPHAN_GRACE_S)
                return


def _exit_like(status: int | None) -> None:
    """Exit as the server did: its exit code, or killed by its signal."""
    if status is None:
        os._exit(1)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(Exception):
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of the supervisor's own
        with contextlib.suppress(Exception):
            signal.set_wakeup_fd(-1)
            signal.signal(sig, signal.SIG_DFL)  # (not for SIGKILL: it has no other)
        with contextlib.suppress(Exception):
            os.kill(os.getpid(), sig)
            time.sleep(1)  # delivered before this ends
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def main(argv: list[str]) -> None:
    lifeline, status = int(argv[1]), int(argv[2])
    command = argv[3:]
    for fd in (lifeline, status):
        os.set_inheritable(fd, False)
    _subreaper()
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (signal.SIGCHLD, *STOP_SIGNALS):
        signal.signal(sig, lambda *_: None)
    # what a server gets from subprocess too: default dispositions (Python ignores SIGPIPE)
    defaults = [signal.SIGPIPE, signal.SIGCHLD, *STOP_SIGNALS]
    defaults += [getattr(signal, n) for n in ("SIGXFSZ", "SIGXFZ") if hasattr(signal, n)]
    try:
        child = os.posix_spawnp(command[0], command, dict(os.environ), setsigdef=defaults, setsigmask=())
    except OSError as e:
        os.write(status, str(e.errno or 8).encode())
        os._exit(127)
    os.write(status, b"0")
    os.close(status)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    sup = _Supervisor(child)
    sup.run(lifeline, wake_r)
    _exit_like(sup.status)


if __name__ == "__main__":
    main(sys.argv)
