"""Fault matrix: each failure at each position never shows as a success, is in the ledger, and a
resume re-runs only what failed.

Two kinds of failure (see docs/reliability.md):

- an *exception* escapes its node: the run raises, the checkpoint keeps every completed step and
  the error, and a resume re-runs only the failed step (completed siblings included);
- the others are *handled* in the graph: the model failed for good after its retries or schema
  repairs, the verifier timed out or its sandbox was killed, or the budget refused the step. The
  attempt is recorded as failed (with its cost in the usage ledger), the run ends with an
  explicit stop reason, and a resume re-runs nothing.

The table runs on a probe graph built from the node library (``probe.py``: a first step, a
parallel batch of three, a later step), then on the real repair and reflection graphs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from reasoning_graphs.checkpoints import open_saver, thread_info
from reasoning_graphs.graphs import build_reflection_graph, build_repair_graph
from reasoning_graphs.graphs.reflection import ReflectionSettings
from reasoning_graphs.models import ModelClient, ModelReply
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.verifiers import PythonTests, SandboxLimits, from_spec
from tests.reliability.conftest import GAME24, NO_WAIT, SOLUTION, TASK, WRONG
from tests.reliability.probe import POSITIONS, SIBLINGS, build_probe_graph

FAILURES = ("exception", "model timeout", "schema-invalid", "verifier timeout", "sandbox kill", "budget")
SLEEPS = "import time\ntime.sleep(30)\n"
SEGFAULT = "import ctypes\nctypes.string_at(0)\n"


class CrashOnce(ModelClient):
    """A seam client whose first call crashes the node (an exception that is not a model error)."""

    def __init__(self, model: ScriptedChatModel, delay: float = 0.0) -> None:
        super().__init__(model, retry=NO_WAIT)
        self.crashes, self.delay = 1, delay

    def _maybe_crash(self) -> None:
        if self.crashes:
            self.crashes -= 1
            time.sleep(self.delay)  # let parallel siblings finish first
            raise RuntimeError("node crashed")

    def call(self, *args: Any, **kwargs: Any) -> ModelReply[Any]:
        self._maybe_crash()
        return super().call(*args, **kwargs)

    async def acall(self, *args: Any, **kwargs: Any) -> ModelReply[Any]:
        self._maybe_crash()
        return await super().acall(*args, **kwargs)


def _replies(failure: str) -> list[Any]:
    good = '{"value": 24}'
    if failure == "model timeout":
        return [TimeoutError("read timed out")] * NO_WAIT.max_attempts + [good]
    if failure == "schema-invalid":
        return ["not json"] * 3 + [good]
    return [good]


@dataclass
class Rig:
    """Clients and verifiers for one probe run, with the failure put at ``position``."""

    failure: str
    position: str
    fakes: dict[str, ScriptedChatModel] = field(default_factory=dict)
    clients: dict[str, ModelClient] = field(default_factory=dict)
    verifiers: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for pos in ("first", *(f"sibling:{i}" for i in range(SIBLINGS)), "middle"):
            hit = pos == self.position
            self.fakes[pos] = ScriptedChatModel(replies=_replies(self.failure if hit else ""), model_name=pos)
            crash = hit and self.failure == "exception"
            self.clients[pos] = (
                CrashOnce(self.fakes[pos], delay=0.3)
                if crash
                else ModelClient(self.fakes[pos], retry=NO_WAIT)
            )
        if self.failure == "verifier timeout":
            self.verifiers[self.position] = PythonTests(SLEEPS, limits=SandboxLimits(wall_seconds=1.0))
        if self.failure == "sandbox kill":
            self.verifiers[self.position] = PythonTests(SEGFAULT)
        if self.failure == "budget":
            # first: a token reserve no call fits; batch: 1 + 3 calls > 3; middle: 1 + 3 + 1 > 4.
            self.limits = {
                "first": {"max_tokens": 10, "reserve_tokens_per_call": 100},
                "sibling:1": {"max_calls": 3},
                "middle": {"max_calls": 4},
            }[self.position]

    def calls(self) -> dict[str, int]:
        return {pos: fake.calls for pos, fake in self.fakes.items()}


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("failure", FAILURES)
def test_probe_fault_matrix(failure: str, position: str, tmp_path: Path) -> None:
    rig = Rig(failure, position)
    with open_saver(tmp_path / "ck.sqlite", integrity=True) as saver:
        graph = build_probe_graph(rig.clients, rig.verifiers).compile(checkpointer=saver)
        config = _config("p1")
        if failure == "exception":
            with pytest.raises(RuntimeError, match="node crashed"):
                graph.invoke({"budget_limits": rig.limits}, config)
            crashed = graph.get_state(config).values
            assert position not in (crashed.get("outputs") or {})
            assert "node crashed" in (thread_info(saver, "p1").error or ""), (
                "the checkpoint records the crash"
            )
            before = rig.calls()
            final = graph.invoke(None, config)
            rerun = {pos: rig.calls()[pos] - before[pos] for pos in before}
            node_done = set(crashed.get("outputs") or {})
            assert all(rerun[pos] == 0 for pos in node_done), f"completed steps re-ran: {rerun}"
            assert rerun[position] == 1
            assert all(count == 1 for count in rig.calls().values()), rig.calls()
            assert final["stop_reason"] == "completed"
            return
        final = graph.invoke({"budget_limits": rig.limits}, config)
        values = graph.get_state(config).values
        _check_ledger(failure, position, values, rig)
        before = rig.calls()
        graph.invoke(None, config)  # a resume of a finished run re-runs nothing
        assert rig.calls() == before
        assert final["stop_reason"] == ("budget" if failure == "budget" else "error")


def _check_ledger(failure: str, position: str, values: dict[str, Any], rig: Rig) -> None:
    outputs = values.get("outputs") or {}
    failures = values.get("failures") or []
    where = "sibling" if failure == "budget" and position == "sibling:1" else position
    assert [(f["position"], f["kind"]) for f in failures] == [
        (
            where,
            {"budget": "budget", "verifier timeout": "verifier", "sandbox kill": "verifier"}.get(
                failure, "model"
            ),
        )
    ]
    assert where not in outputs, "the failed attempt never shows as a success"
    node = position.split(":")[0]
    usage = values["usage"]
    if failure == "model timeout":
        assert usage.by_node[node].failed_calls >= NO_WAIT.max_attempts
        assert usage.by_model[f"fake:{position}"].failed_calls == NO_WAIT.max_attempts
    elif failure == "schema-invalid":
        assert usage.by_model[f"fake:{position}"].schema_repairs == 2
    elif failure in ("verifier timeout", "sandbox kill"):
        verdict = next(v for v in values["verdicts"] if v["position"] == position)
        assert verdict["passed"] is False
        assert verdict["status"] == ("timeout" if failure == "verifier timeout" else "killed")
    else:  # budget: the refused step and everything after it made no call
        order = ["first", "sibling:0", "sibling:1", "sibling:2", "middle"]
        start = order.index("sibling:0" if where == "sibling" else position)
        assert all(rig.calls()[pos] == 0 for pos in order[start:]), rig.calls()
        assert all(label in outputs for label in order[:start])
        limit = rig.limits.get("max_calls")
        assert limit is None or usage.total.calls <= limit


# --- the real graphs ---------------------------------------------------------------------------


def _repair(model: ModelClient, verifier: Any = None) -> Any:
    return build_repair_graph(verifier=verifier or from_spec(GAME24), model=model)


def _scripted(replies: Sequence[Any], name: str = "m") -> ScriptedChatModel:
    return ScriptedChatModel(replies=list(replies), model_name=name)


@dataclass(frozen=True)
class Row:
    graph: str
    failure: str
    position: str


ROWS = [
    Row("repair", "exception", "first"),
    Row("repair", "exception", "middle"),
    Row("repair", "model timeout", "first"),
    Row("repair", "model timeout", "middle"),
    Row("repair", "verifier timeout", "first"),
    Row("repair", "budget", "middle"),
    Row("reflection", "exception", "sibling:1"),
    Row("reflection", "model timeout", "sibling:1"),
    Row("reflection", "schema-invalid", "middle"),
    Row("reflection", "budget", "sibling:1"),
]


def _run_repair(row: Row, saver: BaseCheckpointSaver[Any]) -> None:
    timeouts = [TimeoutError("read timed out")] * NO_WAIT.max_attempts
    first = timeouts if row == Row("repair", "model timeout", "first") else [WRONG[0]]
    second = timeouts if row.position == "middle" and row.failure == "model timeout" else [SOLUTION]
    fake = _scripted([*first, *second])
    model: ModelClient = ModelClient(fake, retry=NO_WAIT)
    verifier = None
    if row.failure == "exception":
        model = CrashOnce(fake) if row.position == "first" else model
    if row.failure == "verifier timeout":
        verifier = PythonTests(SLEEPS, limits=SandboxLimits(wall_seconds=1.0))
    graph = _repair(model, verifier).compile(checkpointer=saver)
    config = _config("r1")
    payload: dict[str, Any] = {"task": TASK} | ({"max_calls": 1} if row.failure == "budget" else {})
    if row.failure == "exception" and row.position == "middle":
        graph = _repair(model).compile(checkpointer=saver, interrupt_before=["repair"])
        graph.invoke(payload, config)
        crashing = CrashOnce(fake)
        graph = _repair(crashing).compile(checkpointer=saver)
    if row.failure == "exception":
        with pytest.raises(RuntimeError, match="node crashed"):
            graph.invoke(None if row.position == "middle" else payload, config)
        history = graph.get_state(config).values.get("history") or []
        assert all(not a.passed for a in history), "nothing the crash touched shows as passed"
        assert "node crashed" in (thread_info(saver, "r1").error or "")
        final = graph.invoke(None, config)
        prompts = fake.prompt_texts
        assert len(prompts) == 2, "each step called its model once: the crash re-ran only its own step"
        assert sum("Earlier answers failed" not in p for p in prompts) == 1
        assert final["passed"] is True and [a.passed for a in final["history"]][-1] is True
        return
    final = graph.invoke(payload, config)
    assert final["passed"] is False and all(not a.passed for a in final.get("history") or [])
    if row.failure == "model timeout":
        assert final["stop_reason"] == "error"
        node = "generator" if row.position == "first" else "repairer"
        assert final["usage"].by_node[node].failed_calls == NO_WAIT.max_attempts
    elif row.failure == "verifier timeout":
        assert "Timed out" in final["history"][0].feedback
    else:
        assert final["stop_reason"] == "budget" and final["usage"].total.calls == 1
    calls = fake.calls
    graph.invoke(None, config)
    assert fake.calls == calls, "a finished run re-runs nothing"


def _stage_fake(schema_failure: bool) -> ScriptedChatModel:
    frame = '{"claims": ["c"], "agreements": [], "disagreements": []}'
    critique = '{"problems": [], "suggestions": [], "acceptable": true}'
    replies = ["not json"] * 3 if schema_failure else [frame]
    return _scripted([*replies, critique, "final answer"], "stage")


def _run_reflection(row: Row, saver: BaseCheckpointSaver[Any]) -> None:
    drafters = [_scripted([f"draft {i}"], f"d{i}") for i in range(3)]
    if row.failure == "model timeout":
        drafters[1] = _scripted([TimeoutError("read timed out")] * NO_WAIT.max_attempts, "d1")
    roster: list[ModelClient] = [ModelClient(f, retry=NO_WAIT) for f in drafters]
    if row.failure == "exception":
        roster[1] = CrashOnce(drafters[1], delay=0.3)
    stage = _stage_fake(row.failure == "schema-invalid")
    graph = build_reflection_graph(
        roster=roster, model=ModelClient(stage, retry=NO_WAIT), settings=ReflectionSettings()
    ).compile(checkpointer=saver)
    config = _config("f1")
    payload: dict[str, Any] = {"task": "Describe the sea."} | (
        {"max_calls": 2} if row.failure == "budget" else {}
    )
    if row.failure == "exception":
        with pytest.raises(RuntimeError, match="node crashed"):
            graph.invoke(payload, config)
        assert "draft:1" not in graph.get_state(config).values.get("outputs", {})
        final = graph.invoke(None, config)
        assert [f.calls for f in drafters] == [1, 1, 1], "only the crashed sibling re-ran"
        assert final["stop_reason"] == "completed"
        return
    final = graph.invoke(payload, config)
    outputs = graph.get_state(config).values.get("outputs", {})
    if row.failure == "model timeout":
        assert "draft:1" not in outputs and final["drafts"][1].error
        assert final["usage"].by_model["fake:d1"].failed_calls == NO_WAIT.max_attempts
    elif row.failure == "schema-invalid":
        assert "frame" not in outputs and final["stop_reason"] == "error"
        assert final["usage"].by_node["frame"].schema_repairs == 2
    else:
        assert final["stop_reason"] == "budget" and [f.calls for f in drafters] == [0, 0, 0]
    calls = [f.calls for f in drafters] + [stage.calls]
    graph.invoke(None, config)
    assert [f.calls for f in drafters] + [stage.calls] == calls, "a finished run re-runs nothing"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.graph}-{r.failure}-{r.position}")
def test_real_graph_fault_rows(row: Row, tmp_path: Path) -> None:
    with open_saver(tmp_path / "ck.sqlite", integrity=True) as saver:
        (_run_repair if row.graph == "repair" else _run_reflection)(row, saver)
