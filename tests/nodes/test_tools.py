from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel

from reasoning_graphs.access import AccessPolicy, Output, project_outputs
from reasoning_graphs.budget import Budget
from reasoning_graphs.errors import InputError
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.nodes import (
    ASYNC_IO,
    SYNC_IO,
    NodeIO,
    ToolFactory,
    Toolset,
    drive,
    generate_with_tools,
    load_tools,
    observe,
    verifier_tool,
)
from reasoning_graphs.nodes.tools import NOT_RUN, ToolRun, act
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.types import ToolCallRecord, Verdict

ROOT = Path(__file__).resolve().parents[2]
NO_WAIT = RetrySettings(initial_delay=0, jitter=False)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"tool broke: {reason}")


@tool
async def shout(text: str) -> str:
    """Upper-case a text (an async-only tool)."""
    await asyncio.sleep(0)
    return text.upper()


TOOLS: dict[str, BaseTool] = {"add": add, "explode": explode, "shout": shout}


def fake(*replies: Any) -> tuple[ScriptedChatModel, ModelClient]:
    model = ScriptedChatModel(replies=list(replies))
    return model, ModelClient(model, retry=NO_WAIT)


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def run_loop(io: NodeIO, client: ModelClient, **options: Any) -> ToolRun:
    coro = generate_with_tools(io, client, "What is 2+3?", tools=TOOLS, node="gen", **options)
    return drive(coro) if io is SYNC_IO else asyncio.run(coro)


# --- the seam ------------------------------------------------------------------------------------


def test_seam_returns_the_tool_calls_and_counts_the_turn() -> None:
    model, client = fake({"tool_calls": [call("add", a=1, b=2)]})
    reply = client.call("add 1 and 2", tools=[add])
    assert reply.message is not None
    assert [(c["name"], c["args"]) for c in reply.message.tool_calls] == [("add", {"a": 1, "b": 2})]
    assert reply.usage.calls == 1 and reply.usage.input_tokens > 0
    assert model.tool_names == [["add"]]


def test_seam_refuses_schema_and_tools_in_one_call() -> None:
    class Answer(BaseModel):
        value: int

    _, client = fake("{}")
    with pytest.raises(ValueError, match="schema and tools cannot be combined"):
        client.call("x", schema=Answer, tools=[add])


# --- one tool step -------------------------------------------------------------------------------


@pytest.mark.parametrize("io", [SYNC_IO, ASYNC_IO], ids=["sync", "async"])
def test_observe_turns_errors_into_observations(io: NodeIO) -> None:
    message = AIMessage(
        "",
        tool_calls=[
            {"name": "add", "args": {"a": 2, "b": 3}, "id": "c1", "type": "tool_call"},
            {"name": "explode", "args": {"reason": "x"}, "id": "c2", "type": "tool_call"},
            {"name": "missing", "args": {}, "id": "c3", "type": "tool_call"},
            {"name": "add", "args": {"a": "two"}, "id": "c4", "type": "tool_call"},
            {"name": "shout", "args": {"text": "hi"}, "id": "c5", "type": "tool_call"},
        ],
        invalid_tool_calls=[
            {"name": "add", "args": "{oops", "id": "c6", "error": "bad JSON", "type": "invalid_tool_call"}
        ],
    )
    coro = observe(io, TOOLS, message)
    messages, records = drive(coro) if io is SYNC_IO else asyncio.run(coro)
    assert [m.tool_call_id for m in messages if isinstance(m, ToolMessage)] == [
        "c1",
        "c2",
        "c3",
        "c4",
        "c5",
        "c6",
    ]
    assert [r.error for r in records] == [False, True, True, True, False, True]
    assert records[0] == ToolCallRecord(tool="add", args={"a": 2, "b": 3}, result="5", call_id="c1")
    assert records[1].result == "Error: RuntimeError: tool broke: x"
    assert "there is no tool 'missing'" in records[2].result and "'add'" in records[2].result
    assert "ValidationError" in records[3].result
    assert records[4].result == "HI"
    assert "could not be read (bad JSON)" in records[5].result


