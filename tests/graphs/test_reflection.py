from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs.reflection import (
    CRITIQUE_PROMPT,
    DRAFT_PROMPT,
    FRAME_PROMPT,
    SYNTHESIZE_PROMPT,
    ReflectionSettings,
    build_reflection_graph,
)
from reasoning_graphs.models import ModelClient, ModelSettings, RetrySettings, resolve
from reasoning_graphs.testing import ScriptedChatModel, prompt_text
from reasoning_graphs.types import Critique
from tests.conftest import DATA, thread

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)
TASK = "Name the largest planet. TASK-MARKER"
FRAME = json.dumps({"claims": ["CANARY-FRAME claim"], "agreements": ["agree"], "disagreements": ["differ"]})
CRITIQUE = json.dumps({"problems": ["CANARY-CRIT problem"], "suggestions": ["fix it"], "acceptable": False})
SYNTH = "CANARY-SYN final answer"
DRAFT_CANARIES = ["CANARY-D0", "CANARY-D1", "CANARY-D2"]


class Crash(BaseException):
    """Stands for a process dying mid-node: not a model error, so nothing turns it into a state."""


def fake(*replies: Any, name: str = "scripted") -> tuple[ScriptedChatModel, ModelClient]:
    model = ScriptedChatModel(replies=list(replies), model_name=name)
    return model, ModelClient(model, retry=NO_WAIT)


def drafters(texts: Sequence[Any] = DRAFT_CANARIES) -> tuple[list[ScriptedChatModel], list[ModelClient]]:
    pairs = [fake(text, name=f"m{i}") for i, text in enumerate(texts)]
    return [m for m, _ in pairs], [c for _, c in pairs]


def run(graph: Any, saver: Any, payload: dict[str, Any] | None, tid: str = "t1") -> dict[str, Any]:
    return dict(graph.compile(checkpointer=saver).invoke(payload, thread(tid)))


def canaries_in(text: str) -> set[str]:
    names = [*DRAFT_CANARIES, "CANARY-FRAME", "CANARY-CRIT", "CANARY-SYN"]
    return {name for name in names if name in text}


def test_completed_run_records_drafts_models_frame_critique_and_answer(saver: Any) -> None:
    models, roster = drafters()
    stage_model, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK})
    assert out["stop_reason"] == "completed" and out["final_answer"] == SYNTH
    assert [(d.label, d.text, d.model) for d in out["drafts"]] == [
        ("draft:0", "CANARY-D0", "fake:m0"),
        ("draft:1", "CANARY-D1", "fake:m1"),
        ("draft:2", "CANARY-D2", "fake:m2"),
    ]
    assert out["frame"].claims == ["CANARY-FRAME claim"] and out["frame"].disagreements == ["differ"]
    assert out["critique"].problems == ["CANARY-CRIT problem"] and out["critique"].acceptable is False
    assert out["heterogeneous"] is True
    assert [m.calls for m in models] == [1, 1, 1] and stage_model.calls == 3
    assert out["usage"].total.calls == 6 and out["usage"].by_node["gather"].calls == 3
    assert set(out["usage"].by_model) == {"fake:m0", "fake:m1", "fake:m2", "fake:stage"}


def test_each_stage_prompt_holds_exactly_what_its_access_list_allows(saver: Any) -> None:
    models, roster = drafters()
    stage_model, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
    graph = build_reflection_graph(roster=roster, model=stage).compile(checkpointer=saver)
    graph.invoke({"task": TASK}, thread())
    for model in models:  # drafters see only the task
        (prompt,) = model.prompt_texts
        assert "TASK-MARKER" in prompt and canaries_in(prompt) == set()
    frame, critique, synthesis = stage_model.prompt_texts
    assert canaries_in(frame) == set(DRAFT_CANARIES)
    assert canaries_in(critique) == {*DRAFT_CANARIES, "CANARY-FRAME"}
    assert canaries_in(synthesis) == {*DRAFT_CANARIES, "CANARY-FRAME", "CANARY-CRIT"}
    for prompt in (frame, critique, synthesis):  # blind: no producer models
        assert "TASK-MARKER" in prompt and "fake:m0" not in prompt
    reads = {r.node: r.labels for r in graph.get_state(thread()).values["reads"]}
    assert reads == {
        "drafter": ["task"],
        "framer": ["draft:0", "draft:1", "draft:2", "task"],
        "critic": ["draft:0", "draft:1", "draft:2", "frame", "task"],
        "synthesizer": ["critique", "draft:0", "draft:1", "draft:2", "frame", "task"],
    }


