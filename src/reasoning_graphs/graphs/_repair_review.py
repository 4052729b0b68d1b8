"""Human approval for the repair graph: pause before accepting a passing answer.

With ``RepairSettings(approve=True)`` a passing attempt goes to the ``approve`` node, which pauses
with ``interrupt()``. Resume with ``Command(resume={"approved": True})`` to accept it, or
``{"approved": False, "feedback": "why"}`` to reject it: the attempt then counts as failed with
the reviewer's words as its feedback, and the loop repairs against them like any other failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import interrupt

from reasoning_graphs.access import Output
from reasoning_graphs.types import Attempt, Frozen

__all__ = ["Review", "ask_for_approval", "reviewed_history"]


class Review(Frozen):
    """A person's decision on one passing attempt."""

    attempt: int
    """The attempt number (1-based)."""
    approved: bool
    """Whether the answer was accepted."""
    feedback: str = ""
    """Why it was rejected (it becomes the attempt's feedback)."""


def reviewed_history(state: Mapping[str, Any]) -> list[Attempt]:
    """Return the attempts with rejected ones marked failed, feedback from the reviewer."""
    rejected = {r.attempt: r for r in state.get("reviews") or [] if not r.approved}
    return [
        a.model_copy(update={"passed": False, "feedback": _rejection(rejected[i].feedback)})
        if i in rejected
        else a
        for i, a in enumerate(state.get("history") or [], start=1)
    ]


def _rejection(feedback: str) -> str:
    return f"A reviewer rejected this answer: {feedback or 'no reason given'}"


def ask_for_approval(state: Mapping[str, Any]) -> dict[str, Any]:
    """Pause for a decision on the latest attempt and return the state update it implies."""
    history = state.get("history") or []
    number, last = len(history), history[-1]
    reply = interrupt(
        {
            "kind": "approval",
            "attempt": number,
            "answer": last.answer,
            "resume_with": {"approved": "true or false", "feedback": "why, when rejecting"},
        }
    )
    data = reply if isinstance(reply, Mapping) else {"approved": bool(reply)}
    review = Review(
        attempt=number, approved=bool(data.get("approved")), feedback=str(data.get("feedback") or "")
    )
    update: dict[str, Any] = {"reviews": [review]}
    if not review.approved:
        label = f"attempt:{number}"
        previous = (state.get("outputs") or {}).get(label)
        text = previous.text if previous is not None else last.answer
        update["outputs"] = {
            label: Output(label=label, text=text, role="repairer", model=last.model,
                          data={"passed": False, "feedback": _rejection(review.feedback)})
        }  # fmt: skip
    return update
