"""Contracts of the perspectives graph (private; see :mod:`reasoning_graphs.graphs.perspectives`).

Values kept in state and returned are frozen (:class:`~reasoning_graphs.types.Frozen`); the
reply schemas the models fill in are plain pydantic models whose contents are checked in code.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reasoning_graphs.types import Frozen

__all__ = [
    "DEFAULT_JUDGMENTS",
    "DEFAULT_QUESTION",
    "RECOMMENDATIONS",
    "SYNTHESIZER",
    "Agenda",
    "FollowUp",
    "Gate",
    "Matrix",
    "MatrixStatus",
    "Recommendation",
    "RoleSpec",
    "StepAttempt",
    "Synthesis",
    "SynthesisReply",
    "TopicAnswer",
    "TopicJudgment",
    "TopicJudgmentReply",
    "TopicRow",
    "View",
    "ViewReply",
]

Recommendation = Literal["reject", "defer", "conditional", "proceed"]
"""What the synthesis recommends, from least to most committed to going ahead."""

RECOMMENDATIONS: tuple[Recommendation, ...] = ("reject", "defer", "conditional", "proceed")
"""The recommendation scale in order; a cap keeps the recommendation at or below a level."""

MatrixStatus = Literal["consensus", "agreement_among_available", "disagreement", "no_views"]
"""How the roles compare on one topic.

- ``consensus``: every role has a view and all judged alike.
- ``agreement_among_available``: the roles with a view judged alike, but some views are missing.
- ``disagreement``: at least two judgments differ; every group keeps its roles.
- ``no_views``: no role has a valid view.
"""

DEFAULT_JUDGMENTS: tuple[str, ...] = ("support", "oppose", "conditional", "unknown")
"""The judgments a view may give when the input names none."""

DEFAULT_QUESTION = "Should we go ahead with what the snapshot describes?"
"""The question the roles answer when the input names none."""

SYNTHESIZER = "synthesizer"
"""The synthesis role (a reserved name: no view role may use it)."""

_ROLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")


class RoleSpec(Frozen):
    """One perspective: a role name and its disclosed criteria."""

    name: str
    """Letters, digits, ``_`` or ``-`` (it becomes an access label, so no patterns)."""
    criteria: str
    """What this role weighs; disclosed to every reader of the report."""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not _ROLE_NAME.fullmatch(value) or value in (SYNTHESIZER, "user"):
            raise ValueError(
                f"role name {value!r} must start with a letter, use only letters, digits, '_' or '-' "
                f"(at most 40 characters), and not be {SYNTHESIZER!r} or 'user'"
            )
        return value

    @field_validator("criteria")
    @classmethod
    def _has_criteria(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("criteria must be disclosed: give each role a non-empty 'criteria' text")
        return value.strip()


class Gate(Frozen):
    """A hard gate: when ``role`` gives ``judgment``, the recommendation is at most ``cap``."""

    role: str
    """The role whose judgment is watched."""
    judgment: str
    """The judgment that triggers the gate (e.g. ``oppose``)."""
    topic: str | None = None
    """The topic watched; None watches the role's overall position."""
    cap: Recommendation
    """The highest recommendation allowed when the gate triggers."""


class Agenda(Frozen):
    """What every view answers: the question, the topics and the allowed judgments."""

    question: str
    """The decision under review."""
    topics: list[str]
    """Topics every view must judge, each once."""
    judgments: list[str]
    """The allowed judgments (positions use the same set)."""
    unknown: str | None
    """The judgment meaning "cannot tell from the snapshot" (no quotation needed), if allowed."""


class TopicJudgment(Frozen):
    """One role's checked judgment on one topic."""

    topic: str
    """The topic, as the agenda names it."""
    judgment: str
    """One of the allowed judgments."""
    reason: str
    """Why, in the role's words."""
    quotes: list[str] = Field(default_factory=list)
    """Passages of the snapshot, each found verbatim by code."""


class View(Frozen):
    """One role's validated view."""

    role: str
    """The role that wrote it."""
    position: str
    """The role's overall judgment on the question (an allowed judgment)."""
    summary: str
    """The view in a few sentences."""
    judgments: list[TopicJudgment]
    """One judgment per topic, in agenda order."""
    trade_off: str
    """The main trade-off the role sees."""
    model: str = ""
    """The model that wrote it."""
    attempt: int = 1
    """Which attempt produced it."""

    def judgment_on(self, topic: str) -> str | None:
        """Return the judgment on ``topic``, or None."""
        return next((j.judgment for j in self.judgments if j.topic == topic), None)


