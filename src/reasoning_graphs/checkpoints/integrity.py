"""Tamper detection for SQLite checkpoints: every stored row is sealed with an HMAC.

:class:`IntegritySaver` is a ``SqliteSaver`` whose connection seals each row of ``checkpoints``
and ``writes`` as it is stored (an HMAC-SHA256 over the thread id, namespace, checkpoint id,
task, index, type and the stored bytes) and keeps, per thread, an authenticated count and XOR of
those seals. Before the first read of a thread it recomputes every seal from the raw rows;
nothing is deserialized until they all match. An edited blob, a deleted or inserted row, or a
row copied from another thread (or to another checkpoint) raises :class:`IntegrityError`.

The key comes from ``$REASONING_GRAPHS_HMAC_KEY`` (at least 16 characters) or from the file
``<database>.key`` beside the database, created with mode 0600 on first use and refused if any
other user can read it. A database that holds seals refuses a different or missing key.

Not detected (they need state outside the database): a thread deleted as a whole, and a
thread (or the whole file) rolled back to an earlier state that was itself sealed.

Example:
    >>> with open_saver("runs.sqlite", integrity=True) as saver:  # doctest: +SKIP
    ...     graph = builder.compile(checkpointer=saver)
    ...     graph.invoke(None, {"configurable": {"thread_id": "t1"}})  # verified before it loads
"""

from __future__ import annotations

import shlex
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, DeltaChannelHistory
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from reasoning_graphs.checkpoints import _manifest_store, _seal, _sealkey
from reasoning_graphs.errors import CheckpointError

__all__ = ["KEY_ENV", "IntegrityError", "IntegritySaver", "key_path", "load_key", "open_key"]

KEY_ENV = _sealkey.KEY_ENV
"""The environment variable that supplies the sealing key instead of the key file."""

key_path = _sealkey.key_path
load_key = _sealkey.load_key
open_key = _sealkey.open_key

_MESSAGES = {
    "edited": "{where} does not match its seal (edited, or copied from elsewhere)",
    "unsealed": "{where} has no seal (inserted, or written without the key)",
    "missing": "{where} was deleted",
    "head": "the seal count of {where} does not match its rows (rows deleted or inserted)",
    "no_head": "{where} has rows but no seal at all (written without integrity protection)",
}
_SHOWN = 3


class IntegrityError(CheckpointError):
    """A thread's stored rows do not match their seals; nothing of it was loaded.

    Attributes:
        thread_id: the thread that failed.
        problems: one line per disagreeing row.
    """

    def __init__(self, thread_id: str, problems: Sequence[str], *, database: str | None = None) -> None:
        """Create the error for ``thread_id`` from its problems (``database``: its path, if known)."""
        shown = "; ".join(problems[:_SHOWN])
        more = f"; and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
        db = shlex.quote(database) if database and database != ":memory:" else "DB"
        super().__init__(
            f"thread {thread_id!r} failed its integrity check: {shown}{more}. It was changed outside "
            "reasoning-graphs; nothing of it was loaded or run. Restore the database from a backup, "
            "or, if you trust its current content, accept it with "
            f"'reasoning-graphs seal --db {db} --thread {shlex.quote(thread_id)}' "
            f"(from Python: saver.seal_thread({thread_id!r}))"
        )
        self.thread_id = thread_id
        self.problems = list(problems)
        self.database = database


