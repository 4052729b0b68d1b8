"""A probe graph for the fault matrix, built from the package's node library like every pattern.

``start -> first -> (Send x3: sibling) -> collect -> middle -> finish``

``first``, each ``sibling`` and ``middle`` make one structured model call through ``generate``
(schema :class:`Answer`) and check the answer with a verifier through ``run_check``. A result
enters ``outputs`` under its label only when the call succeeded and the check passed; every
failure is appended to ``failures`` (position, kind, detail). The parallel batch is reserved as a
whole before any sibling starts; each step checks its call first. Every collaborator (clients,
verifiers) is injected when the graph is built, so a test puts a failure at any position.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import BaseModel
from typing_extensions import TypedDict

from reasoning_graphs.access import Output
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._common import CommonState
from reasoning_graphs.models import ModelClient
from reasoning_graphs.nodes import NodeIO, dual_node, generate, run_check
from reasoning_graphs.types import Usage, Verdict

SIBLINGS = 3
POSITIONS = ("first", "sibling:1", "middle")
"""Where a failure is put: the first model step, one member of the parallel batch, a later step."""


class Answer(BaseModel):
    """The structured reply every step asks for."""

    value: int
    """The answer."""


class Failure(TypedDict):
    """One recorded failure."""

    position: str
    kind: str
    detail: str


class ProbeState(CommonState, total=False):
    """State of the probe graph."""

    budget_limits: dict[str, int]
    failures: Annotated[list[Failure], operator.add]
    verdicts: Annotated[list[dict[str, Any]], operator.add]


class Job(TypedDict):
    """The payload of one sibling."""

    index: int
    max_calls: int | None


Verifier = Callable[[str, str], Verdict]


def passing(candidate: str, task: str = "") -> Verdict:
    """A verifier that accepts every answer."""
    return Verdict(passed=True, score=1.0)


class Probe:
    """The node bodies, closed over the injected clients and verifiers."""

    def __init__(self, clients: Mapping[str, ModelClient], verifiers: Mapping[str, Verifier]) -> None:
        self.clients, self.verifiers = clients, verifiers

    async def start(self, state: ProbeState, io: NodeIO) -> dict[str, Any]:
        return {"budget": Budget(**(state.get("budget_limits") or {}))}

    async def _step(
        self, position: str, state: Mapping[str, Any], io: NodeIO, max_calls: int | None
    ) -> dict[str, Any]:
        node = position.split(":")[0]
        out = await generate(
            io,
            self.clients[position],
            f"Answer for {position}.",
            node=node,
            schema=Answer,
            max_calls=max_calls,
        )
        update: dict[str, Any] = {"usage": out.usage}
        if out.budget_exhausted:
            return update | {"failures": [Failure(position=position, kind="budget", detail=out.error or "")]}
        if not out.ok:
            return update | {"failures": [Failure(position=position, kind="model", detail=out.error or "")]}
        answer = str(out.value.value)
        verdict = await run_check(io, self.verifiers.get(position, passing), answer, "")
        update["verdicts"] = [{"position": position, "passed": verdict.passed, **verdict.details}]
        if not verdict.passed:
            return update | {
                "failures": [Failure(position=position, kind="verifier", detail=verdict.feedback)]
            }
        return update | {
            "outputs": {position: Output(label=position, text=answer, role=node, model=out.model)}
        }

    def _allowance(self, state: Mapping[str, Any], batch: int = 1) -> int | None:
        budget: Budget = state["budget"]
        return budget.allowance(state.get("usage") or Usage(), batch)

    async def first(self, state: ProbeState, io: NodeIO) -> dict[str, Any]:
        return await self._step("first", state, io, self._allowance(state))

    async def sibling(self, job: Job, io: NodeIO) -> dict[str, Any]:
        return await self._step(f"sibling:{job['index']}", job, io, job["max_calls"])

    async def middle(self, state: ProbeState, io: NodeIO) -> dict[str, Any]:
        return await self._step("middle", state, io, self._allowance(state))

    async def collect(self, state: ProbeState, io: NodeIO) -> dict[str, Any]:
        return {}

    async def finish(self, state: ProbeState, io: NodeIO) -> dict[str, Any]:
        outputs = state.get("outputs") or {}
        failures = list(state.get("failures") or [])
        ran = {f["position"] for f in failures} | set(outputs)
        refused = next((p for p in ("first", "sibling:0", "middle") if p not in ran), None)
        update: dict[str, Any] = {"final_answer": outputs["middle"].text if "middle" in outputs else None}
        if refused is not None:  # a router refused the next step: it did not fit the budget
            where = refused.split(":")[0]
            update["failures"] = [Failure(position=where, kind="budget", detail="did not fit the budget")]
            return update | {"stop_reason": "budget"}
        return update | {"stop_reason": "error" if failures else "completed"}


def _fits(state: ProbeState, calls: int) -> bool:
    return state["budget"].fits(state.get("usage") or Usage(), calls)


def before_first(state: ProbeState) -> Literal["first", "finish"]:
    """Check the first call fits."""
    return "first" if _fits(state, 1) else "finish"


def fan_out(state: ProbeState) -> list[Send] | Literal["finish"]:
    """Reserve the whole batch, then send one job per sibling."""
    if not _fits(state, SIBLINGS):
        return "finish"
    share = state["budget"].allowance(state.get("usage") or Usage(), SIBLINGS)
    return [Send("sibling", Job(index=i, max_calls=share)) for i in range(SIBLINGS)]


def before_middle(state: ProbeState) -> Literal["middle", "finish"]:
    """Check the middle call fits."""
    return "middle" if _fits(state, 1) else "finish"


def build_probe_graph(
    clients: Mapping[str, ModelClient], verifiers: Mapping[str, Verifier]
) -> StateGraph[Any]:
    """Build the probe graph (uncompiled)."""
    nodes = Probe(clients, verifiers)
    graph = StateGraph(ProbeState)
    for name in ("start", "first", "sibling", "collect", "middle", "finish"):
        graph.add_node(name, dual_node(getattr(nodes, name), name=name))
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", before_first)
    graph.add_conditional_edges("first", fan_out, ["sibling", "finish"])
    graph.add_edge("sibling", "collect")
    graph.add_conditional_edges("collect", before_middle)
    graph.add_edge("middle", "finish")
    graph.add_edge("finish", END)
    return graph