class StepAttempt(Frozen):
    """One attempt of a view or of the synthesis."""

    role: str
    """The role (``synthesizer`` for the synthesis)."""
    attempt: int
    """1-based attempt number for that role."""
    ok: bool
    """Whether it produced a valid result."""
    failure: Literal["", "invalid", "error", "budget"] = ""
    """Why it failed: checks in code, a model failure, or the budget."""
    errors: list[str] = Field(default_factory=list)
    """Every problem found (re-prompted all at once on the next attempt)."""
    model: str = ""
    """The model asked."""


class TopicRow(Frozen):
    """One row of the comparison matrix, computed in code."""

    topic: str
    """The topic (``(overall position)`` for the positions row)."""
    judgments: dict[str, str]
    """Role to judgment, for roles with a valid view."""
    groups: dict[str, list[str]]
    """Judgment to the roles that gave it (every group kept, roles in panel order)."""
    missing: list[str]
    """Roles without a valid view."""
    status: MatrixStatus
    """How the roles compare."""
    unknown_roles: list[str] = Field(default_factory=list)
    """Roles that judged the topic unknown."""
    shared_unknown: bool = False
    """Two or more roles judged the topic unknown: an evidence gap to follow up."""


class Matrix(Frozen):
    """The comparison matrix: code-owned state the synthesis may not rewrite."""

    roles: list[str]
    """Every role of the panel, in order."""
    available: list[str]
    """Roles with a valid view."""
    missing: list[str]
    """Roles without one."""
    rows: list[TopicRow]
    """One row per topic, in agenda order."""
    overall: TopicRow
    """The roles' overall positions, compared the same way."""

    @property
    def disagreements(self) -> list[TopicRow]:
        """Rows (topics and overall) where judgments differ."""
        return [r for r in (*self.rows, self.overall) if r.status == "disagreement"]

    @property
    def shared_unknowns(self) -> list[TopicRow]:
        """Topic rows that several roles judged unknown."""
        return [r for r in self.rows if r.shared_unknown]


class TopicAnswer(Frozen):
    """How the synthesis resolves one disagreement."""

    topic: str
    """The topic (or ``(overall position)``)."""
    answer: str
    """The resolution and why."""


class FollowUp(Frozen):
    """A topic the synthesis leaves unresolved, with what would settle it."""

    topic: str
    """The topic."""
    follow_up: str
    """The concrete next step that would resolve it."""


class Synthesis(Frozen):
    """The synthesis after the checks in code (the matrix is not part of it)."""

    recommendation: str
    """What the synthesizer proposed (caps are applied separately, in code)."""
    rationale: str
    """Why."""
    conditions: list[str] = Field(default_factory=list)
    """Conditions attached to the recommendation."""
    resolutions: list[TopicAnswer] = Field(default_factory=list)
    """Disagreements it resolves."""
    unresolved: list[FollowUp] = Field(default_factory=list)
    """Topics left open, each with a follow-up."""
    violations: list[str] = Field(default_factory=list)
    """Problems still present after the last attempt (empty when valid)."""
    model: str = ""
    """The model that wrote it."""
    attempt: int = 1
    """Which attempt produced it."""


class _Reply(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)


class TopicJudgmentReply(_Reply):
    """Your judgment on one topic."""

    topic: str
    """The topic, exactly as listed."""
    judgment: str
    """One of the allowed judgments."""
    reason: str
    """Why, in one or two sentences."""
    quotes: list[str] = Field(default_factory=list)
    """Passages copied character for character from the snapshot."""


class ViewReply(_Reply):
    """Your view of the snapshot."""

    position: str
    """Your overall judgment on the question (one of the allowed judgments)."""
    summary: str
    """Your view in two or three sentences."""
    judgments: list[TopicJudgmentReply] = Field(default_factory=list)
    """One judgment per topic."""
    trade_off: str = ""
    """The main trade-off you see."""


class SynthesisReply(_Reply):
    """The synthesis of the independent views."""

    recommendation: str
    """One of: reject, defer, conditional, proceed."""
    rationale: str
    """Why, in two or three sentences."""
    conditions: list[str] = Field(default_factory=list)
    """Conditions the recommendation depends on."""
    resolutions: list[TopicAnswer] = Field(default_factory=list)
    """For each disagreement you resolve: the topic and your answer."""
    unresolved: list[FollowUp] = Field(default_factory=list)
    """Topics you leave open, each with a follow-up that would settle it."""
