from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs.dialectic import (
    ANTITHESIS_PROMPT,
    JUDGE_PROMPT,
    SYNTHESIS_PROMPT,
    THESIS_PROMPT,
    DialecticSettings,
    build_dialectic_graph,
)
from reasoning_graphs.models import ModelClient, ModelSettings, RetrySettings, resolve
from reasoning_graphs.testing import ScriptedChatModel, ScriptExhausted, prompt_text
from tests.conftest import DATA, thread

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)
TASK = "Is a hot dog a sandwich? TASK-MARKER"
MARKERS = {
    "thesis": "Write a complete, well-argued answer",
    "antithesis": "Argue against the thesis",
    "synthesis": "Write a new, complete answer",
    "judge": "Judge the answer below",
}
CANARIES = ("TH1", "AN1", "SY1", "AN2", "SY2", "AN3", "SY3")


class Crash(BaseException):
    """Stands for a process dying mid-node: not a model error, so nothing turns it into a state."""


def verdict(score: Any, decision: str = "continue") -> str:
    return json.dumps({"rationale": "because", "score": score, "decision": decision})


class Script:
    """Replies per role, picked by the role's prompt marker (so parallel-safe and order-checked)."""

    def __init__(self, **queues: Iterable[Any]) -> None:
        self.queues = {role: list(queue) for role, queue in queues.items()}
        self.prompts: dict[str, list[str]] = {role: [] for role in MARKERS}

    def __call__(self, messages: list[BaseMessage]) -> Any:
        text = prompt_text(messages)
        for role, marker in MARKERS.items():
            if marker in text:
                self.prompts[role].append(text)
                queue = self.queues.get(role) or []
                if not queue:
                    raise ScriptExhausted(f"no {role} reply left")
                reply = queue.pop(0)
                if isinstance(reply, BaseException):
                    raise reply
                return reply
        raise ScriptExhausted(f"unknown prompt {text[:200]!r}")


def scripted(script: Script, name: str = "m") -> tuple[ScriptedChatModel, ModelClient]:
    model = ScriptedChatModel(responder=script, model_name=name)
    return model, ModelClient(model, retry=NO_WAIT)


def three_rounds(scores: tuple[Any, Any, Any] = (5, 8, 6)) -> Script:
    return Script(
        thesis=["TH1"],
        antithesis=["AN1", "AN2", "AN3"],
        synthesis=["SY1", "SY2", "SY3"],
        judge=[verdict(s) for s in scores],
    )


def run(graph: Any, saver: Any, payload: dict[str, Any] | None, tid: str = "t1") -> dict[str, Any]:
    return dict(graph.compile(checkpointer=saver).invoke(payload, thread(tid)))


def canaries_in(text: str) -> set[str]:
    return {c for c in CANARIES if c in text}


def test_the_final_answer_is_the_best_scored_synthesis_not_the_last(saver: Any) -> None:
    model, client = scripted(three_rounds())
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK})
    assert out["stop_reason"] == "max_rounds" and out["final_answer"] == "SY2" and out["best_round"] == 2
    assert [(r.number, r.thesis, r.antithesis, r.synthesis) for r in out["rounds"]] == [
        (1, "TH1", "AN1", "SY1"),
        (2, "SY1", "AN2", "SY2"),
        (3, "SY2", "AN3", "SY3"),
    ]
    assert [(r.verdict.score, r.verdict.decision) for r in out["rounds"] if r.verdict] == [
        (5, "continue"),
        (8, "continue"),
        (6, "continue"),
    ]
    assert out["rounds"][0].models == {
        "thesis": "fake:m",
        "antithesis": "fake:m",
        "synthesis": "fake:m",
        "judge": "fake:m",
    }
    assert model.calls == 10 and out["usage"].total.calls == 10 and out["judge_failures"] == 0


