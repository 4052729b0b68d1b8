"""The sealing key of a checkpoint database: from the environment or a 0600 file beside it.

Private to ``checkpoints``; :mod:`reasoning_graphs.checkpoints.integrity` is the public face.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
from pathlib import Path

from reasoning_graphs.errors import CheckpointError, ConfigurationError

__all__: list[str] = []

KEY_ENV = "REASONING_GRAPHS_HMAC_KEY"
"""The environment variable that supplies the key instead of the key file."""
MIN_ENV_KEY_CHARS = 16
KEY_SIZE = 32
_KEY_CHECK_DOMAIN = b"rg-key-check-v1"


def key_check(key: bytes) -> str:
    """Return a short value that identifies a key without revealing it."""
    return hmac.new(key, _KEY_CHECK_DOMAIN, hashlib.sha256).hexdigest()[:16]


def stored_key_check(conn: sqlite3.Connection) -> str | None:
    """Return the key check recorded in the database, if any (no table: None)."""
    try:
        row = conn.execute("SELECT value FROM rg_meta WHERE name = 'key_check'").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else str(row[0])


def key_path(database: str) -> Path:
    """Return where the key of ``database`` is kept: ``<database>.key``, beside it."""
    return Path(f"{database}.key")


def _read_key_file(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the checkpoint key {str(path)!r}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise ConfigurationError(
                f"the checkpoint key {str(path)!r} must be owned by you and readable by no one else "
                f"(mode {info.st_mode & 0o777:o}); run: chmod 600 {path}"
            )
        text = handle.read(1024).decode("ascii", "replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_SIZE:
        raise ConfigurationError(
            f"the checkpoint key {str(path)!r} is malformed (expected 64 hex digits); restore it, "
            f"or set {KEY_ENV}"
        )
    return key


def _create_key_file(path: Path) -> tuple[bytes, bool]:
    """Write a fresh key with mode 0600, atomically: a concurrent creator's key wins if first.

    Returns the key and whether this call created it.
    """
    key = secrets.token_bytes(KEY_SIZE)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(key.hex() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temp, path)  # fails if another process created the key first
    except FileExistsError:
        return _read_key_file(path), False
    finally:
        temp.unlink(missing_ok=True)
    return key, True


def open_key(database: str, conn: sqlite3.Connection | None = None) -> tuple[bytes, bool]:
    """Return the sealing key of ``database`` and whether it was created just now.

    The key comes from ``$REASONING_GRAPHS_HMAC_KEY``, else from the key file beside the
    database. A missing key file is created (mode 0600) unless the database already holds
    seals: then the key was lost or moved, and a new one would turn every seal into a false
    alarm. A key created now means the database was never sealed: its existing threads may be
    adopted (trusted as they are), which :class:`IntegritySaver` does.

    Raises:
        ConfigurationError: the key is unreadable, too permissive, malformed, too short, or
            missing for a sealed database.
    """
    env = os.environ.get(KEY_ENV)
    if env is not None:
        if len(env) < MIN_ENV_KEY_CHARS:
            raise ConfigurationError(
                f"{KEY_ENV} is too short ({len(env)} characters); use at least {MIN_ENV_KEY_CHARS}, "
                "e.g. the output of: python -c 'import secrets; print(secrets.token_hex(32))'"
            )
        return hashlib.sha256(b"rg-env-key-v1\x00" + env.encode("utf-8", "surrogatepass")).digest(), False
    if database == ":memory:":
        return secrets.token_bytes(KEY_SIZE), True
    path = key_path(database)
    if path.exists() or path.is_symlink():
        return _read_key_file(path), False
    if conn is not None and stored_key_check(conn) is not None:
        raise ConfigurationError(
            f"the checkpoint database {database!r} is sealed but its key {str(path)!r} is missing; "
            f"restore the key file (or set {KEY_ENV} to the key it was sealed with)"
        )
    try:
        return _create_key_file(path)
    except OSError as exc:
        raise ConfigurationError(f"cannot create the checkpoint key {str(path)!r}: {exc.strerror}") from None


def load_key(database: str, conn: sqlite3.Connection | None = None) -> bytes:
    """Return the sealing key of ``database`` (see :func:`open_key`)."""
    return open_key(database, conn)[0]


def check_key(conn: sqlite3.Connection, key: bytes, database: str) -> None:
    """Refuse a key that differs from the one the database was sealed with.

    Raises:
        CheckpointError: the database records another key.
    """
    stored = stored_key_check(conn)
    if stored is not None and stored != key_check(key):
        raise CheckpointError(
            f"the checkpoint database {database!r} was sealed with another key than "
            f"{str(key_path(database))!r} or ${KEY_ENV}; use the key it was sealed with"
        )
