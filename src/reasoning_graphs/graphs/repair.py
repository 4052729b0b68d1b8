"""Repair: generate, verify, and repair against the whole failure history.

``generate -> verify -> {passed: finish | attempts left: repair -> verify | else: finish}``

The repair prompt carries every earlier attempt with the verifier's exact feedback. The loop stops
with ``passed``, ``max_attempts``, ``budget`` (the next call does not fit), ``no_progress`` (the
same failure twice in a row) or ``error`` (a model failed for good). An optional roster is
rotated on failure: attempt *k* uses member *k mod n*, and every attempt records its model.

Tools (``tools=``): the generate and repair steps may call tools (for example
:func:`~reasoning_graphs.nodes.verifier_tool`, which runs the candidate's tests on demand). Each
step then runs a bounded act-observe loop of at most ``max_tool_steps`` model turns inside its
node (:func:`~reasoning_graphs.nodes.generate_with_tools`); every turn counts in the ledger and
every call is recorded in ``tool_calls``. Tool factories get the role's projection below. The
loop lives in one node, so a crash mid-step re-runs the whole step, tools included: a
side-effecting tool may run more than once. Use the ``agent`` graph, which checkpoints each tool
step, when that matters.

Approval (``RepairSettings(approve=True)``): a passing answer first goes to an ``approve`` node
that pauses for a person (see :mod:`reasoning_graphs.graphs._repair_review`); a rejection counts
as a failure with the reviewer's words as feedback.

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
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import (
    CommonOutput,
    CommonState,
    LimitsInput,
    budget_for_run,
    read_as,
    require_text,
)
from reasoning_graphs.graphs._repair_review import Review, ask_for_approval
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import (
    NodeIO,
    ToolRun,
    Toolset,
    dual_node,
    generate,
    generate_with_tools,
    load_verifier,
    pick_model,
    roster_from_context,
    run_check,
)
from reasoning_graphs.nodes.tools import ToolLike
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Attempt, Frozen, StopReason, ToolCallRecord, Usage
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
    max_tool_steps: int = Field(default=4, ge=1, le=50)
    """Most model turns with tools bound per attempt (used only when the graph has tools)."""
    approve: bool = False
    """Pause for a person's approval before accepting a passing answer."""


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
    history: Annotated[list[Attempt], delta(operator.add)]
    """Every attempt: answer, passed, feedback, model."""
    tool_calls: Annotated[list[ToolCallRecord], delta(operator.add)]
    """Every tool call the attempts made (only with tools)."""


class RepairState(RepairInput, RepairOutput, CommonState, total=False):
    """Internal state."""

    candidate: str | None
    """The latest candidate, waiting for the verifier."""
    candidate_model: str
    """The model that wrote ``candidate``."""
    exhausted: bool
    """The budget refused a call."""
    reviews: Annotated[list[Review], delta(operator.add)]
    """A person's decisions on passing attempts (``approve=True``)."""
    awaiting: Attempt | None
    """A passing attempt waiting for a person's approval."""


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

    def __init__(
        self, verifier: Verifier | None, members: list[ModelRef], cfg: RepairSettings, toolset: Toolset
    ) -> None:
        self.verifier, self.members, self.cfg, self.toolset = verifier, members, cfg, toolset

    async def start(self, state: RepairState, io: NodeIO) -> dict[str, Any]:
        task = require_text(state.get("task"), "task")
        await load_verifier(io, self.verifier, state.get("verifier"))  # a bad spec fails before any call
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
        budget = state.get("budget", self.cfg.budget)
        if self.toolset:
            tools = self.toolset.bind(seen)
            run = await generate_with_tools(
                io, client, prompt, tools=tools, node=role, system=self.cfg.system_prompt,
                max_steps=self.cfg.max_tool_steps, budget=budget, usage=usage,
            )  # fmt: skip
            return {"reads": [record], **_tool_update(run)}
        out = await generate(
            io, client, prompt, node=role, system=self.cfg.system_prompt, max_calls=budget.allowance(usage)
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
        check = await load_verifier(io, self.verifier, state.get("verifier"))
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
        if verdict.passed and self.cfg.approve:  # a person decides before it enters the history
            return {"awaiting": attempt, "candidate": None, "outputs": {label: out}}
        return {"history": [attempt], "attempts": number, "candidate": None, "outputs": {label: out}}

    async def approve(self, state: RepairState, io: NodeIO) -> dict[str, Any]:
        return ask_for_approval(state)

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


def _tool_update(run: ToolRun) -> dict[str, Any]:
    update: dict[str, Any] = {"usage": run.usage, "tool_calls": run.tool_calls}
    if run.stop_reason in ("budget", "error"):
        failure = {"exhausted": True} if run.stop_reason == "budget" else {"error": run.error}
        return update | failure | {"candidate": None}
    return update | {"candidate": "" if run.value is None else str(run.value), "candidate_model": run.model}


def _after_attempt(state: RepairState) -> Literal["verify", "finish"]:
    return "verify" if state.get("candidate") is not None else "finish"


def build_repair_graph(
    *,
    verifier: Verifier | None = None,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    settings: RepairSettings | None = None,
    tools: Sequence[ToolLike] | None = None,
) -> StateGraph[RepairState, Any, RepairInput, RepairOutput]:
    """Build the repair graph (uncompiled; compile it with the checkpointer you want).

    Args:
        verifier: the check a candidate must pass; a ``verifier`` spec in the input overrides it.
        model: the model when no roster is given (a provider string, chat model or client).
        roster: models rotated on failure; attempt *k* uses ``roster[k % len(roster)]``.
        settings: attempts, no-progress stop, system prompt, tool steps and default budget.
        tools: tools the generate and repair steps may call (see the module docstring).

    Raises:
        ValueError: an empty roster, or tools that are not tools (or share a name).
    """
    cfg = settings or RepairSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    nodes = _RepairNodes(verifier, members, cfg, Toolset(tools or []))

    def after_verify(state: RepairState) -> Literal["repair", "finish"]:
        return "finish" if _stop_reason(state, cfg) else "repair"

    def after_verify_with_review(state: RepairState) -> Literal["repair", "approve", "finish"]:
        if state.get("awaiting") is not None:
            return "approve"
        return "finish" if _stop_reason(state, cfg) else "repair"

    graph = StateGraph(RepairState, input_schema=RepairInput, output_schema=RepairOutput)
    names = ("start", "generate", "verify", "repair", "finish") + (("approve",) if cfg.approve else ())
    for name in names:
        graph.add_node(name, dual_node(getattr(nodes, name), name=name))
    if cfg.approve:
        graph.add_conditional_edges("approve", after_verify)
    graph.add_edge(START, "start")
    graph.add_edge("start", "generate")
    graph.add_conditional_edges("generate", _after_attempt)
    graph.add_conditional_edges("repair", _after_attempt)
    graph.add_conditional_edges("verify", after_verify_with_review if cfg.approve else after_verify)
    graph.add_edge("finish", END)
    return graph
