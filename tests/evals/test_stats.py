from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from reasoning_graphs.evals import bootstrap_interval, paired_stats
from reasoning_graphs.evals.stats import _quantile


def test_constant_differences_give_a_degenerate_interval() -> None:
    assert bootstrap_interval([1.0] * 30, seed=3) == (1.0, 1.0)
    assert bootstrap_interval([0.0], seed=3) == (0.0, 0.0)


def test_the_interval_is_reproducible_from_its_seed() -> None:
    diffs = [1.0, 0.0, -1.0, 1.0, 1.0, 0.0, 0.0, 1.0, -1.0] * 4 + [1.0]
    same = {bootstrap_interval(diffs, seed=7, resamples=301) for _ in range(3)}
    assert len(same) == 1
    assert bootstrap_interval(diffs, seed=8, resamples=301) != same.pop()


def test_the_interval_matches_the_normal_approximation_on_known_data() -> None:
    # 200 items: 100 wins, 100 ties -> mean 0.5, standard error sqrt(0.25 / 200) ~ 0.0354.
    diffs = [1.0] * 100 + [0.0] * 100
    low, high = bootstrap_interval(diffs, seed=0, resamples=4000)
    se = statistics.pstdev(diffs) / math.sqrt(len(diffs))
    assert low < 0.5 < high
    assert low == pytest.approx(0.5 - 1.96 * se, abs=0.012)
    assert high == pytest.approx(0.5 + 1.96 * se, abs=0.012)


def test_a_wider_level_gives_a_wider_interval() -> None:
    diffs = [1.0, 0.0, 1.0, -1.0, 1.0, 0.0] * 5
    low90, high90 = bootstrap_interval(diffs, seed=1, level=0.90)
    low99, high99 = bootstrap_interval(diffs, seed=1, level=0.99)
    assert low99 <= low90 < high90 <= high99


def test_quantiles_match_numpy_s_linear_method() -> None:
    data = sorted([0.3, -1.0, 2.5, 0.0, 7.0, 1.25, 3.5])
    for q in (0.0, 0.025, 0.3, 0.5, 0.975, 1.0):
        assert _quantile(data, q) == pytest.approx(float(np.quantile(data, q)))


def test_paired_stats_counts_wins_ties_and_losses() -> None:
    stats = paired_stats([1, 1, 0, -1, 0, 1], judge_failures=1, seed=2, resamples=500)
    assert (stats.n, stats.wins, stats.ties, stats.losses, stats.judge_failures) == (6, 3, 2, 1, 1)
    assert stats.mean_diff == pytest.approx(2 / 6)
    assert stats.low <= stats.mean_diff <= stats.high
    assert (stats.seed, stats.resamples) == (2, 500)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_interval([])
    with pytest.raises(ValueError, match="-1, 0 or 1"):
        paired_stats([2])
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval([1.0], level=1.0)