def test_sync_tools_run_off_the_event_loop() -> None:
    threads: list[int] = []

    @tool
    def where() -> str:
        """Report the thread."""
        threads.append(threading.get_ident())
        return "ok"

    async def main() -> int:
        message = AIMessage("", tool_calls=[{"name": "where", "args": {}, "id": "w", "type": "tool_call"}])
        await observe(ASYNC_IO, {"where": where}, message)
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert threads and threads[0] != loop_thread


def test_long_results_are_cut_with_a_note() -> None:
    @tool
    def big() -> str:
        """A long result."""
        return "x" * 500

    message = AIMessage("", tool_calls=[{"name": "big", "args": {}, "id": "b", "type": "tool_call"}])
    _, records = drive(observe(SYNC_IO, {"big": big}, message, max_result_chars=100))
    assert records[0].result.startswith("x" * 100) and "400 more characters cut" in records[0].result


# --- the loop in one node ------------------------------------------------------------------------


@pytest.mark.parametrize("io", [SYNC_IO, ASYNC_IO], ids=["sync", "async"])
def test_loop_with_two_tools_and_one_error(io: NodeIO) -> None:
    model, client = fake(
        {"tool_calls": [call("add", a=2, b=3)]},
        {"tool_calls": [call("explode", reason="why")]},
        "The answer is 5.",
    )
    run = run_loop(io, client, system="Be brief.")
    assert run.stop_reason == "completed" and run.ok
    assert run.value == "The answer is 5." and run.steps == 3
    assert [(r.tool, r.error) for r in run.tool_calls] == [("add", False), ("explode", True)]
    assert run.usage.total.calls == 3 == model.calls and set(run.usage.by_node) == {"gen"}
    assert model.prompt_texts[0].startswith("Be brief.")
    assert "5" in model.prompt_texts[1].split("What is 2+3?")[1]
    assert "tool broke: why" in model.prompt_texts[2]
    assert model.tool_names == [list(TOOLS)] * 3


def test_step_limit_wraps_up_without_tools_and_answers_pending_calls() -> None:
    model, client = fake(
        {"tool_calls": [call("add", a=1, b=1)]},
        {"tool_calls": [call("add", a=2, b=2)]},
        "Final: 4",
    )
    run = run_loop(SYNC_IO, client, max_steps=2)
    assert run.stop_reason == "step_limit" and run.value == "Final: 4" and run.steps == 2
    assert [r.result for r in run.tool_calls] == ["2", NOT_RUN]
    closing = model.prompts[2]
    assert isinstance(closing[-1], HumanMessage) and "final answer now" in str(closing[-1].content)
    assert isinstance(closing[-2], ToolMessage) and closing[-2].content == NOT_RUN
    assert model.tool_names[2] == []  # the closing call has no tools


def test_step_limit_without_wrap_up_has_no_answer() -> None:
    model, client = fake({"tool_calls": [call("add", a=1, b=1)]})
    run = run_loop(SYNC_IO, client, max_steps=1, wrap_up=False)
    assert run.stop_reason == "step_limit" and run.value is None and not run.ok
    assert model.calls == 1 and run.tool_calls == []


def test_budget_exhausted_mid_loop_stops_before_the_next_turn() -> None:
    model, client = fake(*[{"tool_calls": [call("add", a=i, b=1)]} for i in range(5)])
    run = run_loop(SYNC_IO, client, max_calls=2, max_steps=5)
    assert run.stop_reason == "budget" and model.calls == 2 == run.usage.total.calls
    assert [r.result for r in run.tool_calls] == ["1"]  # the second turn's call never ran


def test_token_budget_is_checked_before_every_turn() -> None:
    model, client = fake(
        *[
            {"tool_calls": [call("add", a=i, b=1)], "usage": {"input_tokens": 40, "output_tokens": 10}}
            for i in range(5)
        ]
    )
    run = run_loop(SYNC_IO, client, budget=Budget(max_tokens=120), max_steps=5)
    assert run.stop_reason == "budget" and model.calls == 3 and run.usage.total.tokens == 150


def test_model_failure_ends_with_error_and_keeps_the_records() -> None:
    _, client = fake({"tool_calls": [call("add", a=1, b=1)]}, {"raise": "auth"})
    run = run_loop(SYNC_IO, client)
    assert run.stop_reason == "error" and run.error and "401" in run.error
    assert len(run.tool_calls) == 1 and run.usage.total.failed_calls == 1


