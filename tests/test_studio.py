"""``studio.py`` and ``langgraph.json``: what the LangGraph server loads, checked in process."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from reasoning_graphs import studio
from reasoning_graphs.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "notebooks" / "demo_model.json"
INPUTS: dict[str, dict[str, Any]] = json.loads((ROOT / "notebooks" / "demo_inputs.json").read_text())
MODEL = f"fake:{SCRIPT}"

STOPS = {
    "repair": ("passed", "The answer is 150."),
    "self_refine": ("judge_stop", "Canberra"),
    "reflection": ("completed", "type hints"),
    "dialectic": ("judge_stop", "spike first"),
    "tot": ("passed", "(13 - 9) * (10 - 4)"),
    "debate": ("completed", "Redis cache"),
    "adversarial": ("completed", "con: "),
    "perspectives": ("completed", "conditional: "),
    "evaluation": ("completed", "| 8 | 7 | 6 | 8 | 7 | 8 | 7 |"),
    "agent": ("completed", "S-90D51265"),
}
"""Each served graph's stop reason and a piece of its final answer, on its demo input."""


@pytest.fixture(scope="module", autouse=True)
def _forget_studio() -> Iterator[None]:
    """Only the server imports studio: leave it out of ``sys.modules`` for the tests that follow."""
    yield
    sys.modules.pop("reasoning_graphs.studio", None)


def _run(name: str, payload: dict[str, Any], context: dict[str, Any] | None = None) -> dict[str, Any]:
    graph = studio.studio_builder(name, MODEL).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": name}}
    return dict(asyncio.run(graph.ainvoke(payload, config, context=context)))


def test_langgraph_json_lists_every_graph_from_studio() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["dependencies"] == ["."]
    assert config["checkpointer"]["serde"]["pickle_fallback"] is False
    assert list(config["graphs"]) == list(studio.GRAPH_NAMES)
    assert set(studio.GRAPH_NAMES) == {*STOPS, "repair_approval"}
    for name, path in config["graphs"].items():
        module, _, attr = path.partition(":")
        assert (module, attr) == ("reasoning_graphs.studio", name)
        assert name in studio.__all__


@pytest.mark.parametrize("name", studio.GRAPH_NAMES)
def test_served_graphs_have_no_checkpointer_and_declare_the_context(name: str) -> None:
    graph = getattr(studio, name)
    assert isinstance(graph, CompiledStateGraph)
    assert graph.checkpointer is None  # the server brings its own and rejects a custom one
    assert graph.context_schema is studio.StudioContext
    assert graph.name == name
    assert set(graph.get_context_jsonschema()["properties"]) == {"model", "roster", "max_calls", "max_tokens"}  # type: ignore[index]


def test_default_model_comes_from_the_environment() -> None:
    assert studio.default_model({}) == "local:smollm2"
    assert studio.default_model({studio.MODEL_ENV: "  "}) == "local:smollm2"
    assert studio.default_model({studio.MODEL_ENV: MODEL}) == MODEL
    with pytest.raises(ConfigurationError, match="REASONING_GRAPHS_MODEL='gpt-4o'"):
        studio.default_model({studio.MODEL_ENV: "gpt-4o"})


def test_agent_tools_come_from_the_environment_or_the_examples(tmp_path: Path) -> None:
    assert studio.agent_tools_spec({}) == f"{ROOT / 'examples' / 'tools.py'}:TOOLS"
    assert studio.agent_tools_spec({studio.AGENT_TOOLS_ENV: "my_tools:TOOLS"}) == "my_tools:TOOLS"
    tools = tmp_path / "one_tool.py"
    tools.write_text(
        "from langchain_core.tools import tool\n\n\n@tool\ndef echo(text: str) -> str:\n"
        '    """Return the text."""\n    return text\n'
    )
    graph = studio.studio_builder("agent", MODEL, tools=f"{tools}:echo").compile()
    out = asyncio.run(graph.ainvoke({"task": "Say hi."}))
    assert out["stop_reason"] == "completed" and out["tool_calls"] == []


def test_the_context_validates_model_strings() -> None:
    assert studio.StudioContext(model="openai:gpt-4o-mini", roster=["local:smollm2"]).roster == [
        "local:smollm2"
    ]
    with pytest.raises(ValueError, match="PROVIDER:MODEL"):
        studio.StudioContext(model="gpt-4o")
    with pytest.raises(ValueError, match="unknown model provider"):
        studio.StudioContext(roster=["nope:x"])
    with pytest.raises(ValueError, match="extra"):
        studio.StudioContext.model_validate({"model": MODEL, "temperature": 3})


def test_unknown_graph_name_lists_the_served_ones() -> None:
    with pytest.raises(KeyError, match="served graphs: repair, repair_approval, self_refine"):
        studio.studio_builder("nope", MODEL)


@pytest.mark.parametrize("name", list(STOPS))
def test_every_graph_runs_on_its_demo_input(name: str) -> None:
    out = _run(name, INPUTS[name])
    stop_reason, answer = STOPS[name]
    assert out["stop_reason"] == stop_reason
    assert answer in out["final_answer"]
    assert set(out["usage"].by_model) == {MODEL}


