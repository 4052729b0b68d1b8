"""Seals for SQLite checkpoint rows: the key, the MACs, the side tables and the triggers.

Private to ``checkpoints``; :mod:`reasoning_graphs.checkpoints.integrity` is the public face.

Every row of ``checkpoints`` and ``writes`` gets a seal row in ``rg_seals``: an HMAC-SHA256
over the row's identity and its stored bytes. Each thread has a head in ``rg_heads``: how many
seals it has, the XOR of their MACs, and a tag (an HMAC over thread id, count and XOR), so a
deleted or inserted row changes what the verifier recomputes while no one without the key can
write a matching head. The seals are written by TEMP triggers that call Python functions
registered on the saver's own connection: they run inside the statement that stores the row,
so a row and its seal commit together or not at all (a crash between them is impossible), and a
connection without the key (the ``sqlite3`` shell, another saver) writes rows without seals,
which verification reports.
"""

from __future__ import annotations

import hmac
import sqlite3
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reasoning_graphs.checkpoints._sealkey import key_check

__all__: list[str] = []

MAC_SIZE = 32
_ZERO = bytes(MAC_SIZE)

SCHEMA = """
CREATE TABLE IF NOT EXISTS rg_seals (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    mac BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, kind, task_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rg_heads (
    thread_id TEXT PRIMARY KEY,
    sealed INTEGER NOT NULL,
    acc BLOB NOT NULL,
    tag BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS rg_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
"""The persistent side tables (created idempotently)."""

_KEY_C = (
    "thread_id = {r}.thread_id AND checkpoint_ns = {r}.checkpoint_ns AND checkpoint_id = {r}.checkpoint_id"
)
_CHECKPOINT_KEY = _KEY_C + " AND kind = 'c' AND task_id = '' AND idx = 0"
_WRITE_KEY = _KEY_C + " AND kind = 'w' AND task_id = {r}.task_id AND idx = {r}.idx"
_CHECKPOINT_MAC = (
    "rg_mac('c', {r}.thread_id, {r}.checkpoint_ns, {r}.checkpoint_id, {r}.parent_checkpoint_id, "
    "{r}.type, {r}.checkpoint, {r}.metadata)"
)
_WRITE_MAC = (
    "rg_mac('w', {r}.thread_id, {r}.checkpoint_ns, {r}.checkpoint_id, {r}.task_id, {r}.task_path, "
    "{r}.idx, {r}.channel, {r}.type, {r}.value)"
)


def _unseal(key: str) -> str:
    """Statements that take the OLD row's seal out of its thread's head."""
    return (
        f"UPDATE rg_heads SET sealed = sealed - (SELECT count(*) FROM rg_seals WHERE {key}), "
        f"acc = rg_xor(acc, (SELECT mac FROM rg_seals WHERE {key})) WHERE thread_id = OLD.thread_id;\n"
        f"DELETE FROM rg_seals WHERE {key};\n"
        "DELETE FROM rg_heads WHERE thread_id = OLD.thread_id AND sealed <= 0;\n"
        "UPDATE rg_heads SET tag = rg_tag(thread_id, sealed, acc) WHERE thread_id = OLD.thread_id;\n"
    )


def _seal(key: str, kind: str, key_columns: str, mac: str) -> str:
    """Statements that seal the NEW row (replacing an older seal of the same row identity).

    ``UPDATE`` sets every column from the old values, so the tag is computed from the new count
    and XOR spelled out.

    No statement carries an ``OR IGNORE``/``OR REPLACE`` clause and none can conflict: inside a
    trigger SQLite applies the outer statement's conflict policy instead (LangGraph stores with
    ``INSERT OR REPLACE``), which would silently reset a head.
    """
    new_mac = f"SELECT mac FROM rg_seals WHERE {key}"
    return (
        "INSERT INTO rg_heads(thread_id, sealed, acc, tag) SELECT NEW.thread_id, 0, zeroblob(32), x'' "
        "WHERE NOT EXISTS (SELECT 1 FROM rg_heads WHERE thread_id = NEW.thread_id);\n"
        f"UPDATE rg_heads SET sealed = sealed - (SELECT count(*) FROM rg_seals WHERE {key}), "
        f"acc = rg_xor(acc, (SELECT mac FROM rg_seals WHERE {key})) WHERE thread_id = NEW.thread_id;\n"
        f"DELETE FROM rg_seals WHERE {key};\n"
        "INSERT INTO rg_seals(thread_id, checkpoint_ns, checkpoint_id, kind, task_id, idx, mac) "
        f"VALUES (NEW.thread_id, NEW.checkpoint_ns, NEW.checkpoint_id, '{kind}', {key_columns}, {mac});\n"
        f"UPDATE rg_heads SET sealed = sealed + 1, acc = rg_xor(acc, ({new_mac})), "
        f"tag = rg_tag(thread_id, sealed + 1, rg_xor(acc, ({new_mac}))) WHERE thread_id = NEW.thread_id;\n"
    )


def _triggers() -> str:
    parts = []
    tables = {
        "checkpoints": (_CHECKPOINT_KEY, "c", "'', 0", _CHECKPOINT_MAC),
        "writes": (_WRITE_KEY, "w", "NEW.task_id, NEW.idx", _WRITE_MAC),
    }
    for table, (key, kind, key_columns, mac) in tables.items():
        new_key, old_key, new_mac = key.format(r="NEW"), key.format(r="OLD"), mac.format(r="NEW")
        seal, unseal = _seal(new_key, kind, key_columns, new_mac), _unseal(old_key)
        parts.append(
            f"CREATE TEMP TRIGGER IF NOT EXISTS rg_seal_{table} AFTER INSERT ON main.{table} BEGIN\n"
            f"{seal}END;\n"
            f"CREATE TEMP TRIGGER IF NOT EXISTS rg_unseal_{table} AFTER DELETE ON main.{table} BEGIN\n"
            f"{unseal}END;\n"
            f"CREATE TEMP TRIGGER IF NOT EXISTS rg_reseal_{table} AFTER UPDATE ON main.{table} BEGIN\n"
            f"{unseal}{seal}END;\n"
        )
    return "".join(parts)


TRIGGERS = _triggers()
"""TEMP triggers (this connection only) that keep seals and heads in step with the rows."""


_TAGS = {bytes: 98, str: 115, int: 105, float: 102, type(None): 110}


def encode(domain: str, values: Iterable[object]) -> bytes:
    """Return the MAC input for ``values`` under a domain label, unambiguously.

    Layout: the field count, one type byte per field, one 8-byte length per field, the fields.
    """
    tags = bytearray()
    datas: list[bytes] = []
    for value in (domain, *values):
        kind = type(value)
        if kind is str:
            data = value.encode("utf-8", "surrogatepass")  # type: ignore[attr-defined]
        elif kind is bytes:
            data = value
        elif value is None:
            data = b""
        elif kind is int or kind is float:
            data = repr(value).encode()
        elif isinstance(value, bytearray | memoryview):
            kind, data = bytes, bytes(value)
        else:
            raise TypeError(f"cannot seal a {kind.__name__}")  # SQLite passes none other
        tags.append(_TAGS[kind])
        datas.append(data)
    count = len(datas)
    return struct.pack(f">Q{count}s{count}Q", count, bytes(tags), *map(len, datas)) + b"".join(datas)


def mac(key: bytes, domain: str, *values: object) -> bytes:
    """Return HMAC-SHA256 of the encoded values."""
    return hmac.digest(key, encode(domain, values), "sha256")


def xor(left: bytes | None, right: bytes | None) -> bytes:
    """XOR two MACs (None counts as zero)."""
    a = int.from_bytes(left or _ZERO, "big")
    b = int.from_bytes(right or _ZERO, "big")
    return (a ^ b).to_bytes(MAC_SIZE, "big")


def row_mac(key: bytes, kind: str, *values: object) -> bytes:
    """Return the seal of a stored row (``kind`` ``c``: checkpoint, ``w``: write)."""
    return mac(key, f"rg-row-{kind}-v1", *values)


def head_tag(key: bytes, thread_id: str, rows: int, acc: bytes) -> bytes:
    """Return the tag that authenticates a thread's seal count and XOR."""
    return mac(key, "rg-head-v1", thread_id, int(rows), bytes(acc))


