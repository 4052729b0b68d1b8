"""Delta channels for state that grows every step (transcripts, histories, outputs).

A plain ``Annotated[list[X], operator.add]`` channel is stored whole in every checkpoint, so a
list that grows by one item per step makes the checkpoint file grow quadratically with the
steps. :func:`delta` keeps the same binary reducer but stores the channel as LangGraph's
``DeltaChannel``: each step's writes are stored once and the value is rebuilt by replaying them
(with a full snapshot every ``snapshot_frequency`` updates bounding the replay).

Readers that bypass the compiled graph (``checkpoint["channel_values"]``) no longer see these
channels between snapshots; ``reasoning_graphs.checkpoints._delta.stored_values`` rebuilds the
shared ones (``outputs``, ``reads``) for the thread helpers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.channels import DeltaChannel

__all__ = ["delta", "fold"]

Reducer = Callable[[Any, Any], Any]
"""A binary LangGraph reducer ``(current, update) -> new``; it must not mutate its arguments."""

BatchReducer = Callable[[Any, Sequence[Any]], Any]
"""A ``DeltaChannel`` reducer ``(current, [update, ...]) -> new``."""

_FOLDS: dict[Reducer, BatchReducer] = {}


def fold(reducer: Reducer) -> BatchReducer:
    """Return the batch reducer that left-folds ``reducer`` over a batch of writes.

    A left fold is batching-invariant, as ``DeltaChannel`` requires: folding two batches one
    after the other equals folding their concatenation. The same function object is returned for
    the same ``reducer``, so two state schemas declaring one key compare equal in LangGraph.
    """
    found = _FOLDS.get(reducer)
    if found is None:

        def batch(state: Any, writes: Sequence[Any]) -> Any:
            return functools.reduce(reducer, writes, state)

        batch.__name__ = batch.__qualname__ = f"fold_{getattr(reducer, '__name__', 'reducer')}"
        found = _FOLDS.setdefault(reducer, batch)
    return found


def delta(reducer: Reducer, *, snapshot_frequency: int = 100) -> DeltaChannel[Any]:
    """Return a ``DeltaChannel`` that reduces writes with the binary ``reducer``.

    Use it as the metadata of a growing state key:
    ``transcript: Annotated[list[Contribution], delta(operator.add)]``; LangGraph takes the
    channel's type from the annotation. ``Overwrite`` still replaces the value.

    Args:
        reducer: the binary reducer the key used before (it must not mutate its arguments).
        snapshot_frequency: store a full copy every this many updates (bounds replay on read).
    """
    return DeltaChannel(fold(reducer), snapshot_frequency=snapshot_frequency)
