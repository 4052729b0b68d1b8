"""Repair and self-refine on the real embedded model (SmolLM2-135M): consistency, not quality."""

from __future__ import annotations

import pytest

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.graphs import RepairSettings, build_repair_graph
from reasoning_graphs.graphs.self_refine import SelfRefineSettings, build_self_refine_graph
from reasoning_graphs.models import ModelSettings, resolve
from reasoning_graphs.verifiers import load_gsm8k, load_mbpp
from tests.conftest import DATA, thread


@pytest.mark.local_model
def test_real_repair_run_on_one_mbpp_task(tmp_path: object) -> None:
    task = next(t for t in load_mbpp(str(DATA)) if t.id == "mbpp/2")
    model = resolve("local:smollm2", ModelSettings(max_tokens=160))
    graph = build_repair_graph(verifier=task.verifier, model=model, settings=RepairSettings(max_attempts=2))
    with open_saver(f"{tmp_path}/real.sqlite") as saver:
        out = graph.compile(checkpointer=saver).invoke({"task": task.prompt}, thread("real"))
    history = out["history"]
    assert out["stop_reason"] in ("passed", "max_attempts", "no_progress")
    assert 1 <= out["attempts"] == len(history) <= 2
    assert all(a.model == "local:smollm2" for a in history)
    assert all(a.passed or a.feedback for a in history)  # every failure says why
    assert out["passed"] == any(a.passed for a in history)
    assert out["usage"].total.calls == len(history) and out["usage"].total.output_tokens > 0


@pytest.mark.local_model
def test_real_self_refine_run_on_one_gsm8k_question() -> None:
    task = load_gsm8k(str(DATA))[0]
    model = resolve("local:smollm2", ModelSettings(max_tokens=120))
    settings = SelfRefineSettings(max_refinements=1, policy="plurality", answer_format="number")
    out = (
        build_self_refine_graph(model=model, verifier=task.verifier, settings=settings)
        .compile()
        .invoke({"task": task.prompt})
    )
    assert out["stop_reason"] in ("max_rounds", "judge_stop", "error")
    assert out["candidates"] and out["selected"] is not None
    assert out["final_answer"] == out["candidates"][out["selected"]].answer
    assert isinstance(out["passed"], bool)