def install(conn: sqlite3.Connection, key: bytes) -> None:
    """Register the MAC functions on ``conn``, create the side tables and the TEMP triggers."""
    conn.create_function("rg_mac", -1, lambda kind, *values: row_mac(key, kind, *values))
    conn.create_function("rg_xor", 2, xor, deterministic=True)
    conn.create_function("rg_tag", 3, lambda t, n, acc: head_tag(key, t, n, acc))
    conn.executescript(SCHEMA + TRIGGERS)
    found = conn.execute("SELECT value FROM rg_meta WHERE name = 'key_check'").fetchone()
    if found is None:
        # Several processes may open a new database at once: the first insert wins, the others
        # keep it (they share the key file, so the value is the same).
        conn.execute("INSERT OR IGNORE INTO rg_meta(name, value) VALUES ('key_check', ?)", (key_check(key),))
        conn.commit()


# --- verification ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One way a thread's stored rows disagree with their seals."""

    problem: str
    """``edited`` (bytes differ from the seal), ``unsealed`` (a row without seal: inserted),
    ``missing`` (a seal without row: deleted), ``head`` (count or tag wrong), ``no_head``."""
    where: str
    """The row, e.g. ``checkpoint 1f0..`` or ``write 1f0../task/2``."""


_ROWS_SQL = (
    "SELECT 'c', checkpoint_ns, checkpoint_id, '', 0, parent_checkpoint_id, type, checkpoint, metadata "
    "FROM checkpoints WHERE thread_id = ? UNION ALL "
    "SELECT 'w', checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type, value "
    "FROM writes WHERE thread_id = ?"
)


