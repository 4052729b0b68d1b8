from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.evals import PATTERNS, EvalConfig, EvalItem, load_dataset, run_eval
from reasoning_graphs.models import ModelClient, ModelSettings
from reasoning_graphs.testing import ScriptedChatModel, prompt_text
from tests.evals.conftest import QUESTIONS, client, question_of, right_after, shared

ITEMS = {
    "gsm8k": EvalItem(id="gsm8k/0", prompt="Q? End with 'The answer is N.'", raw="Q?", verifier="numeric:5"),
    "game24": EvalItem(
        id="game24/1", prompt="Use the numbers 4 9 10 13 ...", raw="4 9 10 13", verifier="game24:4 9 10 13"
    ),
    "questions": EvalItem(
        id="q/1", prompt="Write a haiku about the sea.", raw="Write a haiku about the sea."
    ),
}


class _FirstCall(BaseException):
    """Raised by the fake on its first call: the graph's first prompt has been recorded."""


def _item_for(pattern: str) -> EvalItem:
    formats = PATTERNS[pattern].formats
    return (
        ITEMS["game24"]
        if "game24" in formats
        else ITEMS["gsm8k"]
        if "gsm8k" in formats
        else ITEMS["questions"]
    )


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_s_single_call_is_prompt_matched_to_its_first_generation(name: str) -> None:
    pattern, item = PATTERNS[name], _item_for(name)

    def stop(messages: Any) -> str:
        raise _FirstCall

    fake = ScriptedChatModel(responder=stop)
    graph = pattern.build([client(fake)], {}).compile()
    with pytest.raises(_FirstCall):
        graph.invoke(pattern.graph_input(item))
    first = fake.prompt_texts[0]
    single = pattern.single_prompt(item)
    if pattern.prompt_match == "exact":
        assert first == single
    else:
        assert item.raw in first and item.raw in single


def test_the_single_arm_sends_exactly_the_graph_s_first_prompt(gsm8k_file: Path, tmp_path: Path) -> None:
    fake = ScriptedChatModel(responder=right_after({QUESTIONS[0][0]: 1, QUESTIONS[1][0]: 2}))
    config = EvalConfig(
        pattern="repair", dataset=str(gsm8k_file), n=2, arms=("graph", "single"), out=str(tmp_path / "o")
    )
    result = run_eval(config, models=shared(fake), stream=None)
    prompts = fake.prompt_texts
    for question, _ in QUESTIONS[:2]:
        about = [p for p in prompts if question_of(p) == question]
        graph_first, single = about[0], about[-1]
        assert single == graph_first  # the graph's first generation and the plain call: same text
        assert len(about) == {QUESTIONS[0][0]: 2, QUESTIONS[1][0]: 3}[question] + 1
    graph = [r for r in result.records if r.arm == "graph"]
    assert [r.calls for r in graph] == [2, 3] and all(r.passed for r in graph)


def test_best_of_n_matches_the_graph_s_mean_calls(gsm8k_file: Path, tmp_path: Path) -> None:
    # Graph calls per item: 1, 3, 2, 2 -> mean 2 -> N = 2 for both sampling arms.
    failures = {QUESTIONS[0][0]: 0, QUESTIONS[1][0]: 2, QUESTIONS[2][0]: 1, QUESTIONS[3][0]: 1}
    fake = ScriptedChatModel(responder=right_after(failures))
    config = EvalConfig(pattern="repair", dataset=str(gsm8k_file), out=str(tmp_path / "o"))
    result = run_eval(config, models=shared(fake), stream=None)
    by_arm = {a.arm: a for a in result.summary.arms}
    assert set(by_arm) == {"graph", "single", "best_of_n", "self_consistency"}
    assert by_arm["graph"].mean_calls == 2.0 and result.summary.samples == 2
    for arm in ("best_of_n", "self_consistency"):
        assert by_arm[arm].mean_calls == 2.0
        assert all(r.samples == 2 and r.calls == 2 for r in result.records if r.arm == arm)
    assert by_arm["single"].mean_calls == 1.0


def _per_sample(answers: dict[int, str]) -> Any:
    """A factory whose client depends on the sample seed (sample i has seed 0 + i)."""
    clients = {
        seed: client(ScriptedChatModel(responder=lambda m, a=answer: a, model_name=f"s{seed}"))
        for seed, answer in answers.items()
    }
    base = client(ScriptedChatModel(responder=lambda m: "The answer is 5.", model_name="base"))

    def factory(spec: str, settings: ModelSettings) -> ModelClient:
        return clients[settings.seed or 0] if settings.temperature == 0.7 else base

    return factory


