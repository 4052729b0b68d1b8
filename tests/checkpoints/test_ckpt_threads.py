from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.types import Command

from reasoning_graphs.access import Output
from reasoning_graphs.checkpoints import (
    fork,
    history,
    list_threads,
    open_saver,
    resume_config,
    thread_info,
    view_thread,
)
from reasoning_graphs.errors import InputError, UnknownThreadError
from reasoning_graphs.types import Verdict

Saver = BaseCheckpointSaver[Any]


def _config(thread_id: str, graph: str | None = "pipe") -> Any:
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    if graph is not None:
        config["metadata"] = {"graph": graph}
    return config


def test_crash_then_list_info_history_and_resume(saver: Saver, pipeline: Any) -> None:
    pipeline.failures["judge"] = 1
    graph = pipeline.build().compile(checkpointer=saver)
    with pytest.raises(RuntimeError, match="judge crashed"):
        graph.invoke({"task": "2+2"}, _config("t1"))

    [crashed] = list_threads(saver)
    assert crashed == thread_info(saver, "t1")
    assert (crashed.thread_id, crashed.graph, crashed.status) == ("t1", "pipe", "incomplete")
    assert crashed.metadata == {"graph": "pipe"}
    assert crashed.next == ("judge",) == graph.get_state(_config("t1")).next
    assert crashed.error is not None and "judge crashed" in crashed.error
    assert (crashed.stop_reason, crashed.final_answer) == (None, None)
    assert crashed.checkpoints == 5 == len(history(saver, "t1"))
    assert [(c.step, c.source, c.writers, c.next) for c in history(saver, "t1")] == [
        (3, "loop", ("critique",), ("judge",)),
        (2, "loop", ("draft",), ("critique",)),
        (1, "loop", ("setup",), ("draft",)),
        (0, "loop", ("__start__",), ("setup",)),
        (-1, "input", ("__input__",), ("__start__",)),
    ]

    config = resume_config(saver, "t1")
    assert config == {"configurable": {"thread_id": "t1"}, "metadata": {"graph": "pipe"}}
    result = graph.invoke(None, config)

    assert result["stop_reason"] == "completed"
    assert result["verdict"] == Verdict(passed=True, score=1.0, feedback="fine")
    assert pipeline.calls == {"setup": 1, "draft": 1, "critique": 1, "judge": 2, "finish": 1}
    assert result["usage"].total.calls == 3, "the completed model steps were not paid twice"
    done = thread_info(saver, "t1")
    assert (done.status, done.next, done.error, done.stop_reason) == ("done", (), None, "completed")
    assert done.final_answer == result["final_answer"] == "draft of [2+2]"
    assert done.checkpoints == 7
    assert done.created_at == crashed.created_at < crashed.updated_at < done.updated_at
    assert {c.step: c.writers for c in history(saver, "t1")}[5] == ("finish",)
    assert all(s.metadata.get("graph") == "pipe" for s in graph.get_state_history(_config("t1")))


def test_threads_are_listed_newest_first(saver: Saver, pipeline: Any) -> None:
    graph = pipeline.build().compile(checkpointer=saver)
    for thread_id in ("old", "middle", "new"):
        graph.invoke({"task": thread_id}, _config(thread_id, graph=None if thread_id == "middle" else "pipe"))
    graph.invoke(None, _config("old"))  # resuming a finished thread writes no checkpoint: "old" stays oldest
    threads = list_threads(saver)
    assert [t.thread_id for t in threads] == ["new", "middle", "old"]
    assert [t.graph for t in threads] == ["pipe", None, "pipe"]
    for info in threads:
        snapshots = list(graph.get_state_history(_config(info.thread_id)))
        assert info.checkpoints == len(snapshots)
        assert info.checkpoint_id == snapshots[0].config["configurable"]["checkpoint_id"]
        first_ts = datetime.fromisoformat(snapshots[-1].created_at or "")
        assert abs((info.created_at - first_ts).total_seconds()) < 0.05
        assert info.updated_at == datetime.fromisoformat(snapshots[0].created_at or "")


def test_run_metadata_is_carried_through_resume_and_fork(saver: Saver, pipeline: Any) -> None:
    pipeline.failures["critique"] = 1
    graph = pipeline.build().compile(checkpointer=saver)
    metadata = {"graph": "pipe", "run_options": '{"max_calls": 3}', "attempt": 2, "nested": {"dropped": True}}
    with pytest.raises(RuntimeError):
        graph.invoke({"task": "x"}, {"configurable": {"thread_id": "m"}, "metadata": metadata})
    expected = {"graph": "pipe", "run_options": '{"max_calls": 3}', "attempt": 2}
    assert thread_info(saver, "m").metadata == expected
    config = resume_config(saver, "m")
    assert config["metadata"] == expected
    graph.invoke(None, config)
    assert all(
        {k: s.metadata.get(k) for k in expected} == expected
        for s in graph.get_state_history(_config("m", graph=None))
    )
    first = history(saver, "m")[-2]
    forked = fork(graph, "m", first.checkpoint_id, {"task": "y"}, as_node="setup")
    assert forked["metadata"] == expected
    assert thread_info(saver, "m").metadata == expected, "fork's own keys are not run metadata"


def test_unknown_thread_names_the_id_and_the_fix(saver: Saver, pipeline: Any) -> None:
    graph = pipeline.build().compile(checkpointer=saver)
    graph.invoke({"task": "x"}, _config("known"))
    calls: list[Callable[[], object]] = [
        lambda: thread_info(saver, "nope"),
        lambda: history(saver, "nope"),
        lambda: resume_config(saver, "nope"),
        lambda: view_thread(saver, "nope", "judge"),
        lambda: fork(graph, "nope", "c", {}),
    ]
    for call in calls:
        with pytest.raises(UnknownThreadError, match=r"no thread 'nope'.*list_threads\(saver\)"):
            call()
    assert [t.thread_id for t in list_threads(saver)] == ["known"]


