"""Agent: a tool-using stage as a graph, with each model turn and each tool step checkpointed.

``start -> act -> {observe -> act ... | answer -> finish | finish}``

- ``act`` is one model turn with the tools bound (every turn counts in the ledger).
- ``observe`` runs that turn's tool calls in order, records each as a
  :class:`~reasoning_graphs.types.ToolCallRecord` in ``tool_calls``, and feeds the results back
  as ``ToolMessage`` values. A tool that raises, an unknown tool or an unreadable call becomes an
  error observation the model sees; the run goes on.
- ``answer`` is one closing call without tools. It runs when an output schema is set (the
  conversation is parsed into it, with schema repair: tools and structured output never share a
  call) and, with ``wrap_up``, after a step limit (unrun calls are answered "not run").

Stops: ``completed`` (a turn called no tool), ``step_limit`` (``max_steps`` turns all called
tools), ``budget`` (the next call does not fit; with a schema, also when the closing call does
not), ``error`` (a model call failed for good). ``final_answer`` is the closing answer, else the
last turn's text, else None.

Crash safety: ``act`` and ``observe`` are separate checkpointed steps, so a run killed after a
tool step resumes at the next model turn without running those tools again: a completed tool
result is never recomputed. This holds once the step's checkpoint is written: run with
``durability="sync"`` (as the CLI does) to have it written before the next turn starts; with
LangGraph's default ``"async"`` the write overlaps the next turn. A run killed *during* a tool
step re-runs that step's calls (at least once): make side-effecting tools idempotent, e.g. keyed
by the call id. Inside a single node (the repair graph's ``tools=`` option,
:func:`~reasoning_graphs.nodes.generate_with_tools`) a crash re-runs the whole loop, tools
included.

State is plain data: tools are referenced by name (the factory holds them), the conversation is
a list of LangChain messages under ``messages`` (it grows by one turn per step, bounded by
``max_steps``; a delta channel, so each checkpoint stores only the new turn, with its id).

Access lists (roles and what they read):
    - ``agent`` sees ``AgentSettings.sees`` (default ``task`` and ``context:*``). Its tools get
      the same projection: a :class:`~reasoning_graphs.nodes.ToolFactory` builds them from it.
      Its own conversation is its working memory; no other role reads it.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel, Field, JsonValue

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._agent_nodes import SYSTEM_PROMPT, TASK_PROMPT, AgentNodes
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import CommonOutput, CommonState, LimitsInput
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import NodeIO, Toolset, dual_node
from reasoning_graphs.nodes.tools import ToolLike, load_object
from reasoning_graphs.types import Frozen, StopReason, ToolCallRecord, Usage

__all__ = [
    "SYSTEM_PROMPT",
    "TASK_PROMPT",
    "AgentInput",
    "AgentOutput",
    "AgentSettings",
    "AgentState",
    "build_agent_graph",
]

# --- contracts (prompts and node bodies: in _agent_nodes) --------------------------------------


class AgentSettings(Frozen):
    """Structural settings of an agent graph."""

    max_steps: int = Field(default=6, ge=1, le=100)
    """Most model turns with tools bound (the closing ``answer`` call is not a step)."""
    output_schema: str | type[BaseModel] | None = None
    """A pydantic class, or ``MODULE:NAME`` naming one: the final answer is parsed into it."""
    system_prompt: str | None = None
    """The system message; None uses :data:`SYSTEM_PROMPT`, ``""`` sends none."""
    wrap_up: bool = True
    """After a step limit, make one closing call without tools for an answer."""
    sees: tuple[str, ...] = ("task", "context:*")
    """What the agent (and its tool factories) may read."""
    max_result_chars: int = Field(default=4000, ge=100)
    """Longest tool result shown to the model (longer ones are cut, with a note)."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""


# --- state -----------------------------------------------------------------------------------


class AgentInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """The task for the agent."""
    context: dict[str, str]
    """Named documents, stored as outputs ``context:<name>``; the agent reads those it may."""


class AgentOutput(CommonOutput, total=False):
    """What a run returns."""

    tool_calls: Annotated[list[ToolCallRecord], delta(operator.add)]
    """Every tool call: tool, arguments, result or error, call id."""
    steps: int
    """Model turns taken with tools bound."""
    answer_data: JsonValue
    """The final answer parsed into the output schema (None without a schema or an answer)."""


