"""Value contracts, prompts and pure helpers of the dialectic graph.

See :mod:`reasoning_graphs.graphs.dialectic`, which re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Literal

from pydantic import Field

from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Frozen

__all__ = [
    "ANTITHESIS_PROMPT",
    "JUDGE_PROMPT",
    "SYNTHESIS_PROMPT",
    "THESIS_PROMPT",
    "DialecticRound",
    "JudgeReply",
    "RoundVerdict",
    "best_synthesis",
    "normalized",
    "render_criteria",
    "similarity",
]


class JudgeReply(Frozen):
    """The judge's reply, before its score is checked in code."""

    rationale: str = ""
    """One or two sentences on the answer's strengths and weaknesses."""
    score: int
    """How well the answer meets all the criteria, from 1 (poor) to 10 (excellent)."""
    decision: Literal["continue", "stop"]
    """``stop`` when more rounds would not improve the answer, else ``continue``."""


class RoundVerdict(Frozen):
    """The judge's verdict on one round's synthesis, as checked in code."""

    score: int | None = None
    """The score, clamped to 1..10; None when the judge's reply failed."""
    decision: Literal["continue", "stop"] | None = None
    """The judge's decision; None when its reply failed."""
    rationale: str = ""
    """The judge's reasons."""
    warnings: list[str] = Field(default_factory=list)
    """Values clamped while reading the reply."""
    error: str | None = None
    """Why the judge's reply could not be used, if it could not."""


class DialecticRound(Frozen):
    """One round: thesis, antithesis, synthesis, verdict, and the model of each."""

    number: int
    """The round, from 1."""
    thesis: str
    """The thesis (round 1: the proposer's answer; later: the previous synthesis)."""
    antithesis: str | None = None
    """The opponent's counter-argument (None when the run ended before it)."""
    synthesis: str | None = None
    """The synthesizer's answer (None when the run ended before it)."""
    verdict: RoundVerdict | None = None
    """The judge's verdict (None when the run ended before it)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Step (``thesis``, ``antithesis``, ``synthesis``, ``judge``) to the model id that wrote it."""


THESIS_PROMPT = PromptTemplate("{task}\n\nWrite a complete, well-argued answer. Reply with the answer only.")
"""Round 1: the proposer's thesis, from the task alone."""

ANTITHESIS_PROMPT = PromptTemplate(
    "Task:\n{task}\n\nA proposed answer (the thesis):\n[Thesis]\n{thesis}\n[End of thesis]\n\n"
    "Argue against the thesis: give the strongest objections, errors, omissions and, where one "
    "exists, a better alternative. Reply with the counter-argument only."
)
"""The opponent's antithesis: the thesis text only, never who wrote it."""

SYNTHESIS_PROMPT = PromptTemplate(
    "Task:\n{task}\n\n[Thesis]\n{thesis}\n[End of thesis]\n\n[Antithesis]\n{antithesis}\n"
    "[End of antithesis]\n\nWrite a new, complete answer to the task that keeps what is right in "
    "the thesis, answers every valid objection of the antithesis and resolves their conflict. "
    "Reply with the answer only."
)
"""The synthesizer's answer from the thesis and the antithesis."""

JUDGE_PROMPT = PromptTemplate(
    "Judge the answer below against these criteria:\n{criteria}\n\nTask:\n{task}\n\n"
    "[Answer]\n{synthesis}\n[End of answer]\n\nGive one integer score from 1 (poor) to 10 "
    "(excellent) for how well the answer meets all the criteria together, and a decision: "
    '"stop" if further rounds of objection and revision would not improve it, "continue" otherwise.'
)
"""The judge's verdict on one synthesis (structured: score and decision)."""


def render_criteria(criteria: Sequence[str]) -> str:
    """Render the judging criteria as a bullet list."""
    return "\n".join(f"- {name}" for name in criteria)


def normalized(text: str) -> str:
    """Return ``text`` case-folded with runs of whitespace collapsed to one space."""
    return " ".join(text.casefold().split())


def similarity(a: str, b: str) -> float:
    """Return the similarity of two texts in [0, 1] after normalizing them.

    Equal normalized texts give exactly 1.0; otherwise the ``difflib.SequenceMatcher`` ratio over
    words (twice the words in matching runs over the total word count).
    """
    left, right = normalized(a), normalized(b)
    if left == right:
        return 1.0
    return SequenceMatcher(None, left.split(), right.split(), autojunk=False).ratio()


def best_synthesis(rounds: Sequence[DialecticRound]) -> tuple[str | None, int | None]:
    """Return the final answer and the round it comes from.

    The best-scored synthesis wins (ties go to the later round); with no scored synthesis, the
    last synthesis; with none at all, the first thesis (its round is then None).
    """
    scored = [
        (r.verdict.score, r.number, r.synthesis)
        for r in rounds
        if r.synthesis is not None and r.verdict is not None and r.verdict.score is not None
    ]
    if scored:
        _, number, text = max(scored)
        return text, number
    written = [r for r in rounds if r.synthesis is not None]
    if written:
        return written[-1].synthesis, written[-1].number
    return (rounds[0].thesis, None) if rounds else (None, None)
