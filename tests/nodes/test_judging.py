from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.nodes import SYNC_IO, compare_pair, drive, read_scores, score_rubric
from reasoning_graphs.nodes.judging import RubricReply
from reasoning_graphs.testing import ScriptedChatModel

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)


def judge(responder: Any) -> tuple[ScriptedChatModel, ModelClient]:
    fake = ScriptedChatModel(responder=responder, model_name="judge")
    return fake, ModelClient(fake, retry=NO_WAIT)


def compare(client: ModelClient, first: str, second: str) -> Any:
    return drive(
        compare_pair(SYNC_IO, client, task="Which is right?", first=first, second=second, node="judge")
    )


def test_a_judge_that_always_prefers_slot_a_is_inconclusive() -> None:
    _, client = judge(lambda m: json.dumps({"winner": "A"}))
    result, usage = compare(client, "answer from gpt-4o (pro side)", "answer from claude (con side)")
    assert result.winner == "inconclusive" and result.orders == ["A", "A"] and usage.total.calls == 2


def test_a_consistent_judge_yields_its_winner_in_both_orders() -> None:
    def prefers_42(messages: Any) -> str:
        text = messages[-1].content
        a = text.split("[Response A]")[1].split("[End of A]")[0]
        return json.dumps({"winner": "A" if "42" in a else "B"})

    _, client = judge(prefers_42)
    assert compare(client, "41", "42")[0].winner == "second"
    assert compare(client, "42", "41")[0].winner == "first"


def test_both_orders_tie_is_a_tie() -> None:
    _, client = judge(lambda m: json.dumps({"winner": "tie"}))
    assert compare(client, "x", "y")[0].winner == "tie"


def test_parse_failures_are_counted_never_a_silent_tie() -> None:
    _, client = judge(lambda m: "I cannot decide")
    result, usage = compare(client, "x", "y")
    assert result.winner == "inconclusive" and result.parse_failures == 2
    assert usage.total.schema_repairs > 0


def test_prompts_show_slot_labels_only() -> None:
    fake, client = judge(lambda m: json.dumps({"winner": "A"}))
    drive(compare_pair(SYNC_IO, client, task="t", first="alpha", second="beta", node="judge"))
    for prompt in fake.prompt_texts:
        assert "[Response A]" in prompt and "[Response B]" in prompt
        for leak in ("first", "second", "pro", "con", "judge", "model"):
            assert leak not in prompt.split("Task:")[1].lower().replace("[response", "")


def test_rubric_scores_are_clamped_and_non_numeric_ignored_with_warnings() -> None:
    reply = RubricReply(scores={"Accuracy": 14, "clarity": "7/10", "style": "great", "depth": 0.4, "x": 5})
    judgment = read_scores(reply, ["accuracy", "clarity", "style", "depth"])
    assert judgment.scores == {"accuracy": 10, "clarity": 7, "depth": 1}
    assert len(judgment.warnings) == 4  # clamp 14, ignore 'great', clamp 0.4, unknown 'x'
    assert judgment.mean == 6


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.one_of(
            st.integers(-50, 50), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5)
        ),
    )
)
def test_scores_are_always_integers_in_range(raw: dict[str, Any]) -> None:
    judgment = read_scores(RubricReply(scores=raw), ["a", "b", "c"])
    assert all(isinstance(v, int) and 1 <= v <= 10 for v in judgment.scores.values())


def test_score_rubric_uses_a_closed_schema_per_criterion() -> None:
    _, client = judge(lambda m: json.dumps({"accuracy": 8, "clarity": 11, "rationale": "ok"}))
    judgment, usage, error = drive(
        score_rubric(SYNC_IO, client, task="t", response="r", criteria=["accuracy", "clarity"], node="judge")
    )
    assert error is None and judgment is not None
    assert judgment.scores == {"accuracy": 8, "clarity": 10} and judgment.warnings
    assert usage.by_node["judge"].calls == 1