class AgentState(AgentInput, AgentOutput, CommonState, total=False):
    """Internal state."""

    messages: Annotated[list[AnyMessage], delta(add_messages)]
    """The agent's conversation: task, model turns, tool results."""
    draft: str | None
    """The text of the last turn when it called no tool (None while tools are being called)."""
    answer_text: str | None
    """The closing call's answer (JSON text when a schema is set)."""
    model: str
    """The model id of the latest turn (recorded on the ``answer`` output)."""
    exhausted: bool
    """The budget refused a call."""


# --- routing ---------------------------------------------------------------------------------


def _loop_stop(state: AgentState, settings: AgentSettings) -> StopReason | None:
    """Return why the act-observe loop must stop now, or None to run the turn's tools."""
    if state.get("exhausted"):
        return "budget"
    if state.get("error"):
        return "error"
    if state.get("draft") is not None:
        return "completed"
    if state.get("steps", 0) >= settings.max_steps:
        return "step_limit"
    if not state.get("budget", settings.budget).fits(state.get("usage") or Usage()):
        return "budget"
    return None


def _needs_answer(reason: StopReason | None, settings: AgentSettings, schema: bool) -> bool:
    return (reason == "completed" and schema) or (reason == "step_limit" and (schema or settings.wrap_up))


def _final_stop(state: AgentState, settings: AgentSettings, schema: bool) -> StopReason:
    """Return the run's stop reason (a missing schema answer the budget refused is ``budget``)."""
    reason = _loop_stop(state, settings) or "budget"
    if reason == "completed" and schema and state.get("answer_text") is None:
        return "budget"
    return reason


def _resolve_schema(value: str | type[BaseModel] | None) -> type[BaseModel] | None:
    if value is None or (isinstance(value, type) and issubclass(value, BaseModel)):
        return value
    loaded = load_object(value) if isinstance(value, str) else value
    if not (isinstance(loaded, type) and issubclass(loaded, BaseModel)):
        raise ValueError(f"output_schema {value!r} is not a pydantic model class; name one (MODULE:Class)")
    return loaded


# --- graph -----------------------------------------------------------------------------------


def build_agent_graph(
    *,
    tools: Sequence[ToolLike],
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    settings: AgentSettings | None = None,
) -> StateGraph[AgentState, Any, AgentInput, AgentOutput]:
    """Build the agent graph (uncompiled; compile it with the checkpointer you want).

    Args:
        tools: LangChain tools (``@tool`` functions, ``BaseTool``), documented functions, or
            :class:`~reasoning_graphs.nodes.ToolFactory` values given the agent's projection.
        model: the model when no roster is given (a provider string, chat model or client).
        roster: models rotated per turn: turn *k* uses ``roster[k % len(roster)]``.
        settings: step limit, output schema, system prompt, access list and default budget.

    Raises:
        ValueError: no tools, two tools with one name, a function without a docstring, an empty
            roster, or an output schema that is not a pydantic model class.
    """
    cfg = settings or AgentSettings()
    toolset = Toolset(tools)
    if not toolset:
        raise ValueError("an agent needs at least one tool; pass tools=[...] (or use a plain call)")
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    try:
        schema = _resolve_schema(cfg.output_schema)
    except Exception as exc:  # an InputError from loading: a build-time mistake here
        raise ValueError(f"cannot use output_schema {cfg.output_schema!r}: {exc}") from exc
    access = {"agent": AccessPolicy(sees=cfg.sees)}
    nodes = AgentNodes(toolset, members, cfg, schema, access)
    has_schema = schema is not None

    def after_act(state: AgentState) -> Literal["observe", "answer", "finish"]:
        reason = _loop_stop(state, cfg)
        if reason is None:
            return "observe"
        fits = state.get("budget", cfg.budget).fits(state.get("usage") or Usage())
        return "answer" if _needs_answer(reason, cfg, has_schema) and fits else "finish"

    def after_observe(state: AgentState) -> Literal["act", "finish"]:
        return "act" if state.get("budget", cfg.budget).fits(state.get("usage") or Usage()) else "finish"

    async def finish(state: AgentState, io: NodeIO) -> dict[str, Any]:
        return nodes.finish(state, _final_stop(state, cfg, has_schema))

    graph = StateGraph(AgentState, input_schema=AgentInput, output_schema=AgentOutput)
    for name in ("start", "act", "observe", "answer"):
        graph.add_node(name, dual_node(getattr(nodes, name), name=name))
    graph.add_node("finish", dual_node(finish, name="finish"))
    graph.add_edge(START, "start")
    graph.add_edge("start", "act")
    graph.add_conditional_edges("act", after_act)
    graph.add_conditional_edges("observe", after_observe)
    graph.add_edge("answer", "finish")
    graph.add_edge("finish", END)
    return graph
