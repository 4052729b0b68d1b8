from __future__ import annotations

import importlib
import logging
import os
import pickle
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde.event_hooks import SerdeEvent
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

import reasoning_graphs
from reasoning_graphs.checkpoints import (
    StrictSerializer,
    history,
    list_threads,
    open_saver,
    thread_info,
    view_thread,
)
from reasoning_graphs.types import Frozen
from tests.checkpoints.conftest import run_strict

SAMPLES_SCRIPT = Path(__file__).with_name("frozen_samples.py")
EXT_SINGLE, EXT_POS, EXT_KW, EXT_METHOD, EXT_PYDANTIC_V2 = 0, 1, 2, 3, 5


def _ext(code: int, *parts: Any) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(tuple(parts)))


def _payloads(marker: Path) -> dict[str, ormsgpack.Ext]:
    """Stored values that create ``marker`` if a loader imports and calls what they name."""
    return {
        "os.system": _ext(EXT_SINGLE, "os", "system", f"touch {marker}"),
        "subprocess.Popen": _ext(EXT_POS, "subprocess", "Popen", [["touch", str(marker)]]),
        "subprocess.run": _ext(EXT_KW, "subprocess", "run", {"args": ["touch", str(marker)]}),
        "builtins.eval": _ext(EXT_SINGLE, "builtins", "eval", f"open({str(marker)!r}, 'w').close()"),
        "builtins-method": _ext(
            EXT_METHOD, "builtins", "eval", f"open({str(marker)!r}, 'w').close()", "__call__"
        ),
        "os.system-pydantic": _ext(EXT_PYDANTIC_V2, "os", "system", {}, "model_validate_json"),
    }


def _ids(events: list[SerdeEvent]) -> list[tuple[str, str, str]]:
    return [(e["kind"], e["module"], e["name"]) for e in events]


def test_every_core_and_checkpoint_type_has_a_sample(
    samples_script: dict[str, Any], frozen_samples: dict[type[Frozen], Frozen]
) -> None:
    missing = samples_script["sampled_modules_types"]() - set(frozen_samples)
    assert not missing, f"add samples for {sorted(c.__qualname__ for c in missing)} in frozen_samples.py"


def test_every_frozen_type_round_trips_without_warnings(
    frozen_samples: dict[type[Frozen], Frozen],
    serde_events: list[SerdeEvent],
    caplog: pytest.LogCaptureFixture,
) -> None:
    serde = StrictSerializer()
    caplog.set_level(logging.WARNING, logger="langgraph")
    for cls, value in frozen_samples.items():
        loaded = serde.loads_typed(serde.dumps_typed({"nested": [value], "value": value}))
        assert type(loaded["value"]) is cls
        assert loaded == {"nested": [value], "value": value}
    assert serde_events == []
    assert [r for r in caplog.records if r.name.startswith("langgraph")] == []


def test_every_loaded_package_frozen_type_is_admitted(
    samples_script: dict[str, Any], frozen_samples: dict[type[Frozen], Frozen]
) -> None:
    serde = StrictSerializer()
    types = samples_script["loaded_frozen_types"]()
    assert set(frozen_samples) <= types
    for cls in types:
        assert serde.admits(cls.__module__, cls.__name__), cls
        # Stored without arguments: rebuilt as the class itself (unvalidated), never a raw dict.
        stored = _ext(EXT_PYDANTIC_V2, cls.__module__, cls.__name__, {}, "model_validate_json")
        assert type(serde.loads_typed(("msgpack", ormsgpack.packb(stored)))) is cls
    assert not serde.admits("reasoning_graphs.access", "matches")
    assert not serde.admits("os", "system")


def test_strict_env_round_trip_in_a_graph(tmp_path: Path, frozen_samples: dict[type[Frozen], Frozen]) -> None:
    result = run_strict(SAMPLES_SCRIPT, tmp_path / "strict.sqlite")
    assert result.returncode == 0, result.stderr
    assert f"round-tripped {len(frozen_samples)} types" in result.stdout
    assert result.stderr == ""


