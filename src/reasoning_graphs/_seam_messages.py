"""Small helpers of the model seam: prompt to messages, reply text, usage, model id, error text."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from reasoning_graphs.types import UsageCounts


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)


def _usage_of(message: BaseMessage | None) -> UsageCounts:
    meta = getattr(message, "usage_metadata", None) if message is not None else None
    if not meta:
        return UsageCounts(calls=1, unknown_usage_calls=1)
    return UsageCounts(
        calls=1,
        input_tokens=int(meta.get("input_tokens", 0)),
        output_tokens=int(meta.get("output_tokens", 0)),
    )


def _as_messages(prompt: str | Sequence[BaseMessage], system: str | None) -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        messages.insert(0, SystemMessage(system))
    return messages


def _short(exc: object, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _default_id(model: BaseChatModel) -> str:
    for attr in ("model_id", "model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value if ":" in value else f"{model._llm_type}:{value}"
    return model._llm_type
