"""Repair: generate, verify, and repair against the whole failure history.

``generate -> verify -> {passed: finish | attempts left: repair -> verify | else: finish}``

The repair prompt carries every earlier attempt with the verifier's exact feedback. The loop stops
with ``passed``, ``max_attempts``, ``budget`` (the next call does not fit), ``no_progress`` (the
same failure twice in a row) or ``error`` (a model failed for good). An optional roster is
rotated on failure: attempt *k* uses member *k mod n*, and every attempt records its model.

Access lists (roles and what they read):
    - ``generator`` sees ``task``.
    - ``repairer`` sees ``task`` and every ``attempt:*`` (answer plus feedback).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from pydantic import Field

from reasoning_graphs.access import AccessPolicy, Output
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._common import (
    CommonOutput,
    CommonState,
    LimitsInput,
    budget_for_run,
    read_as,
    require_text,
)
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import (
    NodeIO,
    choose_verifier,
    dual_node,
    generate,
    pick_model,
    roster_from_context,
    run_check,
)
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Attempt, Frozen, StopReason, Usage
from reasoning_graphs.verifiers import Verifier

__all__ = [
    "GENERATE_PROMPT",
    "REPAIR_PROMPT",
    "RepairInput",
    "RepairOutput",
    "RepairSettings",
    "RepairState",
    "build_repair_graph",
]

# --- contracts -------------------------------------------------------------------------------


class RepairSettings(Frozen):
    """Structural settings of a repair graph."""

    max_attempts: int = Field(default=3, ge=1, le=100)
    """Most candidates generated (the first included)."""
    stop_on_no_progress: bool = True
    """Stop when two consecutive attempts fail with the same feedback."""
    system_prompt: str | None = None
    """An optional system message for every generation."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""


ACCESS: dict[str, AccessPolicy] = {
    "generator": AccessPolicy(sees=("task",)),
    "repairer": AccessPolicy(sees=("task", "attempt:*")),
}
"""Default access policies of the repair roles."""

# --- prompts ---------------------------------------------------------------------------------

GENERATE_PROMPT = PromptTemplate("{task}\n\nReply with the complete answer only.")
"""First attempt."""

REPAIR_PROMPT = PromptTemplate(
    "{task}\n\nEarlier answers failed. Each is followed by the checker's exact feedback.\n\n"
    "{attempts}\n\nWrite a new, complete answer that fixes every failure above. "
    "Reply with the complete answer only."
)
"""Later attempts: the task plus every earlier attempt and its failure."""


def _render_attempts(seen: dict[str, Output]) -> str:
    blocks = []
    attempts = sorted(
        (o for label, o in seen.items() if label.startswith("attempt:")),
        key=lambda o: int(o.label.split(":")[1]),
    )
    for out in attempts:
        data = out.data if isinstance(out.data, dict) else {}
        blocks.append(
            f"### Attempt {out.label.split(':')[1]}\n{out.text}\n\nFeedback: {data.get('feedback', '')}"
        )
    return "\n\n".join(blocks)


# --- state -----------------------------------------------------------------------------------


class RepairInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """The task text the model must answer."""
    verifier: str
    """A verifier spec (``mbpp:2``, ``python-tests:PATH`` ...); overrides the factory's verifier."""


class RepairOutput(CommonOutput, total=False):
    """What a run returns."""

    passed: bool
    """Whether ``final_answer`` passed the verifier."""
    attempts: int
    """How many candidates were verified."""
    history: Annotated[list[Attempt], operator.add]
    """Every attempt: answer, passed, feedback, model."""


class RepairState(RepairInput, RepairOutput, CommonState, total=False):
    """Internal state."""

    candidate: str | None
    """The latest candidate, waiting for the verifier."""
    candidate_model: str
    """The model that wrote ``candidate``."""
    exhausted: bool
    """The budget refused a call."""


# --- routing ---------------------------------------------------------------------------------


def _stop_reason(state: RepairState, settings: RepairSettings) -> StopReason | None:
    history = state.get("history") or []
    if state.get("exhausted"):
        return "budget"
    if state.get("error"):
        return "error"
    if history and history[-1].passed:
        return "passed"
    if len(history) >= settings.max_attempts:
        return "max_attempts"
    if settings.stop_on_no_progress and len(history) >= 2 and history[-1].feedback == history[-2].feedback:
        return "no_progress"
    if not state.get("budget", settings.budget).fits(state.get("usage") or Usage()):
        return "budget"
    return None


# --- graph -----------------------------------------------------------------------------------


