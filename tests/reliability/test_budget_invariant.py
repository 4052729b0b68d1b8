"""The budget invariant, over random limits, batch sizes, token draws, failures and retries.

The scheduler below does what every graph does (see ``graphs/repair.py`` and ``reflection.py``):
before a step a router asks ``Budget.fits(usage, batch)`` for the whole batch, then each member
asks the model through ``generate`` with ``max_calls=Budget.allowance(usage, batch)``; the seam
retries transient errors and re-prompts schema violations, every call counting. A call costs
what it reported, and at least its reservation (``reserve_tokens_per_call``; a call of unknown
usage costs its reservation). Invariants:

1. calls never exceed ``max_calls``;
2. reserved plus used never exceeds ``max_tokens``: a batch starts only when what the calls so
   far cost plus the whole batch's reservation fits (the budget never lends);
3. while no call reports more tokens than it reserved, the tokens used never exceed the limit,
   whatever retries and repairs the members make;
4. a call reporting more than it reserved fails closed: its excess is charged in full, the limit
   is passed by at most the reported excess, and no batch starts that does not fit.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from reasoning_graphs.budget import Budget
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.nodes import SYNC_IO, drive, generate
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.types import Usage


class Answer(BaseModel):
    value: int


def _reply(kind: str, tokens: int) -> dict[str, Any]:
    usage = {"input_tokens": tokens // 2, "output_tokens": tokens - tokens // 2}
    if kind == "transient":
        return {"raise": "transient"}
    if kind == "invalid":
        return {"content": "not json", "usage": usage}
    if kind == "unknown":
        return {"content": '{"value": 1}', "usage": None}
    return {"content": '{"value": 1}', "usage": usage}


calls_st = st.lists(
    st.tuples(st.sampled_from(["ok", "ok", "transient", "invalid", "unknown"]), st.integers(0, 120)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_reserved_plus_used_never_exceeds_the_limit(data: st.DataObject) -> None:
    max_calls = data.draw(st.none() | st.integers(1, 25), label="max_calls")
    max_tokens = data.draw(st.none() | st.integers(1, 1500), label="max_tokens")
    reserve = data.draw(st.integers(1, 80) if max_tokens else st.integers(0, 80), label="reserve")
    budget = Budget(max_calls=max_calls, max_tokens=max_tokens, reserve_tokens_per_call=reserve)
    usage = Usage()
    excess = 0
    for _ in range(data.draw(st.integers(1, 5), label="steps")):
        batch = data.draw(st.integers(1, 4), label="batch")
        total = usage.total
        charged = max(total.tokens + total.unknown_usage_calls * reserve, total.calls * reserve)
        if not budget.fits(usage, batch):
            continue
        assert max_tokens is None or charged + batch * reserve <= max_tokens, "the budget lent tokens"
        share = budget.allowance(usage, batch)
        step = Usage()
        for member in range(batch):
            script = data.draw(calls_st, label=f"member {member}")
            fake = ScriptedChatModel(replies=[_reply(k, t) for k, t in script])
            retry = RetrySettings(max_attempts=data.draw(st.integers(1, 3)), initial_delay=0, jitter=False)
            client = ModelClient(fake, retry=retry, max_schema_repairs=data.draw(st.integers(0, 2)))
            out = drive(generate(SYNC_IO, client, "q", node="n", schema=Answer, max_calls=share))
            step = step + out.usage
            reported = [t for k, t in script[: fake.calls] if k in ("ok", "invalid")]
            excess += sum(max(0, t - reserve) for t in reported)
        usage = usage + step
        assert max_calls is None or usage.total.calls <= max_calls, "more calls than the budget allows"
        if max_tokens is not None:
            used = usage.total.tokens + usage.total.unknown_usage_calls * reserve
            assert used <= max_tokens + excess, (
                f"used {used} of {max_tokens} tokens, reported excess {excess}"
            )