def test_control_default_serializer_runs_the_payloads(tmp_path: Path) -> None:
    """The payloads are real: LangGraph's permissive default executes every constructor one."""
    permissive = JsonPlusSerializer(allowed_msgpack_modules=True)
    for name in _payloads(tmp_path / "x"):
        if name in ("builtins-method", "os.system-pydantic"):
            continue  # blocked even by the permissive default
        marker = tmp_path / f"control-{name}"
        value = permissive.loads_typed(("msgpack", ormsgpack.packb(_payloads(marker)[name])))
        if isinstance(value, subprocess.Popen):
            value.wait()
        assert marker.exists(), name


@pytest.mark.parametrize("name", list(_payloads(Path("x"))))
def test_strict_serializer_refuses_payloads(
    name: str, tmp_path: Path, serde_events: list[SerdeEvent]
) -> None:
    marker = tmp_path / "pwned"
    loaded = StrictSerializer().loads_typed(("msgpack", ormsgpack.packb({"v": _payloads(marker)[name]})))
    assert not marker.exists()
    assert not isinstance(loaded["v"], subprocess.Popen)
    assert serde_events, "the refusal is reported"


def _failed_thread(db: Path, pipeline: Any) -> None:
    pipeline.failures["judge"] = 1
    with open_saver(db) as saver:
        graph = pipeline.build().compile(checkpointer=saver)
        with pytest.raises(RuntimeError, match="judge crashed"):
            graph.invoke({"task": "t"}, {"configurable": {"thread_id": "t1"}, "metadata": {"graph": "pipe"}})


def _read_everything(db: Path, pipeline: Any) -> Any:
    with open_saver(db) as saver:
        graph = pipeline.build().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t1"}}
        state = graph.get_state(config)
        list(graph.get_state_history(config))
        list_threads(saver)
        thread_info(saver, "t1")
        history(saver, "t1")
        view_thread(saver, "t1", "judge")
        return state


@pytest.mark.parametrize("table", ["checkpoints", "writes"])
@pytest.mark.parametrize("name", list(_payloads(Path("x"))))
def test_crafted_rows_run_nothing(
    table: str, name: str, tmp_path: Path, pipeline: Any, serde_events: list[SerdeEvent]
) -> None:
    db, marker = tmp_path / "ck.sqlite", tmp_path / "pwned"
    _failed_thread(db, pipeline)
    payload = _payloads(marker)[name]
    conn = sqlite3.connect(db)
    with conn:
        if table == "checkpoints":
            blob, cid = conn.execute(
                "SELECT checkpoint, checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
            ).fetchone()
            raw = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
            raw["channel_values"]["final_answer"] = payload
            conn.execute(
                "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
                (ormsgpack.packb(raw, option=ormsgpack.OPT_NON_STR_KEYS), cid),
            )
        else:
            changed = conn.execute(
                "UPDATE writes SET type = 'msgpack', value = ? WHERE channel = '__error__'",
                (ormsgpack.packb(payload),),
            ).rowcount
            assert changed == 1
    conn.close()
    state = _read_everything(db, pipeline)
    assert not marker.exists()
    assert {module for _, module, _ in _ids(serde_events)} == {name.split(".")[0].split("-")[0]}
    assert {kind for kind, _, _ in _ids(serde_events)} <= {"msgpack_blocked", "msgpack_method_blocked"}
    if table == "checkpoints":  # the stored arguments come back as plain data
        assert isinstance(state.values["final_answer"], str | list | dict)


