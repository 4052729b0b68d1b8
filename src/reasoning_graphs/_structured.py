"""JSON structured output for chat models that reply with JSON text.

The embedded model (grammar-constrained JSON) and the scripted fake both answer a schema request
with plain JSON text. This module turns such a model into the runnable that
``BaseChatModel.with_structured_output`` is expected to return, with LangChain's ``include_raw``
contract: ``{"raw": AIMessage, "parsed": value | None, "parsing_error": Exception | None}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ValidationError

__all__ = ["json_schema_of", "parse_json_reply", "structured_runnable"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def json_schema_of(schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """Return the JSON schema of a pydantic model class or pass a dict schema through."""
    if isinstance(schema, dict):
        return schema
    return schema.model_json_schema()


def parse_json_reply(text: str, schema: type[BaseModel] | dict[str, Any]) -> Any:
    """Parse a JSON reply (optionally inside a markdown fence) into ``schema``.

    Raises:
        ValueError: the text is not JSON, or a ``ValidationError`` when it breaks the schema.
    """
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"reply is not valid JSON ({exc.msg} at char {exc.pos}): {body[:200]!r}") from exc
    if isinstance(schema, dict):
        return data
    return schema.model_validate(data)


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part if isinstance(part, str) else str(part.get("text", "")) for part in content)


def structured_runnable(
    bound: Runnable[Any, BaseMessage],
    schema: type[BaseModel] | dict[str, Any],
    *,
    include_raw: bool,
) -> Runnable[Any, Any]:
    """Wrap a model runnable whose replies are JSON text into a structured-output runnable."""

    def parse(message: BaseMessage) -> Any:
        try:
            parsed = parse_json_reply(_message_text(message), schema)
        except (ValueError, ValidationError) as exc:
            if not include_raw:
                raise
            return {"raw": message, "parsed": None, "parsing_error": exc}
        if include_raw:
            return {"raw": message, "parsed": parsed, "parsing_error": None}
        return parsed

    return bound | RunnableLambda(parse, name="parse_json_reply")