def test_each_role_prompt_holds_exactly_what_its_access_list_allows(saver: Any) -> None:
    script = three_rounds()
    _, client = scripted(script, name="secret-model")
    graph = build_dialectic_graph(model=client).compile(checkpointer=saver)
    graph.invoke({"task": TASK}, thread())
    p = script.prompts
    assert canaries_in(p["thesis"][0]) == set()
    assert [canaries_in(x) for x in p["antithesis"]] == [{"TH1"}, {"SY1"}, {"SY2"}]
    assert [canaries_in(x) for x in p["synthesis"]] == [{"TH1", "AN1"}, {"SY1", "AN2"}, {"SY2", "AN3"}]
    assert [canaries_in(x) for x in p["judge"]] == [{"SY1"}, {"SY2"}, {"SY3"}]
    for prompt in (x for prompts in p.values() for x in prompts):
        assert "TASK-MARKER" in prompt and "secret-model" not in prompt
    reads = [(r.node, r.labels) for r in graph.get_state(thread()).values["reads"]]
    assert reads[:5] == [
        ("proposer", ["task"]),
        ("opponent", ["task", "thesis:1"]),
        ("synthesizer", ["antithesis:1", "task", "thesis:1"]),
        ("judge", ["synthesis:1", "task"]),
        ("opponent", ["task", "thesis:2"]),
    ]


def test_judge_stop_ends_after_the_round(saver: Any) -> None:
    model, client = scripted(
        Script(thesis=["TH1"], antithesis=["AN1"], synthesis=["SY1"], judge=[verdict(9, "stop")])
    )
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK})
    assert out["stop_reason"] == "judge_stop" and out["final_answer"] == "SY1" and model.calls == 4


@pytest.mark.parametrize(
    ("second", "threshold"),
    [("  sy  ONE\n", 1.0), ("the answer is forty two", 0.6)],
)
def test_converged_when_the_synthesis_stops_changing(saver: Any, second: str, threshold: float) -> None:
    first = "sy one" if threshold == 1.0 else "the answer is forty-two"
    script = Script(
        thesis=["TH1"], antithesis=["AN1", "AN2"], synthesis=[first, second], judge=[verdict(4), verdict(3)]
    )
    _, client = scripted(script)
    cfg = DialecticSettings(max_rounds=5, convergence_threshold=threshold)
    out = run(build_dialectic_graph(model=client, settings=cfg), saver, {"task": TASK})
    assert out["stop_reason"] == "converged" and len(out["rounds"]) == 2
    assert out["final_answer"] == first  # still the best-scored one


def test_a_new_round_starts_only_when_its_three_calls_fit(saver: Any) -> None:
    model, client = scripted(three_rounds())
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK, "max_calls": 6})
    assert out["stop_reason"] == "budget" and model.calls == 4 and out["final_answer"] == "SY1"


def test_budget_mid_round_returns_the_thesis_and_a_partial_round(saver: Any) -> None:
    model, client = scripted(three_rounds())
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK, "max_calls": 2})
    assert out["stop_reason"] == "budget" and model.calls == 2
    assert out["final_answer"] == "TH1" and out["best_round"] is None
    (partial,) = out["rounds"]
    assert partial.antithesis == "AN1" and partial.synthesis is None and partial.verdict is None


def test_a_token_budget_stops_after_the_call_that_spent_it(saver: Any) -> None:
    model, client = scripted(three_rounds())
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK, "max_tokens": 1, "max_calls": 5})
    assert model.calls == 1  # tokens are only known after a call: the first one is allowed
    assert out["stop_reason"] == "budget" and out["final_answer"] == "TH1"


def test_a_failed_step_ends_with_error_and_keeps_the_thesis(saver: Any) -> None:
    _, client = scripted(Script(thesis=["TH1"], antithesis=[{"raise": "auth"}]))
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK})
    assert out["stop_reason"] == "error" and out["final_answer"] == "TH1"
    assert out["usage"].total.failed_calls == 1 and out["rounds"][0].antithesis is None


def test_a_broken_judge_reply_is_repaired_by_the_seam(saver: Any) -> None:
    script = Script(
        thesis=["TH1"], antithesis=["AN1"], synthesis=["SY1"], judge=["score: great", verdict(7, "stop")]
    )
    _, client = scripted(script)
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK})
    assert out["stop_reason"] == "judge_stop" and out["judge_failures"] == 0
    assert out["rounds"][0].verdict.score == 7 and out["usage"].total.schema_repairs == 1


