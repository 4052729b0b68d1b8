"""State keys and helpers every graph shares.

Every graph's state includes :class:`CommonState`: stage outputs under labels, the access
policies of its roles, a log of who read what, the usage ledger, the budget, and the closing
``final_answer`` / ``stop_reason``. Stored threads can then be listed, resumed and viewed per
role by :mod:`reasoning_graphs.checkpoints` without knowing the graph.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Annotated, Any

from typing_extensions import TypedDict

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord, merge_outputs, project_outputs
from reasoning_graphs.budget import Budget, add_usage
from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.nodes import context_value
from reasoning_graphs.types import StopReason, Usage

__all__ = [
    "CommonOutput",
    "CommonState",
    "LimitsInput",
    "budget_for_run",
    "read_as",
    "require_text",
]


class LimitsInput(TypedDict, total=False):
    """Per-run limits a caller may put in the input (they override the factory's budget)."""

    max_calls: int
    """Most model calls for this run."""
    max_tokens: int
    """Most tokens for this run."""


class CommonOutput(TypedDict, total=False):
    """Keys every graph returns."""

    final_answer: str | None
    """The answer the run stands behind (None when it has none)."""
    stop_reason: StopReason | None
    """Why the run ended."""
    usage: Annotated[Usage, add_usage]
    """Calls and tokens, per model and per node."""


class CommonState(CommonOutput, total=False):
    """Keys every graph keeps in state."""

    outputs: Annotated[dict[str, Output], delta(merge_outputs)]
    """Stage outputs by label; roles read them through their access policies."""
    access: dict[str, AccessPolicy]
    """Each role's access policy, recorded at the start of the run."""
    reads: Annotated[list[ReadRecord], delta(operator.add)]
    """Which labels each node read, in order."""
    budget: Budget
    """The run's budget, fixed at the start."""
    error: str | None
    """The last model failure that ended the run, if any."""


def budget_for_run(state: Mapping[str, Any], default: Budget) -> Budget:
    """Return the budget for a run: the input's limits, else the run context's, else the default.

    The run context (``invoke(..., context={"max_calls": 20})``) is how Studio sets limits per run.

    Raises:
        InputError: a limit is not a positive integer.
    """
    updates: dict[str, int] = {}
    for key in ("max_calls", "max_tokens"):
        value = state.get(key)
        if value is None:
            value = context_value(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{key} must be a positive integer, got {value!r}")
        updates[key] = value
    return default.model_copy(update=updates) if updates else default


def read_as(state: Mapping[str, Any], role: str) -> tuple[dict[str, Output], ReadRecord]:
    """Return the outputs ``role`` may read, and the record of that read for state."""
    policy = (state.get("access") or {}).get(role, AccessPolicy())
    seen = project_outputs(state.get("outputs") or {}, policy)
    return seen, ReadRecord(node=role, labels=sorted(seen))


def require_text(value: Any, name: str) -> str:
    """Return ``value`` as a non-empty string, or raise an InputError naming ``name``."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"input {name!r} must be a non-empty string, got {value!r}")
    return value
