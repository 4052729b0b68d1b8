"""Access lists, payloads, retry bookkeeping and the stop rule of the perspectives graph (private)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from langgraph.types import Send
from typing_extensions import TypedDict

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord
from reasoning_graphs.graphs._common import read_as
from reasoning_graphs.graphs._perspectives_parts import SYNTHESIZER, StepAttempt
from reasoning_graphs.types import StopReason, Usage

if TYPE_CHECKING:
    from reasoning_graphs.graphs.perspectives import PerspectivesSettings, PerspectivesState

__all__ = [
    "ViewTask",
    "panel_access",
    "panel_produces",
    "pending_roles",
    "stop_reason",
    "tries",
    "view_sends",
]


def panel_access(roles: Sequence[str]) -> dict[str, AccessPolicy]:
    """Return the access policies: each view role sees the snapshot, the agenda and its own drafts."""
    policies = {
        role: AccessPolicy(sees=("snapshot", "brief", f"criteria:{role}", f"draft:{role}:*"))
        for role in roles
    }
    policies[SYNTHESIZER] = AccessPolicy(
        sees=("snapshot", "brief", "criteria:*", "view:*", "matrix", "synthesis_draft:*")
    )
    return policies


def panel_produces(roles: Sequence[str], max_attempts: int) -> dict[str, list[str]]:
    """Return the labels each role writes (for the independence proof)."""
    produced = {
        role: [f"view:{role}", *(f"draft:{role}:{n}" for n in range(1, max_attempts + 1))] for role in roles
    }
    produced["user"] = ["snapshot", "brief", *(f"criteria:{role}" for role in roles)]
    produced["code"] = ["matrix"]
    return produced


class ViewTask(TypedDict):
    """The payload of one view (``Send``): the role's projected reads, never the whole state."""

    role: str
    """The role."""
    seat: int
    """Its roster index."""
    attempt: int
    """1-based attempt number."""
    seen: dict[str, Output]
    """What its access policy permits: snapshot, agenda, own criteria, own drafts."""
    record: ReadRecord
    """The record of that read."""
    max_calls: int | None
    """Its share of the remaining calls."""


def tries(state: PerspectivesState, role: str) -> list[StepAttempt]:
    """Return ``role``'s attempts, in order."""
    return sorted((a for a in state.get("attempts") or [] if a.role == role), key=lambda a: a.attempt)


def pending_roles(state: PerspectivesState, cfg: PerspectivesSettings) -> list[str]:
    """Return the roles still owed an attempt: no valid view yet and attempts left."""
    views = state.get("views") or {}
    return [
        r.name
        for r in state.get("panel") or []
        if r.name not in views and len(tries(state, r.name)) < cfg.max_view_attempts
    ]


def view_sends(state: PerspectivesState, roles: Sequence[str]) -> list[Send]:
    """Return one ``Send`` per role, the batch's calls split evenly."""
    allowance = state["budget"].allowance(state.get("usage") or Usage(), len(roles))
    seats = {r.name: i for i, r in enumerate(state.get("panel") or [])}
    sends = []
    for role in roles:
        seen, record = read_as(state, role)
        task = ViewTask(
            role=role,
            seat=seats[role],
            attempt=len(tries(state, role)) + 1,
            seen=seen,
            record=record,
            max_calls=allowance,
        )
        sends.append(Send("view", task))
    return sends


def stop_reason(state: PerspectivesState, cfg: PerspectivesSettings) -> StopReason:
    """Return why the run ended, from what it produced."""
    if pending_roles(state, cfg):
        return "budget"
    if not state.get("views"):
        return "needs_human"
    done = tries(state, SYNTHESIZER)
    if not done:
        return "budget"
    last = done[-1]
    if last.ok:
        return "completed"
    if last.failure == "budget" or len(done) < cfg.max_synthesis_attempts:
        return "budget"
    return "error" if last.failure == "error" else "max_attempts"
