from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs.agent import AgentSettings, build_agent_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.nodes import ToolFactory
from reasoning_graphs.nodes.tools import NOT_RUN
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.types import ToolCallRecord
from tests.conftest import thread

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)
CHILD = Path(__file__).with_name("agent_kill_child.py")
ROOT = Path(__file__).resolve().parents[2]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up in the registry."""
    if key != "alpha":
        raise KeyError(f"no entry {key!r}")
    return "alpha=7"


class Total(BaseModel):
    """The answer as a number."""

    total: int


def fake(*replies: Any, name: str = "scripted") -> tuple[ScriptedChatModel, ModelClient]:
    model = ScriptedChatModel(replies=list(replies), model_name=name)
    return model, ModelClient(model, retry=NO_WAIT)


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "args": a} for n, a in pairs]}


def run(graph: Any, saver: Any, payload: dict[str, Any], tid: str = "t1") -> dict[str, Any]:
    return dict(graph.compile(checkpointer=saver).invoke(payload, thread(tid)))


def test_two_tools_one_error_then_an_answer(saver: Any) -> None:
    model, client = fake(
        calls(("lookup", {"key": "beta"})),
        calls(("lookup", {"key": "alpha"}), ("add", {"a": 7, "b": 5})),
        "alpha plus five is 12",
    )
    out = run(build_agent_graph(tools=[add, lookup], model=client), saver, {"task": "alpha + 5?"})
    assert out["stop_reason"] == "completed" and out["final_answer"] == "alpha plus five is 12"
    assert out["steps"] == 3 and out["usage"].total.calls == 3 == model.calls
    assert out["usage"].by_node["act"].calls == 3
    records: list[ToolCallRecord] = out["tool_calls"]
    assert [(r.tool, r.args, r.error) for r in records] == [
        ("lookup", {"key": "beta"}, True),
        ("lookup", {"key": "alpha"}, False),
        ("add", {"a": 7, "b": 5}, False),
    ]
    assert records[0].result == "Error: KeyError: \"no entry 'beta'\"" and records[2].result == "12"
    first, second, third = model.prompts
    assert isinstance(first[0], SystemMessage) and first[1].content == "alpha + 5?"
    assert isinstance(second[-1], ToolMessage) and "no entry 'beta'" in str(second[-1].content)
    assert [m.content for m in third[-2:]] == ["alpha=7", "12"]
    assert model.tool_names == [["add", "lookup"]] * 3


def test_the_thread_keeps_the_conversation_and_records_as_plain_data(saver: Any) -> None:
    _, client = fake(calls(("add", {"a": 1, "b": 2})), "3")
    app = build_agent_graph(tools=[add], model=client).compile(checkpointer=saver)
    app.invoke({"task": "1+2?"}, thread())
    values = app.get_state(thread()).values
    kinds = [type(m).__name__ for m in values["messages"]]
    assert kinds == ["SystemMessage", "HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert values["tool_calls"][0].result == "3"
    assert values["outputs"]["answer"].text == "3" and values["outputs"]["answer"].model == "fake:scripted"
    assert [r.node for r in values["reads"]] == ["agent", "agent", "agent"]


def test_step_limit_wraps_up_with_a_closing_call(saver: Any) -> None:
    model, client = fake(calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 2, "b": 2})), "4, finally")
    graph = build_agent_graph(tools=[add], model=client, settings=AgentSettings(max_steps=2))
    out = run(graph, saver, {"task": "t"})
    assert out["stop_reason"] == "step_limit" and out["final_answer"] == "4, finally" and out["steps"] == 2
    assert [r.result for r in out["tool_calls"]] == ["2", NOT_RUN]
    assert out["usage"].by_node["answer"].calls == 1 and model.tool_names[-1] == []
    assert isinstance(model.prompts[-1][-2], ToolMessage) and "final answer now" in model.prompt_texts[-1]


def test_step_limit_without_wrap_up_ends_without_an_answer(saver: Any) -> None:
    model, client = fake(calls(("add", {"a": 1, "b": 1})))
    graph = build_agent_graph(tools=[add], model=client, settings=AgentSettings(max_steps=1, wrap_up=False))
    out = run(graph, saver, {"task": "t"})
    assert out["stop_reason"] == "step_limit" and out["final_answer"] is None
    assert model.calls == 1 and out.get("tool_calls", []) == []


def test_budget_exhaustion_mid_loop(saver: Any) -> None:
    model, client = fake(*[calls(("add", {"a": i, "b": 0})) for i in range(6)])
    out = run(build_agent_graph(tools=[add], model=client), saver, {"task": "t", "max_calls": 3})
    assert out["stop_reason"] == "budget" and out["final_answer"] is None
    assert model.calls == 3 == out["usage"].total.calls
    assert [r.result for r in out["tool_calls"]] == ["0", "1"]  # the third turn's call never ran


def test_token_budget_stops_the_loop(saver: Any) -> None:
    usage = {"input_tokens": 30, "output_tokens": 10}
    model, client = fake(*[calls(("add", {"a": i, "b": 0})) | {"usage": usage} for i in range(6)])
    out = run(build_agent_graph(tools=[add], model=client), saver, {"task": "t", "max_tokens": 100})
    assert out["stop_reason"] == "budget" and model.calls == 3 and out["usage"].total.tokens == 120


def test_a_failed_model_call_ends_with_error(saver: Any) -> None:
    _, client = fake(calls(("add", {"a": 1, "b": 1})), {"raise": "auth"})
    out = run(build_agent_graph(tools=[add], model=client), saver, {"task": "t"})
    assert out["stop_reason"] == "error" and out["final_answer"] is None
    assert out["usage"].total.failed_calls == 1 and len(out["tool_calls"]) == 1


def test_structured_answer_after_the_loop(saver: Any) -> None:
    model, client = fake(calls(("add", {"a": 2, "b": 3})), "It is 5.", '{"total": 5}')
    graph = build_agent_graph(tools=[add], model=client, settings=AgentSettings(output_schema=Total))
    out = run(graph, saver, {"task": "2+3?"})
    assert out["stop_reason"] == "completed" and out["answer_data"] == {"total": 5}
    assert json.loads(out["final_answer"]) == {"total": 5}
    assert out["usage"].by_node["answer"].calls == 1 and model.tool_names[-1] == []
    assert "as one JSON object" in model.prompt_texts[-1]


def test_schema_repair_and_a_schema_named_by_module(saver: Any) -> None:
    _, client = fake("5", "not json", '{"total": 5}')
    cfg = AgentSettings(output_schema="tests.graphs.test_agent:Total")
    out = run(build_agent_graph(tools=[add], model=client, settings=cfg), saver, {"task": "2+3?"})
    assert out["answer_data"] == {"total": 5} and out["usage"].total.schema_repairs == 1


def test_budget_refusing_the_schema_answer_keeps_the_draft(saver: Any) -> None:
    _, client = fake("It is 5.")
    graph = build_agent_graph(tools=[add], model=client, settings=AgentSettings(output_schema=Total))
    out = run(graph, saver, {"task": "2+3?", "max_calls": 1})
    assert out["stop_reason"] == "budget" and out["final_answer"] == "It is 5."
    assert out["answer_data"] is None


def test_tools_and_prompts_see_only_the_agent_access_list(saver: Any) -> None:
    canary = "CANARY-51d9"
    received: list[list[str]] = []

    def build(seen: Any) -> list[BaseTool]:
        received.append(sorted(seen))

        @tool
        def read_context() -> str:
            """Read every document the agent may see."""
            return " | ".join(o.text for o in seen.values())

        return [read_context]

    model, client = fake(calls(("read_context", {})), "done")
    graph = build_agent_graph(
        tools=[ToolFactory(build)],
        model=client,
        settings=AgentSettings(sees=("task", "context:public")),
    )
    out = run(graph, saver, {"task": "summarize", "context": {"public": "open data", "private": canary}})
    assert received and all(labels == ["context:public", "task"] for labels in received)
    assert out["tool_calls"][0].result == "open data | summarize"  # sorted by label
    assert all(canary not in text for text in model.prompt_texts)
    assert "## public\nopen data" in model.prompt_texts[0]


def test_roster_rotates_per_turn(saver: Any) -> None:
    _, a = fake(calls(("add", {"a": 1, "b": 1})), name="a")
    _, b = fake("2", name="b")
    out = run(build_agent_graph(tools=[add], roster=[a, b]), saver, {"task": "1+1?"})
    assert set(out["usage"].by_model) == {"fake:a", "fake:b"} and out["final_answer"] == "2"


def test_resume_after_a_crash_before_the_next_turn_does_not_rerun_tools(saver: Any) -> None:
    ran: list[int] = []

    @tool
    def stamp(n: int) -> str:
        """Record a side effect."""
        ran.append(n)
        return f"stamped {n}"

    model, client = fake(calls(("stamp", {"n": 1})), KeyboardInterrupt(), "stamped once")
    app = build_agent_graph(tools=[stamp], model=client).compile(checkpointer=saver)
    with pytest.raises(KeyboardInterrupt):
        app.invoke({"task": "stamp"}, thread())
    assert ran == [1] and model.calls == 2
    out = app.invoke(None, thread())
    assert out["final_answer"] == "stamped once" and out["stop_reason"] == "completed"
    assert ran == [1] and model.calls == 3  # only the interrupted turn ran again
    assert out["usage"].total.calls == 2


def test_async_invoke_matches_sync_invoke() -> None:
    _, client = fake(calls(("add", {"a": 2, "b": 2})), "4")
    app = build_agent_graph(tools=[add], model=client).compile(checkpointer=InMemorySaver())
    out = asyncio.run(app.ainvoke({"task": "2+2?"}, thread()))
    assert out["final_answer"] == "4" and out["tool_calls"][0].result == "4"


def test_input_is_checked_before_any_call() -> None:
    model, client = fake("unused")
    app = build_agent_graph(tools=[add], model=client).compile()
    with pytest.raises(InputError, match="'task'"):
        app.invoke({"task": " "})
    with pytest.raises(InputError, match="'context'"):
        app.invoke({"task": "t", "context": {"a": 1}})
    assert model.calls == 0


def test_build_time_checks_name_the_fix() -> None:
    with pytest.raises(ValueError, match="at least one tool"):
        build_agent_graph(tools=[])
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        build_agent_graph(tools=[add, add])
    with pytest.raises(ValueError, match="roster is empty"):
        build_agent_graph(tools=[add], roster=[])
    with pytest.raises(ValueError, match="not a pydantic model class"):
        build_agent_graph(tools=[add], settings=AgentSettings(output_schema="tests.graphs.test_agent:add"))
    with pytest.raises(ValueError, match="cannot use output_schema"):
        build_agent_graph(tools=[add], settings=AgentSettings(output_schema="no_such_module_xyz:Thing"))


def test_topology_snapshot() -> None:
    _, client = fake()
    drawing = build_agent_graph(tools=[add], model=client).compile().get_graph().draw_mermaid()
    edges = sorted(line.strip() for line in drawing.splitlines() if "-->" in line or "-.->" in line)
    assert edges == [
        "__start__ --> start;",
        "act -.-> answer;",
        "act -.-> finish;",
        "act -.-> observe;",
        "answer --> finish;",
        "finish --> __end__;",
        "observe -.-> act;",
        "observe -.-> finish;",
        "start --> act;",
    ]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    max_calls=st.integers(1, 6),
    max_steps=st.integers(1, 5),
    script=st.lists(st.sampled_from(["tool", "transient", "answer"]), max_size=10),
    schema=st.booleans(),
)
def test_budget_is_never_exceeded(max_calls: int, max_steps: int, script: list[str], schema: bool) -> None:
    replies: list[Any] = [
        calls(("add", {"a": 1, "b": 2}))
        if kind == "tool"
        else {"raise": "transient"}
        if kind == "transient"
        else '{"total": 3}'
        for kind in script
    ]
    replies += ['{"total": 3}'] * 10
    model = ScriptedChatModel(replies=replies)
    cfg = AgentSettings(max_steps=max_steps, output_schema=Total if schema else None)
    graph = build_agent_graph(tools=[add], model=ModelClient(model, retry=NO_WAIT), settings=cfg).compile()
    out = graph.invoke({"task": "t", "max_calls": max_calls})
    assert out["usage"].total.calls <= max_calls
    assert model.calls == out["usage"].total.calls
    assert out["steps"] <= max_steps
    assert out["stop_reason"] in ("completed", "step_limit", "budget", "error")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.kill
def test_sigkill_between_a_tool_step_and_the_next_turn_then_resume(tmp_path: Path) -> None:
    log, counter, db = tmp_path / "calls.jsonl", tmp_path / "stamps.txt", tmp_path / "runs.sqlite"
    script = tmp_path / "script.json"
    routes = [
        {"match": "receipt-A", "reply": "The receipt is receipt-A."},
        {"match": "Stamp the form", "reply": calls(("stamp", {"label": "A"}))},
    ]
    script.write_text(json.dumps({"log": str(log), "latency": 1.5, "routes": routes}))
    args = [sys.executable, str(CHILD), str(db), str(script), str(counter)]
    child = subprocess.Popen(
        [*args, "run"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while len(_lines(log)) < 2 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert len(_lines(log)) == 2, "the second model turn never started"
    assert _lines(counter) == ["A"]  # the tool step ran and (durability="sync") was checkpointed
    os.killpg(child.pid, signal.SIGKILL)  # the next model turn is in flight
    child.wait(timeout=10)

    resumed = subprocess.run([*args, "resume"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert result["stop_reason"] == "completed" and result["final_answer"] == "The receipt is receipt-A."
    assert _lines(counter) == ["A"]  # the completed tool step was not recomputed
    assert [r["result"] for r in result["tool_calls"]] == ["receipt-A"]
    prompts = [json.loads(line)["prompt"] for line in _lines(log)]
    assert len(prompts) == 3 and sum("receipt-A" in p for p in prompts) == 2  # only the killed turn again
    assert result["calls"] == 2


def test_messages_are_langchain_messages_the_checkpointer_round_trips(tmp_path: Path) -> None:
    from reasoning_graphs.checkpoints import open_saver

    _, client = fake(calls(("add", {"a": 1, "b": 1})), "2")
    with open_saver(tmp_path / "db.sqlite") as saver:
        build_agent_graph(tools=[add], model=client).compile(checkpointer=saver).invoke(
            {"task": "1+1"}, thread()
        )
    with open_saver(tmp_path / "db.sqlite") as saver:
        values = (
            build_agent_graph(tools=[add], model=client)
            .compile(checkpointer=saver)
            .get_state(thread())
            .values
        )
    messages = values["messages"]
    assert isinstance(messages[1], HumanMessage) and isinstance(messages[2], AIMessage)
    assert isinstance(messages[3], ToolMessage) and messages[3].content == "2"
    assert messages[2].tool_calls[0]["name"] == "add" and isinstance(values["tool_calls"][0], ToolCallRecord)
