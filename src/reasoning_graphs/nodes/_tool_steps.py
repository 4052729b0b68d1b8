"""One model turn with tools bound (:func:`act`) and one tool step (:func:`observe`).

Both are the building blocks of :func:`reasoning_graphs.nodes.tools.generate_with_tools` (the
whole loop in one node) and of the ``agent`` graph (each turn and each tool step its own node).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from pydantic import JsonValue

from reasoning_graphs.errors import BudgetExceeded, ModelError
from reasoning_graphs.models import ModelClient
from reasoning_graphs.nodes._runtime import NodeIO
from reasoning_graphs.types import ToolCallRecord, Usage, UsageCounts

__all__ = ["NOT_RUN", "Turn", "act", "close_pending", "message_text", "observe"]

NOT_RUN = "Not run: the step limit was reached."
"""The observation for tool calls left unanswered by a step limit."""


@dataclass(frozen=True)
class Turn:
    """One model turn with tools bound."""

    message: AIMessage | None
    """The reply (None when the call failed)."""
    model: str
    """The model id asked."""
    usage: Usage
    """The ledger entry for this turn."""
    error: str | None = None
    """Why the call failed for good, if it did."""
    budget_exhausted: bool = False
    """True when the budget refused the call."""

    @property
    def ok(self) -> bool:
        """Whether a reply came back."""
        return self.message is not None

    @property
    def wants_tools(self) -> bool:
        """Whether the reply calls a tool (or tried to, with a call that could not be read)."""
        return self.message is not None and bool(self.message.tool_calls or self.message.invalid_tool_calls)

    @property
    def text(self) -> str:
        """The reply's text ('' when none)."""
        return message_text(self.message) if self.message is not None else ""


def message_text(message: BaseMessage) -> str:
    """Return a message's text content."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)


async def act(
    io: NodeIO,
    client: ModelClient,
    messages: Sequence[BaseMessage],
    tools: Mapping[str, BaseTool],
    *,
    node: str,
    max_calls: int | None = None,
    tool_choice: str | None = "auto",
) -> Turn:
    """Ask the model for one turn with ``tools`` bound; never raises for model failures.

    ``tool_choice="auto"`` (call a tool or answer) is OpenAI's default, stated because some
    OpenAI-compatible servers (llama-cpp-python's) ignore tools unless it is; None leaves the
    choice to the provider.
    """
    bound = list(tools.values()) or None
    try:
        reply = await io.ask(
            client,
            list(messages),
            max_calls=max_calls,
            tools=bound,
            tool_choice=tool_choice if bound else None,
        )
    except BudgetExceeded as exc:
        spent = exc.usage or UsageCounts()
        usage = Usage.of(spent, model=client.model_id, node=node)
        return Turn(None, client.model_id, usage, error=str(exc), budget_exhausted=True)
    except ModelError as exc:
        spent = exc.usage or UsageCounts(calls=1, failed_calls=1, unknown_usage_calls=1)
        return Turn(None, client.model_id, Usage.of(spent, model=client.model_id, node=node), error=str(exc))
    message = reply.message if reply.message is not None else AIMessage(reply.text)
    return Turn(message, reply.model, Usage.of(reply.usage, model=reply.model, node=node))


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit} more characters cut)"


def _json_args(args: Any) -> dict[str, JsonValue]:
    data = json.loads(json.dumps(args if isinstance(args, dict) else {"input": args}, default=str))
    return data if isinstance(data, dict) else {}


async def _run_one(io: NodeIO, tools: Mapping[str, BaseTool], call: ToolCall) -> tuple[str, bool]:
    tool = tools.get(call["name"])
    if tool is None:
        return f"Error: there is no tool {call['name']!r}; the tools are {sorted(tools)}.", True
    whole = ToolCall(name=call["name"], args=call["args"], id=call.get("id"), type="tool_call")
    try:
        result = await io.invoke_tool(tool, whole)
    except GraphBubbleUp:  # interrupts and other LangGraph control flow are not tool errors
        raise
    except Exception as exc:
        return f"Error: {type(exc).__name__}: {exc}", True
    return message_text(result), getattr(result, "status", "success") == "error"


async def observe(
    io: NodeIO,
    tools: Mapping[str, BaseTool],
    message: AIMessage,
    *,
    max_result_chars: int = 4000,
) -> tuple[list[BaseMessage], list[ToolCallRecord]]:
    """Run every tool call of ``message`` in order; errors become observations, not exceptions.

    Returns:
        The observation messages to append to the conversation, and one record per call.
    """
    messages: list[BaseMessage] = []
    records: list[ToolCallRecord] = []
    for call in message.tool_calls:
        text, failed = await _run_one(io, tools, call)
        text = _clip(text, max_result_chars)
        call_id = call.get("id") or ""
        status = "error" if failed else "success"
        messages.append(ToolMessage(content=text, tool_call_id=call_id, name=call["name"], status=status))
        records.append(
            ToolCallRecord(
                tool=call["name"], args=_json_args(call["args"]), result=text, error=failed, call_id=call_id
            )
        )
    for bad in message.invalid_tool_calls:
        text = (
            f"Error: your tool call could not be read ({bad.get('error') or 'invalid arguments'}). "
            "Call a tool with valid JSON arguments, or give your final answer."
        )
        call_id = bad.get("id") or ""
        name = bad.get("name") or ""
        messages.append(
            ToolMessage(content=text, tool_call_id=call_id, name=name, status="error")
            if call_id
            else HumanMessage(text)
        )
        records.append(ToolCallRecord(tool=name, args={}, result=text, error=True, call_id=call_id))
    return messages, records


def close_pending(message: AIMessage) -> tuple[list[BaseMessage], list[ToolCallRecord]]:
    """Answer the calls of ``message`` that will not run (step limit) with :data:`NOT_RUN`.

    Providers reject a conversation in which a tool call has no result, so a closing call after a
    step limit must carry these.
    """
    messages: list[BaseMessage] = []
    records: list[ToolCallRecord] = []
    for call in [*message.tool_calls, *message.invalid_tool_calls]:
        call_id = call.get("id") or ""
        name = call.get("name") or ""
        messages.append(ToolMessage(content=NOT_RUN, tool_call_id=call_id, name=name, status="error"))
        args = _json_args(call.get("args")) if isinstance(call.get("args"), dict) else {}
        records.append(ToolCallRecord(tool=name, args=args, result=NOT_RUN, error=True, call_id=call_id))
    return messages, records
