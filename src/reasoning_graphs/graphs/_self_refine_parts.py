"""Settings, candidates, prompts, access lists and selection policies of self-refine.

See :mod:`reasoning_graphs.graphs.self_refine`; everything here is importable from there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.budget import Budget
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Critique, Frozen
from reasoning_graphs.verifiers import extract_number_answer, normalize_text

__all__ = [
    "ACCESS",
    "CRITIQUE_PROMPT",
    "GENERATE_PROMPT",
    "REFINE_PROMPT",
    "Candidate",
    "SelectionPolicy",
    "SelfRefineSettings",
    "answer_key",
    "select_candidate",
]

# --- contracts -------------------------------------------------------------------------------

SelectionPolicy = Literal["last", "plurality", "convergence", "checker"]
"""How the returned answer is chosen among the candidates (see the module docstring)."""


class SelfRefineSettings(Frozen):
    """Structural settings of a self-refine graph."""

    max_refinements: int = Field(default=2, ge=0, le=20)
    """Most refine steps after the first answer."""
    policy: SelectionPolicy = "last"
    """How the returned answer is chosen."""
    answer_format: Literal["text", "number"] = "text"
    """How answers are compared: normalized text, or the final number (GSM8K-style)."""
    stop_when_acceptable: bool = True
    """Stop when the critic marks the latest candidate acceptable."""
    system_prompt: str | None = None
    """An optional system message for every generation."""
    budget: Budget = Budget()
    """Default call and token limits (the input's limits override them)."""


class Candidate(Frozen):
    """One answer produced by the loop."""

    answer: str
    """The candidate text."""
    key: str
    """The comparison key (normalized text or final number)."""
    model: str
    """The model that wrote it."""
    critique: Critique | None = None
    """The critic's reading of it, if it was critiqued."""
    check_score: float | None = None
    """The checker's score, under the ``checker`` policy."""


ACCESS: dict[str, AccessPolicy] = {
    "generator": AccessPolicy(sees=("task",)),
    "critic": AccessPolicy(sees=("task", "draft")),
    "refiner": AccessPolicy(sees=("task", "draft", "critique")),
}
"""Default access policies of the self-refine roles."""

# --- prompts ---------------------------------------------------------------------------------

GENERATE_PROMPT = PromptTemplate("{task}")
"""First answer: the task as given (so a plain single call is the matched control)."""

CRITIQUE_PROMPT = PromptTemplate(
    "Task:\n{task}\n\nProposed answer:\n{draft}\n\n"
    "Find concrete problems in the proposed answer (wrong steps, missing parts, errors). "
    "Set acceptable to true only if nothing needs to change."
)
"""Critic: the task and the latest answer."""

REFINE_PROMPT = PromptTemplate(
    "Task:\n{task}\n\nYour previous answer:\n{draft}\n\nA reviewer found these problems:\n{problems}\n\n"
    "Suggested changes:\n{suggestions}\n\nWrite an improved, complete answer to the task."
)
"""Refiner: the task, the latest answer and its critique."""

# --- selection -------------------------------------------------------------------------------


def answer_key(answer: str, answer_format: Literal["text", "number"]) -> str:
    """Return the key answers are compared by."""
    if answer_format == "number":
        return extract_number_answer(answer) or normalize_text(answer)
    return normalize_text(answer)


def select_candidate(
    keys: Sequence[str], policy: SelectionPolicy, scores: Sequence[float | None] | None = None
) -> int | None:
    """Return the index a policy selects (None when there are no candidates)."""
    if not keys:
        return None
    last = len(keys) - 1
    converged = last >= 1 and keys[last] == keys[last - 1]
    if policy == "plurality" or (policy == "convergence" and not converged):
        counts = Counter(keys)
        return max(range(len(keys)), key=lambda i: (counts[keys[i]], i))
    if policy == "checker" and scores:
        return max(range(len(keys)), key=lambda i: (scores[i] if scores[i] is not None else -1.0, i))
    return last