def test_a_judge_that_keeps_failing_is_counted_and_never_crashes_the_run(saver: Any) -> None:
    broken = ['{"score": "high"}', "nope", '{"decision": "maybe"}']
    script = Script(
        thesis=["TH1"], antithesis=["AN1", "AN2"], synthesis=["SY1", "SY2"], judge=[*broken, verdict(3)]
    )
    _, client = scripted(script)
    out = run(
        build_dialectic_graph(model=client, settings=DialecticSettings(max_rounds=2)), saver, {"task": TASK}
    )
    assert out["stop_reason"] == "max_rounds" and out["judge_failures"] == 1
    first = out["rounds"][0].verdict
    assert first.score is None and first.decision is None and "schema" in (first.error or "")
    assert out["final_answer"] == "SY2" and out["best_round"] == 2  # the only scored synthesis


def test_without_any_score_the_last_synthesis_is_returned(saver: Any) -> None:
    script = Script(thesis=["TH1"], antithesis=["AN1"], synthesis=["SY1"], judge=["x", "y", "z"])
    _, client = scripted(script)
    out = run(
        build_dialectic_graph(model=client, settings=DialecticSettings(max_rounds=1)), saver, {"task": TASK}
    )
    assert out["stop_reason"] == "max_rounds" and out["final_answer"] == "SY1" and out["judge_failures"] == 1


def test_out_of_range_scores_are_clamped_with_a_warning(saver: Any) -> None:
    _, client = scripted(three_rounds((15, 0, -3)))
    out = run(build_dialectic_graph(model=client), saver, {"task": TASK})
    assert [r.verdict.score for r in out["rounds"] if r.verdict] == [10, 1, 1]
    assert "clamped" in out["rounds"][0].verdict.warnings[0] and out["final_answer"] == "SY1"


def test_roles_rotate_over_the_roster(saver: Any) -> None:
    script = three_rounds()
    pairs = [scripted(script, name=n) for n in ("a", "b", "c")]
    graph = build_dialectic_graph(roster=[c for _, c in pairs], settings=DialecticSettings(max_rounds=2))
    out = run(graph, saver, {"task": TASK})
    assert [r.models for r in out["rounds"]] == [
        {"thesis": "fake:a", "antithesis": "fake:b", "synthesis": "fake:c", "judge": "fake:a"},
        {"thesis": "fake:c", "antithesis": "fake:a", "synthesis": "fake:b", "judge": "fake:c"},
    ]


def test_resume_after_a_crash_mid_run_repeats_no_completed_call(saver: Any) -> None:
    script = Script(
        thesis=["TH1"], antithesis=["AN1", "AN2"], synthesis=["SY1", Crash("died")], judge=[verdict(5)]
    )
    crashed, client = scripted(script)
    graph = build_dialectic_graph(model=client).compile(checkpointer=saver)
    with pytest.raises(Crash):
        graph.invoke({"task": TASK}, thread())
    assert crashed.calls == 6
    fixed_script = Script(synthesis=["SY2", "SY3"], antithesis=["AN3"], judge=[verdict(9), verdict(2)])
    fixed, fixed_client = scripted(fixed_script)
    out = build_dialectic_graph(model=fixed_client).compile(checkpointer=saver).invoke(None, thread())
    assert out["stop_reason"] == "max_rounds" and out["final_answer"] == "SY2"
    assert fixed.calls == 5 and crashed.calls == 6  # round 2's synthesis and judge, then round 3
    assert canaries_in(fixed_script.prompts["synthesis"][0]) == {"SY1", "AN2"}
    assert [r.number for r in out["rounds"]] == [1, 2, 3]


def test_missing_task_fails_before_any_call(saver: Any) -> None:
    model, client = scripted(three_rounds())
    with pytest.raises(InputError, match="task"):
        run(build_dialectic_graph(model=client), saver, {})
    assert model.calls == 0


def test_bad_arguments_are_rejected_at_build_time() -> None:
    with pytest.raises(ValueError, match="roster is empty"):
        build_dialectic_graph(roster=[])
    with pytest.raises(ValueError, match="criterion"):
        build_dialectic_graph(settings=DialecticSettings(criteria=("clarity", " ")))
    with pytest.raises(ValueError, match="criterion"):
        build_dialectic_graph(settings=DialecticSettings(criteria=()))


