"""Read thread summaries and pending nodes straight from a saver, without the compiled graph.

Private to ``checkpoints``. A ``SqliteSaver`` is summarised with one SQL query plus one
checkpoint per thread; any other saver through LangGraph's ``list`` API (every checkpoint).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from reasoning_graphs.checkpoints.integrity import IntegrityError
from reasoning_graphs.errors import CheckpointError, UnknownThreadError

__all__: list[str] = []

Scalar = str | int | float | bool
"""A metadata value LangGraph copies from a run's config into its checkpoints."""

INTERRUPT = "__interrupt__"
ERROR = "__error__"
_TASKS = "__pregel_tasks"
_START = "__start__"
_BRANCH = "branch:to:"
_JOIN = "join:"
_GREGORIAN_OFFSET = 0x01B21DD213814000
"""100-ns intervals between 1582-10-15 and the Unix epoch (UUID version 6 clock)."""

_OWN_METADATA = frozenset(
    {
        "source",
        "step",
        "parents",
        "run_id",
        "writes",
        "counters_since_delta_snapshot",
        "forked_from",
        "as_node",
    }
)
"""Metadata keys written by LangGraph or by ``fork``, not copied from a run's config."""

_SUMMARY_SQL = """
SELECT c.thread_id, COUNT(*), MIN(c.checkpoint_id), MAX(c.checkpoint_id), COALESCE(
  (SELECT CAST(g.metadata AS TEXT) FROM checkpoints AS g
   WHERE g.thread_id = c.thread_id AND g.checkpoint_ns = ''
     AND json_valid(CAST(g.metadata AS TEXT))
     AND json_extract(CAST(g.metadata AS TEXT), '$.graph') IS NOT NULL
   ORDER BY g.checkpoint_id DESC LIMIT 1),
  (SELECT CAST(f.metadata AS TEXT) FROM checkpoints AS f
   WHERE f.thread_id = c.thread_id AND f.checkpoint_ns = ''
   ORDER BY f.checkpoint_id LIMIT 1))
FROM checkpoints AS c
WHERE c.checkpoint_ns = '' {where}
GROUP BY c.thread_id
"""
"""Per thread: count, first and last id, and the run metadata of the newest checkpoint that
names a graph (else of the first checkpoint). Reads no checkpoint blob."""


@dataclass(frozen=True)
class Summary:
    """What is known about one thread after a scan."""

    thread_id: str
    count: int
    created_at: datetime
    run_metadata: dict[str, Scalar]
    latest: CheckpointTuple | None
    """The newest checkpoint; None when the thread failed its integrity check (nothing was read)."""
    tampered: IntegrityError | None = None
    """The integrity failure, when there was one."""
    last_id: str = ""
    """The newest checkpoint's id."""


def run_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Scalar]:
    """Return the entries a run's config put in a checkpoint's metadata (LangGraph's own removed)."""
    return {
        str(k): v
        for k, v in (metadata or {}).items()
        if k not in _OWN_METADATA and isinstance(v, str | int | float | bool)
    }


def _parse_metadata(text: str | None) -> dict[str, Scalar]:
    try:
        loaded = json.loads(text) if text else {}
    except ValueError:
        return {}
    return run_metadata(loaded) if isinstance(loaded, dict) else {}


def unknown_thread(thread_id: str) -> UnknownThreadError:
    """Return the error for a thread id that is not stored."""
    return UnknownThreadError(
        f"no thread {thread_id!r} in this checkpoint store; list the stored threads with "
        "reasoning_graphs.checkpoints.list_threads(saver) or `reasoning-graphs threads --db PATH`"
    )


@contextmanager
def sync_reads(saver: BaseCheckpointSaver[Any]) -> Iterator[None]:
    """Turn an async-only saver's refusal to be read from its own loop into a clear error."""
    try:
        yield
    except asyncio.InvalidStateError as exc:
        raise CheckpointError(
            f"{type(saver).__name__} is async-only and cannot be used synchronously from its own "
            "event loop; call this helper through `await asyncio.to_thread(...)`, or open a sync "
            "saver on the same file with open_saver(path)"
        ) from exc