def test_a_sees_override_narrows_what_a_stage_reads(saver: Any) -> None:
    _, roster = drafters()
    stage_model, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
    cfg = ReflectionSettings(sees={"synthesizer": ("task", "critique")})
    out = run(build_reflection_graph(roster=roster, model=stage, settings=cfg), saver, {"task": TASK})
    assert out["stop_reason"] == "completed"
    assert canaries_in(stage_model.prompt_texts[2]) == {"CANARY-CRIT"}


def test_access_lists_off_inlines_every_prior_output_with_its_model(saver: Any) -> None:
    models, roster = drafters()
    stage_model, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
    cfg = ReflectionSettings(access_lists=False)
    graph = build_reflection_graph(roster=roster, model=stage, settings=cfg).compile(checkpointer=saver)
    out = graph.invoke({"task": TASK}, thread())
    assert out["stop_reason"] == "completed"
    frame, _, synthesis = stage_model.prompt_texts
    assert "(model: fake:m0)" in frame and "(model: fake:stage)" in synthesis
    assert canaries_in(synthesis) == {*DRAFT_CANARIES, "CANARY-FRAME", "CANARY-CRIT"}
    assert canaries_in(models[0].prompt_texts[0]) == set()  # drafters still see only the task
    access = graph.get_state(thread()).values["access"]
    assert access["synthesizer"].sees == ("*",) and not access["synthesizer"].blind
    assert access["drafter"].sees == ("task",)


@pytest.mark.parametrize("patterns", [("task", "draft:*"), ("task", "draft:1"), ("task", "frame"), ("*",)])
def test_independence_check_rejects_drafters_that_could_read_each_other(patterns: tuple[str, ...]) -> None:
    _, roster = drafters()
    with pytest.raises(ValueError, match="not independent"):
        build_reflection_graph(roster=roster, settings=ReflectionSettings(sees={"drafter": patterns}))


def test_independence_holds_for_the_default_and_for_a_one_member_roster() -> None:
    _, roster = drafters(["x"])
    build_reflection_graph(roster=roster)  # the proof runs for at least two members
    build_reflection_graph(roster=roster, settings=ReflectionSettings(sees={"framer": ("task", "draft:0")}))


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (ReflectionSettings(sees={"judge": ("task",)}), "unknown role"),
        (ReflectionSettings(sees={"critic": ("frame",)}), "must see 'task'"),
        (ReflectionSettings(access_lists=False, sees={"critic": ("task",)}), "needs access_lists=True"),
    ],
)
def test_bad_settings_are_rejected_at_build_time(cfg: ReflectionSettings, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_reflection_graph(roster=drafters()[1], settings=cfg)


def test_empty_roster_is_rejected_at_build_time() -> None:
    with pytest.raises(ValueError, match="roster is empty"):
        build_reflection_graph(roster=[])


def test_heterogeneous_flag_follows_the_distinct_model_ids(saver: Any) -> None:
    _, same = fake("a", "b", name="same")
    _, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
    out = run(build_reflection_graph(roster=[same, same], model=stage), saver, {"task": TASK})
    assert out["heterogeneous"] is False and {d.model for d in out["drafts"]} == {"fake:same"}
    single_model, single = fake("one", "two", "three", FRAME, CRITIQUE, SYNTH, name="solo")
    out = run(build_reflection_graph(model=single), saver, {"task": TASK}, tid="t2")
    assert out["heterogeneous"] is False and len(out["drafts"]) == 3 and single_model.calls == 6


def test_the_run_context_can_choose_the_roster(saver: Any, tmp_path: Path) -> None:
    specs = []
    for name in ("x", "y"):
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps([f"draft by {name}"]))
        specs.append(f"fake:{script}")
    _, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
    graph = build_reflection_graph(model=stage).compile(checkpointer=saver)
    out = graph.invoke({"task": TASK}, thread(), context={"roster": specs})
    assert out["stop_reason"] == "completed" and out["heterogeneous"] is True
    assert [(d.text, d.model) for d in out["drafts"]] == [("draft by x", specs[0]), ("draft by y", specs[1])]


