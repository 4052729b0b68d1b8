"""Paired statistics over items: win/tie/loss counts and a seeded bootstrap interval.

Two arms are compared item by item. For verifiable items the per-item difference is
``passed(graph) - passed(other)`` (-1, 0 or 1); for judged items it is the judge's outcome for
the graph: win 1, tie 0, loss -1, and a judge failure 0 (it stays in the count, it is never
dropped). The interval is the percentile bootstrap of the mean difference, resampling items
with a seeded generator, so the same records and seed always give the same interval.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import Field

from reasoning_graphs.types import Frozen

__all__ = ["PairedStats", "bootstrap_interval", "paired_stats"]


class PairedStats(Frozen):
    """The paired comparison of two arms over the same items."""

    n: int
    """Items compared."""
    wins: int
    """Items where the first arm did better."""
    ties: int
    """Items where neither did better."""
    losses: int
    """Items where the second arm did better."""
    judge_failures: int = 0
    """Judged items whose judge reply could not be parsed (counted as ties, reported here)."""
    mean_diff: float
    """Mean per-item difference (first minus second)."""
    low: float
    """Lower end of the bootstrap interval of ``mean_diff``."""
    high: float
    """Upper end of the bootstrap interval of ``mean_diff``."""
    level: float = Field(default=0.95, gt=0.0, lt=1.0)
    """The interval's confidence level."""
    resamples: int = 2000
    """Bootstrap resamples drawn."""
    seed: int = 0
    """The resampling seed."""


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted data (numpy's default method)."""
    pos = q * (len(ordered) - 1)
    lower = int(pos)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (pos - lower)


def bootstrap_interval(
    diffs: Sequence[float], *, seed: int = 0, resamples: int = 2000, level: float = 0.95
) -> tuple[float, float]:
    """Return the percentile bootstrap interval of the mean of ``diffs``.

    Args:
        diffs: per-item differences.
        seed: the resampling seed (same data and seed, same interval).
        resamples: how many resamples to draw.
        level: the confidence level, e.g. 0.95.

    Raises:
        ValueError: no data, fewer than one resample, or a level outside (0, 1).
    """
    if not diffs:
        raise ValueError("bootstrap_interval needs at least one difference")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    return _quantile(means, tail), _quantile(means, 1.0 - tail)


def paired_stats(
    diffs: Sequence[int],
    *,
    judge_failures: int = 0,
    seed: int = 0,
    resamples: int = 2000,
    level: float = 0.95,
) -> PairedStats:
    """Summarize per-item differences (each -1, 0 or 1) as win/tie/loss and a bootstrap interval.

    Raises:
        ValueError: a difference outside -1..1, or no data.
    """
    if any(d not in (-1, 0, 1) for d in diffs):
        raise ValueError(f"paired differences must be -1, 0 or 1, got {sorted(set(diffs))!r}")
    low, high = bootstrap_interval([float(d) for d in diffs], seed=seed, resamples=resamples, level=level)
    return PairedStats(
        n=len(diffs),
        wins=sum(d == 1 for d in diffs),
        ties=sum(d == 0 for d in diffs),
        losses=sum(d == -1 for d in diffs),
        judge_failures=judge_failures,
        mean_diff=sum(diffs) / len(diffs),
        low=low,
        high=high,
        level=level,
        resamples=resamples,
        seed=seed,
    )
