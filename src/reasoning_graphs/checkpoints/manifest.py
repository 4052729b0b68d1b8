"""Run manifests and the thread guard: what a run depends on, checked before it resumes.

LangGraph always runs the current code against an old thread: a node renamed since the thread
paused makes it silently "finish", a changed script or test file mixes two runs in one result.
A :class:`RunManifest` records the components a run depends on:

- ``graph``: the graph's name; ``topology``: a digest of its nodes, edges and state keys;
- ``package`` and ``langgraph``: the installed versions;
- ``input``: a digest of the input (compared only when the caller passes the input again);
- ``models``: the model specs, with a content digest of any file a spec names;
- ``access``: the access lists; ``verifier``: the verifier spec, with digests of files it names;
- ``settings``: the run's structural options (for the CLI, its graph flags).

A component passed as None is not recorded and never compared. :func:`guard_thread` wraps one
run of a thread: it takes the thread's lease (:mod:`~reasoning_graphs.checkpoints.lease`),
verifies its seals (:mod:`~reasoning_graphs.checkpoints.integrity`) and compares manifests,
all before the block runs, and refuses a changed component with :class:`ThreadChangedError`
unless the caller accepts it explicitly. Manifests live in the side table ``rg_manifests`` of
the same SQLite file, sealed with the database's key when the saver seals rows.

Example:
    >>> with open_saver(db, integrity=True) as saver:  # doctest: +SKIP
    ...     graph = builder.compile(checkpointer=saver)
    ...     manifest = build_manifest(graph, name="repair", models=["fake:s.json"])
    ...     with guard_thread(saver, db, "t1", manifest, new=False):
    ...         graph.invoke(None, {"configurable": {"thread_id": "t1"}})
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.checkpoints import _fingerprint as fp
from reasoning_graphs.checkpoints import _manifest_store as store
from reasoning_graphs.checkpoints import _scan
from reasoning_graphs.checkpoints.integrity import IntegritySaver
from reasoning_graphs.checkpoints.lease import ThreadLease, thread_lease
from reasoning_graphs.errors import InputError

__all__ = [
    "COMPONENTS",
    "Component",
    "GuardedThread",
    "RunManifest",
    "ThreadChangedError",
    "build_manifest",
    "diff_manifests",
    "guard_thread",
    "stored_manifest",
]

Component = Literal[
    "access",
    "graph",
    "input",
    "langgraph",
    "manifest",
    "models",
    "package",
    "settings",
    "topology",
    "verifier",
]
"""A manifest component; ``manifest`` stands for a thread that has no manifest at all."""

COMPONENTS: tuple[Component, ...] = get_args(Component)
"""Every component name an override may accept, sorted."""

_SHOW = 70
_CONTEXT = 12
"""Characters kept before the first difference when long values are shortened."""


class RunManifest(BaseModel):
    """What a thread depended on when it started (see the module docstring).

    Immutable; stored beside the thread as JSON, never in graph state (so not a ``Frozen`` state
    value and not on the serializer's allowlist).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    graph: str
    """The graph's name."""
    topology: str
    """``sha256:`` digest of the sorted nodes, edges (with their conditional flag) and state keys."""
    nodes: tuple[str, ...]
    """The graph's nodes, sorted (to say which changed)."""
    package: str
    """The installed reasoning-graphs version."""
    langgraph: str
    """The installed LangGraph version."""
    input: str | None = None
    """``sha256:`` digest of the input as canonical JSON; None: not recorded."""
    models: tuple[str, ...] | None = None
    """Model specs in roster order, a file a spec names followed by ``#sha256:`` of its content."""
    access: str | None = None
    """The access lists as canonical JSON (role to policy)."""
    verifier: str | None = None
    """The verifier spec, followed by digests of the files it names."""
    settings: str | None = None
    """Structural options as canonical JSON."""


class ThreadChangedError(InputError):
    """A component a thread depends on changed since it started; nothing was run.

    Attributes:
        thread_id: the thread.
        changes: component to ``(recorded, now)``, both shortened for display.
    """

    def __init__(self, thread_id: str, changes: Mapping[str, tuple[str, str]]) -> None:
        """Create the error listing every refused change."""
        listed = "; ".join(
            "it has no run manifest (started before change detection, or without guard_thread)"
            if name == "manifest"
            else f"{name} changed (recorded {old}, now {new})"
            for name, (old, new) in sorted(changes.items())
        )
        flags = " ".join(f"--allow-changed {name}" for name in sorted(changes))
        super().__init__(
            f"thread {thread_id!r} was started with other code or options: {listed}. Nothing was "
            "run and the thread is unchanged; resume it with what it started with, or accept the "
            f"change deliberately ({flags}; in Python allow_changes={set(sorted(changes))!r})"
        )
        self.thread_id = thread_id
        self.changes = dict(changes)


def build_manifest(
    graph: fp.AnyGraph,
    *,
    name: str,
    inputs: Mapping[str, Any] | None = None,
    models: Sequence[object] | None = None,
    verifier: str | None = None,
    access: Mapping[str, AccessPolicy] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> RunManifest:
    """Describe a run for change detection (see the module docstring).

    Args:
        graph: the graph, compiled or not (only its structure is read).
        name: the graph's name.
        inputs: the run's input; None when resuming (then it is not compared).
        models: model specs (a roster in order); clients count by their ``model_id``.
        verifier: the verifier spec the run uses, if any.
        access: the access lists, role to policy.
        settings: structural options (JSON-ready values).
    """
    topology, nodes = fp.topology(graph)
    policies = None if access is None else {r: p.model_dump(mode="json") for r, p in access.items()}
    return RunManifest(
        graph=name,
        topology=topology,
        nodes=nodes,
        package=fp.version("reasoning-graphs"),
        langgraph=fp.version("langgraph"),
        input=None if inputs is None else fp.digest(fp.canonical(dict(inputs))),
        models=None if models is None else tuple(fp.model_entry(m) for m in models),
        access=None if policies is None else fp.canonical(policies),
        verifier=None if verifier is None else fp.verifier_entry(verifier),
        settings=None if settings is None else fp.canonical(dict(settings)),
    )


def _text(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _clip(text: str, start: int) -> str:
    shown = ("…" if start else "") + text[start:]
    return repr(shown if len(shown) <= _SHOW else shown[: _SHOW - 1] + "…")


def _show(old: object, new: object) -> tuple[str, str]:
    """Both values, shortened to where they start to differ (long paths share their start)."""
    a, b = _text(old), _text(new)
    if len(a) <= _SHOW and len(b) <= _SHOW:
        return repr(a), repr(b)
    same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, same - _CONTEXT)
    return _clip(a, start), _clip(b, start)


def _node_changes(recorded: RunManifest, current: RunManifest) -> str:
    added = sorted(set(current.nodes) - set(recorded.nodes))
    removed = sorted(set(recorded.nodes) - set(current.nodes))
    parts = [f"nodes added: {', '.join(added)}"] if added else []
    parts += [f"nodes removed: {', '.join(removed)}"] if removed else []
    return f" ({'; '.join(parts)})" if parts else ""


def diff_manifests(recorded: RunManifest, current: RunManifest) -> dict[str, tuple[str, str]]:
    """Return each component recorded in both that differs: name to ``(recorded, now)``."""
    changes: dict[str, tuple[str, str]] = {}
    for name in RunManifest.model_fields:
        old, new = getattr(recorded, name), getattr(current, name)
        if name == "nodes" or old is None or new is None or old == new:
            continue
        extra = _node_changes(recorded, current) if name == "topology" else ""
        shown_old, shown_new = _show(old, new)
        changes[name] = (shown_old, shown_new + extra)
    return changes


def stored_manifest(saver: Any, thread_id: str) -> RunManifest | None:
    """Return the manifest recorded for a thread, or None.

    Raises:
        IntegrityError: the saver seals rows and the manifest does not match its seal.
        InputError: the saver is not a SQLite saver.
    """
    found = store.load_row(store.require_sqlite(saver), thread_id)
    return None if found is None else RunManifest.model_validate_json(found[0])


@dataclass(frozen=True)
class GuardedThread:
    """What :func:`guard_thread` checked; valid inside its block."""

    thread_id: str
    """The guarded thread."""
    lease: ThreadLease
    """The lease held for the block."""
    manifest: RunManifest
    """The manifest now recorded for the thread."""
    rows: int
    """Stored rows verified before the run (0 for a new thread or a saver without seals)."""
    accepted: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Changes accepted through ``allow_changes`` (component to ``(recorded, now)``)."""


def _stored_checkpoints(saver: Any, thread_id: str) -> int:
    with saver.cursor(transaction=False) as cur:
        row = cur.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)).fetchone()
    return int(row[0])


@contextmanager
def guard_thread(
    saver: Any,
    db_path: str | os.PathLike[str],
    thread_id: str,
    manifest: RunManifest,
    *,
    new: bool,
    allow_changes: Collection[str] = frozenset(),
) -> Iterator[GuardedThread]:
    """Hold a thread's lease and run the block only if the thread is intact and unchanged.

    In order, before the block runs (so before any node runs or the run reads the thread):

    1. take the thread's lease, failing at once if another runner holds it;
    2. ``new``: the thread must not exist; ``manifest`` is recorded. Resuming: the thread must
       exist; with an ``IntegritySaver`` every stored row is verified against its seal; the
       stored manifest is compared with ``manifest``; a changed component not in
       ``allow_changes`` refuses; accepted changes are recorded, with their history.

    A refusal writes nothing: the thread is left as it was. The lease is released when the block
    exits, however it exits (a killed process loses it to the kernel).

    Args:
        saver: the SQLite saver holding the thread (``open_saver(path, integrity=True)``).
        db_path: the database path the saver was opened on (it locates the lease files).
        thread_id: the thread to run.
        manifest: what this run depends on (:func:`build_manifest`).
        new: True to start the thread, False to resume it.
        allow_changes: components whose change is accepted (see :data:`COMPONENTS`);
            ``manifest`` adopts a thread that has none.

    Yields:
        What was checked.

    Raises:
        ThreadBusyError: another runner holds the thread.
        IntegrityError: a stored row or the manifest was tampered with.
        ThreadChangedError: a component changed and was not accepted.
        UnknownThreadError: resuming a thread that does not exist.
        InputError: starting a thread that exists, an unknown component, or a saver that is not
            SQLite.
    """
    unknown = sorted(set(allow_changes) - set(COMPONENTS))
    if unknown:
        raise InputError(f"unknown component(s) {unknown} to allow; components are {list(COMPONENTS)}")
    sqlite = store.require_sqlite(saver)
    with thread_lease(db_path, thread_id) as lease:
        if new:
            if _stored_checkpoints(sqlite, thread_id):
                raise InputError(
                    f"thread {thread_id!r} already exists; resume it with 'resume --thread {thread_id}'"
                )
            store.record(sqlite, thread_id, manifest.model_dump_json(), None)
            yield GuardedThread(thread_id, lease, manifest, 0)
            return
        if not _stored_checkpoints(sqlite, thread_id):
            raise _scan.unknown_thread(thread_id)
        rows = sqlite.verify_thread(thread_id) if isinstance(sqlite, IntegritySaver) else 0
        recorded = stored_manifest(sqlite, thread_id)
        changes = {"manifest": ("none", "now")} if recorded is None else diff_manifests(recorded, manifest)
        refused = {name: change for name, change in changes.items() if name not in allow_changes}
        if refused:
            raise ThreadChangedError(thread_id, refused)
        if changes:
            store.record(sqlite, thread_id, manifest.model_dump_json(), changes)
        yield GuardedThread(thread_id, lease, manifest, rows, changes)
