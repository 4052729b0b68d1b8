"""Rubric evaluation contracts: evaluators, configuration file, results, averages and rendering.

A configuration file follows the debate CLI's evaluator file::

    {"agents": [{"id": "eval-1", "model": "openai:gpt-4o"},
                {"id": "eval-2", "provider": "google", "model": "gemini-2.0-flash", "temperature": 0.1}]}

Averages use only the scores present (integers 1..10 after clamping), rounded to 2 decimals;
a criterion no evaluator scored averages to None (``N/A`` in Markdown, ``null`` in JSON).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from reasoning_graphs._files import read_user_json
from reasoning_graphs.budget import Budget
from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._agent_fields import check_agent_id, check_model_ref, join_provider
from reasoning_graphs.types import Frozen

__all__ = [
    "CRITERIA",
    "TITLES",
    "EvaluationConfig",
    "EvaluationResult",
    "EvaluatorResult",
    "EvaluatorSpec",
    "aggregate",
    "to_json",
    "to_markdown",
]

CRITERIA: dict[str, str] = {
    "functional_completeness": "does the solution meet every functional requirement of the task?",
    "performance_scalability": "will it perform and scale under the load the task implies?",
    "security": "does it protect data and resist misuse?",
    "maintainability": "is it easy to understand, change and extend?",
    "regulatory_compliance": "does it respect the legal and regulatory constraints the task implies?",
    "testability": "can its correctness be checked with reasonable tests?",
    "overall": "your overall judgment of the solution",
}
"""The rubric: criterion key to the question the evaluator answers."""

TITLES: dict[str, str] = {
    "functional_completeness": "Functional Completeness",
    "performance_scalability": "Performance & Scalability",
    "security": "Security",
    "maintainability": "Maintainability",
    "regulatory_compliance": "Regulatory Compliance",
    "testability": "Testability",
    "overall": "Overall Score",
}
"""Column titles of the Markdown table."""

_MAX_CONFIG_BYTES = 10 * 1024 * 1024


class _Config(Frozen):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True)


class EvaluatorSpec(_Config):
    """One evaluator agent."""

    id: str
    """Unique id (letters, digits, ``_.-``)."""
    name: str = ""
    """Display name (defaults to the id)."""
    model: str | int | None = None
    """A provider string, an index into the run's roster, or None (the evaluator's position)."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature when the model is a provider string; None: provider default."""
    enabled: bool = True
    """Disabled evaluators do not score."""

    @model_validator(mode="before")
    @classmethod
    def _join_provider(cls, data: Any) -> Any:
        return join_provider(data)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        return check_agent_id(value)

    @field_validator("model")
    @classmethod
    def _check_model(cls, value: str | int | None) -> str | int | None:
        return check_model_ref(value)


class EvaluationConfig(_Config):
    """Evaluators and limits; load one with :meth:`from_file`."""

    agents: tuple[EvaluatorSpec, ...] = (EvaluatorSpec(id="eval-1"),)
    """The evaluators (at least one enabled)."""
    include_transcript: bool = True
    """Show evaluators the run's transcript when the input has one."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""

    @model_validator(mode="after")
    def _check_agents(self) -> EvaluationConfig:
        ids = [a.id for a in self.agents]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"evaluator ids must be unique; repeated: {dupes}")
        if not self.active_agents:
            raise ValueError("an evaluation needs at least one enabled evaluator; add or enable one")
        return self

    @property
    def active_agents(self) -> tuple[EvaluatorSpec, ...]:
        """The enabled evaluators, in order."""
        return tuple(a for a in self.agents if a.enabled)

    @classmethod
    def from_file(cls, path: str | Path) -> EvaluationConfig:
        """Load a JSON configuration file.

        Raises:
            InputError: the file is missing, not a JSON object, or a field is invalid (named).
        """
        p = Path(path)
        data = read_user_json(p, "configuration file", max_bytes=_MAX_CONFIG_BYTES)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{_field_path(e['loc'])}: {e['msg']}" for e in exc.errors())
            raise InputError(f"configuration file {str(p)!r} is invalid: {problems}") from None


def _field_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


class EvaluatorResult(Frozen):
    """What one evaluator said."""

    agent_id: str
    """The evaluator's id."""
    model: str
    """The model id that scored."""
    scores: dict[str, int] = Field(default_factory=dict)
    """Criterion to an integer 1..10 (clamped); absent when missing or non-numeric."""
    rationale: str = ""
    """The evaluator's reasons."""
    warnings: list[str] = Field(default_factory=list)
    """Clamped, ignored and missing scores."""
    error: str | None = None
    """Why the evaluator produced no scores, if it failed."""


