"""Human approval for the repair graph: pause before accepting a passing answer.

With ``RepairSettings(approve=True)`` a passing candidate is held in ``awaiting`` (not yet in
``history``) and goes to the ``approve`` node, which pauses with ``interrupt()``. Resume with
``Command(resume={"approved": True})`` to accept it, or ``{"approved": False, "feedback": "why"}``
to reject it: the attempt then enters ``history`` as failed, with the reviewer's words as its
feedback, and the loop repairs against them like any other failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import interrupt

from reasoning_graphs.access import Output
from reasoning_graphs.types import Attempt, Frozen

__all__ = ["Review", "ask_for_approval"]


class Review(Frozen):
    """A person's decision on one passing attempt."""

    attempt: int
    """The attempt number (1-based)."""
    approved: bool
    """Whether the answer was accepted."""
    feedback: str = ""
    """Why it was rejected (it becomes the attempt's feedback)."""


def ask_for_approval(state: Mapping[str, Any]) -> dict[str, Any]:
    """Pause for a decision on the awaiting attempt and return the state update it implies."""
    attempt: Attempt = state["awaiting"]
    number = len(state.get("history") or []) + 1
    reply = interrupt(
        {
            "kind": "approval",
            "attempt": number,
            "answer": attempt.answer,
            "resume_with": {"approved": "true or false", "feedback": "why, when rejecting"},
        }
    )
    data = reply if isinstance(reply, Mapping) else {"approved": bool(reply)}
    review = Review(
        attempt=number, approved=bool(data.get("approved")), feedback=str(data.get("feedback") or "")
    )
    update: dict[str, Any] = {"reviews": [review], "awaiting": None, "attempts": number}
    if review.approved:
        return update | {"history": [attempt]}
    feedback = f"A reviewer rejected this answer: {review.feedback or 'no reason given'}"
    rejected = attempt.model_copy(update={"passed": False, "feedback": feedback, "score": 0.0})
    label = f"attempt:{number}"
    previous = (state.get("outputs") or {}).get(label)
    out = Output(
        label=label,
        text=attempt.answer,
        role=previous.role if previous is not None else "repairer",
        model=attempt.model,
        data={"passed": False, "feedback": feedback},
    )
    return update | {"history": [rejected], "outputs": {label: out}}