def test_topology_snapshot() -> None:
    drawing = build_dialectic_graph(model=scripted(Script())[1]).compile().get_graph().draw_mermaid()
    edges = sorted(line.strip() for line in drawing.splitlines() if "-->" in line or "-.->" in line)
    assert edges == [
        "__start__ --> start;",
        "antithesis -.-> finish;",
        "antithesis -.-> synthesis;",
        "finish --> __end__;",
        "judge -.-> finish;",
        "judge -.-> next_round;",
        "next_round --> antithesis;",
        "start -.-> finish;",
        "start -.-> thesis;",
        "synthesis -.-> finish;",
        "synthesis -.-> judge;",
        "thesis -.-> antithesis;",
        "thesis -.-> finish;",
    ]


def test_async_invoke_matches_sync_invoke() -> None:
    results = []
    for mode in ("sync", "async"):
        _, client = scripted(three_rounds())
        graph = build_dialectic_graph(model=client).compile(checkpointer=InMemorySaver())
        if mode == "sync":
            results.append(dict(graph.invoke({"task": TASK}, thread())))
        else:
            results.append(dict(asyncio.run(graph.ainvoke({"task": TASK}, thread()))))
    sync, async_ = results
    for key in ("final_answer", "stop_reason", "rounds", "best_round", "judge_failures", "usage"):
        assert sync[key] == async_[key], key


def test_every_prompt_renders() -> None:
    assert "T" in THESIS_PROMPT.render(task="T")
    assert "X" in ANTITHESIS_PROMPT.render(task="T", thesis="X")
    assert "Y" in SYNTHESIS_PROMPT.render(task="T", thesis="X", antithesis="Y")
    assert "- c" in JUDGE_PROMPT.render(criteria="- c", task="T", synthesis="S")


JUDGE_REPLIES: list[Any] = ["bad", verdict(5), verdict(7, "stop"), {"raise": "transient"}]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    max_calls=st.integers(1, 14),
    rounds=st.integers(1, 4),
    judge=st.lists(st.sampled_from(JUDGE_REPLIES), max_size=12),
)
def test_budget_is_never_exceeded(max_calls: int, rounds: int, judge: list[Any]) -> None:
    script = Script(
        thesis=["t"],
        antithesis=[f"a{i}" for i in range(9)],
        synthesis=[f"s{i} words" for i in range(9)],
        judge=[*judge, *[verdict(4)] * 30],
    )
    model, client = scripted(script)
    graph = build_dialectic_graph(model=client, settings=DialecticSettings(max_rounds=rounds)).compile()
    out = graph.invoke({"task": TASK, "max_calls": max_calls})
    assert out["usage"].total.calls <= max_calls and model.calls == out["usage"].total.calls
    assert len(out["rounds"]) <= rounds
    assert out["stop_reason"] in ("budget", "max_rounds", "judge_stop", "converged")


@pytest.mark.local_model
def test_a_real_run_on_the_embedded_model_ends_consistently(tmp_path: Any) -> None:
    from reasoning_graphs.checkpoints import open_saver

    question = json.loads((DATA / "mt_bench_questions.jsonl").read_text().splitlines()[1])["turns"][0]
    local = resolve("local:smollm2", ModelSettings(max_tokens=64, temperature=0.0))
    graph_def = build_dialectic_graph(model=local, settings=DialecticSettings(max_rounds=1))
    with open_saver(tmp_path / "runs.sqlite") as saver:
        out = graph_def.compile(checkpointer=saver).invoke({"task": question, "max_calls": 10}, thread())
    assert out["stop_reason"] in ("judge_stop", "max_rounds", "budget", "error")
    assert 1 <= len(out["rounds"]) <= 1 and out["usage"].total.calls <= 10
    (only,) = out["rounds"]
    assert only.thesis and only.models["thesis"] == "local:smollm2"
    if only.verdict is not None and only.verdict.score is not None:
        assert 1 <= only.verdict.score <= 10 and out["final_answer"] == only.synthesis
    assert out["judge_failures"] == (1 if only.verdict is not None and only.verdict.score is None else 0)