def test_pickle_is_never_used(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    serde = StrictSerializer()
    with pytest.raises(NotImplementedError, match="Unknown serialization type"):
        serde.loads_typed(("pickle", pickle.dumps(Evil())))
    with pytest.raises(TypeError):
        serde.dumps_typed(Evil())
    assert not marker.exists()


@pytest.fixture
def late_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A reasoning_graphs module that exists on disk but is not imported yet."""
    name = f"_late_{uuid.uuid4().hex}"
    folder = tmp_path / "late"
    folder.mkdir()
    (folder / f"{name}.py").write_text(
        "from pydantic import BaseModel\n"
        "from reasoning_graphs.types import Frozen\n"
        "class LateValue(Frozen):\n    text: str\n    n: int = 0\n"
        "class NotFrozen(BaseModel):\n    text: str\n"
    )
    monkeypatch.setattr(reasoning_graphs, "__path__", [*reasoning_graphs.__path__, str(folder)])
    return f"reasoning_graphs.{name}"


def test_frozen_type_from_a_module_not_imported_yet(late_module: str, serde_events: list[SerdeEvent]) -> None:
    module = importlib.import_module(late_module)
    stored = StrictSerializer().dumps_typed(
        {"late": module.LateValue(text="hi", n=2), "other": module.NotFrozen(text="x")}
    )
    del sys.modules[late_module]
    delattr(reasoning_graphs, late_module.rsplit(".", 1)[1])

    loaded = StrictSerializer().loads_typed(stored)

    assert late_module in sys.modules, "the hook imported the package module to check the class"
    fresh = sys.modules[late_module]
    assert type(loaded["late"]) is fresh.LateValue
    assert loaded["late"] == fresh.LateValue(text="hi", n=2)
    assert loaded["other"] == {"text": "x"}, "a non-Frozen model of the package is not rebuilt"
    assert _ids(serde_events) == [("msgpack_blocked", late_module, "NotFrozen")]


class Outsider(Frozen):
    """A Frozen subclass outside the package: rebuilt only when allowed explicitly."""

    text: str


class PlainOutsider(BaseModel):
    text: str


def test_types_outside_the_package_need_allow(serde_events: list[SerdeEvent]) -> None:
    stored = StrictSerializer().dumps_typed([Outsider(text="a"), PlainOutsider(text="b")])
    assert StrictSerializer().loads_typed(stored) == [{"text": "a"}, {"text": "b"}]
    allowed = StrictSerializer(allow=[Outsider, (PlainOutsider.__module__, "PlainOutsider")])
    assert allowed.loads_typed(stored) == [Outsider(text="a"), PlainOutsider(text="b")]
    widened = StrictSerializer().with_msgpack_allowlist([(Outsider.__module__, "Outsider")])
    assert isinstance(widened, StrictSerializer)
    assert widened.loads_typed(stored)[0] == Outsider(text="a")
    assert StrictSerializer(allow=[Outsider]).with_msgpack_allowlist([Outsider]).allowed == {
        (Outsider.__module__, "Outsider")
    }


def test_names_outside_the_package_are_never_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serde_events: list[SerdeEvent]
) -> None:
    marker = tmp_path / "imported"
    for module in ("evil_side_effect", "reasoning_graphs_evil"):
        (tmp_path / f"{module}.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass X: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "reasoning_graphs.studio", raising=False)  # another test may have
    stored = ormsgpack.packb(
        [
            _ext(EXT_PYDANTIC_V2, "evil_side_effect", "X", {}, "model_validate_json"),
            _ext(EXT_PYDANTIC_V2, "reasoning_graphs_evil", "X", {}, "model_validate_json"),
            _ext(EXT_PYDANTIC_V2, "reasoning_graphs.studio", "X", {}, "model_validate_json"),
            _ext(EXT_PYDANTIC_V2, "reasoning_graphs.access", "matches", {}, "model_validate_json"),
            _ext(EXT_PYDANTIC_V2, "reasoning_graphs..access", "Output", {}, "model_validate_json"),
        ]
    )
    assert StrictSerializer().loads_typed(("msgpack", stored)) == [{}, {}, {}, {}, {}]
    assert not marker.exists()
    assert "evil_side_effect" not in sys.modules
    assert "reasoning_graphs.studio" not in sys.modules
    assert len(serde_events) == 5
