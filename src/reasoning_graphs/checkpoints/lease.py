"""Thread leases: one runner per thread id at a time, released by the kernel if a runner dies.

LangGraph has no per-thread lock: two processes resuming one thread both run, and their
checkpoints interleave (four writers on one thread lost 620 of 800 updates without an error).
A lease is an exclusive ``flock`` on a small file beside the database,
``<database>.leases/<sha256 of the thread id>.lock``. A second runner fails at once with
:class:`ThreadBusyError`, naming the holder (pid, host, since when). The lock belongs to the
open file, so the kernel drops it when the holder exits for any reason, SIGKILL included: a
lease never has to expire by a clock, and a dead runner can never block a thread.

The file is opened close-on-exec, so child processes (the sandbox) never inherit the lock. The
holder unlinks its file on release; a waiter that locked the unlinked file notices (its inode
no longer matches the path) and retries. ``flock`` is reliable on local file systems; on NFS use
one machine per database. An in-memory database (``":memory:"``) uses a per-process lease.

Example:
    >>> with thread_lease("runs.sqlite", "t1"):  # doctest: +SKIP
    ...     graph.invoke(None, {"configurable": {"thread_id": "t1"}})
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from reasoning_graphs.errors import CheckpointError

__all__ = ["ThreadBusyError", "ThreadLease", "acquire_lease", "lease_path", "thread_lease"]

_MEMORY = ":memory:"
_MEMORY_LEASES: set[str] = set()
_MEMORY_LOCK = threading.Lock()
_ATTEMPTS = 20


class ThreadBusyError(CheckpointError):
    """Another runner holds the thread's lease; the message names it.

    Attributes:
        thread_id: the busy thread.
        holder: what the holder recorded (``pid``, ``host``, ``since``), empty if unknown.
    """

    def __init__(self, thread_id: str, holder: dict[str, object]) -> None:
        """Create the error for ``thread_id`` held by ``holder``."""
        who = (
            f" (pid {holder.get('pid')} on {holder.get('host')}, since {holder.get('since')})"
            if holder.get("pid")
            else ""
        )
        super().__init__(
            f"thread {thread_id!r} is busy: another run holds it{who}; wait for that run to finish "
            "or stop it, then resume"
        )
        self.thread_id = thread_id
        self.holder = holder


def lease_path(database: str | os.PathLike[str], thread_id: str) -> Path:
    """Return the lock file of ``thread_id`` for ``database`` (symlinks resolved)."""
    base = Path(os.path.realpath(Path(database).expanduser()))
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return base.with_name(f"{base.name}.leases") / f"{digest}.lock"


class ThreadLease:
    """A held lease; release it with :meth:`release` (or use :func:`thread_lease`)."""

    def __init__(self, thread_id: str, path: Path | None, fd: int | None) -> None:
        """Wrap a lock already taken (``path``/``fd`` are None for an in-memory database)."""
        self.thread_id = thread_id
        """The leased thread."""
        self.path = path
        """The lock file (None for an in-memory database)."""
        self._fd = fd
        self._released = False

    @property
    def held(self) -> bool:
        """Whether the lease is still held."""
        return not self._released

    def release(self) -> None:
        """Give the lease up (idempotent)."""
        if self._released:
            return
        self._released = True
        if self._fd is None:
            with _MEMORY_LOCK:
                _MEMORY_LEASES.discard(self.thread_id)
            return
        try:
            if self.path is not None:
                self.path.unlink(missing_ok=True)  # while still locked: waiters re-check the inode
        finally:
            os.close(self._fd)  # closing drops the lock


def _holder(fd: int) -> dict[str, object]:
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw.decode("utf-8")) if raw else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _stamp(fd: int, thread_id: str) -> None:
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
        "thread_id": thread_id,
    }
    data = json.dumps(record).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _try_lock(path: Path, thread_id: str) -> int | None:
    """Lock ``path``; return the descriptor, or None when the file was replaced (retry)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise ThreadBusyError(thread_id, holder) from None
    except OSError:
        os.close(fd)
        raise
    try:
        now = path.stat()
    except FileNotFoundError:
        now = None
    mine = os.fstat(fd)
    if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
        os.close(fd)  # the previous holder unlinked it after we opened it
        return None
    return fd


def acquire_lease(database: str | os.PathLike[str], thread_id: str) -> ThreadLease:
    """Take the lease of ``thread_id`` at once, or fail.

    Raises:
        ThreadBusyError: another runner holds it.
        CheckpointError: the lease folder cannot be created or the lock file opened.
    """
    if os.fspath(database) == _MEMORY:
        with _MEMORY_LOCK:
            if thread_id in _MEMORY_LEASES:
                raise ThreadBusyError(thread_id, {"pid": os.getpid(), "host": socket.gethostname()})
            _MEMORY_LEASES.add(thread_id)
        return ThreadLease(thread_id, None, None)
    path = lease_path(database, thread_id)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        for _ in range(_ATTEMPTS):
            fd = _try_lock(path, thread_id)
            if fd is not None:
                _stamp(fd, thread_id)
                return ThreadLease(thread_id, path, fd)
    except OSError as exc:
        raise CheckpointError(
            f"cannot take the lease of thread {thread_id!r} at {str(path)!r}: {exc}"
        ) from exc
    raise ThreadBusyError(thread_id, {})


@contextmanager
def thread_lease(database: str | os.PathLike[str], thread_id: str) -> Iterator[ThreadLease]:
    """Hold the lease of ``thread_id`` on ``database`` for the block.

    Args:
        database: the checkpoint database path (or ``":memory:"``).
        thread_id: the thread to lease.

    Raises:
        ThreadBusyError: another runner holds it (raised at once, never waits).
    """
    lease = acquire_lease(database, thread_id)
    try:
        yield lease
    finally:
        lease.release()