def config_for(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    """Return the configurable part that addresses a thread (and a checkpoint) at the root."""
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def parse_ts(ts: str) -> datetime:
    """Parse a checkpoint's ISO timestamp."""
    return datetime.fromisoformat(ts)


def id_time(checkpoint_id: str) -> datetime | None:
    """Return the creation time encoded in a UUID v6 checkpoint id, if it is one."""
    try:
        value = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if value.version != 6:
        return None
    ticks = ((value.int >> 80) << 12) | ((value.int >> 64) & 0x0FFF)
    return datetime.fromtimestamp((ticks - _GREGORIAN_OFFSET) / 1e7, tz=UTC)


def _is_join_of(text: str, names: frozenset[str]) -> bool:
    """Return whether ``text`` is the ``+``-joined list of exactly ``names``, in some order."""
    if not names:
        return text == ""
    if len(names) == 1:
        return text in names
    return any(
        text.startswith(f"{name}+") and _is_join_of(text[len(name) + 1 :], names - {name}) for name in names
    )


def next_nodes(checkpoint: Checkpoint) -> tuple[str, ...]:
    """Return the nodes a checkpoint will run next, sorted (one entry per task).

    Mirrors how a compiled ``StateGraph`` triggers nodes: a pending ``branch:to:NODE`` value, a
    complete ``join:A+B:NODE`` barrier, the ``__start__`` input, and queued ``Send`` packets.
    """
    names: list[str] = []
    for channel, value in checkpoint["channel_values"].items():
        if channel == _START:
            names.append(_START)
        elif channel.startswith(_BRANCH):
            names.append(channel[len(_BRANCH) :])
        elif channel.startswith(_JOIN) and channel.count(":") == 2:
            _, sources, target = channel.split(":")
            if isinstance(value, set | frozenset) and _is_join_of(sources, frozenset(value)):
                names.append(target)
        elif channel == _TASKS and isinstance(value, list):
            names.extend(str(getattr(packet, "node", packet)) for packet in value)
    return tuple(sorted(names))


def pending(tup: CheckpointTuple, channel: str) -> list[Any]:
    """Return the values of a checkpoint's pending writes to ``channel``."""
    return [value for _, ch, value in tup.pending_writes or () if ch == channel]


def _sqlite_summaries(saver: SqliteSaver, thread_id: str | None) -> list[Summary]:
    where, params = ("AND c.thread_id = ?", (thread_id,)) if thread_id is not None else ("", ())
    with saver.cursor(transaction=False) as cur:
        rows = cur.execute(_SUMMARY_SQL.format(where=where), params).fetchall()
    out: list[Summary] = []
    for tid, count, first_id, last_id, metadata in rows:
        try:
            latest = saver.get_tuple(config_for(tid, last_id))  # type: ignore[arg-type]
        except IntegrityError as exc:  # listed from its ids only: none of its blobs is trusted
            when = id_time(first_id) or datetime.fromtimestamp(0, UTC)
            out.append(Summary(tid, int(count), when, {}, None, tampered=exc, last_id=last_id))
            continue
        if latest is None:  # deleted between the two reads
            continue
        created = id_time(first_id)
        if created is None:
            first = saver.get_tuple(config_for(tid, first_id))  # type: ignore[arg-type]
            created = parse_ts(first.checkpoint["ts"]) if first else parse_ts(latest.checkpoint["ts"])
        out.append(Summary(tid, int(count), created, _parse_metadata(metadata), latest, last_id=last_id))
    return out


def _generic_summaries(saver: BaseCheckpointSaver[Any], thread_id: str | None) -> list[Summary]:
    config = config_for(thread_id) if thread_id is not None else None
    groups: dict[str, list[CheckpointTuple]] = {}
    for tup in saver.list(config):  # type: ignore[arg-type]
        conf: Mapping[str, Any] = tup.config["configurable"]
        if conf.get("checkpoint_ns", "") == "":
            groups.setdefault(str(conf["thread_id"]), []).append(tup)
    out: list[Summary] = []
    for tid, tuples in groups.items():
        tuples.sort(key=lambda t: str(t.config["configurable"]["checkpoint_id"]))
        named = next((t for t in reversed(tuples) if t.metadata.get("graph") is not None), tuples[0])
        first = tuples[0]
        created = id_time(str(first.config["configurable"]["checkpoint_id"])) or parse_ts(
            first.checkpoint["ts"]
        )
        last_id = str(tuples[-1].config["configurable"]["checkpoint_id"])
        meta = run_metadata(named.metadata)
        out.append(Summary(tid, len(tuples), created, meta, tuples[-1], last_id=last_id))
    return out


def summaries(saver: BaseCheckpointSaver[Any], thread_id: str | None = None) -> list[Summary]:
    """Summarise every thread, or the one named (an empty list when it is not stored)."""
    with sync_reads(saver):
        if isinstance(saver, SqliteSaver):
            return _sqlite_summaries(saver, thread_id)
        return _generic_summaries(saver, thread_id)