def test_debate_pauses_for_answers_and_resumes() -> None:
    graph = studio.studio_builder("debate", MODEL).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "hitl-debate"}}
    asyncio.run(graph.ainvoke({"task": INPUTS["debate"]["task"]}, config))
    paused = graph.get_state(config)
    assert paused.next == ("clarify",)
    (pending,) = paused.interrupts
    assert [q["id"] for q in pending.value["questions"]] == ["agent-architect:1", "agent-performance:1"]
    out = asyncio.run(graph.ainvoke(Command(resume={"agent-architect:1": "Five years."}), config))
    assert out["stop_reason"] == "completed"
    assert [c.answer for c in out["clarifications"]] == ["Five years.", "NA"]


def test_repair_approval_pauses_before_accepting() -> None:
    graph = studio.studio_builder("repair_approval", MODEL).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "hitl-repair"}}
    asyncio.run(graph.ainvoke(INPUTS["repair"], config))
    (pending,) = graph.get_state(config).interrupts
    assert pending.value["kind"] == "approval" and pending.value["attempt"] == 2
    out = asyncio.run(graph.ainvoke(Command(resume={"approved": True}), config))
    assert out["stop_reason"] == "passed" and out["attempts"] == 2


def test_the_context_model_replaces_the_default(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"routes": [{"match": "How far does it go", "reply": "150 km."}]}))
    out = _run("repair", INPUTS["repair"], context={"model": f"fake:{other}"})
    assert out["stop_reason"] == "passed" and out["attempts"] == 1
    assert set(out["usage"].by_model) == {f"fake:{other}"}


def test_the_context_roster_fans_out(tmp_path: Path) -> None:
    second = tmp_path / "second.json"
    second.write_text(json.dumps({"routes": [], "default": "1. Name things well. 2. Test. 3. Format."}))
    out = _run("reflection", INPUTS["reflection"], context={"roster": [MODEL, f"fake:{second}"]})
    assert out["stop_reason"] == "completed"
    assert out["heterogeneous"] is True
    assert set(out["usage"].by_model) == {MODEL, f"fake:{second}"}


def test_verifier_specs_come_through_the_input() -> None:
    out = _run("repair", {**INPUTS["repair"], "verifier": "numeric:120"})
    assert out["stop_reason"] == "passed" and out["final_answer"] == "It goes 120 km."


def test_importing_studio_reads_the_model_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(studio.MODEL_ENV, MODEL)
    try:
        served = importlib.reload(studio).repair  # as the server imports it
        out = asyncio.run(served.ainvoke(INPUTS["repair"]))  # no context: the environment's model
        assert out["stop_reason"] == "passed"
        assert set(out["usage"].by_model) == {MODEL}
    finally:
        monkeypatch.delenv(studio.MODEL_ENV)
        importlib.reload(studio)
    examples = studio.repair.get_context_jsonschema()["properties"]["model"]["examples"]  # type: ignore[index]
    assert examples[0] == "local:smollm2"


_ENV_PROBE = r"""
import collections.abc, importlib, json, os, pkgutil, sys
ROOT = os.path.dirname(importlib.util.find_spec("reasoning_graphs").origin)
reads = []

class Recorder(collections.abc.MutableMapping):
    def __init__(self, data): self._data = data
    def _note(self, key):
        frame = sys._getframe(2)
        while frame and frame.f_code.co_filename.startswith("<"):  # this probe, frozen os and abc
            frame = frame.f_back
        if frame and frame.f_code.co_filename.startswith(ROOT):
            reads.append([os.path.relpath(frame.f_code.co_filename, ROOT), key])
    def __getitem__(self, key): self._note(key); return self._data[key]
    def __setitem__(self, key, value): self._data[key] = value
    def __delitem__(self, key): del self._data[key]
    def __iter__(self): self._note("*"); return iter(self._data)
    def __len__(self): return len(self._data)
    def copy(self): self._note("*"); return dict(self._data)

os.environ = Recorder(os.environ)
import reasoning_graphs
skip = {"reasoning_graphs.studio"}
for info in pkgutil.walk_packages(reasoning_graphs.__path__, "reasoning_graphs."):
    if info.name not in skip and not info.name.endswith(".__main__"):
        importlib.import_module(info.name)
before = list(reads)
importlib.import_module("reasoning_graphs.studio")
print(json.dumps({"package": before, "studio": reads[len(before):]}))
"""


def test_only_studio_reads_the_environment_at_import() -> None:
    """Import every module of the package in a fresh process with ``os.environ`` recorded."""
    done = subprocess.run(
        [sys.executable, "-c", _ENV_PROBE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reads = json.loads(done.stdout.strip().splitlines()[-1])
    assert reads["package"] == []
    assert ["studio.py", "REASONING_GRAPHS_MODEL"] in reads["studio"]  # the probe sees real reads


def test_the_context_sets_limits_for_a_run() -> None:
    from reasoning_graphs.graphs import build_repair_graph
    from reasoning_graphs.testing import ScriptedChatModel
    from reasoning_graphs.types import Verdict

    script = ScriptedChatModel(replies=["a", "b", "c"])
    graph = build_repair_graph(model=script, verifier=lambda c: Verdict(passed=False, feedback=c))
    out = graph.compile().invoke({"task": "t"}, context=studio.StudioContext(max_calls=1))
    assert out["stop_reason"] == "budget" and out["usage"].total.calls == 1
