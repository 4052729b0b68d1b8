"""Summaries computed from a receipt alone: per-arm metrics and paired comparisons.

Per arm: pass rate of the returned answer, any-of-k where the arm reports it, mean calls and
tokens per item (known tokens only; calls with unknown usage are counted separately), failed
calls, items without an answer, and wall time. Paired: the graph against every other arm over
the same items, on the verifier's verdict or, for open-ended items, on the blind judge's
outcome (see :mod:`reasoning_graphs.evals.stats`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from reasoning_graphs.evals.config import ARMS
from reasoning_graphs.evals.records import ItemRecord, JudgeRecord
from reasoning_graphs.evals.stats import PairedStats, paired_stats
from reasoning_graphs.types import Frozen

__all__ = ["ArmSummary", "Comparison", "EvalSummary", "summarize"]


class ArmSummary(Frozen):
    """One arm's metrics over the run's items."""

    arm: str
    """The arm."""
    n: int
    """Items with a record."""
    pass_rate: float | None = None
    """Share of items whose returned answer passed (None for judged items)."""
    any_of_k: float | None = None
    """Share of items where any candidate passed (None where not reported)."""
    preference: float | None = None
    """Judged items: the arm's preference against the plain call, (wins + ties / 2) / n; the
    plain call itself is 0.5."""
    mean_calls: float = 0.0
    """Model calls per item."""
    mean_input_tokens: float = 0.0
    """Known prompt tokens per item."""
    mean_output_tokens: float = 0.0
    """Known completion tokens per item."""
    unknown_usage_calls: int = 0
    """Calls whose token usage the provider did not report (their tokens are not in the means)."""
    failed_calls: int = 0
    """Calls that raised."""
    errors: int = 0
    """Items the arm returned no answer for."""
    wall_s: float = 0.0
    """Seconds spent in this arm in this run (resumed items count their resumed part)."""
    samples: int = 1
    """Samples per item (sampling arms)."""

    @property
    def mean_tokens(self) -> float:
        """Known tokens per item."""
        return self.mean_input_tokens + self.mean_output_tokens

    @property
    def quality(self) -> float | None:
        """Pass rate, else preference: the plotted quality."""
        return self.pass_rate if self.pass_rate is not None else self.preference


class Comparison(Frozen):
    """The graph paired with another arm."""

    other: str
    """The other arm."""
    basis: Literal["verifier", "judge"]
    """What decides an item: the verifier's verdicts, or the blind judge."""
    stats: PairedStats
    """Win/tie/loss for the graph and the bootstrap interval of the mean difference."""


class EvalSummary(Frozen):
    """Everything the report shows."""

    pattern: str
    """The pattern."""
    dataset: str
    """The dataset file."""
    format: str
    """The dataset's format."""
    items: int
    """Items in the run."""
    samples: int | None = None
    """N of the sampling arms."""
    arms: list[ArmSummary] = Field(default_factory=list)
    """Per-arm metrics, in report order."""
    comparisons: list[Comparison] = Field(default_factory=list)
    """The graph against each other arm."""
    judge_calls: int = 0
    """Calls the blind judge made."""


_DIFF = {"win": 1, "tie": 0, "judge_failure": 0, "loss": -1}


def _arm_summary(arm: str, records: Sequence[ItemRecord], preference: float | None) -> ArmSummary:
    n = len(records)
    verified = [r.passed for r in records if r.passed is not None]
    reported = [r.any_passed for r in records if r.any_passed is not None]
    return ArmSummary(
        arm=arm,
        n=n,
        pass_rate=sum(verified) / len(verified) if verified else None,
        any_of_k=sum(bool(x) for x in reported) / len(reported) if reported else None,
        preference=preference,
        mean_calls=sum(r.calls for r in records) / n,
        mean_input_tokens=sum(r.input_tokens for r in records) / n,
        mean_output_tokens=sum(r.output_tokens for r in records) / n,
        unknown_usage_calls=sum(r.unknown_usage_calls for r in records),
        failed_calls=sum(r.failed_calls for r in records),
        errors=sum(r.answer is None for r in records),
        wall_s=sum(r.wall_s for r in records),
        samples=max((r.samples for r in records), default=1),
    )


def _verified_pairs(graph: Mapping[str, ItemRecord], other: Mapping[str, ItemRecord]) -> list[int]:
    return [
        int(bool(graph[i].passed)) - int(bool(other[i].passed))
        for i in graph
        if i in other and graph[i].passed is not None and other[i].passed is not None
    ]


def summarize(receipt: Mapping[str, Any]) -> EvalSummary:
    """Summarize a receipt (a dict as written by :func:`~reasoning_graphs.evals.receipt.build_receipt`)."""
    records = [ItemRecord.model_validate(r) for r in receipt.get("records") or []]
    judgments = [JudgeRecord.model_validate(j) for j in receipt.get("judgments") or []]
    seed = int(receipt["config"].get("seed", 0))
    resamples = int(receipt["config"].get("bootstrap_resamples", 2000))
    by_arm: dict[str, dict[str, ItemRecord]] = {}
    for record in records:
        by_arm.setdefault(record.arm, {})[record.item] = record
    comparisons: list[Comparison] = []
    preference: dict[str, float] = {}
    graph = by_arm.get("graph", {})
    for arm in (a for a in ARMS if a != "graph" and a in by_arm):
        judged = [j for j in judgments if j.arm == arm]
        if judged:
            diffs = [_DIFF[j.outcome] for j in judged]
            failures = sum(j.outcome == "judge_failure" for j in judged)
            stats = paired_stats(diffs, judge_failures=failures, seed=seed, resamples=resamples)
            comparisons.append(Comparison(other=arm, basis="judge", stats=stats))
            if arm == "single":
                preference = {"graph": (stats.wins + stats.ties / 2) / stats.n, "single": 0.5}
        elif graph:
            diffs = _verified_pairs(graph, by_arm[arm])
            if diffs:
                stats = paired_stats(diffs, seed=seed, resamples=resamples)
                comparisons.append(Comparison(other=arm, basis="verifier", stats=stats))
    arms = [
        _arm_summary(arm, list(by_arm[arm].values()), preference.get(arm)) for arm in ARMS if arm in by_arm
    ]
    return EvalSummary(
        pattern=str(receipt["config"]["pattern"]),
        dataset=str(receipt["dataset"]["path"]),
        format=str(receipt["dataset"]["format"]),
        items=len(receipt["dataset"]["item_ids"]),
        samples=receipt.get("matched_samples"),
        arms=arms,
        comparisons=comparisons,
        judge_calls=sum(j.calls for j in judgments),
    )
