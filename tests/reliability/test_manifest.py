"""Run manifests: a changed component refuses the resume, names the component, changes nothing."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.checkpoints import _fingerprint, open_saver
from reasoning_graphs.checkpoints.integrity import IntegrityError
from reasoning_graphs.checkpoints.manifest import (
    RunManifest,
    ThreadChangedError,
    build_manifest,
    diff_manifests,
    guard_thread,
    stored_manifest,
)
from reasoning_graphs.errors import InputError, UnknownThreadError
from reasoning_graphs.graphs import build_repair_graph
from reasoning_graphs.graphs.repair import ACCESS, RepairInput, RepairOutput, RepairSettings, RepairState
from reasoning_graphs.testing import ScriptedChatModel
from tests.reliability.conftest import TASK, client, db_snapshot, repair_routes, write_script

TESTS = "assert solve() == 24\n"


def _builder(script: Path, settings: RepairSettings | None = None) -> Any:
    fake = ScriptedChatModel.from_file(script)
    return build_repair_graph(model=client(fake), settings=settings)


def _manifest(graph: Any, script: Path, verifier: str, **changes: Any) -> RunManifest:
    values: dict[str, Any] = {
        "name": "repair",
        "models": [f"fake:{script}"],
        "verifier": verifier,
        "access": ACCESS,
        "settings": {"max_attempts": 3},
    }
    return build_manifest(graph, **(values | changes))


@pytest.fixture
def paused(tmp_path: Path) -> dict[str, Any]:
    """A repair thread paused before its repair step, started under guard_thread."""
    db, script, tests = tmp_path / "ck.sqlite", tmp_path / "script.json", tmp_path / "test_solve.py"
    tests.write_text(TESTS)
    write_script(script, repair_routes(2))
    verifier = f"python-tests:{tests} || game24:4 9 10 13"
    with open_saver(db, integrity=True) as saver:
        graph = _builder(script).compile(checkpointer=saver, interrupt_before=["repair"])
        manifest = _manifest(graph, script, verifier, inputs={"task": TASK})
        with guard_thread(saver, db, "t1", manifest, new=True):
            graph.invoke(
                {"task": TASK, "verifier": "game24:4 9 10 13"}, {"configurable": {"thread_id": "t1"}}
            )
    return {"db": db, "script": script, "tests": tests, "verifier": verifier}


def _renamed_node(script: Path) -> Any:
    """The repair graph with its ``repair`` node renamed ``fix`` (LangGraph alone would "finish")."""
    original = _builder(script)
    graph = StateGraph(RepairState, input_schema=RepairInput, output_schema=RepairOutput)
    for name, spec in original.nodes.items():
        graph.add_node("fix" if name == "repair" else name, spec.runnable)
    for a, b in (("start", "generate"), ("generate", "verify"), ("verify", "fix"), ("fix", "finish")):
        graph.add_edge(a, b)
    graph.add_edge(START, "start")
    graph.add_edge("finish", END)
    return graph


Change = Callable[[dict[str, Any]], tuple[Any, dict[str, Any]]]
CHANGES: dict[str, tuple[str, Change]] = {
    "topology (node renamed)": ("topology", lambda p: (_renamed_node(p["script"]), {})),
    "settings": (
        "settings",
        lambda p: (_builder(p["script"]), {"settings": {"max_attempts": 5}}),
    ),
    "models (script edited)": (
        "models",
        lambda p: (p["script"].write_text('{"routes": []}') and _builder(p["script"]), {}),
    ),
    "models (other model)": ("models", lambda p: (_builder(p["script"]), {"models": ["fake:other.json"]})),
    "verifier (test file edited)": (
        "verifier",
        lambda p: (p["tests"].write_text("assert solve() == 25\n") and _builder(p["script"]), {}),
    ),
    "access lists": (
        "access",
        lambda p: (_builder(p["script"]), {"access": {**ACCESS, "repairer": AccessPolicy(sees=("*",))}}),
    ),
    "input": ("input", lambda p: (_builder(p["script"]), {"inputs": {"task": "another task"}})),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_changed_component_refuses_and_leaves_the_thread_untouched(
    case: str, paused: dict[str, Any]
) -> None:
    component, change = CHANGES[case]
    builder, overrides = change(paused)
    db = paused["db"]
    before = db_snapshot(db)
    with open_saver(db, integrity=True) as saver:
        graph = builder.compile(checkpointer=saver)
        manifest = _manifest(graph, paused["script"], paused["verifier"], **overrides)
        with (
            pytest.raises(ThreadChangedError, match=rf"{component} changed \(recorded ") as caught,
            guard_thread(saver, db, "t1", manifest, new=False),
        ):
            pytest.fail("the block must not run")
        assert set(caught.value.changes) == {component}
        assert f"--allow-changed {component}" in str(caught.value)
    assert db_snapshot(db) == before


def test_a_renamed_node_is_named_in_the_refusal(paused: dict[str, Any]) -> None:
    with open_saver(paused["db"], integrity=True) as saver:
        graph = _renamed_node(paused["script"]).compile(checkpointer=saver)
        manifest = _manifest(graph, paused["script"], paused["verifier"])
        with (
            pytest.raises(ThreadChangedError, match="nodes added: fix; nodes removed: repair"),
            guard_thread(saver, paused["db"], "t1", manifest, new=False),
        ):
            pass


def test_package_and_langgraph_upgrades_are_detected(
    paused: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_fingerprint, "version", lambda name: f"{name}-99.0")
    with open_saver(paused["db"], integrity=True) as saver:
        graph = _builder(paused["script"]).compile(checkpointer=saver)
        manifest = _manifest(graph, paused["script"], paused["verifier"])
        with (
            pytest.raises(ThreadChangedError) as caught,
            guard_thread(saver, paused["db"], "t1", manifest, new=False),
        ):
            pass
    assert set(caught.value.changes) == {"package", "langgraph"}


def test_an_accepted_change_is_recorded_and_the_run_continues(paused: dict[str, Any]) -> None:
    db, script = paused["db"], paused["script"]
    script.write_text(script.read_text().replace("(13-9)*(10-4)", "(10-4)*(13-9)"))
    with open_saver(db, integrity=True) as saver:
        graph = _builder(script).compile(checkpointer=saver)
        manifest = _manifest(graph, script, paused["verifier"])
        with guard_thread(saver, db, "t1", manifest, new=False, allow_changes={"models"}) as guarded:
            assert set(guarded.accepted) == {"models"}
            out = graph.invoke(None, {"configurable": {"thread_id": "t1"}})
        assert out["passed"] is True and out["final_answer"] == "(10-4)*(13-9)"
        assert stored_manifest(saver, "t1") == manifest
        with guard_thread(saver, db, "t1", manifest, new=False):  # no flag needed any more
            pass
    conn = sqlite3.connect(db)
    (history,) = conn.execute("SELECT history FROM rg_manifests WHERE thread_id = 't1'").fetchone()
    conn.close()
    assert '"accepted": {"models"' in history


def test_unrecorded_components_are_not_compared(paused: dict[str, Any]) -> None:
    with open_saver(paused["db"], integrity=True) as saver:
        graph = _builder(paused["script"]).compile(checkpointer=saver)
        manifest = build_manifest(graph, name="repair")  # no models, verifier, access, settings
        with guard_thread(saver, paused["db"], "t1", manifest, new=False) as guarded:
            assert guarded.accepted == {}


def test_a_thread_without_manifest_is_refused_until_adopted(tmp_path: Path) -> None:
    db, script = tmp_path / "ck.sqlite", tmp_path / "s.json"
    write_script(script, repair_routes(1))
    with open_saver(db, integrity=True) as saver:
        graph = _builder(script).compile(checkpointer=saver, interrupt_before=["verify"])
        graph.invoke({"task": TASK, "verifier": "game24:4 9 10 13"}, {"configurable": {"thread_id": "old"}})
        manifest = build_manifest(graph, name="repair")
        with (
            pytest.raises(ThreadChangedError, match="it has no run manifest"),
            guard_thread(saver, db, "old", manifest, new=False),
        ):
            pass
        with guard_thread(saver, db, "old", manifest, new=False, allow_changes={"manifest"}):
            pass
        assert stored_manifest(saver, "old") == manifest


def test_guard_refuses_bad_requests(paused: dict[str, Any]) -> None:
    db = paused["db"]
    with open_saver(db, integrity=True) as saver:
        manifest = build_manifest(_builder(paused["script"]), name="repair")
        cases: list[tuple[type[Exception], str, dict[str, Any]]] = [
            (InputError, "already exists", {"thread_id": "t1", "new": True}),
            (UnknownThreadError, "no thread 'nope'", {"thread_id": "nope", "new": False}),
            (InputError, "unknown component", {"thread_id": "t1", "new": False, "allow_changes": {"code"}}),
        ]
        for error, message, kwargs in cases:
            with (
                pytest.raises(error, match=message),
                guard_thread(saver, db, kwargs.pop("thread_id"), manifest, **kwargs),
            ):
                pytest.fail("the block must not run")


def test_an_edited_manifest_is_refused(paused: dict[str, Any]) -> None:
    db = paused["db"]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE rg_manifests SET manifest = replace(manifest, 'fake:', 'fake:/evil')")
    conn.close()
    with open_saver(db, integrity=True) as saver:
        manifest = build_manifest(_builder(paused["script"]), name="repair")
        with (
            pytest.raises(IntegrityError, match="run manifest does not match its seal"),
            guard_thread(saver, db, "t1", manifest, new=False),
        ):
            pass


def test_diff_ignores_missing_components_and_shortens_values() -> None:
    base = RunManifest(graph="g", topology="sha256:a", nodes=("a",), package="1", langgraph="1")
    other = base.model_copy(update={"models": ("x" * 200,), "topology": "sha256:b", "nodes": ("a", "b")})
    changes = diff_manifests(base, other)
    assert set(changes) == {"topology"}
    assert changes["topology"][1].endswith("(nodes added: b)")
    assert diff_manifests(other, other.model_copy(update={"models": ("y" * 200,)}))["models"][1].endswith(
        "…'"
    )


def test_long_values_are_shown_from_where_they_differ() -> None:
    base = RunManifest(graph="g", topology="t", nodes=(), package="1", langgraph="1")
    path = "fake:/a/very/long/folder/that/holds/the/script/of/the/model/under/test/script.json"
    old = base.model_copy(update={"models": (f"{path}#sha256:1111",)})
    new = base.model_copy(update={"models": (f"{path}#sha256:2222",)})
    shown_old, shown_new = diff_manifests(old, new)["models"]
    assert shown_old.startswith("'…") and shown_old.endswith("sha256:1111'")
    assert shown_new.endswith("sha256:2222'") and shown_old != shown_new