class Sum(BaseModel):
    total: int


def test_schema_answer_comes_from_a_closing_call_without_tools() -> None:
    model, client = fake({"tool_calls": [call("add", a=2, b=3)]}, "It is 5.", '{"total": 5}')
    run = run_loop(SYNC_IO, client, schema=Sum)
    assert run.stop_reason == "completed" and run.value == Sum(total=5)
    assert model.tool_names[-1] == [] and "as one JSON object" in model.prompt_texts[-1]
    assert run.usage.total.calls == 3


def test_act_reports_a_budget_refusal_without_calling() -> None:
    model, client = fake("unused")
    turn = drive(act(SYNC_IO, client, [HumanMessage("hi")], TOOLS, node="n", max_calls=0))
    assert turn.budget_exhausted and turn.message is None and model.calls == 0


# --- tool sets, factories and loading --------------------------------------------------------------


def test_toolset_rejects_duplicates_and_undocumented_functions() -> None:
    def bare(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="two tools are named 'add'"):
        Toolset([add, add])
    with pytest.raises(ValueError, match="has no docstring"):
        Toolset([bare])
    with pytest.raises(ValueError, match="is not a tool"):
        Toolset([42])  # type: ignore[list-item]


def test_plain_documented_functions_become_tools() -> None:
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    tools = Toolset([double]).bind({})
    assert tools["double"].invoke({"x": 4}) == 8


def test_a_factory_sees_only_the_projection_of_its_stage() -> None:
    canary = "CANARY-7f3a"
    outputs = {
        "task": Output(label="task", text="the task"),
        "notes:public": Output(label="notes:public", text="public notes"),
        "notes:secret": Output(label="notes:secret", text=canary),
    }
    received: list[dict[str, Output]] = []

    def build(seen: Any) -> list[BaseTool]:
        received.append(dict(seen))

        @tool
        def read_notes() -> str:
            """Read the notes this stage may see."""
            return "\n".join(o.text for o in seen.values())

        return [read_notes]

    seen = project_outputs(outputs, AccessPolicy(sees=("task", "notes:public")))
    tools = Toolset([ToolFactory(build)]).bind(seen)
    assert sorted(received[0]) == ["notes:public", "task"]
    assert canary not in tools["read_notes"].invoke({})


def test_verifier_tool_checks_candidates_against_the_stage_task() -> None:
    tasks: list[str] = []

    def check(candidate: str, task: str) -> Verdict:
        tasks.append(task)
        return Verdict(passed=candidate == "42", feedback="" if candidate == "42" else "wrong")

    tools = Toolset([verifier_tool(check)]).bind({"task": Output(label="task", text="6*7?")})
    assert tools["check_answer"].invoke({"candidate": "41"}) == "failed: wrong"
    assert tools["check_answer"].invoke({"candidate": "42"}) == "passed"
    assert tasks == ["6*7?", "6*7?"]


def test_load_tools_from_a_file_and_a_module() -> None:
    by_file = load_tools(
        f"{ROOT / 'examples' / 'tools.py'}:lookup_secret,{ROOT / 'examples' / 'tools.py'}:add"
    )
    assert [t.name for t in by_file if isinstance(t, BaseTool)] == ["lookup_secret", "add"]
    every = load_tools(f"{ROOT / 'examples' / 'tools.py'}:TOOLS")
    assert [t.name for t in every if isinstance(t, BaseTool)] == ["lookup_secret", "add", "run_tests"]
    (loaded,) = load_tools("tests.nodes.test_tools:add")
    assert isinstance(loaded, BaseTool) and loaded.name == "add"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "is not MODULE:NAME"),
        ("examples/nope.py:add", "does not exist"),
        ("reasoning_graphs.no_such_module:x", "cannot import"),
        ("tests.nodes.test_tools:nothing_here", "has no 'nothing_here'"),
        ("tests.nodes.test_tools:ROOT", "not a tool"),
    ],
)
def test_load_tools_names_the_fix(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_tools(spec)
