"""Fixtures for the checkpoint tests: savers, serde event capture and small convention graphs.

The graphs follow the package's state conventions (outputs by label, access lists written at
the start, read records, a usage ledger, final_answer and stop_reason) and count the calls of
each node, so tests can prove that a resumed run does not re-run completed nodes.
"""

from __future__ import annotations

import itertools
import operator
import os
import runpy
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt
from typing_extensions import TypedDict

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord, merge_outputs, project_outputs
from reasoning_graphs.budget import add_usage
from reasoning_graphs.checkpoints import StrictSerializer, open_saver
from reasoning_graphs.types import Frozen, Usage, UsageCounts, Verdict

SAMPLES_SCRIPT = Path(__file__).with_name("frozen_samples.py")


class PipelineState(TypedDict, total=False):
    task: str
    outputs: Annotated[dict[str, Output], merge_outputs]
    access: dict[str, AccessPolicy]
    reads: Annotated[list[ReadRecord], operator.add]
    usage: Annotated[Usage, add_usage]
    verdict: Verdict | None
    final_answer: str | None
    stop_reason: str | None


Node = dict[str, Any]
"""What the pipeline's nodes receive: not a TypedDict, so a node adds no input schema and the
same nodes build over ``PipelineState`` or a variant with other channels (delta channels)."""

PIPELINE_ACCESS = {
    "writer": AccessPolicy(sees=("task",)),
    "critic": AccessPolicy(sees=("task", "draft")),
    "judge": AccessPolicy(sees=("draft", "critique"), blind=True),
}
PIPELINE_NODES = ("setup", "draft", "critique", "judge", "finish")


@dataclass
class Pipeline:
    """setup -> draft (writer) -> critique (critic) -> judge (blind) -> finish.

    Attributes:
        calls: how often each node ran.
        failures: node -> how many more times it raises before it succeeds.
    """

    calls: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)

    def _enter(self, node: str) -> None:
        self.calls[node] += 1
        if self.failures[node] > 0:
            self.failures[node] -= 1
            raise RuntimeError(f"{node} crashed")

    def _stage(self, node: str, role: str, label: str) -> Callable[[Node], dict[str, Any]]:
        def run(state: Node) -> dict[str, Any]:
            self._enter(node)
            seen = project_outputs(state.get("outputs", {}), state["access"][role])
            text = f"{label} of [" + " | ".join(o.text for o in seen.values()) + "]"
            model = f"model-{role}"
            return {
                "outputs": {label: Output(label=label, text=text, role=role, model=model)},
                "reads": [ReadRecord(node=role, labels=sorted(seen))],
                "usage": Usage.of(
                    UsageCounts(calls=1, input_tokens=3, output_tokens=2), model=model, node=node
                ),
            }

        return run

    def _setup(self, state: Node) -> dict[str, Any]:
        self._enter("setup")
        return {
            "access": PIPELINE_ACCESS,
            "outputs": {"task": Output(label="task", text=state["task"], role="user")},
        }

    def _judge(self, state: Node) -> dict[str, Any]:
        update = self._stage("judge", "judge", "verdict")(state)
        return {**update, "verdict": Verdict(passed=True, score=1.0, feedback="fine")}

    def _finish(self, state: Node) -> dict[str, Any]:
        self._enter("finish")
        return {"final_answer": state["outputs"]["draft"].text, "stop_reason": "completed"}

    def build(self, schema: type[Any] = PipelineState) -> StateGraph[PipelineState]:
        """Return the pipeline over ``schema`` (``PipelineState`` or one with its keys)."""
        builder = StateGraph(schema)
        builder.add_node("setup", self._setup)
        builder.add_node("draft", self._stage("draft", "writer", "draft"))  # type: ignore[arg-type]
        builder.add_node("critique", self._stage("critique", "critic", "critique"))  # type: ignore[arg-type]
        builder.add_node("judge", self._judge)
        builder.add_node("finish", self._finish)
        builder.add_edge(START, "setup")
        for a, b in itertools.pairwise(PIPELINE_NODES):
            builder.add_edge(a, b)
        builder.add_edge("finish", END)
        return builder


class FanState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int
    outputs: Annotated[dict[str, Output], merge_outputs]
    final_answer: str | None
    stop_reason: str | None


def build_fan_graph() -> StateGraph[FanState]:
    """fan -> (Send x3 to work, and p) -> join (waits for both) -> ask (interrupt()) -> end."""

    def fan(state: FanState) -> dict[str, Any]:
        return {"n": 3}

    def route(state: FanState) -> list[Send]:
        return [Send("work", {"n": i}) for i in range(state["n"])]

    def work(state: FanState) -> dict[str, Any]:
        return {"items": [f"w{state['n']}"]}

    def ask(state: FanState) -> dict[str, Any]:
        answer = interrupt("which item?")
        return {"final_answer": str(answer), "stop_reason": "completed"}

    builder = StateGraph(FanState)
    builder.add_node("fan", fan)
    builder.add_node("work", work)
    builder.add_node("p", lambda s: {"items": ["p"]})
    builder.add_node(
        "join", lambda s: {"outputs": {"joined": Output(label="joined", text=",".join(s["items"]))}}
    )
    builder.add_node("ask", ask)
    builder.add_edge(START, "fan")
    builder.add_conditional_edges("fan", route, ["work"])
    builder.add_edge("fan", "p")
    builder.add_edge(["work", "p"], "join")
    builder.add_edge("join", "ask")
    builder.add_edge("ask", END)
    return builder


@pytest.fixture
def pipeline() -> Pipeline:
    return Pipeline()


@pytest.fixture
def fan_builder() -> Callable[[], StateGraph[FanState]]:
    return build_fan_graph


@pytest.fixture
def pipeline_access() -> dict[str, AccessPolicy]:
    return dict(PIPELINE_ACCESS)


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """Every behaviour runs against the in-memory saver and the SQLite saver."""
    if request.param == "memory":
        yield InMemorySaver(serde=StrictSerializer())
    else:
        with open_saver(tmp_path / "db" / "checkpoints.sqlite") as sqlite_saver:
            yield sqlite_saver


@pytest.fixture
def serde_events() -> Iterator[list[SerdeEvent]]:
    """Collect LangGraph's serde allowlist events (blocked or unregistered types)."""
    events: list[SerdeEvent] = []
    unregister = register_serde_event_listener(events.append)
    yield events
    unregister()


@pytest.fixture(scope="session")
def samples_script() -> dict[str, Any]:
    """The namespace of ``frozen_samples.py`` (loaded by path: no import-path assumptions)."""
    return runpy.run_path(str(SAMPLES_SCRIPT))


@pytest.fixture(scope="session")
def frozen_samples(samples_script: dict[str, Any]) -> dict[type[Frozen], Frozen]:
    """One sample value of every core and checkpoint Frozen type."""
    samples: dict[type[Frozen], Frozen] = samples_script["samples"]()
    return samples


def run_strict(script: Path, db: Path) -> subprocess.CompletedProcess[str]:
    """Run a strict round-trip script (``python -W error SCRIPT DB``) with strict msgpack on.

    LangGraph reads ``LANGGRAPH_STRICT_MSGPACK`` at import time, hence the child process; the
    parent's ``PYTHONWARNINGS`` is dropped so ``-W error`` alone decides.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"} | {
        "LANGGRAPH_STRICT_MSGPACK": "true"
    }
    return subprocess.run(
        [sys.executable, "-W", "error", str(script), str(db)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parents[2],
    )
