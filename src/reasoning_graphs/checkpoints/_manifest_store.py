"""Store run manifests in the side table ``rg_manifests`` of the checkpoint file.

Private to ``checkpoints``. A row holds the manifest JSON, the history of accepted changes and,
when the saver seals rows (``IntegritySaver``), an HMAC over all three with the database's key.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from reasoning_graphs.checkpoints import _seal
from reasoning_graphs.errors import InputError

__all__: list[str] = []

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS rg_manifests (thread_id TEXT PRIMARY KEY, manifest TEXT NOT NULL, "
    "history TEXT NOT NULL, mac BLOB)"
)


def require_sqlite(saver: object) -> SqliteSaver:
    """Return ``saver`` if it is a SQLite saver.

    Raises:
        InputError: it is not.
    """
    if not isinstance(saver, SqliteSaver):
        raise InputError(
            f"run manifests and leases need the SQLite checkpoint file; got a {type(saver).__name__}: "
            "open the saver with reasoning_graphs.checkpoints.open_saver(path, integrity=True)"
        )
    return saver


def _key(saver: SqliteSaver) -> bytes | None:
    key = getattr(saver, "key", None)
    return key if isinstance(key, bytes) else None


def _mac(key: bytes, thread_id: str, manifest: str, history: str) -> bytes:
    return _seal.mac(key, "rg-manifest-v1", thread_id, manifest, history)


def record(saver: SqliteSaver, thread_id: str, manifest: str, accepted: Mapping[str, Any] | None) -> None:
    """Store a thread's manifest JSON (replacing it); ``accepted`` changes join its history."""
    with saver.cursor() as cur:
        cur.execute(SCHEMA)
        row = cur.execute("SELECT history FROM rg_manifests WHERE thread_id = ?", (thread_id,)).fetchone()
        history: list[Any] = json.loads(row[0]) if row else []
        if accepted:
            now = datetime.now(UTC).isoformat(timespec="seconds")
            history.append({"at": now, "accepted": dict(accepted)})
        history_text = json.dumps(history, ensure_ascii=False)
        key = _key(saver)
        mac = None if key is None else _mac(key, thread_id, manifest, history_text)
        cur.execute("DELETE FROM rg_manifests WHERE thread_id = ?", (thread_id,))
        cur.execute(
            "INSERT INTO rg_manifests(thread_id, manifest, history, mac) VALUES (?, ?, ?, ?)",
            (thread_id, manifest, history_text, mac),
        )


def reseal(cur: sqlite3.Cursor, key: bytes, thread_id: str) -> bool:
    """Seal a thread's manifest row as it is now; return whether it has one."""
    if cur.execute("SELECT 1 FROM sqlite_master WHERE name = 'rg_manifests'").fetchone() is None:
        return False
    query = "SELECT manifest, history FROM rg_manifests WHERE thread_id = ?"
    row = cur.execute(query, (thread_id,)).fetchone()
    if row is None:
        return False
    mac = _mac(key, thread_id, str(row[0]), str(row[1]))
    cur.execute("UPDATE rg_manifests SET mac = ? WHERE thread_id = ?", (mac, thread_id))
    return True


def load_row(saver: SqliteSaver, thread_id: str) -> tuple[str, list[Any]] | None:
    """Return a thread's manifest JSON and history, or None when it has none.

    Raises:
        IntegrityError: the saver seals rows and the row does not match its seal.
    """
    with saver.cursor(transaction=False) as cur:
        if cur.execute("SELECT 1 FROM sqlite_master WHERE name = 'rg_manifests'").fetchone() is None:
            return None
        row = cur.execute(
            "SELECT manifest, history, mac FROM rg_manifests WHERE thread_id = ?", (thread_id,)
        ).fetchone()
    if row is None:
        return None
    text, history_text, mac = str(row[0]), str(row[1]), row[2]
    key = _key(saver)
    if key is not None and (
        mac is None or not hmac.compare_digest(bytes(mac), _mac(key, thread_id, text, history_text))
    ):
        from reasoning_graphs.checkpoints.integrity import IntegrityError

        problem = "its run manifest does not match its seal (edited)"
        raise IntegrityError(thread_id, [problem], database=getattr(saver, "database", None))
    history = json.loads(history_text)
    return text, history if isinstance(history, list) else []