class _RepairNodes:
    """The node bodies, closed over the factory's arguments (nothing here goes into state)."""

    def __init__(self, verifier: Verifier | None, members: list[ModelRef], cfg: RepairSettings) -> None:
        self.verifier, self.members, self.cfg = verifier, members, cfg

    async def start(self, state: RepairState, io: NodeIO) -> dict[str, Any]:
        task = require_text(state.get("task"), "task")
        choose_verifier(self.verifier, state.get("verifier"))  # a bad spec fails before any call
        return {
            "budget": budget_for_run(state, self.cfg.budget),
            "access": ACCESS,
            "outputs": {"task": Output(label="task", text=task, role="user")},
        }

    async def _attempt(self, state: RepairState, io: NodeIO, role: str) -> dict[str, Any]:
        index = len(state.get("history") or [])
        client = pick_model(roster_from_context(self.members), index)
        seen, record = read_as(state, role)
        task = seen["task"].text
        prompt = (
            GENERATE_PROMPT.render(task=task)
            if role == "generator"
            else REPAIR_PROMPT.render(task=task, attempts=_render_attempts(seen))
        )
        usage = state.get("usage") or Usage()
        allowance = state.get("budget", self.cfg.budget).allowance(usage)
        out = await generate(
            io, client, prompt, node=role, system=self.cfg.system_prompt, max_calls=allowance
        )
        update: dict[str, Any] = {"usage": out.usage, "reads": [record]}
        if out.budget_exhausted:
            return update | {"exhausted": True, "candidate": None}
        if not out.ok:
            return update | {"error": out.error, "candidate": None}
        return update | {"candidate": str(out.value), "candidate_model": out.model}

    async def generate(self, state: RepairState, io: NodeIO) -> dict[str, Any]:
        return await self._attempt(state, io, "generator")

    async def repair(self, state: RepairState, io: NodeIO) -> dict[str, Any]:
        return await self._attempt(state, io, "repairer")

    async def verify(self, state: RepairState, io: NodeIO) -> dict[str, Any]:
        candidate = state.get("candidate")
        if candidate is None:
            return {}
        check = choose_verifier(self.verifier, state.get("verifier"))
        verdict = await run_check(io, check, candidate, state.get("task", ""))
        number = len(state.get("history") or []) + 1
        model_id = state.get("candidate_model", "")
        attempt = Attempt(
            answer=candidate,
            passed=verdict.passed,
            feedback=verdict.feedback,
            model=model_id,
            score=verdict.score,
        )
        label = f"attempt:{number}"
        out = Output(
            label=label,
            text=candidate,
            role="generator" if number == 1 else "repairer",
            model=model_id,
            data={"passed": verdict.passed, "feedback": verdict.feedback},
        )
        return {"history": [attempt], "attempts": number, "candidate": None, "outputs": {label: out}}

    async def finish(self, state: RepairState, io: NodeIO) -> dict[str, Any]:
        history = state.get("history") or []
        reason = _stop_reason(state, self.cfg) or "max_attempts"
        best = max(reversed(history), key=lambda a: (a.passed, a.score), default=None)
        return {
            "stop_reason": reason,
            "final_answer": best.answer if best else None,
            "passed": bool(best and best.passed),
            "attempts": len(history),
        }


def _after_attempt(state: RepairState) -> Literal["verify", "finish"]:
    return "verify" if state.get("candidate") is not None else "finish"


def build_repair_graph(
    *,
    verifier: Verifier | None = None,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    settings: RepairSettings | None = None,
) -> StateGraph[RepairState, Any, RepairInput, RepairOutput]:
    """Build the repair graph (uncompiled; compile it with the checkpointer you want).

    Args:
        verifier: the check a candidate must pass; a ``verifier`` spec in the input overrides it.
        model: the model when no roster is given (a provider string, chat model or client).
        roster: models rotated on failure; attempt *k* uses ``roster[k % len(roster)]``.
        settings: attempts, no-progress stop, system prompt and default budget.

    Raises:
        ValueError: an empty roster.
    """
    cfg = settings or RepairSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    nodes = _RepairNodes(verifier, members, cfg)

    def after_verify(state: RepairState) -> Literal["repair", "finish"]:
        return "finish" if _stop_reason(state, cfg) else "repair"

    graph = StateGraph(RepairState, input_schema=RepairInput, output_schema=RepairOutput)
    for name in ("start", "generate", "verify", "repair", "finish"):
        graph.add_node(name, dual_node(getattr(nodes, name), name=name))
    graph.add_edge(START, "start")
    graph.add_edge("start", "generate")
    graph.add_conditional_edges("generate", _after_attempt)
    graph.add_conditional_edges("repair", _after_attempt)
    graph.add_conditional_edges("verify", after_verify)
    graph.add_edge("finish", END)
    return graph
