"""The embedded model served by llama-cpp-python's OpenAI-compatible server, called by ChatOpenAI.

What this checks (llama-cpp-python 0.3.36, langchain-openai 1.7):

- Plain calls work and report usage. ChatOpenAI sends ``max_tokens`` as
  ``max_completion_tokens``, which this server ignores (a reply then runs to the context
  limit): pass the limit as ``extra_body={"max_tokens": N}``.
- ``with_structured_output(method="function_calling")`` works: a forced tool choice makes the
  server constrain decoding to the schema. ``method="json_schema"`` (ChatOpenAI's default) is
  rejected: the server accepts only ``response_format`` types ``text`` and ``json_object``.
  ``json_mode`` gives JSON that is not held to the schema.
- Tools are honoured only when ``tool_choice`` names one; with ``auto`` the model answers in text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import openai
import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from tests.servers import llama_server

pytestmark = [pytest.mark.local_model, pytest.mark.server]


class Answer(BaseModel):
    """A short answer with a confidence."""

    answer: str
    confidence: int


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny in {city}."


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llama-server") / "server.log") as url:
        yield url


def _chat(base_url: str, max_tokens: int) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=base_url,
        api_key="not-needed",
        model="smollm2",
        temperature=0,
        max_retries=0,
        timeout=60,
        extra_body={"max_tokens": max_tokens},
    )


def test_plain_call_reports_usage(base_url: str) -> None:
    reply = _chat(base_url, max_tokens=24).invoke("What is 2 + 2?")
    assert isinstance(reply.content, str)
    assert reply.content.strip()
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 0
    assert 0 < usage["output_tokens"] <= 24
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["model_name"] == "smollm2"


def test_max_tokens_through_extra_body(base_url: str) -> None:
    reply = _chat(base_url, max_tokens=5).invoke("Write a long story about a dragon.")
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == 5
    assert reply.response_metadata["finish_reason"] == "length"


def test_structured_output_by_function_calling(base_url: str) -> None:
    structured = _chat(base_url, max_tokens=48).with_structured_output(
        Answer, method="function_calling", include_raw=True
    )
    result = cast("dict[str, Any]", structured.invoke("What is the capital of France?"))
    assert result["parsing_error"] is None
    assert isinstance(result["parsed"], Answer)
    assert result["parsed"].answer.strip()
    assert result["raw"].usage_metadata["output_tokens"] > 0


def test_structured_output_json_schema_is_rejected_by_the_server(base_url: str) -> None:
    structured = _chat(base_url, max_tokens=48).with_structured_output(Answer, method="json_schema")
    with pytest.raises(openai.APIStatusError, match="'text' or 'json_object'"):
        structured.invoke("What is the capital of France?")


def test_named_tool_choice_is_enforced(base_url: str) -> None:
    reply = (
        _chat(base_url, max_tokens=48)
        .bind_tools([get_weather], tool_choice="get_weather")
        .invoke("What is the weather in Paris?")
    )
    (call,) = reply.tool_calls
    assert call["name"] == "get_weather"
    assert set(call["args"]) == {"city"}
