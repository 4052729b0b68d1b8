"""Input checks of the perspectives graph: every problem is an InputError before any call (private)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._common import require_text
from reasoning_graphs.graphs._perspectives_checks import canonical
from reasoning_graphs.graphs._perspectives_parts import (
    DEFAULT_JUDGMENTS,
    DEFAULT_QUESTION,
    Agenda,
    Gate,
    RoleSpec,
)

__all__ = ["read_input"]


def _strings(value: Any, name: str, *, minimum: int) -> list[str]:
    items = list(value) if isinstance(value, list | tuple) else None
    if items is None or len(items) < minimum or not all(isinstance(i, str) and i.strip() for i in items):
        raise InputError(
            f"input {name!r} must be a list of at least {minimum} non-empty strings, got {value!r}"
        )
    cleaned = [" ".join(i.split()) for i in items]
    if len({c.casefold() for c in cleaned}) != len(cleaned):
        raise InputError(f"input {name!r} repeats an entry: {cleaned!r}")
    return cleaned


def _panel(value: Any) -> list[RoleSpec]:
    if not isinstance(value, list | tuple) or not value:
        raise InputError(
            f"input 'roles' must be a non-empty list of {{'name', 'criteria'}} objects, got {value!r}"
        )
    try:
        panel = [RoleSpec.model_validate(r) for r in value]
    except ValidationError as exc:
        raise InputError(f"input 'roles' is invalid: {exc}") from None
    names = [r.name for r in panel]
    if len(set(names)) != len(names):
        raise InputError(f"input 'roles' repeats a name: {names!r}")
    return panel


def _gates(value: Any, panel: Sequence[RoleSpec], agenda: Agenda) -> list[Gate]:
    try:
        gates = [Gate.model_validate(g) for g in value or []]
    except ValidationError as exc:
        raise InputError(f"input 'gates' is invalid: {exc}") from None
    names = [r.name for r in panel]
    checked = []
    for gate in gates:
        judgment = canonical(gate.judgment, agenda.judgments)
        topic = None if gate.topic is None else canonical(gate.topic, agenda.topics)
        if gate.role not in names or judgment is None or (gate.topic is not None and topic is None):
            raise InputError(
                f"gate {gate.model_dump()!r} must name a role in {names}, a judgment in {agenda.judgments} "
                f"and (optionally) a topic in {agenda.topics}"
            )
        checked.append(gate.model_copy(update={"judgment": judgment, "topic": topic}))
    return checked


def read_input(
    state: Mapping[str, Any], unknown_judgment: str
) -> tuple[str, Agenda, list[RoleSpec], list[Gate]]:
    """Check the input; return the snapshot, the agenda, the panel and the gates.

    Raises:
        InputError: naming the bad field and the fix.
    """
    snapshot = require_text(state.get("snapshot"), "snapshot")
    judgments = _strings(state.get("judgments") or list(DEFAULT_JUDGMENTS), "judgments", minimum=2)
    agenda = Agenda(
        question=require_text(state.get("question", DEFAULT_QUESTION), "question"),
        topics=_strings(state.get("topics"), "topics", minimum=1),
        judgments=judgments,
        unknown=canonical(unknown_judgment, judgments),
    )
    panel = _panel(state.get("roles"))
    return snapshot, agenda, panel, _gates(state.get("gates"), panel, agenda)
