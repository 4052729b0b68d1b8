from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.graphs import RepairSettings, build_repair_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.types import Verdict
from tests.conftest import thread

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)


def exact(expected: str) -> Any:
    def check(candidate: str) -> Verdict:
        ok = candidate.strip() == expected
        return Verdict(
            passed=ok,
            score=1.0 if ok else 0.0,
            feedback="" if ok else f"expected {expected!r}, got {candidate!r}",
        )

    return check


def fake(*replies: Any, name: str = "scripted") -> tuple[ScriptedChatModel, ModelClient]:
    model = ScriptedChatModel(replies=list(replies), model_name=name)
    return model, ModelClient(model, retry=NO_WAIT)


def run(graph: Any, saver: Any, payload: dict[str, Any], tid: str = "t1") -> dict[str, Any]:
    return dict(graph.compile(checkpointer=saver).invoke(payload, thread(tid)))


def test_one_call_when_the_first_answer_passes(saver: Any) -> None:
    model, client = fake("42")
    out = run(build_repair_graph(verifier=exact("42"), model=client), saver, {"task": "6*7?"})
    assert out["passed"] is True and out["stop_reason"] == "passed"
    assert out["final_answer"] == "42" and out["attempts"] == 1
    assert model.calls == 1 and out["usage"].total.calls == 1


def test_repair_prompt_carries_every_failure(saver: Any) -> None:
    model, client = fake("40", "41", "42")
    out = run(build_repair_graph(verifier=exact("42"), model=client), saver, {"task": "6*7?"})
    assert out["stop_reason"] == "passed" and out["attempts"] == 3
    third = model.prompt_texts[2]
    assert "6*7?" in third
    for earlier in ("40", "41"):
        assert earlier in third and f"expected '42', got '{earlier}'" in third
    assert [a.answer for a in out["history"]] == ["40", "41", "42"]
    assert [a.passed for a in out["history"]] == [False, False, True]


def test_roster_rotates_on_failure_and_records_models(saver: Any) -> None:
    _, a = fake("1", "3", name="a")
    _, b = fake("2", name="b")
    out = run(build_repair_graph(verifier=exact("3"), roster=[a, b]), saver, {"task": "t"})
    assert [x.model for x in out["history"]] == ["fake:a", "fake:b", "fake:a"]
    assert set(out["usage"].by_model) == {"fake:a", "fake:b"}


def test_max_attempts_stop_returns_the_best_attempt(saver: Any) -> None:
    def scored(candidate: str) -> Verdict:
        return Verdict(passed=False, score=float(candidate) / 10, feedback=f"score {candidate}")

    _, client = fake("3", "7", "5")
    out = run(build_repair_graph(verifier=scored, model=client), saver, {"task": "t"})
    assert out["stop_reason"] == "max_attempts" and out["passed"] is False
    assert out["final_answer"] == "7"


def test_no_progress_stop_on_the_same_failure_twice(saver: Any) -> None:
    _, client = fake("x", "x", "unused")
    graph = build_repair_graph(verifier=exact("y"), model=client, settings=RepairSettings(max_attempts=5))
    out = run(graph, saver, {"task": "t"})
    assert out["stop_reason"] == "no_progress" and out["attempts"] == 2


def test_budget_stop_keeps_the_partial_result(saver: Any) -> None:
    _, client = fake("a", "b", "c")
    graph = build_repair_graph(verifier=exact("z"), model=client, settings=RepairSettings(max_attempts=5))
    out = run(graph, saver, {"task": "t", "max_calls": 2})
    assert out["stop_reason"] == "budget" and out["usage"].total.calls == 2
    assert out["final_answer"] in ("a", "b") and out["passed"] is False


def test_model_failure_ends_with_error_and_counts_the_failed_call(saver: Any) -> None:
    _, client = fake({"raise": "auth"})
    out = run(build_repair_graph(verifier=exact("z"), model=client), saver, {"task": "t"})
    assert out["stop_reason"] == "error" and out["final_answer"] is None
    assert out["usage"].total.failed_calls == 1


