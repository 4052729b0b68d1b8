"""Chat-template turns from LangChain messages, and the embedded model's JSON tool-call protocol."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call

from reasoning_graphs.prompting import render

TOOLS_PROMPT = "You can use these tools:\n{tools}\n\nReply with one JSON object and nothing else: {forms}."
"""System instructions added when tools are bound; ``{tools}`` lists names, descriptions, args."""

_CALL_FORM = '{"tool": "<tool name>", "args": {<arguments>}} to call a tool'
_FINAL_FORM = '{"final": "<your answer>"} to give your final answer'


def _text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            raise ValueError(f"the embedded model reads text only; got a {block.get('type')!r} content block")
    return "".join(parts)


def _render(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """Turn LangChain messages into chat-template turns (tool traffic becomes plain text)."""
    turns: list[dict[str, str]] = []
    tool_names: dict[str, str] = {}
    after_tool = False
    for message in messages:
        if isinstance(message, ToolMessage):
            name = message.name or tool_names.get(message.tool_call_id, "tool")
            text = f"Result of {name} (call {message.tool_call_id}):\n{_text(message)}"
            if after_tool:
                turns[-1]["content"] += "\n\n" + text
            else:
                turns.append({"role": "user", "content": text})
            after_tool = True
            continue
        after_tool = False
        if isinstance(message, AIMessage):
            calls = [json.dumps({"tool": c["name"], "args": c["args"]}) for c in message.tool_calls]
            tool_names.update((c["id"], c["name"]) for c in message.tool_calls if c["id"])
            content = "\n".join(filter(None, [_text(message), *calls]))
            turns.append({"role": "assistant", "content": content})
        elif isinstance(message, SystemMessage):
            turns.append({"role": "system", "content": _text(message)})
        elif isinstance(message, HumanMessage):
            turns.append({"role": "user", "content": _text(message)})
        elif isinstance(message, ChatMessage):
            turns.append({"role": message.role, "content": _text(message)})
        else:
            raise ValueError(f"the embedded model cannot render a {message.type!r} message")
    return turns


def _tool_schema(tools: Sequence[dict[str, Any]], *, allow_final: bool) -> dict[str, Any]:
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": t["function"]["name"]}, "args": t["function"]["parameters"]},
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    if allow_final:
        options.append(
            {
                "type": "object",
                "properties": {"final": {"type": "string"}},
                "required": ["final"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": options}


def _tools_instructions(tools: Sequence[dict[str, Any]], *, allow_final: bool) -> str:
    listing = "\n".join(
        f"- {t['function']['name']}: {t['function'].get('description', '')} "
        f"Arguments: {json.dumps(t['function']['parameters'])}"
        for t in tools
    )
    forms = f"{_CALL_FORM}, or {_FINAL_FORM}" if allow_final else _CALL_FORM
    return render(TOOLS_PROMPT, tools=listing, forms=forms)


def _select_tools(tools: list[dict[str, Any]], tool_choice: Any) -> tuple[list[dict[str, Any]], bool]:
    """Return the tools the reply may call and whether a final answer is allowed."""
    if tool_choice in (None, "auto"):
        return tools, True
    if tool_choice in ("any", "required", True):
        return tools, False
    if tool_choice == "none":
        return [], True
    name = (
        tool_choice.get("function", tool_choice).get("name") if isinstance(tool_choice, dict) else tool_choice
    )
    chosen = [t for t in tools if t["function"]["name"] == name]
    if not chosen:
        known = sorted(t["function"]["name"] for t in tools)
        raise ValueError(f"tool_choice {tool_choice!r} names no bound tool; choose one of {known}")
    return chosen, False


def _add_system(turns: list[dict[str, str]], text: str) -> list[dict[str, str]]:
    if turns and turns[0]["role"] == "system":
        return [{"role": "system", "content": f"{turns[0]['content']}\n\n{text}"}, *turns[1:]]
    return [{"role": "system", "content": text}, *turns]


def _tool_reply(text: str) -> AIMessage:
    call_id = f"call_{uuid.uuid4().hex}"
    try:
        reply = json.loads(text)
    except json.JSONDecodeError as exc:
        error = f"reply is not complete JSON ({exc}); raise max_tokens if it was cut off"
        return AIMessage(
            content=text, invalid_tool_calls=[invalid_tool_call(args=text, id=call_id, error=error)]
        )
    if isinstance(reply, dict) and isinstance(reply.get("tool"), str) and isinstance(reply.get("args"), dict):
        return AIMessage(
            content="", tool_calls=[tool_call(name=reply["tool"], args=reply["args"], id=call_id)]
        )
    if isinstance(reply, dict) and isinstance(reply.get("final"), str):
        return AIMessage(content=reply["final"])
    error = "reply is neither a tool call nor a final answer"
    return AIMessage(content=text, invalid_tool_calls=[invalid_tool_call(args=text, id=call_id, error=error)])
