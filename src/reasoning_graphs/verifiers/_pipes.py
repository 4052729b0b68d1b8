"""Parent side of a sandboxed run: feed the job, drain the pipes, enforce the deadline, reap.

Output is read as it comes (a flood never blocks the child) and only a head and a tail are
kept. The exit is watched through a pidfd, which does not reap: the process-group leader stays
a zombie until the group has been killed, so its id cannot be reused in between.
"""

from __future__ import annotations

import ast
import os
import select
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue

__all__ = ["Outcome", "collect", "parse_records"]

_RECORD_BYTES = 1 << 16
_GRACE_SECONDS = 0.25
_POLL_SECONDS = 0.01


class _Capped:
    """Keep the first and the last ``keep // 2`` bytes of a stream; count the rest."""

    def __init__(self, keep: int) -> None:
        self.half = max(keep // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            del self.tail[: max(len(self.tail) - self.half, 0)]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {dropped} bytes dropped ...]\n" if dropped > 0 else ""
        return bytes(self.head).decode(errors="replace") + middle + bytes(self.tail).decode(errors="replace")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the parent saw of one run."""

    stdout: str
    """Head and tail of stdout."""
    stderr: str
    """Head and tail of stderr."""
    records: str
    """Head and tail of what was written to the result pipe."""
    returncode: int
    """Exit code of the process (negative: the signal that killed it)."""
    timed_out: bool
    """Whether the wall-clock deadline was reached."""
    cpu_seconds: float
    """CPU time used by the process and the children it waited for."""


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_group(pid: int) -> None:
    """Kill the process group led by ``pid`` (not reaped yet), children first.

    A child of ``unshare`` is the init of the run's pid namespace: its exit completes only once
    every process in the namespace is gone, so waiting for it means nothing outlives the run.
    """
    children = [fd for fd in map(_pidfd, _children(pid)) if fd is not None]
    for fd in children:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            continue
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    for fd in children:
        select.select([fd], [], [], _GRACE_SECONDS * 8)
        os.close(fd)


class _Pump:
    """One selector over the child's stdin, stdout, stderr, result pipe and pidfd."""

    def __init__(self, proc: subprocess.Popen[bytes], result_fd: int, payload: bytes, keep: int) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.proc, self.stdin, self.pending = proc, proc.stdin, payload
        self.streams = (proc.stdin, proc.stdout, proc.stderr)
        self.result_fd = result_fd
        self.out, self.err, self.rec = _Capped(keep), _Capped(keep), _Capped(_RECORD_BYTES)
        self.sinks = {proc.stdout.fileno(): self.out, proc.stderr.fileno(): self.err, result_fd: self.rec}
        self.sel = selectors.DefaultSelector()
        os.set_blocking(self.stdin.fileno(), False)
        self.sel.register(self.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        for fd in self.sinks:
            self.sel.register(fd, selectors.EVENT_READ, "out")
        self.pidfd = _pidfd(proc.pid)
        if self.pidfd is not None:
            self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")
        self.exited = False

    def readers_open(self) -> bool:
        return any(key.data == "out" for key in self.sel.get_map().values())

    def _write_stdin(self) -> None:
        try:
            written = os.write(self.stdin.fileno(), self.pending)
        except BlockingIOError:
            return
        except BrokenPipeError:
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self.sel.unregister(self.stdin.fileno())
            self.stdin.close()

    def step(self, timeout: float) -> None:
        if self.pidfd is None and not self.exited:
            timeout = min(timeout, _POLL_SECONDS)
        for key, _ in self.sel.select(max(timeout, 0.0)):
            if key.data == "exit":
                self.sel.unregister(key.fd)
                self.exited = True
            elif key.data == "stdin":
                self._write_stdin()
            elif data := os.read(key.fd, 1 << 16):
                self.sinks[key.fd].add(data)
            else:
                self.sel.unregister(key.fd)
        if self.pidfd is None and not self.exited:
            self.exited = _exited(self.proc.pid)

    def close(self) -> None:
        self.sel.close()
        os.close(self.result_fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
        for stream in self.streams:
            stream.close()


def collect(
    proc: subprocess.Popen[bytes], result_fd: int, payload: bytes, *, deadline: float, keep: int
) -> Outcome:
    """Write ``payload`` to the child's stdin and collect its output until it ends.

    Args:
        proc: The sandbox process, started in its own session with piped stdio.
        result_fd: Read end of the result pipe (closed here).
        payload: The job, written to stdin, which is then closed.
        deadline: ``time.monotonic()`` value at which the process group is killed.
        keep: Bytes of stdout and of stderr to keep.

    Returns:
        Captured output and records, exit code, and whether the deadline was reached.
    """
    pump = _Pump(proc, result_fd, payload, keep)
    timed_out = False
    grace_end: float | None = None
    try:
        while True:
            now = time.monotonic()
            if pump.exited and grace_end is None:
                _kill_group(proc.pid)
                grace_end = now + _GRACE_SECONDS
            if grace_end is not None and (now >= grace_end or not pump.readers_open()):
                break
            if now >= deadline:
                timed_out = True
                _kill_group(proc.pid)
                break
            pump.step(min(deadline, grace_end or deadline) - now)
    finally:
        pump.close()
        returncode, cpu = _reap(proc)
    return Outcome(pump.out.text(), pump.err.text(), pump.rec.text(), returncode, timed_out, cpu)


def _reap(proc: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Wait for the process with ``wait4`` (for its CPU time) and record its exit code."""
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:
        return proc.wait(), 0.0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def _jsonable(value: Any) -> JsonValue:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def parse_records(
    text: str, token: str
) -> tuple[dict[str, JsonValue] | None, dict[str, JsonValue] | None, str | None]:
    """Find the harness's records carrying ``token``.

    Args:
        text: What was written to the result pipe.
        token: The per-run token; lines without it are ignored.

    Returns:
        The ``started`` record, the ``finished`` record written by the same process as
        ``started`` (or None), and the setup error message (or None).
    """
    started: dict[str, JsonValue] | None = None
    finished: dict[str, JsonValue] | None = None
    setup_error: str | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{") or len(line) > _RECORD_BYTES:
            continue
        try:
            value = ast.literal_eval(line)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(value, dict) or value.get("token") != token:
            continue
        record = {str(k): _jsonable(v) for k, v in value.items()}
        event = record.get("event")
        if event == "setup_error":
            setup_error = str(record.get("message"))
        elif event == "started" and started is None:
            started = record
        elif event == "finished" and finished is None and started and record.get("pid") == started.get("pid"):
            finished = record
    return started, finished, setup_error