class EvaluationResult(Frozen):
    """Every evaluator's scores and the averages."""

    results: list[EvaluatorResult] = Field(default_factory=list)
    """Per evaluator, in configuration order."""
    averages: dict[str, float | None] = Field(default_factory=dict)
    """Criterion to the mean of present scores (2 decimals), None when no evaluator scored it."""
    warnings: list[str] = Field(default_factory=list)
    """Every evaluator's warnings and failures, prefixed with its id."""


def aggregate(results: Sequence[EvaluatorResult], extra_warnings: Sequence[str] = ()) -> EvaluationResult:
    """Average the present scores per criterion and collect warnings."""
    averages: dict[str, float | None] = {}
    for key in CRITERIA:
        present = [r.scores[key] for r in results if key in r.scores]
        averages[key] = round(sum(present) / len(present), 2) if present else None
    warnings = list(extra_warnings)
    for r in results:
        warnings += [f"{r.agent_id}: {w}" for w in r.warnings]
        if r.error:
            warnings.append(f"{r.agent_id}: failed: {r.error}")
    return EvaluationResult(results=list(results), averages=averages, warnings=warnings)


def _result(result: EvaluationResult | Mapping[str, Any]) -> EvaluationResult:
    if isinstance(result, EvaluationResult):
        return result
    value = result.get("evaluation", result)
    return value if isinstance(value, EvaluationResult) else EvaluationResult.model_validate(value)


def _cell(value: float | int | None, decimals: bool) -> str:
    if value is None:
        return "N/A"
    return f"{value:.2f}" if decimals else str(value)


def to_markdown(result: EvaluationResult | Mapping[str, Any]) -> str:
    """Render a Markdown table: one row per evaluator, then the averages.

    Args:
        result: an :class:`EvaluationResult`, or the evaluation graph's output.
    """
    res = _result(result)
    head = "| Evaluator | " + " | ".join(TITLES[k] for k in CRITERIA) + " |"
    rule = "|" + " --- |" * (len(CRITERIA) + 1)
    rows = [head, rule]
    for r in res.results:
        who = f"{r.agent_id} ({r.model})".replace("|", "\\|")
        rows.append(f"| {who} | " + " | ".join(_cell(r.scores.get(k), False) for k in CRITERIA) + " |")
    rows.append("| **Average** | " + " | ".join(_cell(res.averages.get(k), True) for k in CRITERIA) + " |")
    return "\n".join(rows) + "\n"


def to_json(result: EvaluationResult | Mapping[str, Any]) -> dict[str, Any]:
    """Return JSON-ready data: averages, the overall score, per-agent results and warnings.

    Args:
        result: an :class:`EvaluationResult`, or the evaluation graph's output.
    """
    res = _result(result)
    return {
        "averages": {k: res.averages.get(k) for k in CRITERIA},
        "overall_score": res.averages.get("overall"),
        "agents": {
            r.agent_id: {
                "model": r.model,
                "scores": dict(r.scores),
                "rationale": r.rationale,
                "warnings": list(r.warnings),
                "error": r.error,
            }
            for r in res.results
        },
        "warnings": list(res.warnings),
    }
