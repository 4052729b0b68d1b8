"""Access-filtered views of a state: what one role may see of a run, and nothing more.

A view is built from a whitelist, never by removing keys from the state, so a key added to a
graph later can never leak through it. It holds:

- ``role`` and ``policy``: the reader and its own access policy (``sees`` patterns, ``blind``);
- ``outputs``: the outputs its policy permits (:func:`~reasoning_graphs.access.project_outputs`);
  for a blind policy each output drops its producing ``role`` and ``model``, and a label whose
  suffix names a side or a role (``case:pro``) is shown under a neutral slot (``case:slot-1``),
  numbered in an order keyed to the run's task, so the slot does not reveal the side;
- ``reads``: the role's own read records, limited to labels its policy permits;
- ``stop_reason``: only when it is one of the closed :data:`~reasoning_graphs.types.StopReason`
  words (free text could quote anything).

Left out on purpose: ``final_answer`` (it usually copies some role's output, whose provenance
the state does not record), ``usage`` (its per-model and per-node ledgers name models and roles),
other roles' read records, and every graph-specific key. A view is plain JSON data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, get_args

from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import ValidationError

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord, matches, project_outputs
from reasoning_graphs.checkpoints import _delta, _scan
from reasoning_graphs.errors import CheckpointError, InputError
from reasoning_graphs.types import StopReason

__all__ = ["roles", "view", "view_thread"]

_STOP_REASONS: frozenset[str] = frozenset(get_args(StopReason))
_BLIND_HIDDEN = frozenset({"role", "model"})


def _policies(values: Mapping[str, Any]) -> dict[str, AccessPolicy]:
    raw = values.get("access") or {}
    try:
        return {str(role): AccessPolicy.model_validate(policy) for role, policy in raw.items()}
    except (AttributeError, ValidationError) as exc:
        raise CheckpointError(f"the state's access lists cannot be read: {exc}") from exc


def _blind_labels(labels: list[str], salt: str) -> dict[str, str]:
    """Map labels with a named suffix (``case:pro``) to neutral slots; numeric suffixes stay."""
    named: dict[str, list[str]] = {}
    for label in labels:
        prefix, sep, suffix = label.partition(":")
        if sep and not suffix.replace(".", "").isdigit():
            named.setdefault(prefix, []).append(label)
    mapping = {label: label for label in labels}
    for prefix, group in named.items():
        ordered = sorted(group, key=lambda lb: hashlib.sha256(f"{salt}\0{lb}".encode()).hexdigest())
        mapping |= {label: f"{prefix}:slot-{i}" for i, label in enumerate(ordered, start=1)}
    return mapping


def roles(values: Mapping[str, Any]) -> list[str]:
    """Return the roles that have an access policy in a state, sorted.

    Args:
        values: a state dict (``graph.get_state(config).values`` or a checkpoint's values).
    """
    return sorted(_policies(values))


def view(values: Mapping[str, Any], as_role: str) -> dict[str, Any]:
    """Return what ``as_role`` may see of a state, as JSON-ready data (see the module docstring).

    Args:
        values: a state dict following the package's state conventions.
        as_role: a role named in ``values["access"]``.

    Raises:
        InputError: the role has no access policy in this state; the message lists the roles.
    """
    policies = _policies(values)
    if as_role not in policies:
        known = ", ".join(repr(r) for r in sorted(policies)) or "none (the state has no access lists)"
        raise InputError(f"unknown role {as_role!r}; this thread's roles are: {known}")
    policy = policies[as_role]
    try:
        outputs = {str(k): Output.model_validate(v) for k, v in (values.get("outputs") or {}).items()}
        reads = [ReadRecord.model_validate(r) for r in values.get("reads") or ()]
    except (AttributeError, ValidationError) as exc:
        raise CheckpointError(f"the state's outputs or read records cannot be read: {exc}") from exc
    hidden = _BLIND_HIDDEN if policy.blind else frozenset()
    stop_reason = values.get("stop_reason")
    shown = project_outputs(outputs, policy)
    task = outputs.get("task")
    salt = task.text if task else ""
    rename = _blind_labels(list(shown), salt) if policy.blind else {lb: lb for lb in shown}
    rendered = {}
    for label, out in shown.items():
        data = out.model_dump(mode="json", exclude=set(hidden))
        data["label"] = rename[label]
        rendered[rename[label]] = data
    return {
        "role": as_role,
        "policy": policy.model_dump(mode="json"),
        "outputs": dict(sorted(rendered.items())),
        "reads": [
            {"node": r.node, "labels": [rename.get(lb, lb) for lb in r.labels if matches(lb, policy.sees)]}
            for r in reads
            if r.node == as_role
        ],
        "stop_reason": stop_reason if isinstance(stop_reason, str) and stop_reason in _STOP_REASONS else None,
    }


def view_thread(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    as_role: str,
    checkpoint_id: str | None = None,
) -> dict[str, Any]:
    """Return :func:`view` of a stored thread at its latest (or an earlier) checkpoint.

    Args:
        saver: the checkpoint store.
        thread_id: the thread to read.
        as_role: a role named in the thread's access lists.
        checkpoint_id: an earlier checkpoint (see ``history``); None reads the latest.

    Returns:
        The view, plus ``thread_id`` and ``checkpoint_id``.

    Raises:
        UnknownThreadError: no thread has that id.
        InputError: the thread has no such checkpoint, or the role is unknown.
    """
    with _scan.sync_reads(saver):
        tup = saver.get_tuple(_scan.config_for(thread_id, checkpoint_id))  # type: ignore[arg-type]
        if tup is None and checkpoint_id is not None and saver.get_tuple(_scan.config_for(thread_id)):  # type: ignore[arg-type]
            raise InputError(
                f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}; list its checkpoints with "
                "reasoning_graphs.checkpoints.history(saver, thread_id)"
            )
        if tup is None:
            raise _scan.unknown_thread(thread_id)
        values = _delta.stored_values(saver, tup)
    found = view(values, as_role)
    checkpoint = str(tup.config["configurable"]["checkpoint_id"])
    return {"thread_id": thread_id, "checkpoint_id": checkpoint, **found}