def test_the_whole_gather_batch_must_fit_before_any_member_starts(saver: Any) -> None:
    models, roster = drafters()
    stage_model, stage = fake(name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK, "max_calls": 2})
    assert out["stop_reason"] == "budget" and out["final_answer"] is None
    assert [m.calls for m in models] == [0, 0, 0] and stage_model.calls == 0
    assert out["drafts"] == [] and out["usage"].total.calls == 0


def test_budget_after_gather_returns_the_most_central_draft(saver: Any) -> None:
    _, roster = drafters(["jupiter is largest", "jupiter is the giant", "saturn has rings"])
    stage_model, stage = fake(FRAME, name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK, "max_calls": 4})
    assert out["stop_reason"] == "budget" and out["usage"].total.calls == 4
    assert out["final_answer"] == "jupiter is largest"  # ties with draft 1 go to the lower index
    assert out["frame"] is not None and out["critique"] is None and stage_model.calls == 1


def test_a_failing_stage_ends_with_error_and_keeps_the_best_draft(saver: Any) -> None:
    _, roster = drafters(["same words here", "same words here too", "other"])
    _, stage = fake(FRAME, {"raise": "auth"}, name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK})
    assert out["stop_reason"] == "error" and out["final_answer"] == "same words here"
    assert out["usage"].total.failed_calls == 1 and out["critique"] is None


def test_a_failing_member_is_recorded_and_the_others_go_on(saver: Any) -> None:
    _, roster = drafters(["CANARY-D0", {"raise": "auth"}, "CANARY-D2"])
    stage_model, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK})
    assert out["stop_reason"] == "completed"
    assert out["drafts"][1].error and out["drafts"][1].text == "" and out["drafts"][1].model == "fake:m1"
    assert canaries_in(stage_model.prompt_texts[0]) == {"CANARY-D0", "CANARY-D2"}


def test_every_member_failing_ends_with_error_before_any_stage(saver: Any) -> None:
    _, roster = drafters([{"raise": "auth"}, {"raise": "auth"}])
    stage_model, stage = fake(name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK})
    assert out["stop_reason"] == "error" and out["final_answer"] is None and stage_model.calls == 0
    assert all(d.error for d in out["drafts"]) and out["usage"].total.failed_calls == 2


def test_a_broken_frame_reply_is_repaired_by_the_seam(saver: Any) -> None:
    _, roster = drafters()
    _, stage = fake("not json at all", FRAME, CRITIQUE, SYNTH, name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK})
    assert out["stop_reason"] == "completed" and out["usage"].total.schema_repairs == 1
    assert out["usage"].by_node["frame"].calls == 2


def test_critique_lists_are_bounded_for_grammar_constrained_models(saver: Any) -> None:
    _, roster = drafters()
    too_long = json.dumps({"problems": [f"p{i}" for i in range(7)], "suggestions": [], "acceptable": False})
    _, stage = fake(FRAME, too_long, CRITIQUE, SYNTH, name="stage")
    out = run(build_reflection_graph(roster=roster, model=stage), saver, {"task": TASK})
    assert out["stop_reason"] == "completed" and out["usage"].by_node["critique"].schema_repairs == 1
    assert type(out["critique"]) is Critique and out["critique"].problems == ["CANARY-CRIT problem"]


def test_missing_task_fails_before_any_call(saver: Any) -> None:
    models, roster = drafters()
    with pytest.raises(InputError, match="task"):
        run(build_reflection_graph(roster=roster), saver, {"task": "  "})
    assert [m.calls for m in models] == [0, 0, 0]


def test_resume_after_a_crash_mid_run_repeats_no_completed_call(saver: Any) -> None:
    models, roster = drafters()

    def crashing(messages: list[BaseMessage]) -> Any:
        if "Frame the answers" in prompt_text(messages):
            return FRAME
        raise Crash("the process died during the critique")

    crashed = ScriptedChatModel(responder=crashing, model_name="stage")
    crashed_client = ModelClient(crashed, retry=NO_WAIT)
    graph = build_reflection_graph(roster=roster, model=crashed_client).compile(checkpointer=saver)
    with pytest.raises(Crash):
        graph.invoke({"task": TASK}, thread())
    assert [m.calls for m in models] == [1, 1, 1] and crashed.calls == 2
    fixed_model, fixed = fake(CRITIQUE, SYNTH, name="stage")
    resumed = build_reflection_graph(roster=roster, model=fixed).compile(checkpointer=saver)
    out = resumed.invoke(None, thread())
    assert out["stop_reason"] == "completed" and out["final_answer"] == SYNTH
    assert [m.calls for m in models] == [1, 1, 1] and fixed_model.calls == 2  # critique + synthesis only
    assert "CANARY-FRAME" in fixed_model.prompt_texts[0] and len(out["drafts"]) == 3


