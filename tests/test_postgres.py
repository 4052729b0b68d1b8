"""The repair graph, unchanged, on PostgreSQL through ``langgraph-checkpoint-postgres``.

``.ci/run`` installs PostgreSQL, starts a throwaway cluster on 127.0.0.1 and exports its DSN as
``REASONING_GRAPHS_TEST_PG`` (for example ``postgresql://postgres@127.0.0.1:5499/rg_test``).
Without it the tests fail under ``CI=true`` (CI must not pass silently without the database) and
skip elsewhere, saying how to run them.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from reasoning_graphs.checkpoints import StrictSerializer
from reasoning_graphs.graphs import build_repair_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.types import Attempt, Usage

pytestmark = pytest.mark.server

DSN_ENV = "REASONING_GRAPHS_TEST_PG"
TASK = {"task": "A train travels at 60 km per hour for 2.5 hours. How far does it go, in km?"}
VERIFIER = "numeric:150"


@pytest.fixture(scope="module")
def dsn() -> str:
    value = os.environ.get(DSN_ENV, "").strip()
    if value:
        return value
    how = (
        f"{DSN_ENV} is not set: no PostgreSQL server to test against. .ci/run starts one on loopback "
        f"and sets it; locally, start PostgreSQL and export {DSN_ENV}=postgresql://USER@127.0.0.1:PORT/DB"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the PostgreSQL tests, but {how}")
    pytest.skip(how)


@pytest.fixture
def thread_id() -> str:
    return f"pg-{uuid.uuid4().hex}"


def _client() -> tuple[ScriptedChatModel, ModelClient]:
    model = ScriptedChatModel.routed(
        [
            {"match": "Earlier answers failed", "reply": "60 x 2.5 = 150 km. The answer is 150."},
            {"match": "How far does it go", "reply": "It goes 120 km."},
        ]
    )
    return model, ModelClient(model, retry=RetrySettings(initial_delay=0, jitter=False))


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture
def open_saver(dsn: str) -> Iterator[Any]:
    """Yield a factory of sync PostgreSQL savers (each on its own connection, like another process)."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    connections: list[Connection[Any]] = []

    def make() -> PostgresSaver:
        conn = Connection.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        connections.append(conn)
        saver = PostgresSaver(conn, serde=StrictSerializer())  # type: ignore[arg-type]
        saver.setup()
        return saver

    yield make
    for conn in connections:
        conn.close()


def test_repair_runs_on_postgres(open_saver: Any, thread_id: str) -> None:
    model, client = _client()
    graph = build_repair_graph(model=client).compile(checkpointer=open_saver())
    out = graph.invoke({**TASK, "verifier": VERIFIER}, _config(thread_id))
    assert out["stop_reason"] == "passed" and out["attempts"] == 2
    assert out["final_answer"] == "60 x 2.5 = 150 km. The answer is 150."
    assert model.calls == 2

    # A fresh connection reads the same thread back with the package's own types.
    stored = build_repair_graph(model=client).compile(checkpointer=open_saver())
    values = stored.get_state(_config(thread_id)).values
    assert all(isinstance(a, Attempt) for a in values["history"])
    assert isinstance(values["usage"], Usage) and values["usage"].total.calls == 2
    assert [a.passed for a in values["history"]] == [False, True]
    steps = list(stored.get_state_history(_config(thread_id)))
    assert steps[0].next == ()  # newest first: the finished run
    assert ("verify",) in [s.next for s in steps]


def test_a_paused_run_resumes_from_another_connection(open_saver: Any, thread_id: str) -> None:
    model, client = _client()
    first = build_repair_graph(model=client).compile(checkpointer=open_saver(), interrupt_before=["repair"])
    first.invoke({**TASK, "verifier": VERIFIER}, _config(thread_id))
    assert first.get_state(_config(thread_id)).next == ("repair",)
    assert model.calls == 1

    # Another worker, another connection: only the remaining steps run.
    second = build_repair_graph(model=client).compile(checkpointer=open_saver())
    out = second.invoke(None, _config(thread_id))
    assert out["stop_reason"] == "passed" and out["attempts"] == 2
    assert model.calls == 2
    assert "Expected 150, got 120." in model.prompt_texts[1]


def test_fork_from_an_earlier_checkpoint(open_saver: Any, thread_id: str) -> None:
    model, client = _client()
    graph = build_repair_graph(model=client).compile(checkpointer=open_saver())
    graph.invoke({**TASK, "verifier": VERIFIER}, _config(thread_id))
    # History is newest first: the last checkpoint waiting for "verify" precedes the first check.
    before_verify = [s for s in graph.get_state_history(_config(thread_id)) if s.next == ("verify",)][-1]
    forked = graph.update_state(before_verify.config, {"candidate": "150 km."}, as_node="generate")
    out = graph.invoke(None, forked)
    assert out["stop_reason"] == "passed" and out["attempts"] == 1
    assert out["final_answer"] == "150 km."
    assert model.calls == 2  # the fork reused the stored first call and made no new one


def test_async_saver_runs_the_same_graph(dsn: str, thread_id: str) -> None:
    """The server's path: ``ainvoke`` on the async saver."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row

    model, client = _client()

    async def main() -> tuple[dict[str, Any], int]:
        conn = await AsyncConnection.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        try:
            saver = AsyncPostgresSaver(conn, serde=StrictSerializer())  # type: ignore[arg-type]
            await saver.setup()
            graph = build_repair_graph(model=client).compile(checkpointer=saver)
            out = await graph.ainvoke({**TASK, "verifier": VERIFIER}, _config(thread_id))
            state = await graph.aget_state(_config(thread_id))
            return dict(out), state.values["attempts"]
        finally:
            await conn.close()

    out, attempts = asyncio.run(main())
    assert out["stop_reason"] == "passed" and model.calls == 2
    assert attempts == 2
