"""Usage ledger reducer and budgets.

Graphs keep a :class:`~reasoning_graphs.types.Usage` ledger in state under ``usage`` with
:func:`add_usage` as its reducer: every node returns the usage of its own calls and LangGraph adds
them up, parallel branches included. A :class:`Budget` is checked by routers *before* a model
step; a parallel batch is reserved as a whole, so either every member fits or none starts.
"""

from __future__ import annotations

from pydantic import Field

from reasoning_graphs.types import Frozen, Usage

__all__ = ["Budget", "add_usage"]


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Reduce two ledgers into one (a LangGraph channel reducer)."""
    if left is None:
        return right if right is not None else Usage()
    if right is None:
        return left
    return left + right


class Budget(Frozen):
    """Limits on model calls and tokens for one run.

    Token use is only known after a call, so each planned call reserves
    ``reserve_tokens_per_call`` tokens up front; a call that reports more than it reserved makes
    the next check fail (the budget fails closed, it never lends).
    """

    max_calls: int | None = Field(default=None, ge=1)
    """Most model calls the run may make (schema repairs and retries count); None: no limit."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most input plus output tokens the run may use; None: no limit."""
    reserve_tokens_per_call: int = Field(default=0, ge=0)
    """Tokens each planned call reserves against ``max_tokens`` before it starts."""

    def remaining_calls(self, usage: Usage) -> int | None:
        """Return how many calls are left, or None when calls are unlimited."""
        if self.max_calls is None:
            return None
        return max(0, self.max_calls - usage.total.calls)

    def fits(self, usage: Usage, calls: int = 1) -> bool:
        """Return whether ``calls`` more calls (a whole batch) fit in what is left.

        Args:
            usage: the ledger so far.
            calls: calls the next step needs; a parallel batch passes its total.
        """
        if calls < 0:
            raise ValueError(f"calls must be >= 0, got {calls!r}")
        if self.max_calls is not None and usage.total.calls + calls > self.max_calls:
            return False
        if self.max_tokens is not None:
            spent = self.spent_tokens(usage)
            if spent + calls * self.reserve_tokens_per_call > self.max_tokens or spent >= self.max_tokens:
                return False
        return True

    def spent_tokens(self, usage: Usage) -> int:
        """Tokens charged against ``max_tokens`` so far.

        A call whose usage is unknown is charged its reservation, and no call is charged less than
        its reservation, so retries and schema repairs inside a reserved step cannot overspend.
        """
        total = usage.total
        reserve = self.reserve_tokens_per_call
        return max(total.tokens + total.unknown_usage_calls * reserve, total.calls * reserve)

    def allowance(self, usage: Usage, batch: int = 1) -> int | None:
        """Return the calls each member of a batch may make (repairs included), or None.

        The remaining calls are split evenly so that the batch as a whole can never exceed the
        budget, whatever order its members finish in.
        """
        shares: list[int] = []
        left = self.remaining_calls(usage)
        if left is not None:
            shares.append(left // max(1, batch))
        if self.max_tokens is not None and self.reserve_tokens_per_call:
            room = max(0, self.max_tokens - self.spent_tokens(usage))
            shares.append(room // (self.reserve_tokens_per_call * max(1, batch)))
        return min(shares) if shares else None
