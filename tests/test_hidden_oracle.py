"""Hidden oracle: the task asks for a random value that only a tool can return.

The value is drawn fresh for every try and appears in no prompt, so an answer that holds it shows
the tool was called and its result used; a single call can only guess. With the scripted fake the
agent graph must return it. With the embedded SmolLM2-135M the tests record, honestly, how often
the agent succeeds and how often a single call on the same tasks does; they assert that every run
ends consistently (a known stop reason, every turn in the ledger), never that the model succeeds.

Run them with ``pytest tests/test_hidden_oracle.py -m local_model -s`` (the numbers are printed).

What the OpenAI-compatible path can do here (llama-cpp-python 0.3.36, ``llama_cpp.server``):

- Default chat format (the GGUF's template): tools are honoured only when ``tool_choice`` names
  one; with ``auto`` the model answers in text, so an agent is a single call.
- ``--chat_format chatml-function-calling``: ``tool_choice="auto"`` works on the first turn (the
  model may call the tool). The next turn fails: the server rejects an assistant message whose
  ``content`` is null (abetlen/llama-cpp-python#1805), which is how ``ChatOpenAI`` (and the
  OpenAI spec) send a tool-call turn, so the agent ends with ``error``. Even with that patched,
  this format's template drops ``tool`` messages, so the model never sees the result.
- ``ChatOpenAI`` sends ``max_tokens`` as ``max_completion_tokens``, which the server ignores: the
  limit goes in ``extra_body``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool

from reasoning_graphs.graphs.agent import AgentSettings, build_agent_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.nodes.tools import load_object, load_tools
from reasoning_graphs.testing import ScriptedChatModel
from tests.servers import llama_server

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("launch", "vault", "orchid", "harbor")
TASK = "What is the secret value stored under the name '{name}'? Reply with the value."
TRIES = 4
AGENT = AgentSettings(max_steps=2)


def secret_tool(key: str, value: str) -> BaseTool:
    """The oracle: ``value`` for any name that mentions ``key`` (small models mangle quotes)."""

    @tool
    def lookup_secret(name: str) -> str:
        """Look up the secret value stored under a name. Only this tool knows secret values."""
        return value if key in name.lower() else f"No secret is stored under {name!r}."

    return lookup_secret


def oracle_replies(messages: list[BaseMessage]) -> Any:
    """A scripted model that uses the tool, then reports what it returned."""
    if isinstance(messages[-1], ToolMessage):
        return f"The secret value is {messages[-1].content}."
    return {"tool_calls": [{"name": "lookup_secret", "args": {"name": "launch"}}]}


def test_scripted_agent_returns_the_hidden_value() -> None:
    value = f"S-{secrets.token_hex(6).upper()}"
    model = ScriptedChatModel(responder=oracle_replies)
    client = ModelClient(model, retry=RetrySettings(initial_delay=0, jitter=False))
    app = build_agent_graph(tools=[secret_tool("launch", value)], model=client).compile()
    out = app.invoke({"task": TASK.format(name="launch")})
    assert out["stop_reason"] == "completed" and value in out["final_answer"]
    assert value not in model.prompt_texts[0]  # only the tool knows it
    assert [(r.tool, r.result) for r in out["tool_calls"]] == [("lookup_secret", value)]


def test_scripted_agent_with_the_example_tool_module() -> None:
    secret_for = load_object(f"{ROOT / 'examples' / 'tools.py'}:secret_for")
    model = ScriptedChatModel(responder=oracle_replies)
    tools = load_tools(f"{ROOT / 'examples' / 'tools.py'}:TOOLS")
    app = build_agent_graph(tools=tools, model=ModelClient(model)).compile()
    out = app.invoke({"task": TASK.format(name="launch")})
    assert secret_for("launch") in out["final_answer"]
    assert secret_for("launch") not in model.prompt_texts[0]


# --- the embedded model: agent against a single call ------------------------------------------------


@dataclass
class Tally:
    """Successes per arm and one line per try."""

    agent: int = 0
    single: int = 0
    lines: list[str] = field(default_factory=list)


def compare(client: ModelClient, label: str) -> Tally:
    """Run ``TRIES`` hidden-oracle tasks through the agent and through a single call."""
    tally = Tally()
    for name in NAMES[:TRIES]:
        value = f"S-{secrets.token_hex(4).upper()}"
        task = TASK.format(name=name)
        app = build_agent_graph(tools=[secret_tool(name, value)], model=client, settings=AGENT).compile()
        out = app.invoke({"task": task})
        assert out["stop_reason"] in ("completed", "step_limit", "budget", "error")
        by_node = out["usage"].by_node
        turns = by_node["act"].calls - by_node["act"].failed_calls if "act" in by_node else 0
        assert out["steps"] == turns <= AGENT.max_steps  # every successful turn is in the ledger
        assert all(r.result for r in out.get("tool_calls", []))
        found = value in (out["final_answer"] or "")
        single = client.call(task)
        solo = value in single.text
        tally.agent += found
        tally.single += solo
        used = [r.result == value for r in out.get("tool_calls", [])]
        tally.lines.append(
            f"{label} {name}: agent={'yes' if found else 'no'} ({out['stop_reason']}, {out['steps']} steps, "
            f"tool returned the value {sum(used)}x, {out['usage'].total.calls} calls, "
            f"{out['usage'].total.failed_calls} failed); single={'yes' if solo else 'no'}"
        )
    print(f"\nhidden oracle via {label}: agent {tally.agent}/{TRIES}, single call {tally.single}/{TRIES}")
    print("\n".join(tally.lines))
    return tally


@pytest.mark.local_model
def test_hidden_oracle_embedded_in_process(record_property: Any) -> None:
    pytest.importorskip(
        "llama_cpp", reason="needs the local extra (llama-cpp-python); ./dev setup installs it"
    )
    from reasoning_graphs.models import ModelSettings, resolve

    client = resolve("local:smollm2", ModelSettings(max_tokens=40, temperature=0))
    tally = compare(client, "local:smollm2 (in process)")
    record_property(
        "hidden_oracle_in_process", {"agent": tally.agent, "single": tally.single, "tries": TRIES}
    )
    assert len(tally.lines) == TRIES


# --- the same model through llama-cpp-python's OpenAI-compatible server ------------------------------


@pytest.fixture(scope="module")
def function_calling_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("oracle-server") / "server.log"
    with llama_server(log, "--chat_format", "chatml-function-calling") as url:
        yield url


@pytest.mark.local_model
@pytest.mark.server
def test_hidden_oracle_through_the_openai_compatible_server(
    function_calling_server: str, record_property: Any
) -> None:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        base_url=function_calling_server,
        api_key="not-needed",
        model="smollm2",
        temperature=0,
        max_retries=0,
        timeout=120,
        extra_body={"max_tokens": 40},
    )
    client = ModelClient(chat, model_id="openai:smollm2", retry=RetrySettings(initial_delay=0, jitter=False))
    tally = compare(client, "openai:smollm2 (llama_cpp.server, chatml-function-calling)")
    record_property("hidden_oracle_server", {"agent": tally.agent, "single": tally.single, "tries": TRIES})
    assert len(tally.lines) == TRIES
