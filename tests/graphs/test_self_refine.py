from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.graphs.self_refine import SelfRefineSettings, build_self_refine_graph, select_candidate
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.types import Verdict
from tests.conftest import thread

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)


def critique(*problems: str, ok: bool = False) -> str:
    return json.dumps(
        {"problems": list(problems), "suggestions": [f"fix {p}" for p in problems], "acceptable": ok}
    )


def seam(*replies: Any) -> tuple[ScriptedChatModel, ModelClient]:
    fake = ScriptedChatModel(replies=list(replies))
    return fake, ModelClient(fake, retry=NO_WAIT)


def run(
    saver: Any, settings: SelfRefineSettings, *replies: Any, **kw: Any
) -> tuple[dict[str, Any], ScriptedChatModel]:
    fake, client = seam(*replies)
    graph = build_self_refine_graph(model=client, settings=settings, **kw).compile(checkpointer=saver)
    return dict(graph.invoke({"task": "What is 6*7?"}, thread())), fake


def test_generate_critique_refine_with_the_last_policy(saver: Any) -> None:
    out, fake = run(saver, SelfRefineSettings(max_refinements=2), "41", critique("off by one"), "42",
                    critique("CANARY-C2"), "The answer is 42")  # fmt: skip
    assert [c.answer for c in out["candidates"]] == ["41", "42", "The answer is 42"]
    assert out["selected"] == 2 and out["final_answer"] == "The answer is 42"
    assert out["stop_reason"] == "max_rounds" and fake.calls == 5
    refine_prompt = fake.prompt_texts[2]
    assert "41" in refine_prompt and "off by one" in refine_prompt
    # The critic sees only the latest draft, never an earlier critique.
    second_critique_prompt = fake.prompt_texts[3]
    assert "42" in second_critique_prompt and "off by one" not in second_critique_prompt


def test_critic_acceptance_stops_early(saver: Any) -> None:
    out, fake = run(saver, SelfRefineSettings(max_refinements=3), "42", critique(ok=True))
    assert out["stop_reason"] == "judge_stop" and fake.calls == 2 and out["final_answer"] == "42"


def test_plurality_policy_picks_the_most_frequent_answer(saver: Any) -> None:
    settings = SelfRefineSettings(max_refinements=3, policy="plurality", answer_format="number")
    out, _ = run(
        saver, settings, "It is 42", critique("x"), "43", critique("y"), "answer: 42.", critique("z"), "44"
    )
    assert [c.key for c in out["candidates"]] == ["42", "43", "42", "44"]
    assert out["selected"] == 2 and out["final_answer"] == "answer: 42."


def test_convergence_policy_stops_when_the_answer_repeats(saver: Any) -> None:
    settings = SelfRefineSettings(max_refinements=5, policy="convergence", answer_format="number")
    out, fake = run(saver, settings, "40", critique("a"), "42", critique("b"), "So 42")
    assert out["stop_reason"] == "converged" and out["final_answer"] == "So 42" and fake.calls == 5


def test_checker_policy_uses_an_oracle_free_checker(saver: Any) -> None:
    def short(candidate: str) -> Verdict:
        return Verdict(passed=len(candidate) < 5, score=1.0 / len(candidate))

    settings = SelfRefineSettings(max_refinements=2, policy="checker")
    out, _ = run(saver, settings, "42", critique("x"), "a long answer", critique("y"), "forty-two",
                 checker=short)  # fmt: skip
    assert out["selected"] == 0 and out["final_answer"] == "42"


def test_checker_policy_without_a_checker_asks_the_model(saver: Any) -> None:
    settings = SelfRefineSettings(max_refinements=1, policy="checker")
    fake = ScriptedChatModel(responder=lambda m: _by_prompt(m))
    graph = build_self_refine_graph(model=ModelClient(fake, retry=NO_WAIT), settings=settings)
    out = graph.compile(checkpointer=saver).invoke({"task": "What is 6*7?"}, thread())
    assert out["final_answer"] == "42" and out["selected"] == 0


def _by_prompt(messages: Any) -> str:
    text = " ".join(str(m.content) for m in messages)
    if "Score the response" in text:
        return json.dumps({"correctness": 9 if "Response:\n42" in text else 2})
    if "Find concrete problems" in text:
        return critique("check it")
    if "previous answer" in text:
        return "41"
    return "42"


def test_verifier_reports_passed_without_choosing(saver: Any) -> None:
    out, _ = run(saver, SelfRefineSettings(max_refinements=1), "42", critique("x"), "41",
                 verifier=lambda c: Verdict(passed=c == "42"))  # fmt: skip
    assert out["final_answer"] == "41" and out["passed"] is False


def test_budget_stop_keeps_candidates(saver: Any) -> None:
    _, client = seam("41", critique("x"), "42", critique("y"), "43")
    graph = build_self_refine_graph(model=client, settings=SelfRefineSettings(max_refinements=5))
    out = graph.compile(checkpointer=saver).invoke({"task": "t", "max_calls": 3}, thread())
    assert out["stop_reason"] == "budget" and out["usage"].total.calls <= 3
    assert out["final_answer"] in ("41", "42")


def test_model_error_ends_with_error(saver: Any) -> None:
    out, _ = run(saver, SelfRefineSettings(), {"raise": "auth"})
    assert out["stop_reason"] == "error" and out["final_answer"] is None


def test_select_candidate_policies() -> None:
    assert select_candidate([], "last") is None
    assert select_candidate(["a", "b", "a", "b"], "plurality") == 3
    assert select_candidate(["a", "b"], "checker", [0.9, None]) == 0
    assert select_candidate(["a", "b", "b"], "convergence") == 2
    assert select_candidate(["a", "b", "a", "c"], "convergence") == 2


def test_checker_needs_the_checker_policy() -> None:
    with pytest.raises(ValueError, match="policy='checker'"):
        build_self_refine_graph(checker=lambda c: Verdict(passed=True))


def test_ainvoke_parity() -> None:
    _, client = seam("42", critique(ok=True))
    graph = build_self_refine_graph(model=client).compile(checkpointer=InMemorySaver())
    out = asyncio.run(graph.ainvoke({"task": "t"}, thread()))
    assert out["final_answer"] == "42" and out["stop_reason"] == "judge_stop"


def test_topology_snapshot() -> None:
    drawing = build_self_refine_graph(model=seam()[1]).compile().get_graph().draw_mermaid()
    edges = sorted(line.strip() for line in drawing.splitlines() if "->" in line)
    assert edges == [
        "__start__ --> start;",
        "critique -.-> refine;",
        "critique -.-> select;",
        "generate -.-> critique;",
        "generate -.-> select;",
        "refine -.-> critique;",
        "refine -.-> select;",
        "select --> __end__;",
        "start --> generate;",
    ]
