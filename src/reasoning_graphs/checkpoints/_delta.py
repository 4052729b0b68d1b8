"""Rebuild the shared state keys of a stored checkpoint without the compiled graph.

Private to ``checkpoints``. The graphs store their growing keys (``outputs``, ``reads`` ...) as
LangGraph delta channels: a checkpoint's ``channel_values`` holds such a key only at a
snapshot (``_DeltaSnapshot``), or as a plain value in a thread written before the key became a
delta channel. Elsewhere the value is the nearest stored one (the *seed*) plus every write on the
path since, which ``saver.get_delta_channel_history`` returns; :func:`stored_values` folds them
with the package's own reducers, as the compiled graph would.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, DeltaChannelHistory
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import Overwrite

from reasoning_graphs.access import merge_outputs

__all__: list[str] = []

Replay = tuple[Callable[[Any, Any], Any], Callable[[], Any]]
"""A key's binary reducer and its empty value."""

SHARED: Mapping[str, Replay] = {
    "outputs": (merge_outputs, dict),
    "reads": (operator.add, list),
}
"""The ``CommonState`` keys that are delta channels, with the reducers the graphs declare."""

_OVERWRITE = "__overwrite__"


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, _DeltaSnapshot) else value


def _overwrite(value: Any) -> tuple[bool, Any]:
    """Return whether a stored write replaces the value, and with what (LangGraph's forms)."""
    if isinstance(value, Overwrite):
        return True, value.value
    if isinstance(value, dict):
        if len(value) == 1 and _OVERWRITE in value:
            return True, value[_OVERWRITE]
        if value.get("type") == _OVERWRITE and "value" in value:
            return True, value["value"]
    return False, None


def _replay(replay: Replay, history: DeltaChannelHistory) -> Any:
    reducer, empty = replay
    seed = _unwrap(history.get("seed"))
    value = empty() if seed is None else seed
    for _, _, write in history["writes"]:
        replaced, new = _overwrite(write)
        value = (empty() if new is None else new) if replaced else reducer(value, write)
    return value


def stored_values(
    saver: BaseCheckpointSaver[Any], tup: CheckpointTuple, keys: Mapping[str, Replay] = SHARED
) -> dict[str, Any]:
    """Return a checkpoint's channel values with ``keys`` rebuilt where they are delta channels.

    Snapshots are unwrapped; a key with no version was never written and stays absent. Other
    delta channels (graph-specific keys) are left absent: only the compiled graph knows them.

    Args:
        saver: the saver ``tup`` was read from (it walks the ancestors).
        tup: the checkpoint, as ``get_tuple`` returned it (its config names the checkpoint).
        keys: the keys to rebuild, with their reducers.
    """
    checkpoint = tup.checkpoint
    stored = checkpoint["channel_values"]
    values = {key: _unwrap(value) for key, value in stored.items()}
    missing = [key for key in keys if key in checkpoint["channel_versions"] and key not in stored]
    if missing:
        histories = saver.get_delta_channel_history(config=tup.config, channels=missing)
        for key in missing:
            values[key] = _replay(keys[key], histories.get(key) or {"writes": []})
    return values
