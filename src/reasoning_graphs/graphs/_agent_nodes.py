"""Prompts and node bodies of the agent graph (see :mod:`reasoning_graphs.graphs.agent`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from reasoning_graphs.access import AccessPolicy, Output
from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._common import budget_for_run, read_as, require_text
from reasoning_graphs.models import ModelRef
from reasoning_graphs.nodes import NodeIO, Toolset, act, generate, observe, pick_model, roster_from_context
from reasoning_graphs.nodes.tools import ANSWER_PROMPT, SCHEMA_ANSWER_PROMPT, close_pending
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import StopReason, Usage

if TYPE_CHECKING:
    from reasoning_graphs.graphs.agent import AgentSettings, AgentState

__all__ = ["CONTEXT_PROMPT", "SYSTEM_PROMPT", "TASK_PROMPT", "AgentNodes"]

SYSTEM_PROMPT = (
    "You can call tools. Call a tool whenever it can give you information you do not have. "
    "When you know the answer, reply with it directly, without calling a tool."
)
"""The default system message of the agent."""

TASK_PROMPT = PromptTemplate("{task}{context}")
"""The agent's first message: the task, then the context documents it may read."""

CONTEXT_PROMPT = PromptTemplate("\n\n## {name}\n{text}")
"""One context document in the first message."""


def _first_messages(seen: Mapping[str, Output], system: str) -> list[BaseMessage]:
    context = "".join(
        CONTEXT_PROMPT.render(name=label.partition(":")[2], text=out.text)
        for label, out in seen.items()
        if label.startswith("context:")
    )
    task = seen["task"].text if "task" in seen else ""
    first: list[BaseMessage] = [HumanMessage(TASK_PROMPT.render(task=task, context=context))]
    return [SystemMessage(system), *first] if system else first


def _with_ids(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return the messages with an id each (copies where one was missing).

    ``messages`` is a delta channel: its value is rebuilt by replaying the stored writes through
    ``add_messages``, which gives an id-less message a fresh random id on every replay. Writing
    the ids keeps them the same on every read of the thread.
    """
    return [m if m.id else m.model_copy(update={"id": str(uuid.uuid4())}) for m in messages]


def _last_turn(state: AgentState) -> AIMessage:
    messages = state.get("messages") or []
    if not messages or not isinstance(messages[-1], AIMessage):
        raise RuntimeError("the agent's last message is not a model turn; the thread state is corrupt")
    return messages[-1]


class AgentNodes:
    """The node bodies, closed over the factory's arguments (nothing here goes into state)."""

    def __init__(
        self,
        toolset: Toolset,
        members: list[ModelRef],
        cfg: AgentSettings,
        schema: type[BaseModel] | None,
        access: dict[str, AccessPolicy],
    ) -> None:
        self.toolset, self.members, self.cfg, self.schema, self.access = toolset, members, cfg, schema, access
        self.system = SYSTEM_PROMPT if cfg.system_prompt is None else cfg.system_prompt

    async def start(self, state: AgentState, io: NodeIO) -> dict[str, Any]:
        task = require_text(state.get("task"), "task")
        context = state.get("context") or {}
        if not isinstance(context, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in context.items()
        ):
            raise InputError(f"input 'context' must map names to texts, got {context!r}")
        outputs = {"task": Output(label="task", text=task, role="user")}
        for name, text in context.items():
            outputs[f"context:{name}"] = Output(label=f"context:{name}", text=text, role="user")
        return {"budget": budget_for_run(state, self.cfg.budget), "access": self.access, "outputs": outputs}

    async def act(self, state: AgentState, io: NodeIO) -> dict[str, Any]:
        seen, record = read_as(state, "agent")
        tools = self.toolset.bind(seen)
        history: list[BaseMessage] = list(state.get("messages") or [])
        new = [] if history else _first_messages(seen, self.system)
        steps = state.get("steps", 0)
        client = pick_model(roster_from_context(self.members), steps)
        usage = state.get("usage") or Usage()
        allowance = state.get("budget", self.cfg.budget).allowance(usage)
        turn = await act(io, client, [*history, *new], tools, node="act", max_calls=allowance)
        update: dict[str, Any] = {"usage": turn.usage, "reads": [record]}
        if turn.message is None:
            failure = {"exhausted": True} if turn.budget_exhausted else {"error": turn.error}
            return update | failure | {"messages": _with_ids(new)}
        draft = None if turn.wants_tools else turn.text
        return update | {
            "messages": _with_ids([*new, turn.message]),
            "steps": steps + 1,
            "draft": draft,
            "model": turn.model,
        }

    async def observe(self, state: AgentState, io: NodeIO) -> dict[str, Any]:
        seen, record = read_as(state, "agent")
        tools = self.toolset.bind(seen)
        messages, records = await observe(
            io, tools, _last_turn(state), max_result_chars=self.cfg.max_result_chars
        )
        return {"messages": _with_ids(messages), "tool_calls": records, "reads": [record]}

    async def answer(self, state: AgentState, io: NodeIO) -> dict[str, Any]:
        last = _last_turn(state)
        closing, records = close_pending(last) if last.tool_calls or last.invalid_tool_calls else ([], [])
        prompt = (ANSWER_PROMPT if self.schema is None else SCHEMA_ANSWER_PROMPT).render()
        new: list[BaseMessage] = [*closing, HumanMessage(prompt)]
        client = pick_model(roster_from_context(self.members), state.get("steps", 0))
        usage = state.get("usage") or Usage()
        allowance = state.get("budget", self.cfg.budget).allowance(usage)
        history = list(state.get("messages") or [])
        out = await generate(
            io, client, [*history, *new], node="answer", schema=self.schema, max_calls=allowance
        )
        update: dict[str, Any] = {"usage": out.usage, "tool_calls": records, "messages": _with_ids(new)}
        if out.budget_exhausted:
            return update | {"exhausted": True}
        if not out.ok:
            return update | {"error": out.error}
        data = out.value.model_dump(mode="json") if isinstance(out.value, BaseModel) else None
        text = out.value.model_dump_json() if isinstance(out.value, BaseModel) else str(out.value)
        reply = AIMessage(out.text)
        return update | {
            "messages": _with_ids([*new, reply]),
            "answer_text": text,
            "answer_data": data,
            "model": out.model,
        }

    def finish(self, state: AgentState, reason: StopReason) -> dict[str, Any]:
        answer = state.get("answer_text")
        final = answer if answer is not None else state.get("draft")
        update: dict[str, Any] = {
            "stop_reason": reason,
            "final_answer": final,
            "steps": state.get("steps", 0),
            "answer_data": state.get("answer_data"),
        }
        if final is not None:
            model = state.get("model", "")
            out = Output(label="answer", text=final, role="agent", model=model, data=update["answer_data"])
            update["outputs"] = {"answer": out}
        return update
