"""Value contracts, prompts and pure helpers of the reflection graph.

See :mod:`reasoning_graphs.graphs.reflection`, which re-exports the public names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import Field
from typing_extensions import TypedDict

from reasoning_graphs.access import Output, ReadRecord
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Critique, Frozen

__all__ = [
    "CRITIQUE_PROMPT",
    "DRAFT_PROMPT",
    "FRAME_PROMPT",
    "SYNTHESIZE_PROMPT",
    "CritiqueReply",
    "Draft",
    "DraftJob",
    "Frame",
    "central_index",
    "critique_text",
    "frame_text",
    "render_material",
]


class Frame(Frozen):
    """The shape of a set of answers: what they claim, where they agree and where they differ."""

    claims: list[str] = Field(default_factory=list, max_length=8)
    """The key claims the answers make, one short sentence each."""
    agreements: list[str] = Field(default_factory=list, max_length=8)
    """Points on which the answers agree."""
    disagreements: list[str] = Field(default_factory=list, max_length=8)
    """Points on which the answers disagree."""


class Draft(Frozen):
    """One gather member's draft (or why it has none)."""

    index: int
    """The member's position in the gather batch."""
    label: str
    """Where the draft lives in ``outputs`` (``draft:<index>``)."""
    text: str = ""
    """The draft ('' when the member failed)."""
    model: str
    """The model id asked."""
    error: str | None = None
    """Why the member produced no draft, if it did not."""
    budget_exhausted: bool = False
    """True when the budget refused the member's call."""


class CritiqueReply(Critique):
    """The critic's reply schema: a :class:`~reasoning_graphs.types.Critique` with bounded lists.

    The bounds reach grammar-constrained local models as ``maxItems``, so a small model cannot
    loop on list items until its token limit cuts the JSON short. State keeps a plain ``Critique``.
    """

    problems: list[str] = Field(default_factory=list, max_length=6)
    """Concrete problems found, most important first; empty when none."""
    suggestions: list[str] = Field(default_factory=list, max_length=6)
    """Concrete changes that would fix the problems."""


class DraftJob(TypedDict):
    """The ``Send`` payload of one gather member, built from the drafter's projected read only."""

    index: int
    """The member's position."""
    task: str
    """The task text, the one output a drafter may read."""
    read: ReadRecord
    """The drafter's read record."""
    max_calls: int | None
    """The member's share of the remaining calls."""


DRAFT_PROMPT = PromptTemplate(
    "{task}\n\nWrite a complete answer to the task above. Reply with the answer only."
)
"""Gather: each roster member answers the task alone."""

FRAME_PROMPT = PromptTemplate(
    "Task:\n{task}\n\nIndependent answers to the task, and any other material you may use:\n\n"
    "{material}\n\nFrame the answers: list the key claims they make, the points on which they agree "
    "and the points on which they disagree. Be brief and concrete; do not answer the task yourself."
)
"""Frame: the key claims, agreements and disagreements among the drafts (structured)."""

CRITIQUE_PROMPT = PromptTemplate(
    "Task:\n{task}\n\nMaterial to examine:\n\n{material}\n\n"
    "List the concrete problems in the material above: factual or logical errors, omissions, "
    "unsupported claims and disagreements that still need resolving, most important first. For "
    "each, suggest a concrete fix. Set acceptable to true only if the best answer needs no change."
)
"""Critique: problems in the drafts and the frame (structured)."""

SYNTHESIZE_PROMPT = PromptTemplate(
    "Task:\n{task}\n\nMaterial:\n\n{material}\n\n"
    "Write the final answer to the task: keep what the answers get right, fix every problem the "
    "critique names and resolve the disagreements. Reply with the final answer only."
)
"""Synthesize: the final answer from everything the synthesizer may read."""

_STAGE_ORDER = {"frame": 1, "critique": 2, "synthesis": 3}


def _order(label: str) -> tuple[int, int, str]:
    kind, _, rest = label.partition(":")
    if kind == "draft" and rest.isdigit():
        return (0, int(rest), label)
    return (_STAGE_ORDER.get(label, 4), 0, label)


def render_material(seen: Mapping[str, Output]) -> str:
    """Render every read output except the task: drafts by index, then frame, then critique.

    A producer's model is shown only when the reader is not blind (blind reads drop it).
    """
    blocks = []
    for label in sorted((label for label in seen if label != "task"), key=_order):
        out = seen[label]
        byline = f" (model: {out.model})" if out.model else ""
        blocks.append(f"### {label}{byline}\n{out.text}")
    return "\n\n".join(blocks) if blocks else "(none)"


def _bullets(title: str, items: Sequence[str]) -> str:
    lines = "\n".join(f"- {item}" for item in items) if items else "- (none)"
    return f"{title}:\n{lines}"


def frame_text(frame: Frame) -> str:
    """Render a frame as prose for later readers."""
    return "\n".join(
        [
            _bullets("Key claims", frame.claims),
            _bullets("Agreements", frame.agreements),
            _bullets("Disagreements", frame.disagreements),
        ]
    )


def critique_text(critique: Critique) -> str:
    """Render a critique as prose for later readers."""
    verdict = "yes" if critique.acceptable else "no"
    return "\n".join(
        [
            _bullets("Problems", critique.problems),
            _bullets("Suggestions", critique.suggestions),
            f"Acceptable as is: {verdict}",
        ]
    )


_WORD = re.compile(r"\w+")


def central_index(texts: Sequence[str]) -> int | None:
    """Return the index of the text that agrees most with the others, or None when there is none.

    Agreement is the mean Jaccard similarity of word sets to every other text (ties go to the
    lowest index). This picks the consensus draft when a run ends before its synthesis.
    """
    if not texts:
        return None
    words = [set(_WORD.findall(t.casefold())) for t in texts]

    def agreement(i: int) -> float:
        others = [j for j in range(len(words)) if j != i]
        if not others:
            return 0.0
        return sum(len(words[i] & words[j]) / max(1, len(words[i] | words[j])) for j in others) / len(others)

    return max(range(len(texts)), key=lambda i: (agreement(i), -i))
