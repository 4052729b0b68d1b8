"""Tool-using stages: one model turn (:func:`act`), one tool step (:func:`observe`) and the loop.

A stage with tools runs a bounded act-observe loop: the model is asked with the tools bound;
when its reply calls tools, they are executed (sync tools off the event loop), each result goes
back as a ``ToolMessage``, and the model is asked again. The loop stops on a reply that calls no
tool (``completed``), after ``max_steps`` model turns (``step_limit``), when the budget cannot
fit the next turn (``budget``), or when a model call fails for good (``error``). Every model turn
is counted in the ledger, and every tool call becomes a
:class:`~reasoning_graphs.types.ToolCallRecord`. A tool that raises, an unknown tool name or an
unreadable call is not a crash: the error text is the observation the model sees next.

Structured output and tools: the loop runs with tools only; when a schema is asked for, one more
call without tools (and with schema repair) turns the conversation into the schema. The same
closing call gives an answer after a step limit. Any provider with ``bind_tools`` and
structured output works this way, with no special "final answer" tool.

Access: tools are a :class:`Toolset` of plain tools and :class:`ToolFactory` values; a factory is
given only the outputs its stage's access list projects (``read_as``), so a tool can never read
what its stage may not.

Crash safety: :func:`generate_with_tools` runs the whole loop inside one node, so a crash re-runs
the node and its tools (at least once). The ``agent`` graph puts each turn and each tool step in
its own checkpointed node instead (see :mod:`reasoning_graphs.graphs.agent`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from reasoning_graphs.budget import Budget
from reasoning_graphs.models import ModelClient
from reasoning_graphs.nodes._runtime import NodeIO
from reasoning_graphs.nodes._tool_steps import NOT_RUN, Turn, act, close_pending, message_text, observe
from reasoning_graphs.nodes._toolset import (
    ToolFactory,
    ToolLike,
    Toolset,
    load_object,
    load_tools,
    verifier_tool,
)
from reasoning_graphs.nodes.generation import generate
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import StopReason, ToolCallRecord, Usage

__all__ = [
    "ANSWER_PROMPT",
    "NOT_RUN",
    "SCHEMA_ANSWER_PROMPT",
    "ToolFactory",
    "ToolLike",
    "ToolRun",
    "Toolset",
    "Turn",
    "act",
    "close_pending",
    "generate_with_tools",
    "load_object",
    "load_tools",
    "message_text",
    "observe",
    "verifier_tool",
]

ANSWER_PROMPT = PromptTemplate("Stop calling tools. Using what you found, give your final answer now.")
"""The closing request after a step limit (no schema)."""

SCHEMA_ANSWER_PROMPT = PromptTemplate(
    "Stop calling tools. Using what you found, give your final answer now as one JSON object."
)
"""The closing request when the answer must follow a schema (passed separately, not pasted)."""


@dataclass(frozen=True)
class ToolRun:
    """The outcome of a whole act-observe loop run inside one node."""

    value: Any
    """The final answer: the schema instance, or text; None when there is none."""
    text: str
    """The final reply text ('' when none)."""
    model: str
    """The model id asked."""
    usage: Usage
    """Every model turn of the loop, the closing call included."""
    stop_reason: StopReason
    """``completed``, ``step_limit``, ``budget`` or ``error``."""
    steps: int = 0
    """Model turns taken with tools bound."""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    """Every tool call, in order."""
    error: str | None = None
    """Why a model call failed for good, if one did."""

    @property
    def ok(self) -> bool:
        """Whether the loop produced an answer."""
        return self.value is not None and self.stop_reason in ("completed", "step_limit")


def _allowance(budget: Budget | None, usage: Usage, max_calls: int | None, spent: Usage) -> int | None:
    """Return the calls left for the next model call, or -1 when it does not fit at all."""
    if budget is not None and not budget.fits(usage + spent, 1):
        return -1
    left = budget.allowance(usage + spent) if budget is not None else None
    if max_calls is not None:
        own = max_calls - spent.total.calls
        left = own if left is None else min(left, own)
    return -1 if left is not None and left < 1 else left


@dataclass
class _Loop:
    """The running conversation of :func:`generate_with_tools` (local to one node call)."""

    client: ModelClient
    node: str
    budget: Budget | None
    before: Usage
    max_calls: int | None
    messages: list[BaseMessage]
    spent: Usage = field(default_factory=Usage)
    records: list[ToolCallRecord] = field(default_factory=list)
    steps: int = 0
    error: str | None = None

    def left(self) -> int | None:
        return _allowance(self.budget, self.before, self.max_calls, self.spent)

    def done(self, reason: StopReason, value: Any = None, text: str = "") -> ToolRun:
        return ToolRun(
            value, text, self.client.model_id, self.spent, reason, self.steps, self.records, self.error
        )


async def _turns(
    io: NodeIO, loop: _Loop, tools: Mapping[str, BaseTool], max_steps: int
) -> tuple[StopReason, AIMessage | None]:
    """Run act-observe turns until a stop; return the reason and the last reply."""
    while True:
        left = loop.left()
        if left == -1:
            return "budget", None
        turn = await act(io, loop.client, loop.messages, tools, node=loop.node, max_calls=left)
        loop.spent = loop.spent + turn.usage
        if turn.message is None:
            loop.error = turn.error
            return ("budget" if turn.budget_exhausted else "error"), None
        loop.steps += 1
        loop.messages.append(turn.message)
        if not turn.wants_tools:
            return "completed", turn.message
        if loop.steps >= max_steps:
            return "step_limit", turn.message
        if loop.left() == -1:
            return "budget", None
        observations, records = await observe(io, tools, turn.message)
        loop.messages += observations
        loop.records += records


async def generate_with_tools(
    io: NodeIO,
    client: ModelClient,
    prompt: str | Sequence[BaseMessage],
    *,
    tools: Mapping[str, BaseTool],
    node: str,
    schema: type[BaseModel] | None = None,
    system: str | None = None,
    max_steps: int = 5,
    max_calls: int | None = None,
    budget: Budget | None = None,
    usage: Usage | None = None,
    wrap_up: bool = True,
) -> ToolRun:
    """Run the act-observe loop inside one node; never raises for model or tool failures.

    Args:
        io: the node's operations.
        client: the model.
        prompt: the task prompt or a message list.
        tools: the tools by name (``Toolset.bind`` of the stage's projection).
        node: the ledger key of every call.
        schema: when given, a closing call without tools parses the answer into it.
        system: an optional system message.
        max_steps: most model turns with tools bound.
        max_calls: most model calls for the whole loop (the stage's budget allowance).
        budget: the run's budget, checked (calls and tokens) before every call.
        usage: the run's ledger before this stage, for the budget check.
        wrap_up: after a step limit, make a closing call for an answer without tools.

    Raises:
        ValueError: ``max_steps`` is below 1.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
    messages: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        messages.insert(0, SystemMessage(system))
    loop = _Loop(client, node, budget, usage or Usage(), max_calls, messages)
    reason, last = await _turns(io, loop, tools, max_steps)
    if last is None:
        return loop.done(reason)
    text = message_text(last)
    if schema is None and (reason == "completed" or not wrap_up):
        return loop.done(reason, text if reason == "completed" else None, text)
    if reason == "step_limit":
        closing, records = close_pending(last)
        loop.messages += closing
        loop.records += records
    loop.messages.append(HumanMessage((ANSWER_PROMPT if schema is None else SCHEMA_ANSWER_PROMPT).render()))
    left = loop.left()
    if left == -1:
        return loop.done("budget", text or None, text)
    out = await generate(io, client, loop.messages, node=node, schema=schema, max_calls=left)
    loop.spent = loop.spent + out.usage
    if not out.ok:
        loop.error = out.error
        return loop.done("budget" if out.budget_exhausted else "error", text or None, text)
    return loop.done(reason, out.value, out.text)
