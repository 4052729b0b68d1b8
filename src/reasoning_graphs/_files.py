"""Read a file a user named (an input, a configuration, a fake model's script, a verifier's file).

One policy for every such file: it must be a regular file (a FIFO, a device or a folder is
refused before anything is read from it, so ``/dev/zero`` or a pipe cannot hang or exhaust the
process), at most ``max_bytes`` long, UTF-8 text, and for JSON not nested deeper than the parser
can follow. Every refusal is one line that names the file and the problem, never its content.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from reasoning_graphs.errors import InputError, ReasoningGraphsError

__all__ = ["MAX_BYTES", "read_user_json", "read_user_text"]

MAX_BYTES = 10 * 2**20
"""The default size limit (10 MiB)."""


def read_user_text(
    path: str | os.PathLike[str],
    what: str,
    *,
    max_bytes: int = MAX_BYTES,
    error: type[ReasoningGraphsError] = InputError,
) -> str:
    """Return a user's file as text.

    Args:
        path: the file.
        what: how messages name it ("input file", "configuration file" ...).
        max_bytes: the largest size accepted.
        error: the error to raise (``InputError``; ``ConfigurationError`` for model scripts).

    Raises:
        InputError: (or ``error``) the file is missing, not a regular file, too large, unreadable
            or not UTF-8.
    """
    name = f"{what} {os.fspath(path)!r}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{name} does not exist") from None
    except OSError as exc:
        raise error(f"{name} cannot be read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise error(f"{name} is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise error(f"{name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{name} cannot be read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        limit = f"{max_bytes // 2**20} MiB" if max_bytes >= 2**20 else f"{max_bytes} bytes"
        raise error(f"{name} is larger than {limit}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{name} is not UTF-8 text") from None


def read_user_json(
    path: str | os.PathLike[str],
    what: str,
    *,
    max_bytes: int = MAX_BYTES,
    error: type[ReasoningGraphsError] = InputError,
) -> Any:
    """Return a user's JSON file, parsed (any JSON value: callers check its shape).

    Raises:
        InputError: (or ``error``) as :func:`read_user_text`, or the text is not JSON, or it is
            nested too deeply.
    """
    text = read_user_text(path, what, max_bytes=max_bytes, error=error)
    name = f"{what} {os.fspath(path)!r}"
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise error(f"{name} is nested too deeply") from None