def test_best_of_n_uses_the_verifier_and_self_consistency_votes(gsm8k_file: Path, tmp_path: Path) -> None:
    answers = {0: "The answer is 7.", 1: "The answer is 5.", 2: "The answer is 7."}
    config = EvalConfig(
        pattern="repair",
        dataset=str(gsm8k_file),
        n=1,
        arms=("best_of_n", "self_consistency"),
        samples=3,
        out=str(tmp_path / "o"),
    )
    result = run_eval(config, models=_per_sample(answers), stream=None)
    best, vote = (
        next(r for r in result.records if r.arm == arm) for arm in ("best_of_n", "self_consistency")
    )
    assert best.answer == "The answer is 5." and best.passed is True  # the first sample that passes
    assert vote.answer == "The answer is 7." and vote.passed is False  # the majority, never the oracle
    assert best.any_passed is True and vote.any_passed is True
    assert best.models == ["fake:s0", "fake:s1", "fake:s2"]


def test_arms_that_would_change_oracle_access_are_refused(gsm8k_file: Path, questions_file: Path) -> None:
    fake = ScriptedChatModel(responder=lambda m: "x")
    with pytest.raises(InputError, match="oracle the graph lacks"):
        run_eval(
            EvalConfig(pattern="reflection", dataset=str(gsm8k_file), arms=("graph", "best_of_n")),
            models=shared(fake),
            stream=None,
        )
    with pytest.raises(InputError, match="short answers"):
        run_eval(
            EvalConfig(
                pattern="reflection", dataset=str(questions_file), arms=("self_consistency",), samples=2
            ),
            models=shared(fake),
            stream=None,
        )
    with pytest.raises(InputError, match="does not fit"):
        run_eval(EvalConfig(pattern="tot", dataset=str(questions_file)), models=shared(fake), stream=None)
    assert fake.calls == 0


def test_sampling_arms_without_the_graph_need_an_explicit_n(gsm8k_file: Path) -> None:
    with pytest.raises(InputError, match="--samples"):
        run_eval(
            EvalConfig(pattern="repair", dataset=str(gsm8k_file), arms=("best_of_n",)),
            models=shared(ScriptedChatModel(replies=[])),
            stream=None,
        )


def test_tot_game24_arms_run_with_the_verifier_gated_answer(tmp_path: Path) -> None:
    data = tmp_path / "game24.csv"
    data.write_text("Rank,Puzzles,AMT (s)\n1,4 9 10 13,5.0\n", encoding="utf-8")

    def respond(messages: Any) -> str:
        text = prompt_text(messages)
        if "Possible next steps" in text and "left: 4 9 10 13" not in text:
            if "Input: 4 9 10 13" in text:
                return "13 - 9 = 4 (left: 4 4 10)"
            if "Input: 4 4 10" in text:
                return "10 - 4 = 6 (left: 4 6)"
            return "4 * 6 = 24 (left: 24)"
        if "Evaluate if the given numbers" in text:
            return "sure"
        return "Answer: (10 - 4) * (13 - 9)"

    fake = ScriptedChatModel(responder=respond)
    settings = {"breadth": 1, "beam_width": 1, "value_samples": 1}
    config = EvalConfig(pattern="tot", dataset=str(data), settings=settings, out=str(tmp_path / "o"))
    result = run_eval(config, models=shared(fake), stream=None)
    graph = next(r for r in result.records if r.arm == "graph")
    assert graph.passed is True and graph.any_passed is True and graph.stop_reason == "passed"
    single = next(r for r in result.records if r.arm == "single")
    assert single.passed is True
    assert load_dataset(data).items[0].raw == "4 9 10 13"


def test_concurrent_items_give_the_same_records(gsm8k_file: Path, tmp_path: Path) -> None:
    failures = {QUESTIONS[1][0]: 2, QUESTIONS[2][0]: 1}
    runs = []
    for k in (1, 3):
        fake = ScriptedChatModel(responder=right_after(failures), latency=0.01)
        config = EvalConfig(
            pattern="repair", dataset=str(gsm8k_file), concurrency=k, out=str(tmp_path / f"k{k}")
        )
        runs.append(run_eval(config, models=shared(fake), stream=None))
    assert [r.comparable() for r in runs[0].records] == [r.comparable() for r in runs[1].records]