def test_topology_snapshot() -> None:
    drawing = build_reflection_graph(roster=drafters()[1]).compile().get_graph().draw_mermaid()
    edges = sorted(line.strip() for line in drawing.splitlines() if "-->" in line or "-.->" in line)
    assert edges == [
        "__start__ --> start;",
        "collect -.-> finish;",
        "collect -.-> frame;",
        "critique -.-> finish;",
        "critique -.-> synthesize;",
        "finish --> __end__;",
        "frame -.-> critique;",
        "frame -.-> finish;",
        "gather --> collect;",
        "start -.-> finish;",
        "start -.-> gather;",
        "synthesize --> finish;",
    ]


def test_async_invoke_matches_sync_invoke() -> None:
    results = []
    for mode in ("sync", "async"):
        _, roster = drafters()
        _, stage = fake(FRAME, CRITIQUE, SYNTH, name="stage")
        graph = build_reflection_graph(roster=roster, model=stage).compile(checkpointer=InMemorySaver())
        if mode == "sync":
            results.append(dict(graph.invoke({"task": TASK}, thread())))
        else:
            results.append(dict(asyncio.run(graph.ainvoke({"task": TASK}, thread()))))
    sync, async_ = results
    for key in ("final_answer", "stop_reason", "drafts", "frame", "critique", "heterogeneous", "usage"):
        assert sync[key] == async_[key], key


def test_every_prompt_renders() -> None:
    assert "T" in DRAFT_PROMPT.render(task="T")
    for template in (FRAME_PROMPT, CRITIQUE_PROMPT, SYNTHESIZE_PROMPT):
        assert "M" in template.render(task="T", material="M")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(max_calls=st.integers(1, 10), members=st.integers(1, 4), flaky=st.lists(st.booleans(), max_size=6))
def test_budget_is_never_exceeded(max_calls: int, members: int, flaky: list[bool]) -> None:
    replies: list[Any] = [{"raise": "transient"} if f else "draft" for f in flaky] + ["draft"] * 8
    member_models = [ScriptedChatModel(replies=list(replies), model_name=f"m{i}") for i in range(members)]
    stage_model = ScriptedChatModel(replies=[FRAME, CRITIQUE, SYNTH], model_name="stage")
    roster = [ModelClient(m, retry=NO_WAIT) for m in member_models]
    graph = build_reflection_graph(roster=roster, model=ModelClient(stage_model, retry=NO_WAIT)).compile()
    out = graph.invoke({"task": TASK, "max_calls": max_calls})
    assert out["usage"].total.calls <= max_calls
    assert sum(m.calls for m in member_models) + stage_model.calls == out["usage"].total.calls
    assert out["stop_reason"] in ("completed", "budget", "error")
    if max_calls < members:
        assert out["usage"].total.calls == 0


@pytest.mark.local_model
def test_a_real_run_on_the_embedded_model_ends_consistently(tmp_path: Any) -> None:
    from reasoning_graphs.checkpoints import open_saver

    question = json.loads((DATA / "mt_bench_questions.jsonl").read_text().splitlines()[0])["turns"][0]
    drafter = resolve("local:smollm2", ModelSettings(max_tokens=48, temperature=0.0))
    stage = resolve("local:smollm2", ModelSettings(max_tokens=160, temperature=0.0))
    graph_def = build_reflection_graph(roster=[drafter, drafter], model=stage)
    with open_saver(tmp_path / "runs.sqlite") as saver:
        out = graph_def.compile(checkpointer=saver).invoke({"task": question, "max_calls": 12}, thread())
    assert out["stop_reason"] in ("completed", "budget", "error")
    assert len(out["drafts"]) == 2 and all(d.model == "local:smollm2" for d in out["drafts"])
    assert out["heterogeneous"] is False and 2 <= out["usage"].total.calls <= 12
    if out["stop_reason"] == "completed":
        assert out["frame"] is not None and out["critique"] is not None and out["final_answer"]
    else:
        assert out["final_answer"] in {d.text for d in out["drafts"]}
