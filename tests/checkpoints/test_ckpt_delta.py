"""Threads whose growing keys are delta channels read back exactly like plain-reducer threads.

The pipeline of ``conftest`` runs twice on one SQLite file: once with the plain reducers
(``outputs``/``reads`` stored whole in every checkpoint) and once with ``delta(...)`` channels
(stored only at snapshots). Every reader (``view_thread``, ``thread_info``, ``history``, ``fork``,
``get_state``) must give the same answers for both, at the latest and at earlier checkpoints,
with and without the integrity saver; a plain thread resumed by the delta graph migrates.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from typing_extensions import TypedDict

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord, merge_outputs
from reasoning_graphs.budget import add_usage
from reasoning_graphs.checkpoints import fork, history, open_saver, thread_info, view_thread
from reasoning_graphs.checkpoints._delta import stored_values
from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._channels import delta, fold
from reasoning_graphs.types import Usage, Verdict
from tests.checkpoints.conftest import PIPELINE_ACCESS, Pipeline, PipelineState, run_strict
from tests.conftest import thread

STRICT_SCRIPT = Path(__file__).with_name("delta_strict.py")


class DeltaState(TypedDict, total=False):
    task: str
    outputs: Annotated[dict[str, Output], delta(merge_outputs)]
    access: dict[str, AccessPolicy]
    reads: Annotated[list[ReadRecord], delta(operator.add)]
    usage: Annotated[Usage, add_usage]
    verdict: Verdict | None
    final_answer: str | None
    stop_reason: str | None


class SnapshotState(DeltaState, total=False):
    """Snapshots every other update: readers meet ``_DeltaSnapshot`` seeds and replayed writes."""

    outputs: Annotated[dict[str, Output], delta(merge_outputs, snapshot_frequency=2)]  # type: ignore[misc]
    reads: Annotated[list[ReadRecord], delta(operator.add, snapshot_frequency=2)]  # type: ignore[misc]


ROLES = sorted(PIPELINE_ACCESS)


@pytest.fixture(params=[False, True], ids=["plain-saver", "integrity"])
def db_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    with open_saver(tmp_path / "runs.sqlite", integrity=request.param) as saver:
        yield saver


def _run(saver: BaseCheckpointSaver[Any], schema: type[Any], tid: str) -> Any:
    app = Pipeline().build(schema).compile(checkpointer=saver)
    app.invoke({"task": "add two numbers"}, thread(tid))
    return app


def _views(saver: BaseCheckpointSaver[Any], tid: str, checkpoint_id: str | None = None) -> list[Any]:
    out = []
    for role in ROLES:
        try:
            found = view_thread(saver, tid, role, checkpoint_id)
        except InputError as exc:  # before the access lists were written
            out.append(str(exc))
            continue
        out.append({k: v for k, v in found.items() if k not in ("thread_id", "checkpoint_id")})
    return out


def _history(saver: BaseCheckpointSaver[Any], tid: str) -> list[tuple[Any, ...]]:
    return [(c.step, c.source, c.writers, c.next) for c in history(saver, tid)]


def test_fold_is_one_function_per_reducer_and_a_left_fold() -> None:
    assert fold(operator.add) is fold(operator.add)
    assert fold(operator.add).__name__ == "fold_add"
    state = [1]
    assert fold(operator.add)(state, [[2], [3, 4]]) == [1, 2, 3, 4] and state == [1]
    assert fold(operator.add)(fold(operator.add)([], [[1]]), [[2]]) == fold(operator.add)([], [[1], [2]])


@pytest.mark.parametrize("schema", [DeltaState, SnapshotState], ids=["no-snapshot", "snapshots"])
def test_readers_match_the_plain_reducer(db_saver: BaseCheckpointSaver[Any], schema: type[Any]) -> None:
    plain = _run(db_saver, PipelineState, "plain")
    deltas = _run(db_saver, schema, "delta")

    latest = db_saver.get_tuple(thread("delta"))  # type: ignore[arg-type]
    assert latest is not None
    stored = latest.checkpoint["channel_values"]
    if schema is DeltaState:
        assert "outputs" not in stored and "reads" not in stored  # the readers must rebuild them
    else:
        assert any(isinstance(v, _DeltaSnapshot) for v in stored.values()) or "outputs" not in stored

    assert deltas.get_state(thread("delta")).values == plain.get_state(thread("plain")).values
    assert _views(db_saver, "delta") == _views(db_saver, "plain")
    assert _history(db_saver, "delta") == _history(db_saver, "plain")
    a, b = thread_info(db_saver, "delta"), thread_info(db_saver, "plain")
    assert a.model_dump(exclude={"thread_id", "checkpoint_id", "created_at", "updated_at"}) == b.model_dump(
        exclude={"thread_id", "checkpoint_id", "created_at", "updated_at"}
    )

    earlier = list(zip(history(db_saver, "delta"), history(db_saver, "plain"), strict=True))
    for d, p in earlier:
        assert _views(db_saver, "delta", d.checkpoint_id) == _views(db_saver, "plain", p.checkpoint_id)
        got = deltas.get_state({"configurable": {"thread_id": "delta", **_cid(d)}})
        want = plain.get_state({"configurable": {"thread_id": "plain", **_cid(p)}})
        assert got.values == want.values
        tup = db_saver.get_tuple({"configurable": {"thread_id": "delta", **_cid(d)}})  # type: ignore[arg-type]
        assert tup is not None
        values = stored_values(db_saver, tup)
        assert (values.get("outputs") or {}, values.get("reads") or []) == (
            want.values.get("outputs") or {},
            want.values.get("reads") or [],
        )


def _cid(info: Any) -> dict[str, str]:
    return {"checkpoint_ns": "", "checkpoint_id": info.checkpoint_id}


@pytest.mark.parametrize("schema", [DeltaState, SnapshotState], ids=["no-snapshot", "snapshots"])
def test_fork_matches_the_plain_reducer(db_saver: BaseCheckpointSaver[Any], schema: type[Any]) -> None:
    results = []
    for tid, state in (("plain", PipelineState), ("delta", schema)):
        app = _run(db_saver, state, tid)
        after_draft = next(c for c in history(db_saver, tid) if c.writers == ("draft",))
        changed = {"outputs": {"draft": Output(label="draft", text="a better draft", role="writer")}}
        config = fork(app, tid, after_draft.checkpoint_id, changed, as_node="draft")
        app.invoke(None, config)
        final = app.get_state(thread(tid)).values
        assert final["final_answer"] == "a better draft"
        assert "a better draft" in final["outputs"]["critique"].text
        results.append((final, _views(db_saver, tid), _history(db_saver, tid)))
    assert results[0] == results[1]


def test_a_plain_thread_migrates_to_delta_channels(db_saver: BaseCheckpointSaver[Any]) -> None:
    reference = _run(db_saver, PipelineState, "reference").get_state(thread("reference")).values

    crashing = Pipeline()
    crashing.failures["judge"] = 1
    old = crashing.build(PipelineState).compile(checkpointer=db_saver)
    with pytest.raises(RuntimeError, match="judge crashed"):
        old.invoke({"task": "add two numbers"}, thread("t"))
    written_plain = [c.checkpoint_id for c in history(db_saver, "t")]

    resumed = Pipeline()
    new = resumed.build(DeltaState).compile(checkpointer=db_saver)
    assert new.get_state(thread("t")).values["outputs"].keys() == {"task", "draft", "critique"}
    new.invoke(None, thread("t"))
    assert resumed.calls == {"judge": 1, "finish": 1}  # completed nodes were not re-run
    assert new.get_state(thread("t")).values == reference

    latest = db_saver.get_tuple(thread("t"))  # type: ignore[arg-type]
    assert latest is not None and "outputs" not in latest.checkpoint["channel_values"]
    assert _views(db_saver, "t") == _views(db_saver, "reference")
    same_steps = [c.checkpoint_id for c in history(db_saver, "reference")][-len(written_plain) :]
    for mine, theirs in zip(written_plain, same_steps, strict=True):  # checkpoints written plain
        assert _views(db_saver, "t", mine) == _views(db_saver, "reference", theirs)
    assert thread_info(db_saver, "t").status == "done"


def test_strict_msgpack_round_trips_snapshots(tmp_path: Path) -> None:
    result = run_strict(STRICT_SCRIPT, tmp_path / "strict.sqlite")
    assert result.returncode == 0, result.stderr
    assert "snapshots ok" in result.stdout
    assert result.stderr == ""