class IntegritySaver(SqliteSaver):
    """A ``SqliteSaver`` that seals every row it stores and verifies a thread before reading it.

    Use :func:`~reasoning_graphs.checkpoints.open_saver` with ``integrity=True`` rather than
    building one directly. Reads of a thread (``get_tuple``, ``list``, delta history) verify it
    first, once per saver; :meth:`verify_thread` verifies again on demand.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        key: bytes,
        serde: SerializerProtocol | None = None,
        database: str = ":memory:",
        adopt: bool = False,
    ) -> None:
        """Wrap an open connection.

        Args:
            conn: the SQLite connection (``check_same_thread=False``).
            key: the sealing key (see :func:`open_key`).
            serde: the serializer (``StrictSerializer`` when opened through ``open_saver``).
            database: the database path, for messages.
            adopt: seal the threads already stored without seals, as they are: only right for
                a database that was never sealed (``open_saver`` passes True when it has just
                created the database's key file).

        Raises:
            CheckpointError: the database was sealed with another key.
        """
        super().__init__(conn, serde=serde)
        self.lock = threading.RLock()  # type: ignore[assignment]
        self.key = key
        """The sealing key."""
        self.database = database
        """The database path, for messages."""
        self._verified: set[str] = set()
        self._adopt = adopt
        _sealkey.check_key(conn, key, database)

    def setup(self) -> None:
        """Create LangGraph's tables, the seal tables and this connection's sealing triggers."""
        if self.is_setup:
            return
        super().setup()
        never_sealed = _sealkey.stored_key_check(self.conn) is None
        _seal.install(self.conn, self.key)
        if self._adopt and never_sealed:
            with self.conn:
                for thread_id in _seal.thread_ids(self.conn):
                    _seal.reseal(self.conn, self.key, thread_id)

    def verify_thread(self, thread_id: str) -> int:
        """Recompute every seal of a thread from its raw rows; return how many rows it has.

        Raises:
            IntegrityError: a row was edited, inserted, deleted or copied from elsewhere.
        """
        with self.cursor(transaction=False):
            began = not self.conn.in_transaction
            if began:
                self.conn.execute("BEGIN")  # one read snapshot for rows, seals and head
            try:
                rows, findings = _seal.verify(self.conn, self.key, str(thread_id))
            finally:
                if began:
                    self.conn.execute("COMMIT")
        if findings:
            self._verified.discard(str(thread_id))
            raise IntegrityError(
                str(thread_id),
                [_MESSAGES[f.problem].format(where=f.where) for f in findings],
                database=self.database,
            )
        self._verified.add(str(thread_id))
        return rows

    def seal_thread(self, thread_id: str) -> int:
        """Accept a thread's rows and run manifest as they are now: replace their seals.

        Use it only for a thread you trust, e.g. one written before integrity was turned on.
        Returns the number of checkpoint and write rows sealed.
        """
        with self.cursor() as cur:
            count = _seal.reseal(cur.connection, self.key, str(thread_id))
            _manifest_store.reseal(cur, self.key, str(thread_id))
        self._verified.add(str(thread_id))
        return count

    def thread_ids(self) -> list[str]:
        """Return every thread id stored (with rows or seals), sorted."""
        with self.cursor(transaction=False):
            return _seal.thread_ids(self.conn)

    def _ensure(self, thread_id: str) -> None:
        if thread_id not in self._verified:
            self.verify_thread(thread_id)

    def _ensure_all(self) -> None:
        for thread_id in self.thread_ids():
            self._ensure(thread_id)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Verify the thread (once), then read the checkpoint."""
        self._ensure(str(config["configurable"]["thread_id"]))
        return super().get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Verify the thread listed (or every thread when none is named), then list."""
        thread_id = (config or {}).get("configurable", {}).get("thread_id")
        if thread_id is None:
            self._ensure_all()
        else:
            self._ensure(str(thread_id))
        yield from super().list(config, filter=filter, before=before, limit=limit)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Verify the thread (once), then walk its delta history."""
        self._ensure(str(config["configurable"]["thread_id"]))
        return super().get_delta_channel_history(config=config, channels=channels)

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread's rows, seals and run manifest together."""
        with self.lock:  # re-entrant: the manifest row commits with LangGraph's deletes
            if _has_table(self.conn, "rg_manifests"):
                self.conn.execute("DELETE FROM rg_manifests WHERE thread_id = ?", (str(thread_id),))
            super().delete_thread(thread_id)
        self._verified.discard(str(thread_id))


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None
