"""Thread helpers: list stored runs, read their history, resume them and fork them.

A *thread* is one run of a graph, stored under its ``thread_id``; every super-step adds a
checkpoint. The graph's name comes from the checkpoint metadata: LangGraph copies string,
number and boolean entries of the run config's ``metadata`` into every checkpoint it writes
during that call, so runs are invoked with
``config={"configurable": {"thread_id": ...}, "metadata": {"graph": NAME}}`` and the configs
returned here carry that metadata on.

These helpers are synchronous. They read any saver; a ``SqliteSaver`` is listed with one SQL
query plus one checkpoint per thread, other savers through LangGraph's API. An
``AsyncSqliteSaver`` can be read from a worker thread (``await asyncio.to_thread(...)``) but not
from its own event loop.

Example:
    >>> with open_saver("runs.sqlite") as saver:  # doctest: +SKIP
    ...     graph = builder.compile(checkpointer=saver)
    ...     [t.thread_id for t in list_threads(saver) if t.status == "incomplete"]
    ...     graph.invoke(None, resume_config(saver, "t-1"))  # completed nodes are not re-run
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel
from pydantic import BaseModel

from reasoning_graphs.checkpoints import _scan
from reasoning_graphs.errors import InputError
from reasoning_graphs.types import Frozen

__all__ = [
    "CheckpointInfo",
    "ThreadInfo",
    "ThreadStatus",
    "fork",
    "history",
    "list_threads",
    "resume_config",
    "thread_info",
]

ThreadStatus = Literal["done", "interrupted", "incomplete", "tampered"]
"""Where a thread stands.

- ``done``: no node is left to run.
- ``interrupted``: a node called ``interrupt()`` and waits for ``Command(resume=...)``.
- ``incomplete``: nodes are left to run: the run crashed, was stopped or is still running;
  ``graph.invoke(None, resume_config(saver, thread_id))`` continues it.
- ``tampered``: the thread failed its integrity check (``open_saver(..., integrity=True)``):
  ``error`` says why, and nothing else of it was read (its ``graph`` and ``metadata`` are
  unknown, its times come from its checkpoint ids). Every read of it raises
  :class:`~reasoning_graphs.checkpoints.integrity.IntegrityError` until it is sealed again.
"""

_PREVIEW_CHARS = 120


class ThreadInfo(Frozen):
    """A summary of one stored thread."""

    thread_id: str
    """The id to resume, fork or view the thread with."""
    graph: str | None
    """The graph name recorded in the checkpoint metadata (None when the run gave none)."""
    metadata: dict[str, str | int | float | bool]
    """The run's own metadata (``graph`` and whatever else its config passed), which
    :func:`resume_config` and :func:`fork` pass on; LangGraph's keys are left out."""
    created_at: datetime
    """When the first checkpoint was written (UTC; read from its time-ordered id)."""
    updated_at: datetime
    """When the latest checkpoint was written (UTC)."""
    checkpoints: int
    """How many checkpoints the thread has (root namespace only)."""
    checkpoint_id: str
    """The latest checkpoint's id."""
    status: ThreadStatus
    """Whether the run finished, waits on an interrupt, or has nodes left to run."""
    next: tuple[str, ...]
    """Nodes the latest checkpoint would run next, sorted (empty when done)."""
    error: str | None
    """The error the last attempted step raised, if it failed."""
    stop_reason: str | None
    """The run's ``stop_reason`` value, if set."""
    final_answer: str | None
    """The start of the run's ``final_answer`` (at most 120 characters), if set."""


class CheckpointInfo(Frozen):
    """One checkpoint in a thread's history."""

    checkpoint_id: str
    """Pass it to :func:`fork` or ``view_thread`` to use this point in time."""
    parent_id: str | None
    """The checkpoint this one was built on (None for the first)."""
    step: int
    """LangGraph's step number: -1 for the input, then 0, 1, ..."""
    source: str
    """``input``, ``loop`` (a super-step ran), ``update`` (update_state or fork) or ``fork``."""
    writers: tuple[str, ...]
    """Nodes whose writes produced it, sorted: ``__input__`` for the input, the super-step's
    tasks for ``loop``, the recorded ``as_node`` for an update made by :func:`fork`, else empty."""
    next: tuple[str, ...]
    """Nodes it would run next, sorted."""
    created_at: datetime
    """When it was written (UTC)."""


