from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from reasoning_graphs.evals import (
    PATTERNS,
    EvalConfig,
    Pattern,
    build_judge_graph,
    outcome_of,
    register_pattern,
    run_eval,
)
from reasoning_graphs.models import ModelClient
from reasoning_graphs.nodes import NodeIO, dual_node, generate
from reasoning_graphs.testing import ScriptedChatModel, prompt_text
from reasoning_graphs.types import PairwiseJudgment
from tests.evals.conftest import client

SLOT = re.compile(r"\[Response A\]\n(.*)\n\[End of A\]\n\n\[Response B\]\n(.*)\n\[End of B\]", re.S)


def judge_by(pick: Any) -> ScriptedChatModel:
    """A judge fake: ``pick(a, b)`` returns ``A``, ``B``, ``tie`` or a raw (unparseable) reply."""

    def respond(messages: Any) -> str:
        a, b = SLOT.search(prompt_text(messages)).groups()  # type: ignore[union-attr]
        choice = pick(a, b)
        return json.dumps({"winner": choice, "reason": "r"}) if choice in ("A", "B", "tie") else choice

    return ScriptedChatModel(responder=respond, model_name="judge")


def judged(
    pick: Any, first: str = "long detailed answer", second: str = "short"
) -> tuple[PairwiseJudgment, int]:
    fake = judge_by(pick)
    out = (
        build_judge_graph(judge=client(fake))
        .compile()
        .invoke({"task": "t", "first": first, "second": second})
    )
    return out["judgment"], fake.calls


def test_a_consistent_preference_wins_in_both_orders() -> None:
    judgment, calls = judged(lambda a, b: "A" if a.startswith("long") else "B")
    assert calls == 2 and judgment.winner == "first" and judgment.orders == ["A", "B"]
    assert outcome_of(judgment) == "win"
    judgment, _ = judged(lambda a, b: "A" if a == "short" else "B")
    assert outcome_of(judgment) == "loss"


def test_position_bias_is_a_tie_not_a_win() -> None:
    judgment, _ = judged(lambda a, b: "A")  # always the first slot: the orders disagree
    assert judgment.winner == "inconclusive" and judgment.orders == ["A", "A"]
    assert outcome_of(judgment) == "tie"


def test_a_tie_in_both_orders_is_a_tie() -> None:
    judgment, _ = judged(lambda a, b: "tie")
    assert judgment.winner == "tie" and outcome_of(judgment) == "tie"


def test_an_unparseable_reply_is_a_counted_failure() -> None:
    judgment, _ = judged(lambda a, b: "A" if a.startswith("long") else "I cannot decide")
    assert judgment.parse_failures == 1 and outcome_of(judgment) == "judge_failure"


class _EchoState(TypedDict, total=False):
    task: str
    final_answer: str | None
    stop_reason: str | None


def _echo_build(models: Sequence[ModelClient], settings: Mapping[str, Any]) -> Any:
    async def answer(state: _EchoState, io: NodeIO) -> dict[str, Any]:
        out = await generate(io, models[0], "GRAPH " + state["task"], node="answer")
        return {"final_answer": str(out.value) if out.ok else None, "stop_reason": "completed"}

    graph = StateGraph(_EchoState)
    graph.add_node("answer", dual_node(answer, name="answer"))
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph


@pytest.fixture
def echo_pattern() -> Any:
    pattern = register_pattern(
        Pattern(
            name="test-echo",
            summary="one call with a marker (tests)",
            formats=frozenset({"questions"}),
            build=_echo_build,
            graph_input=lambda item: {"task": item.prompt},
            single_prompt=lambda item: item.prompt,
        )
    )
    yield pattern
    PATTERNS.pop(pattern.name)


def test_judged_eval_counts_every_outcome_and_stays_blind(
    echo_pattern: Pattern, questions_file: Path, tmp_path: Path
) -> None:
    def answer(messages: Any) -> str:
        text = prompt_text(messages)
        topic = re.search(r"topic (\d)", text).group(1)  # type: ignore[union-attr]
        return f"{'pattern' if text.startswith('GRAPH') else 'plain'} haiku {topic}"

    # Topic 0: the judge prefers the pattern's answer; topic 1: it always picks slot A (a tie);
    # topic 2: one of its replies is unparseable (a judge failure, counted).
    def pick(a: str, b: str) -> str:
        if "haiku 0" in a:
            return "A" if a.startswith("pattern") else "B"
        if "haiku 1" in a:
            return "A"
        return "A" if a.startswith("pattern") else "??"

    models = ScriptedChatModel(responder=answer)
    judge = judge_by(pick)

    def factory(spec: str, settings: Any) -> ModelClient:
        return client(judge) if spec == "fake:judge" else client(models)

    config = EvalConfig(
        pattern="test-echo", dataset=str(questions_file), judge_model="fake:judge", out=str(tmp_path / "o")
    )
    result = run_eval(config, models=factory, stream=None)
    assert [j.outcome for j in result.judgments] == ["win", "tie", "judge_failure"]
    # Two calls per item (both orders); the unparseable order was re-prompted by the seam first.
    assert [j.calls for j in result.judgments] == [2, 2, 4] and result.judgments[2].parse_failures == 1
    comparison = result.summary.comparisons[0]
    assert comparison.other == "single" and comparison.basis == "judge"
    stats = comparison.stats
    assert (stats.n, stats.wins, stats.ties, stats.losses, stats.judge_failures) == (3, 1, 2, 0, 1)
    assert stats.mean_diff == pytest.approx(1 / 3)
    for prompt in judge.prompt_texts:
        assert "graph" not in prompt.lower() and "single" not in prompt.lower()
    asked = [p for p in judge.prompt_texts if "did not match the required JSON schema" not in p]
    firsts = [SLOT.search(p).group(1) for p in asked]  # type: ignore[union-attr]
    assert len(asked) == 6
    assert sum(f.startswith("pattern") for f in firsts) == 3  # each answer shown first once per item
    by_arm = {a.arm: a for a in result.summary.arms}
    assert by_arm["graph"].preference == pytest.approx((1 + 2 / 2) / 3) and by_arm["single"].preference == 0.5
    report = result.report.read_text(encoding="utf-8")
    assert "judge failures" in report and "| single | judge | 3 | 1 | 2 | 0 | 1 |" in report


def test_a_missing_answer_decides_the_item_without_a_judge(
    echo_pattern: Pattern, questions_file: Path, tmp_path: Path
) -> None:
    models = ScriptedChatModel(
        responder=lambda m: {"raise": "auth"} if prompt_text(m).startswith("GRAPH") else "ok"
    )
    judge = judge_by(lambda a, b: "A")
    config = EvalConfig(
        pattern="test-echo",
        dataset=str(questions_file),
        n=1,
        judge_model="fake:judge",
        out=str(tmp_path / "o"),
    )
    result = run_eval(config, models=lambda s, _: client(judge if s == "fake:judge" else models), stream=None)
    assert [j.outcome for j in result.judgments] == ["loss"] and judge.calls == 0
    assert result.judgments[0].note