def test_interrupted_thread(saver: Saver, fan_builder: Callable[[], StateGraph[Any]]) -> None:
    graph = fan_builder().compile(checkpointer=saver)
    graph.invoke({"items": []}, _config("i", graph="fan"))
    info = thread_info(saver, "i")
    assert (info.status, info.next, info.error) == ("interrupted", ("ask",), None)
    graph.invoke(Command(resume="w1"), resume_config(saver, "i"))
    info = thread_info(saver, "i")
    assert (info.status, info.next, info.final_answer, info.graph) == ("done", (), "w1", "fan")


@pytest.mark.parametrize("which", ["pipeline", "fan"])
def test_next_and_writers_agree_with_langgraph(
    which: str, saver: Saver, pipeline: Any, fan_builder: Callable[[], StateGraph[Any]]
) -> None:
    """next and writers are read from raw checkpoints; LangGraph computes them with the graph."""
    if which == "pipeline":
        pipeline.failures["critique"] = 1
        graph = pipeline.build().compile(checkpointer=saver)
        with pytest.raises(RuntimeError):
            graph.invoke({"task": "x"}, _config("h"))
        graph.invoke(None, _config("h"))
    else:
        graph = fan_builder().compile(checkpointer=saver)
        graph.invoke({"items": []}, _config("h"))
        graph.invoke(Command(resume="ok"), _config("h"))
    snapshots = {s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(_config("h"))}
    infos = history(saver, "h")
    assert [i.checkpoint_id for i in infos] == list(snapshots)
    for info in infos:
        snapshot = snapshots[info.checkpoint_id]
        assert info.next == tuple(sorted(snapshot.next))
        assert info.step == snapshot.metadata["step"]
        if info.source == "loop":
            assert info.parent_id is not None
            assert info.writers == tuple(sorted(t.name for t in snapshots[info.parent_id].tasks))
    if which == "fan":
        assert ("p", "work", "work", "work") in [i.writers for i in infos]


def test_fork_with_changed_values(saver: Saver, pipeline: Any) -> None:
    graph = pipeline.build().compile(checkpointer=saver)
    graph.invoke({"task": "original"}, _config("f"))
    before_fork = len(history(saver, "f"))
    original_end = history(saver, "f")[0].checkpoint_id
    after_draft = next(c for c in history(saver, "f") if c.writers == ("draft",))

    new_draft = Output(label="draft", text="a better draft", role="writer", model="model-writer")
    config = fork(graph, "f", after_draft.checkpoint_id, {"outputs": {"draft": new_draft}}, as_node="draft")
    assert config["metadata"] == {"graph": "pipe"}
    result = graph.invoke(None, config)

    assert result["final_answer"] == "a better draft"
    assert result["outputs"]["critique"].text == "critique of [a better draft | original]"
    assert pipeline.calls == {"setup": 1, "draft": 1, "critique": 2, "judge": 2, "finish": 2}
    infos = history(saver, "f")
    assert len(infos) == before_fork + 4
    update = next(c for c in infos if c.source == "update")
    assert (update.parent_id, update.writers, update.next) == (
        after_draft.checkpoint_id,
        ("draft",),
        ("critique",),
    )
    forked = graph.get_state({"configurable": {**config["configurable"]}})
    assert forked.metadata is not None
    assert forked.metadata["forked_from"] == after_draft.checkpoint_id
    assert thread_info(saver, "f").final_answer == "a better draft"
    # the original branch is still there, unchanged
    original = graph.get_state({"configurable": {"thread_id": "f", "checkpoint_id": original_end}})
    assert original.values["final_answer"] == "draft of [original]"


def test_fork_refuses_bad_input(saver: Saver, pipeline: Any) -> None:
    graph = pipeline.build().compile(checkpointer=saver)
    graph.invoke({"task": "x"}, _config("f"))
    with pytest.raises(InputError, match=r"thread 'f' has no checkpoint 'missing'.*history"):
        fork(graph, "f", "missing", {})
    with pytest.raises(InputError, match="compiled with a checkpointer"):
        fork(pipeline.build().compile(), "f", "missing", {})


def test_final_answer_preview_is_short(saver: Saver, pipeline: Any) -> None:
    graph = pipeline.build().compile(checkpointer=saver)
    graph.invoke({"task": "y" * 500}, _config("long"))
    preview = thread_info(saver, "long").final_answer
    assert preview is not None and len(preview) == 120 and preview.endswith("…")
    assert preview.startswith("draft of [yyy")


class CountingSerde:
    """Wraps a serializer and counts loads."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.loads = inner, 0

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.inner.dumps_typed(obj)  # type: ignore[no-any-return]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.loads += 1
        return self.inner.loads_typed(data)


def test_sqlite_listing_reads_one_checkpoint_per_thread(tmp_path: Path, pipeline: Any) -> None:
    with open_saver(tmp_path / "big.sqlite") as saver:
        graph = pipeline.build().compile(checkpointer=saver)
        for i in range(4):
            graph.invoke({"task": str(i)}, _config(f"t{i}"))
        counting = CountingSerde(saver.serde)
        saver.serde = counting
        threads = list_threads(saver)
        stored = saver.conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    assert len(threads) == 4 and stored == 28
    assert counting.loads == 4, "one blob per thread (finished threads have no pending writes)"
    memory = InMemorySaver()
    assert list_threads(memory) == []