def _where(kind: str, ns: str, checkpoint_id: str, task_id: str, idx: int) -> str:
    prefix = f"{ns}/" if ns else ""
    if kind == "c":
        return f"checkpoint {prefix}{checkpoint_id}"
    return f"write {prefix}{checkpoint_id}/{task_id}/{idx}"


Ident = tuple[str, str, str, str, int]
"""A row's identity: kind, namespace, checkpoint id, task id, index."""


def _tolerant(raw: bytes) -> str:
    """Decode stored text that may not be UTF-8 (a tampered row must be reported, not crash)."""
    return raw.decode("utf-8", "surrogateescape")


def _fetch(conn: sqlite3.Connection, sql: str, params: tuple[str, ...]) -> list[Any]:
    """Fetch rows; text that is not UTF-8 (only a tampered row has any) is decoded leniently."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "decode" not in str(exc):
            raise
    previous = conn.text_factory
    conn.text_factory = _tolerant
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.text_factory = previous


def _computed(conn: sqlite3.Connection, key: bytes, thread_id: str) -> list[tuple[Ident, bytes]]:
    """Return every stored row of a thread with the seal its raw bytes should have."""
    out = []
    rows = _fetch(conn, _ROWS_SQL, (thread_id, thread_id))
    for kind, ns, cid, task_id, idx, a, b, c, d in rows:
        if kind == "c":
            value = row_mac(key, "c", thread_id, ns, cid, a, b, c, d)
        else:
            value = row_mac(key, "w", thread_id, ns, cid, task_id, a, int(idx), b, c, d)
        out.append(((str(kind), str(ns), str(cid), str(task_id), int(idx)), value))
    return out


def verify(conn: sqlite3.Connection, key: bytes, thread_id: str) -> tuple[int, list[Finding]]:
    """Recompute every seal of a thread; return its row count and what disagrees.

    Reads raw rows only: nothing is deserialized.
    """
    stored_seals = _fetch(
        conn,
        "SELECT kind, checkpoint_ns, checkpoint_id, task_id, idx, mac FROM rg_seals WHERE thread_id = ?",
        (thread_id,),
    )
    seals = {(k, ns, cid, tid, int(idx)): bytes(m) for k, ns, cid, tid, idx, m in stored_seals}
    findings: list[Finding] = []
    computed = _computed(conn, key, thread_id)
    head = conn.execute("SELECT sealed, acc, tag FROM rg_heads WHERE thread_id = ?", (thread_id,)).fetchone()
    if head is None and not seals:
        return len(computed), [Finding("no_head", f"thread {thread_id!r}")] if computed else []
    acc = _ZERO
    for ident, expected in computed:
        stored = seals.pop(ident, None)
        acc = xor(acc, expected)
        if stored is None:
            findings.append(Finding("unsealed", _where(*ident)))
        elif not hmac.compare_digest(stored, expected):
            findings.append(Finding("edited", _where(*ident)))
    findings.extend(Finding("missing", _where(*ident)) for ident in sorted(seals))
    seen = len(computed)
    if head is None:
        return seen, [*findings, Finding("head", f"thread {thread_id!r} (its seal count was deleted)")]
    rows, stored_acc, tag = int(head[0]), bytes(head[1]), bytes(head[2])
    if not hmac.compare_digest(tag, head_tag(key, thread_id, rows, stored_acc)):
        findings.append(Finding("head", f"thread {thread_id!r} (its seal count was forged)"))
    elif not findings and (rows != seen or not hmac.compare_digest(stored_acc, acc)):
        findings.append(Finding("head", f"thread {thread_id!r} (sealed {rows} rows, found {seen})"))
    return seen, findings


def reseal(conn: sqlite3.Connection, key: bytes, thread_id: str) -> int:
    """Seal a thread's rows as they are now (dropping its old seals); return the row count."""
    conn.execute("DELETE FROM rg_seals WHERE thread_id = ?", (thread_id,))
    conn.execute("DELETE FROM rg_heads WHERE thread_id = ?", (thread_id,))
    computed = _computed(conn, key, thread_id)
    acc = _ZERO
    for (kind, ns, cid, task_id, idx), value in computed:
        conn.execute(
            "INSERT INTO rg_seals(thread_id, checkpoint_ns, checkpoint_id, kind, task_id, idx, mac) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (thread_id, ns, cid, kind, task_id, idx, value),
        )
        acc = xor(acc, value)
    if computed:
        conn.execute(
            "INSERT INTO rg_heads(thread_id, sealed, acc, tag) VALUES (?, ?, ?, ?)",
            (thread_id, len(computed), acc, head_tag(key, thread_id, len(computed), acc)),
        )
    return len(computed)


def thread_ids(conn: sqlite3.Connection) -> list[str]:
    """Return every thread id that has rows, seals or a head."""
    rows = conn.execute(
        "SELECT thread_id FROM checkpoints UNION SELECT thread_id FROM writes "
        "UNION SELECT thread_id FROM rg_seals UNION SELECT thread_id FROM rg_heads"
    ).fetchall()
    return sorted(str(r[0]) for r in rows)
