"""Open SQLite checkpoint savers (sync and async) with the strict serializer.

``SqliteSaver`` is sync-only (its async methods raise) and ``AsyncSqliteSaver`` is async-only
(its sync methods raise when called from its own event loop's thread): use :func:`open_saver`
with ``invoke``/``stream`` and :func:`open_async_saver` with ``ainvoke``/``astream``. Both may
be open on one file at once (WAL journal), e.g. a sync saver to inspect threads while an async
run writes.

With ``integrity=True`` the sync saver is an
:class:`~reasoning_graphs.checkpoints.integrity.IntegritySaver`: every stored row is sealed with
an HMAC and a thread is verified before anything of it is deserialized.

Before anything touches an existing file, its header is checked; then a write transaction is
begun and rolled back, so a locked database is reported at once (after the busy timeout)
instead of failing mid-run. Either failure raises :class:`~reasoning_graphs.errors.CheckpointError`
naming the file, and leaves it byte-for-byte unchanged.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from reasoning_graphs.checkpoints.serde import AllowedType, StrictSerializer
from reasoning_graphs.errors import CheckpointError

__all__ = ["DEFAULT_TIMEOUT", "open_async_saver", "open_saver"]

DEFAULT_TIMEOUT = 5.0
"""Seconds to wait for another connection's lock before giving up (SQLite busy timeout)."""

_HEADER = b"SQLite format 3\x00"
_MEMORY = ":memory:"
_PROBE = (
    "BEGIN IMMEDIATE",
    "SELECT count(*) FROM sqlite_master",
    "ROLLBACK",
    "PRAGMA journal_mode=WAL",
)
"""Run on a fresh connection: take and release the write lock, read the schema, then WAL.

Nothing is written until the lock was obtained and the schema read, so a locked or corrupt
file is left as it was.
"""


def _prepare(path: str | os.PathLike[str]) -> str:
    """Return the database location to connect to, after checking the file's header."""
    if os.fspath(path) == _MEMORY:
        return _MEMORY
    file = Path(path).expanduser()
    if file.is_dir():
        raise CheckpointError(f"checkpoint database {str(file)!r} is a directory; pass a file path")
    if file.exists() and not file.is_file():
        raise CheckpointError(f"checkpoint database {str(file)!r} is not a regular file; pass a file path")
    if file.exists():
        try:
            with file.open("rb") as handle:
                head = handle.read(len(_HEADER))
        except OSError as exc:
            raise CheckpointError(f"cannot read checkpoint database {str(file)!r}: {exc}") from exc
        if head and head != _HEADER:
            raise CheckpointError(
                f"{str(file)!r} is not a SQLite database; "
                "pass the path of a checkpoint database or of a new file"
            )
    else:
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointError(f"cannot create the folder for {str(file)!r}: {exc}") from exc
    return str(file)


def _translate(location: str, exc: sqlite3.Error, timeout: float) -> CheckpointError:
    """Turn a SQLite error met while opening into a CheckpointError naming the file."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return CheckpointError(
            f"checkpoint database {location!r} is locked by another connection (waited "
            f"{timeout:g} s): finish or close the other process, or pass a longer timeout"
        )
    if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text):
        return CheckpointError(f"{location!r} is not a usable SQLite database: {text}")
    return CheckpointError(f"cannot open checkpoint database {location!r}: {text}")


@contextmanager
def open_saver(
    path: str | os.PathLike[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow: Iterable[AllowedType] = (),
    integrity: bool | bytes = False,
) -> Iterator[SqliteSaver]:
    """Open a sync SQLite saver on ``path`` (created with its folder if missing).

    Args:
        path: the database file, or ``":memory:"``.
        timeout: seconds to wait for another connection's lock.
        allow: extra state types to rebuild on load (see :class:`StrictSerializer`).
        integrity: seal every stored row and verify threads before reading them (an
            ``IntegritySaver``); True takes the key from ``$REASONING_GRAPHS_HMAC_KEY`` or the
            file ``<path>.key`` (created with mode 0600), bytes are the key itself.

    Yields:
        A ``SqliteSaver`` with WAL journal, busy timeout and the strict serializer; the connection
        is closed on exit.

    Raises:
        CheckpointError: the path is a folder, not a SQLite database, or locked; or (with
            ``integrity``) the database was sealed with another key.
        ConfigurationError: (with ``integrity``) the key is missing, malformed or readable by others.

    Example:
        >>> with open_saver("runs/checkpoints.sqlite") as saver:  # doctest: +SKIP
        ...     graph = builder.compile(checkpointer=saver)
    """
    location = _prepare(path)
    conn = sqlite3.connect(location, timeout=timeout, check_same_thread=False)
    try:
        try:
            for statement in _PROBE:
                conn.execute(statement)
            saver = _sync_saver(conn, location, StrictSerializer(allow=allow), integrity)
            saver.setup()
        except sqlite3.Error as exc:
            raise _translate(location, exc, timeout) from exc
        yield saver
    finally:
        conn.close()


def _sync_saver(
    conn: sqlite3.Connection, location: str, serde: StrictSerializer, integrity: bool | bytes
) -> SqliteSaver:
    if integrity is False:
        return SqliteSaver(conn, serde=serde)
    from reasoning_graphs.checkpoints.integrity import IntegritySaver, open_key

    key, created = (integrity, False) if isinstance(integrity, bytes) else open_key(location, conn)
    return IntegritySaver(conn, key=key, serde=serde, database=location, adopt=created)


@asynccontextmanager
async def open_async_saver(
    path: str | os.PathLike[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow: Iterable[AllowedType] = (),
) -> AsyncIterator[AsyncSqliteSaver]:
    """Open an async SQLite saver on ``path``; the async twin of :func:`open_saver`.

    Args:
        path: the database file, or ``":memory:"``.
        timeout: seconds to wait for another connection's lock.
        allow: extra state types to rebuild on load.

    Yields:
        An ``AsyncSqliteSaver`` bound to the running event loop.

    Raises:
        CheckpointError: the path is a folder, not a SQLite database, or locked.
    """
    location = await asyncio.to_thread(_prepare, path)
    conn = await aiosqlite.connect(location, timeout=timeout, check_same_thread=False)
    try:
        try:
            for statement in _PROBE:
                await conn.execute(statement)
            saver = AsyncSqliteSaver(conn, serde=StrictSerializer(allow=allow))
            await saver.setup()
        except sqlite3.Error as exc:
            raise _translate(location, exc, timeout) from exc
        yield saver
    finally:
        await conn.close()
