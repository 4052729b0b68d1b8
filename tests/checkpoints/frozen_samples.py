"""Sample values of every Frozen type, and a strict round trip run in a child process.

Loaded by the tests with ``runpy.run_path`` (no import-path assumptions). Run as a script
(``python -W error frozen_samples.py DB``) with ``LANGGRAPH_STRICT_MSGPACK=true`` it stores every
sample in a graph's state through ``open_saver``, reloads it through a new saver and exits 0 only
if every value came back with its exact type and LangGraph logged no warning and emitted no
serde allowlist event.
"""

from __future__ import annotations

import importlib
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from reasoning_graphs.types import Frozen

CORE_MODULES = ("reasoning_graphs.types", "reasoning_graphs.access", "reasoning_graphs.budget")
"""The core vocabulary; with ``reasoning_graphs.checkpoints`` these are the hand-sampled modules."""


def loaded_frozen_types() -> set[type[Frozen]]:
    """Return every Frozen subclass of the package among the modules imported so far."""
    found: set[type[Frozen]] = set()
    stack = list(Frozen.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("reasoning_graphs."):
            found.add(cls)
    return found


def sampled_modules_types() -> set[type[Frozen]]:
    """Import the core and checkpoint modules and return the Frozen types they define."""
    for name in CORE_MODULES:
        importlib.import_module(name)
    importlib.import_module("reasoning_graphs.checkpoints")
    return {
        cls
        for cls in loaded_frozen_types()
        if cls.__module__ in CORE_MODULES or cls.__module__.startswith("reasoning_graphs.checkpoints")
    }


def core_samples() -> dict[type[Frozen], Frozen]:
    """Hand-made samples of the core and checkpoint types, with nested values."""
    from reasoning_graphs.access import AccessPolicy, Output, ReadRecord
    from reasoning_graphs.budget import Budget
    from reasoning_graphs.checkpoints import CheckpointInfo, ThreadInfo
    from reasoning_graphs.types import (
        Attempt,
        Critique,
        Judgment,
        PairwiseJudgment,
        ToolCallRecord,
        Usage,
        UsageCounts,
        Verdict,
    )

    counts = UsageCounts(calls=2, input_tokens=10, output_tokens=5, unknown_usage_calls=1)
    when = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    values: list[Frozen] = [
        Verdict(passed=False, score=0.5, feedback="1 of 2", details={"failing": ["t1"], "n": 2, "ok": None}),
        counts,
        Usage.of(counts, model="openai:gpt", node="draft") + Usage.of(counts, model="local:x", node="judge"),
        Attempt(answer="42", passed=True, feedback="", model="local:smollm2", score=1.0),
        Critique(problems=["p"], suggestions=["s"], acceptable=False),
        Judgment(scores={"clarity": 7}, rationale="ok", warnings=["clamped 11"]),
        PairwiseJudgment(winner="tie", orders=["A", "B"], parse_failures=1),
        ToolCallRecord(tool="search", args={"q": "x", "k": [1, 2]}, result="r", error=True, call_id="c1"),
        Output(label="draft:0", text="t", role="writer", model="m", data={"answer": [1, {"a": True}]}),
        AccessPolicy(sees=("task", "draft:*"), blind=True),
        ReadRecord(node="critic", labels=["draft:0"]),
        Budget(max_calls=5, max_tokens=100, reserve_tokens_per_call=3),
        ThreadInfo(
            thread_id="t",
            graph="repair",
            metadata={"graph": "repair", "max_calls": 3, "strict": True, "t": 0.5},
            created_at=when,
            updated_at=when,
            checkpoints=3,
            checkpoint_id="c",
            status="incomplete",
            next=("judge",),
            error="RuntimeError('x')",
            stop_reason=None,
            final_answer="a",
        ),
        CheckpointInfo(
            checkpoint_id="c",
            parent_id=None,
            step=-1,
            source="input",
            writers=("__input__",),
            next=("__start__",),
            created_at=when,
        ),
    ]
    return {type(value): value for value in values}


def samples() -> dict[type[Frozen], Frozen]:
    """Return one sample of every core and checkpoint type (tests check none is missing)."""
    return core_samples()


def strict_problems() -> list[str] | None:
    """Start collecting what a strict round trip must not produce; None when strict mode is off.

    Under ``LANGGRAPH_STRICT_MSGPACK=true`` the returned list gathers every serde allowlist event
    and every warning LangGraph logs from now on. Otherwise it says so on stderr and returns None
    (the caller exits 2).
    """
    from langgraph.checkpoint.serde._msgpack import STRICT_MSGPACK_ENABLED
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

    if not STRICT_MSGPACK_ENABLED:
        print("LANGGRAPH_STRICT_MSGPACK is not enabled", file=sys.stderr)
        return None
    problems: list[str] = []
    register_serde_event_listener(lambda event: problems.append(f"serde event {event}"))

    class Fail(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            problems.append(f"log {record.name}: {record.getMessage()}")

    logging.getLogger("langgraph").addHandler(Fail(level=logging.WARNING))
    return problems


def main(db: str) -> int:
    """Store every sample in a graph's state, reload it with a new saver, compare; 0 on success."""
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from reasoning_graphs.checkpoints import StrictSerializer, list_threads, open_saver

    class State(TypedDict, total=False):
        payload: dict[str, Any]
        final_answer: str | None

    problems = strict_problems()
    if problems is None:
        return 2
    expected = {f"{cls.__module__}.{cls.__qualname__}": value for cls, value in samples().items()}
    builder = StateGraph(State)
    builder.add_node("put", lambda state: {"payload": expected, "final_answer": "stored"})
    builder.add_edge(START, "put")
    builder.add_edge("put", END)
    config: Any = {"configurable": {"thread_id": "strict"}, "metadata": {"graph": "samples"}}
    with open_saver(db) as saver:
        compiled = builder.compile(checkpointer=saver)
        if type(compiled.checkpointer.serde) is not StrictSerializer:  # type: ignore[union-attr]
            problems.append(f"strict mode replaced the serializer: {compiled.checkpointer.serde!r}")  # type: ignore[union-attr]
        compiled.invoke({}, config)
    with open_saver(db) as saver:
        loaded = builder.compile(checkpointer=saver).get_state(config).values["payload"]
        threads = list_threads(saver)
    for name, value in expected.items():
        got = loaded.get(name)
        if type(got) is not type(value) or got != value:
            problems.append(f"{name}: stored {value!r}, loaded {got!r}")
    if [t.graph for t in threads] != ["samples"]:
        problems.append(f"threads: {threads!r}")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"round-tripped {len(expected)} types")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
