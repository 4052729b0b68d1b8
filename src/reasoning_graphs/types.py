"""Shared contracts: the plain, frozen values that graphs keep in state and return.

Everything here is a frozen pydantic model (``extra="forbid"``) or a ``Literal`` alias, so a
value is serializable, checkpointable and safe to show in Studio. Field docstrings become the
JSON-schema descriptions a model sees when a contract is used as an output schema.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "Attempt",
    "Critique",
    "Frozen",
    "Judgment",
    "PairwiseJudgment",
    "StopReason",
    "ToolCallRecord",
    "Usage",
    "UsageCounts",
    "Verdict",
]

StopReason = Literal[
    "passed",
    "max_attempts",
    "max_rounds",
    "budget",
    "no_progress",
    "converged",
    "judge_stop",
    "completed",
    "step_limit",
    "needs_human",
    "inconclusive",
    "error",
]
"""Why a run ended.

- ``passed``: the verifier accepted the answer.
- ``max_attempts`` / ``max_rounds``: the loop bound was reached.
- ``budget``: the call or token budget could not fit the next step.
- ``no_progress``: the same failure came back twice in a row.
- ``converged``: the answer stopped changing (or the agents agreed).
- ``judge_stop``: the judge said stop.
- ``completed``: a fixed pipeline ran to its end.
- ``step_limit``: a tool loop hit its step bound.
- ``needs_human``: every independent view failed; a person must look.
- ``inconclusive``: counterbalanced arbitration disagreed with itself.
- ``error``: a model call failed for good; the run keeps its partial result.
"""


class Frozen(BaseModel):
    """Base for every value kept in graph state: immutable, strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class Verdict(Frozen):
    """The result of a verifier on one candidate."""

    passed: bool
    """Whether the candidate is accepted."""
    score: float = Field(default=0.0, ge=0.0, le=1.0)
    """Fraction of checks passed, in [0, 1]; 1.0 when passed."""
    feedback: str = ""
    """A short, exact account of what failed: it feeds the repair prompt."""
    details: dict[str, JsonValue] = Field(default_factory=dict)
    """Machine-readable extras (failing test, sandbox mode, timings)."""


class UsageCounts(Frozen):
    """Counters for a set of model calls."""

    calls: int = 0
    """Model calls made, including failed calls and schema repairs."""
    input_tokens: int = 0
    """Prompt tokens reported by the provider."""
    output_tokens: int = 0
    """Completion tokens reported by the provider."""
    failed_calls: int = 0
    """Calls that raised (after which a retry may have followed)."""
    unknown_usage_calls: int = 0
    """Calls whose provider reported no token usage: their tokens are unknown, not zero."""
    schema_repairs: int = 0
    """Re-prompts sent because a reply violated its schema."""

    def __add__(self, other: UsageCounts) -> UsageCounts:
        """Add two sets of counters field by field."""
        return UsageCounts(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            failed_calls=self.failed_calls + other.failed_calls,
            unknown_usage_calls=self.unknown_usage_calls + other.unknown_usage_calls,
            schema_repairs=self.schema_repairs + other.schema_repairs,
        )

    @property
    def tokens(self) -> int:
        """Input plus output tokens (known ones only)."""
        return self.input_tokens + self.output_tokens


def _add_maps(a: dict[str, UsageCounts], b: dict[str, UsageCounts]) -> dict[str, UsageCounts]:
    out = dict(a)
    for key, counts in b.items():
        out[key] = out[key] + counts if key in out else counts
    return out


class Usage(Frozen):
    """A usage ledger: totals, per model and per node. Add ledgers with ``+``."""

    total: UsageCounts = UsageCounts()
    """Counters over every call."""
    by_model: dict[str, UsageCounts] = Field(default_factory=dict)
    """Counters per model id (``provider:model``)."""
    by_node: dict[str, UsageCounts] = Field(default_factory=dict)
    """Counters per graph node."""

    @classmethod
    def of(cls, counts: UsageCounts, *, model: str, node: str) -> Usage:
        """Return a ledger holding ``counts`` for one model and one node."""
        return cls(total=counts, by_model={model: counts}, by_node={node: counts})

    def __add__(self, other: Usage) -> Usage:
        """Merge two ledgers."""
        return Usage(
            total=self.total + other.total,
            by_model=_add_maps(self.by_model, other.by_model),
            by_node=_add_maps(self.by_node, other.by_node),
        )


class Attempt(Frozen):
    """One generated candidate and what the verifier said of it."""

    answer: str
    """The candidate as submitted to the verifier."""
    passed: bool
    """Whether the verifier accepted it."""
    feedback: str
    """The verifier's exact failure feedback (empty when passed)."""
    model: str
    """Model id that produced the candidate."""
    score: float = 0.0
    """Verifier score in [0, 1]."""


class Critique(Frozen):
    """A critic's structured reading of a candidate."""

    problems: list[str] = Field(default_factory=list, max_length=8)
    """Concrete problems found, most important first; empty when none."""
    suggestions: list[str] = Field(default_factory=list, max_length=8)
    """Concrete changes that would fix the problems."""
    acceptable: bool = False
    """True when the candidate needs no further change."""


class Judgment(Frozen):
    """A pointwise rubric judgment."""

    scores: dict[str, int] = Field(default_factory=dict)
    """Criterion name to an integer score from 1 to 10 (clamped)."""
    rationale: str = ""
    """Why the scores were given."""
    warnings: list[str] = Field(default_factory=list)
    """Values that were clamped or ignored while reading the judge's reply."""

    @property
    def mean(self) -> float | None:
        """Average of the present scores, or None when there are none."""
        return sum(self.scores.values()) / len(self.scores) if self.scores else None


class PairwiseJudgment(Frozen):
    """The outcome of a blind pairwise comparison run in both orders."""

    winner: Literal["first", "second", "tie", "inconclusive"]
    """Which candidate won in both orders; ``tie`` when both orders said tie; ``inconclusive``
    when the orders disagree or a reply could not be parsed."""
    orders: list[str] = Field(default_factory=list)
    """The raw slot choice of each order (``A``, ``B``, ``tie`` or ``unparsed``)."""
    parse_failures: int = 0
    """How many judge replies could not be parsed (never turned into a silent tie)."""


class ToolCallRecord(Frozen):
    """One tool call made inside an act-observe loop."""

    tool: str
    """The tool's name."""
    args: dict[str, JsonValue]
    """Arguments the model passed."""
    result: str
    """The observation returned to the model (the tool's output or its error)."""
    error: bool = False
    """True when the tool raised; the error text was returned as the observation."""
    call_id: str = ""
    """The provider's id for the call."""