def _preview(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    elif isinstance(value, BaseModel):
        text = value.model_dump_json()
    else:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


def _info(summary: _scan.Summary) -> ThreadInfo:
    latest = summary.latest
    if latest is None:
        return ThreadInfo(
            thread_id=summary.thread_id,
            graph=None,
            metadata={},
            created_at=summary.created_at,
            updated_at=_scan.id_time(summary.last_id) or summary.created_at,
            checkpoints=summary.count,
            checkpoint_id=summary.last_id,
            status="tampered",
            next=(),
            error=str(summary.tampered),
            stop_reason=None,
            final_answer=None,
        )
    values: dict[str, Any] = latest.checkpoint["channel_values"]
    next_nodes = _scan.next_nodes(latest.checkpoint)
    errors = _scan.pending(latest, _scan.ERROR)
    if _scan.pending(latest, _scan.INTERRUPT) and not errors:
        status: ThreadStatus = "interrupted"
    else:
        status = "incomplete" if next_nodes else "done"
    stop_reason = values.get("stop_reason")
    return ThreadInfo(
        thread_id=summary.thread_id,
        graph=None if summary.run_metadata.get("graph") is None else str(summary.run_metadata["graph"]),
        metadata=summary.run_metadata,
        created_at=summary.created_at,
        updated_at=_scan.parse_ts(latest.checkpoint["ts"]),
        checkpoints=summary.count,
        checkpoint_id=str(latest.config["configurable"]["checkpoint_id"]),
        status=status,
        next=next_nodes,
        error=str(errors[-1]) if errors else None,
        stop_reason=None if stop_reason is None else str(stop_reason),
        final_answer=_preview(values.get("final_answer")),
    )


def list_threads(saver: BaseCheckpointSaver[Any]) -> list[ThreadInfo]:
    """Return every stored thread, most recently updated first.

    Args:
        saver: the checkpoint store (any LangGraph saver).
    """
    infos = [_info(summary) for summary in _scan.summaries(saver)]
    return sorted(infos, key=lambda info: (info.updated_at, info.checkpoint_id), reverse=True)


def thread_info(saver: BaseCheckpointSaver[Any], thread_id: str) -> ThreadInfo:
    """Return the summary of one thread.

    Raises:
        UnknownThreadError: no thread has that id.
        IntegrityError: the thread failed its integrity check.
    """
    found = _scan.summaries(saver, thread_id)
    if not found:
        raise _scan.unknown_thread(thread_id)
    if found[0].tampered is not None:
        raise found[0].tampered
    return _info(found[0])


def _writers(tup: CheckpointTuple, by_id: dict[str, CheckpointTuple]) -> tuple[str, ...]:
    source = tup.metadata.get("source")
    if source == "input":
        return ("__input__",)
    if source == "update":
        as_node = tup.metadata.get("as_node")
        return (str(as_node),) if as_node else ()
    parent_id = tup.parent_config["configurable"].get("checkpoint_id") if tup.parent_config else None
    parent = by_id.get(str(parent_id)) if parent_id else None
    # A loop checkpoint is written only once every task of its super-step finished.
    return _scan.next_nodes(parent.checkpoint) if source == "loop" and parent else ()


def history(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[CheckpointInfo]:
    """Return a thread's checkpoints, newest first (reads every checkpoint of the thread).

    Raises:
        UnknownThreadError: no thread has that id.
    """
    with _scan.sync_reads(saver):
        tuples = list(saver.list(_scan.config_for(thread_id)))  # type: ignore[arg-type]
    if not tuples:
        raise _scan.unknown_thread(thread_id)
    by_id = {str(t.config["configurable"]["checkpoint_id"]): t for t in tuples}
    infos = [
        CheckpointInfo(
            checkpoint_id=checkpoint_id,
            parent_id=str(t.parent_config["configurable"]["checkpoint_id"]) if t.parent_config else None,
            step=int(t.metadata.get("step", -1)),
            source=str(t.metadata.get("source", "")),
            writers=_writers(t, by_id),
            next=_scan.next_nodes(t.checkpoint),
            created_at=_scan.parse_ts(t.checkpoint["ts"]),
        )
        for checkpoint_id, t in by_id.items()
    ]
    return sorted(infos, key=lambda info: info.checkpoint_id, reverse=True)


def _run_config(thread_id: str, metadata: dict[str, Any], checkpoint_id: str | None = None) -> RunnableConfig:
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    if checkpoint_id is not None:
        config["configurable"].update(checkpoint_ns="", checkpoint_id=checkpoint_id)
    if metadata:
        config["metadata"] = dict(metadata)
    return config


def resume_config(saver: BaseCheckpointSaver[Any], thread_id: str) -> RunnableConfig:
    """Return the config that resumes a stored thread: ``graph.invoke(None, config)``.

    Nodes that completed are not re-run; a failed or interrupted node runs again. The config
    carries the run's metadata (:attr:`ThreadInfo.metadata`, e.g. the graph name), so new
    checkpoints record it too.

    Raises:
        UnknownThreadError: no thread has that id.
    """
    return _run_config(thread_id, thread_info(saver, thread_id).metadata)


def fork(
    compiled_graph: Pregel[Any, Any, Any, Any],
    thread_id: str,
    checkpoint_id: str,
    values: dict[str, Any],
    as_node: str | None = None,
) -> RunnableConfig:
    """Branch a thread from an earlier checkpoint with changed values.

    The update goes through the graph's reducers, as if node ``as_node`` had returned
    ``values`` (LangGraph picks the last node that ran when it is None). Later checkpoints of the
    thread are kept; the new branch starts from the returned config, which also records the
    fork's origin (``forked_from``, ``as_node``) in the new checkpoint's metadata.

    Args:
        compiled_graph: the graph, compiled with the saver that holds the thread.
        thread_id: the thread to fork.
        checkpoint_id: the checkpoint to branch from (see :func:`history`).
        values: the state update to apply.
        as_node: the node the update is attributed to; it decides which nodes run next.

    Returns:
        The config of the new checkpoint: ``compiled_graph.invoke(None, config)`` continues it.

    Raises:
        InputError: the graph has no checkpointer, or the thread has no such checkpoint.
        UnknownThreadError: no thread has that id.
    """
    saver = compiled_graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        raise InputError(
            "fork needs a graph compiled with a checkpointer: builder.compile(checkpointer=saver)"
        )
    info = thread_info(saver, thread_id)
    with _scan.sync_reads(saver):
        base = saver.get_tuple(_scan.config_for(thread_id, checkpoint_id))  # type: ignore[arg-type]
    if base is None:
        raise InputError(
            f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}; list its checkpoints with "
            "reasoning_graphs.checkpoints.history(saver, thread_id)"
        )
    origin = {"forked_from": checkpoint_id} | ({"as_node": as_node} if as_node is not None else {})
    config = _run_config(thread_id, info.metadata | origin, checkpoint_id)
    with _scan.sync_reads(saver):
        new_config = compiled_graph.update_state(config, values, as_node=as_node)
    return _run_config(thread_id, info.metadata, str(new_config["configurable"]["checkpoint_id"]))