def test_verifier_spec_in_the_input_overrides_the_factory(saver: Any) -> None:
    _, client = fake("(13 - 9) * (10 - 4)")
    out = run(
        build_repair_graph(verifier=exact("nope"), model=client),
        saver,
        {"task": "Use 4 9 10 13 to make 24", "verifier": "game24:4 9 10 13"},
    )
    assert out["passed"] is True


def test_async_invoke_matches_sync_invoke() -> None:
    _, client = fake("1", "2")
    graph = build_repair_graph(verifier=exact("2"), model=client).compile(checkpointer=InMemorySaver())
    out = asyncio.run(graph.ainvoke({"task": "t"}, thread()))
    assert out["passed"] is True and out["attempts"] == 2


def test_resume_after_an_exception_reruns_only_the_failed_node(saver: Any) -> None:
    calls: list[str] = []

    def flaky(candidate: str) -> Verdict:
        calls.append(candidate)
        if len(calls) == 2:
            raise KeyboardInterrupt  # not turned into a verdict: the run stops here
        return Verdict(passed=candidate == "b", feedback="wrong")

    model, client = fake("a", "b")
    graph = build_repair_graph(verifier=flaky, model=client).compile(checkpointer=saver)
    with pytest.raises(KeyboardInterrupt):
        graph.invoke({"task": "t"}, thread())
    assert model.calls == 2
    out = graph.invoke(None, thread())
    assert out["passed"] is True and model.calls == 2  # no model call repeated
    assert calls == ["a", "b", "b"]


def test_empty_roster_is_rejected_at_build_time() -> None:
    with pytest.raises(ValueError, match="roster is empty"):
        build_repair_graph(verifier=exact("x"), roster=[])


