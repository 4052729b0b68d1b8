"""Errors raised by reasoning-graphs.

Every error the package raises on purpose derives from one base class, so callers can catch
``ReasoningGraphsError`` and print one clear line::

    ReasoningGraphsError
    ├── ConfigurationError      a model spec, credential or setting is wrong (CLI exit 4)
    ├── InputError              a task, input file, verifier spec or thread id is wrong (CLI exit 2)
    │   └── UnknownThreadError  no stored thread has that id
    ├── ModelError              a model call failed for good (after retries, or at once)
    │   └── SchemaError         replies kept violating the requested schema
    ├── BudgetExceeded          a call would go past the run's budget
    ├── SandboxError            the sandbox could not run a candidate at all
    └── CheckpointError         a checkpoint database cannot be opened or read
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reasoning_graphs.types import UsageCounts

__all__ = [
    "BudgetExceeded",
    "CheckpointError",
    "ConfigurationError",
    "InputError",
    "ModelError",
    "ReasoningGraphsError",
    "SandboxError",
    "SchemaError",
    "UnknownThreadError",
]


class ReasoningGraphsError(Exception):
    """Base class of every error raised on purpose by reasoning-graphs."""


class ConfigurationError(ReasoningGraphsError):
    """A model spec, credential or setting is wrong; the message names the fix."""


class InputError(ReasoningGraphsError, ValueError):
    """A task, input file, verifier spec or other user input is wrong."""


class UnknownThreadError(InputError):
    """No stored thread has the requested id."""


class ModelError(ReasoningGraphsError):
    """A model call failed for good: a non-retryable error, or retries ran out.

    Attributes:
        usage: what the failed call (and its retries) consumed, so the ledger can record it.
    """

    def __init__(self, message: str, *, usage: UsageCounts | None = None) -> None:
        """Create the error with the usage spent before it happened."""
        super().__init__(message)
        self.usage = usage


class SchemaError(ModelError):
    """The model's replies kept violating the requested schema after every repair."""


class BudgetExceeded(ReasoningGraphsError):
    """A model call would take the run past its call or token budget.

    Attributes:
        usage: what the step consumed before the budget refused the next call.
    """

    def __init__(self, message: str, *, usage: UsageCounts | None = None) -> None:
        """Create the error with the usage spent before it happened."""
        super().__init__(message)
        self.usage = usage


class SandboxError(ReasoningGraphsError):
    """The sandbox could not run a candidate at all (not: the candidate failed)."""


class CheckpointError(ReasoningGraphsError):
    """A checkpoint database cannot be opened, is not SQLite, or is locked."""
