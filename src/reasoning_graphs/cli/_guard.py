"""Run a CLI thread under its lease, after its seals and run manifest check out.

``run`` and ``resume`` open the database with ``open_saver(path, integrity=True)`` and stream
through :func:`guarded_stream`: a second runner on the same thread fails at once
(:class:`~reasoning_graphs.checkpoints.lease.ThreadBusyError`), a tampered thread is refused
before anything of it is loaded, and a resume whose graph, models, verifier, access lists or
settings changed since the thread started is refused unless ``--allow-changed`` names the
component. See ``docs/reliability.md``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from typing import Any

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.cli._graphs import GraphEntry, RunOptions
from reasoning_graphs.errors import InputError

__all__ = ["access_lists", "guarded_stream"]

_MODULES = {"tot": "tree_of_thoughts"}
"""Graph modules whose name differs from the CLI's graph name."""


def access_lists(entry: GraphEntry) -> dict[str, AccessPolicy] | None:
    """Return the graph module's default access lists, or None for graphs that build theirs.

    (Debate and perspectives derive theirs from their configuration, which the manifest's
    settings already cover.)
    """
    module = importlib.import_module(f"reasoning_graphs.graphs.{_MODULES.get(entry.name, entry.name)}")
    access = getattr(module, "ACCESS", None)
    return dict(access) if isinstance(access, Mapping) else None


def guarded_stream(
    stream: Callable[[Any, Any, dict[str, Any]], None],
    saver: Any,
    db: str,
    compiled: Any,
    payload: Any,
    config: dict[str, Any],
    entry: GraphEntry,
    options: RunOptions,
    *,
    new: bool,
    allow_changed: Collection[str] = (),
) -> None:
    """Call ``stream(compiled, payload, config)`` inside :func:`guard_thread`.

    Args:
        stream: what runs the graph once the thread checked out.
        saver: the (sealing) SQLite saver the graph was compiled with.
        db: the database path (it locates the lease files).
        compiled: the compiled graph.
        payload: the run's input, a ``Command`` or None.
        config: the run config (``thread_id`` in ``configurable``).
        entry: the CLI's graph.
        options: the run's model, roster and flags.
        new: True for ``run`` (the thread must not exist), False for ``resume``.
        allow_changed: manifest components whose change is accepted.

    Raises:
        ThreadBusyError: another runner holds the thread.
        IntegrityError: a stored row was changed outside reasoning-graphs.
        ThreadChangedError: a component changed and was not accepted.
        InputError: the graph rejected a new thread's input (the thread is deleted again).
    """
    from reasoning_graphs.checkpoints.manifest import build_manifest, guard_thread

    thread_id = config["configurable"]["thread_id"]
    inputs = payload if new else None
    manifest = build_manifest(
        compiled,
        name=entry.name,
        inputs=inputs,
        models=options.roster or [options.model],
        verifier=_verifier(compiled, payload, config, new=new),
        access=access_lists(entry),
        settings=options.flags,
    )
    with guard_thread(saver, db, thread_id, manifest, new=new, allow_changes=frozenset(allow_changed)):
        try:
            stream(compiled, payload, config)
        except InputError:
            if new:  # the graph rejected its input before doing any work: the thread holds nothing
                saver.delete_thread(thread_id)
            raise


def _verifier(compiled: Any, payload: Any, config: dict[str, Any], *, new: bool) -> str | None:
    """The verifier spec of the run: from the input, or (resuming) from the stored state.

    The sealing saver verifies a thread before its first read, so the state read here is intact.
    """
    source = (payload if isinstance(payload, Mapping) else {}) if new else compiled.get_state(config).values
    verifier = source.get("verifier")
    return verifier if isinstance(verifier, str) else None