def test_topology_snapshot() -> None:
    _, client = fake()
    drawing = build_repair_graph(verifier=exact("x"), model=client).compile().get_graph().draw_mermaid()
    edges = sorted(line.strip() for line in drawing.splitlines() if "-->" in line or "-.->" in line)
    assert edges == [
        "__start__ --> start;",
        "finish --> __end__;",
        "generate -.-> finish;",
        "generate -.-> verify;",
        "repair -.-> finish;",
        "repair -.-> verify;",
        "start --> generate;",
        "verify -.-> finish;",
        "verify -.-> repair;",
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(max_calls=st.integers(1, 8), attempts=st.integers(1, 6), failures=st.lists(st.booleans(), max_size=12))
def test_budget_is_never_exceeded(max_calls: int, attempts: int, failures: list[bool]) -> None:
    replies: list[Any] = [{"raise": "transient"} if f else f"w{i}" for i, f in enumerate(failures)]
    replies += [f"w{i}" for i in range(len(failures), len(failures) + 20)]
    model = ScriptedChatModel(replies=replies)
    graph = build_repair_graph(
        verifier=exact("never"),
        model=ModelClient(model, retry=NO_WAIT),
        settings=RepairSettings(max_attempts=attempts, stop_on_no_progress=False),
    ).compile()
    out = graph.invoke({"task": "t", "max_calls": max_calls})
    assert out["usage"].total.calls <= max_calls
    assert model.calls == out["usage"].total.calls
    assert out["stop_reason"] in ("budget", "max_attempts", "error")


# --- tools on the generate and repair steps ----------------------------------------------------------


def test_tools_let_a_step_check_its_candidate_before_submitting(saver: Any) -> None:
    from reasoning_graphs.nodes import verifier_tool

    model, client = fake(
        {"tool_calls": [{"name": "check_answer", "args": {"candidate": "41"}}]},
        "42",
    )
    check = exact("42")
    graph = build_repair_graph(verifier=check, model=client, tools=[verifier_tool(check)])
    out = run(graph, saver, {"task": "6*7?"})
    assert out["passed"] is True and out["attempts"] == 1 and out["final_answer"] == "42"
    assert [(r.tool, r.result) for r in out["tool_calls"]] == [
        ("check_answer", "failed: expected '42', got '41'")
    ]
    assert out["usage"].total.calls == 2 == model.calls and out["usage"].by_node["generator"].calls == 2
    assert model.tool_names == [["check_answer"], ["check_answer"]]


def test_tool_factories_get_each_role_projection(saver: Any) -> None:
    from langchain_core.tools import BaseTool, tool

    from reasoning_graphs.nodes import ToolFactory

    seen_labels: list[list[str]] = []

    def build(seen: Any) -> list[BaseTool]:
        seen_labels.append(sorted(seen))

        @tool
        def noop() -> str:
            """Do nothing."""
            return "ok"

        return [noop]

    _, client = fake("a", "b")
    graph = build_repair_graph(verifier=exact("b"), model=client, tools=[ToolFactory(build)])
    out = run(graph, saver, {"task": "t"})
    assert out["passed"] is True
    assert seen_labels == [["task"], ["attempt:1", "task"]]


def test_budget_runs_out_inside_a_tool_loop(saver: Any) -> None:
    from langchain_core.tools import tool

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    looping = {"tool_calls": [{"name": "ping", "args": {}}]}
    model, client = fake(looping, looping, looping, looping)
    graph = build_repair_graph(verifier=exact("x"), model=client, tools=[ping])
    out = run(graph, saver, {"task": "t", "max_calls": 2})
    assert out["stop_reason"] == "budget" and out["usage"].total.calls == 2 == model.calls
    assert out["final_answer"] is None and len(out["tool_calls"]) == 1


def test_approval_pauses_then_accepts(saver: Any) -> None:
    from langgraph.types import Command

    model, client = fake("42")
    graph = build_repair_graph(verifier=exact("42"), model=client, settings=RepairSettings(approve=True))
    compiled = graph.compile(checkpointer=saver)
    compiled.invoke({"task": "6*7?"}, thread())
    state = compiled.get_state(thread())
    (pending,) = [i.value for t in state.tasks for i in t.interrupts]
    assert state.next == ("approve",) and pending["kind"] == "approval" and pending["answer"] == "42"
    out = compiled.invoke(Command(resume={"approved": True}), thread())
    assert out["passed"] is True and out["stop_reason"] == "passed" and model.calls == 1


def test_approval_rejection_is_repaired_against(saver: Any) -> None:
    from langgraph.types import Command

    model, client = fake("42", "forty-two")

    def check(candidate: str) -> Verdict:
        return Verdict(passed=True, score=1.0)

    graph = build_repair_graph(verifier=check, model=client, settings=RepairSettings(approve=True))
    compiled = graph.compile(checkpointer=saver)
    compiled.invoke({"task": "6*7 in words?"}, thread())
    compiled.invoke(Command(resume={"approved": False, "feedback": "write it in words"}), thread())
    assert "A reviewer rejected this answer: write it in words" in model.prompt_texts[1]
    out = compiled.invoke(Command(resume={"approved": True}), thread())
    assert out["final_answer"] == "forty-two" and out["passed"] is True
    assert [(a.answer, a.passed) for a in out["history"]] == [("42", False), ("forty-two", True)]
    assert out["history"][0].feedback == "A reviewer rejected this answer: write it in words"


def test_approval_topology_snapshot() -> None:
    _, client = fake()
    graph = build_repair_graph(verifier=exact("x"), model=client, settings=RepairSettings(approve=True))
    drawing = graph.compile().get_graph().draw_mermaid()
    edges = {line.strip() for line in drawing.splitlines() if "->" in line}
    assert {"verify -.-> approve;", "approve -.-> repair;", "approve -.-> finish;"} <= edges


def test_limits_can_come_from_the_run_context() -> None:
    _, client = fake("a", "b", "c")
    graph = build_repair_graph(verifier=exact("z"), model=client).compile()
    out = graph.invoke({"task": "t"}, context={"max_calls": 1})
    assert out["stop_reason"] == "budget" and out["usage"].total.calls == 1
