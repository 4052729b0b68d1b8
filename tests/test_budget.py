from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoning_graphs.budget import Budget, add_usage
from reasoning_graphs.types import Usage, UsageCounts

counts = st.builds(
    UsageCounts,
    calls=st.integers(0, 50),
    input_tokens=st.integers(0, 10_000),
    output_tokens=st.integers(0, 10_000),
    failed_calls=st.integers(0, 5),
    unknown_usage_calls=st.integers(0, 5),
)
ledgers = st.builds(
    lambda c, m, n: Usage.of(c, model=m, node=n),
    counts,
    st.sampled_from(["a", "b"]),
    st.sampled_from(["x", "y"]),
)


@given(st.lists(ledgers, max_size=8))
def test_reducer_totals_equal_the_sum_per_model_and_per_node(parts: list[Usage]) -> None:
    total = Usage()
    for part in parts:
        total = add_usage(total, part)
    assert total.total.calls == sum(p.total.calls for p in parts)
    assert sum(c.calls for c in total.by_model.values()) == total.total.calls
    assert sum(c.tokens for c in total.by_node.values()) == total.total.tokens


@given(ledgers, ledgers, ledgers)
def test_reducer_is_associative_and_has_identity(a: Usage, b: Usage, c: Usage) -> None:
    assert add_usage(add_usage(a, b), c) == add_usage(a, add_usage(b, c))
    assert add_usage(None, a) == a == add_usage(a, None)


@given(
    max_calls=st.integers(1, 40),
    batches=st.lists(st.integers(1, 8), max_size=20),
    repairs=st.lists(st.integers(0, 3), max_size=20),
)
def test_batch_reservation_never_exceeds_the_call_limit(
    max_calls: int, batches: list[int], repairs: list[int]
) -> None:
    """Simulate a run: a batch starts only if it fits; each member spends at most its allowance."""
    budget = Budget(max_calls=max_calls)
    usage = Usage()
    for i, batch in enumerate(batches):
        if not budget.fits(usage, batch):
            continue
        allowance = budget.allowance(usage, batch)
        assert allowance is not None and allowance >= 1
        for _ in range(batch):
            wanted = 1 + (repairs[i] if i < len(repairs) else 0)
            spent = min(wanted, allowance)  # the seam refuses calls past the allowance
            usage = usage + Usage.of(UsageCounts(calls=spent), model="m", node="n")
        assert usage.total.calls <= max_calls


@given(
    max_tokens=st.integers(1, 5_000),
    reserve=st.integers(0, 500),
    draws=st.lists(st.integers(0, 900), max_size=30),
)
def test_token_budget_fails_closed(max_tokens: int, reserve: int, draws: list[int]) -> None:
    budget = Budget(max_tokens=max_tokens, reserve_tokens_per_call=reserve)
    usage = Usage()
    for draw in draws:
        if not budget.fits(usage):
            break
        assert usage.total.tokens + reserve <= max_tokens
        usage = usage + Usage.of(UsageCounts(calls=1, output_tokens=draw), model="m", node="n")
    if usage.total.tokens >= max_tokens:
        assert not budget.fits(usage)


def test_unlimited_budget_always_fits() -> None:
    assert Budget().fits(Usage(), 1000) and Budget().allowance(Usage()) is None


def test_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        Budget(max_calls=0)
    with pytest.raises(ValueError):
        Budget().fits(Usage(), -1)
