"""Retries of the model seam: the backoff policy and which errors are transient.

Also the two ways a call is invoked and a retry waits: awaited (``acall``) or blocking (``call``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import Field

from reasoning_graphs.types import Frozen


class RetrySettings(Frozen):
    """Bounded exponential backoff for transient provider errors."""

    max_attempts: int = Field(default=3, ge=1)
    """Tries per call, the first included."""
    initial_delay: float = Field(default=0.5, ge=0.0)
    """Seconds before the first retry."""
    max_delay: float = Field(default=8.0, ge=0.0)
    """Longest wait between tries."""
    jitter: bool = True
    """Randomize waits (up to +50%) so parallel branches do not retry in lockstep."""

    def delay(self, retry: int) -> float:
        """Return the wait before retry number ``retry`` (1-based)."""
        base: float = min(self.max_delay, self.initial_delay * 2.0 ** (retry - 1))
        return base * (1 + random.random() / 2) if self.jitter else base


_TRANSIENT_NAMES = frozenset(
    {
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailable",
        "ServiceUnavailableError",
        "DeadlineExceeded",
        "ResourceExhausted",
        "TimeoutException",
        "ConnectError",
        "ReadTimeout",
        "RemoteProtocolError",
        "TransientModelError",
    }
)


def is_transient(exc: BaseException) -> bool:
    """Return whether an exception is worth retrying (timeouts, rate limits, 5xx, dropped links).

    Authentication, permission and invalid-request errors are not, nor is anything unknown: a
    blind retry of a bug only costs money.
    """
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in (408, 409, 429) or status >= 500)


@dataclass(frozen=True)
class _IO:
    invoke: Callable[[Any, list[BaseMessage]], Any]
    sleep: Callable[[float], Any]


async def _ainvoke(runnable: Any, messages: list[BaseMessage]) -> Any:
    return await runnable.ainvoke(messages)


async def _sinvoke(runnable: Any, messages: list[BaseMessage]) -> Any:
    return runnable.invoke(messages)


async def _tsleep(seconds: float) -> None:
    time.sleep(seconds)


_async_io = _IO(_ainvoke, asyncio.sleep)
_sync_io = _IO(_sinvoke, _tsleep)
