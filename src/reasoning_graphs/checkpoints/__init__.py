"""Checkpoints: strict SQLite savers, thread helpers and access-filtered views.

- :func:`open_saver` / :func:`open_async_saver` open a SQLite checkpoint store with the strict
  serializer (:class:`StrictSerializer`: no pickle, only allowlisted types are rebuilt).
- :func:`list_threads`, :func:`thread_info`, :func:`history`, :func:`resume_config` and
  :func:`fork` inspect, resume and branch stored runs of any compiled graph.
- :func:`roles`, :func:`view` and :func:`view_thread` show a state as one role may see it.

Reliability (``docs/reliability.md``): ``open_saver(path, integrity=True)`` seals every stored
row and verifies a thread before reading it (:mod:`.integrity`); :mod:`.lease` allows one runner
per thread; :mod:`.manifest` records what a run depends on, and its ``guard_thread`` checks all
three before a run.

Runs record their graph's name by passing ``config={"configurable": {"thread_id": ...},
"metadata": {"graph": NAME}}``. Graphs never embed a checkpointer: compile with the saver.
"""

from __future__ import annotations

from reasoning_graphs.checkpoints.saver import open_async_saver, open_saver
from reasoning_graphs.checkpoints.serde import AllowedType, StrictSerializer
from reasoning_graphs.checkpoints.threads import (
    CheckpointInfo,
    ThreadInfo,
    ThreadStatus,
    fork,
    history,
    list_threads,
    resume_config,
    thread_info,
)
from reasoning_graphs.checkpoints.views import roles, view, view_thread

__all__ = [
    "AllowedType",
    "CheckpointInfo",
    "StrictSerializer",
    "ThreadInfo",
    "ThreadStatus",
    "fork",
    "history",
    "list_threads",
    "open_async_saver",
    "open_saver",
    "resume_config",
    "roles",
    "thread_info",
    "view",
    "view_thread",
]
