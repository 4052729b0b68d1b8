"""Safe by default: strict serializer everywhere, strict-mode loads, crafted rows run nothing (CLI too)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import ormsgpack
import pytest
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener

from reasoning_graphs.checkpoints import (
    StrictSerializer,
    history,
    list_threads,
    open_async_saver,
    open_saver,
    view_thread,
)
from reasoning_graphs.cli import main
from tests.reliability.conftest import GAME24, ROOT, TASK, cli_env, repair_routes, write_script

EXT_SINGLE = 0


def test_every_package_saver_uses_the_strict_serializer(tmp_path: Path) -> None:
    import asyncio

    for integrity in (False, True):
        with open_saver(tmp_path / f"s{integrity}.sqlite", integrity=integrity) as saver:
            assert type(saver.serde) is StrictSerializer
            assert saver.serde.pickle_fallback is False

    async def check_async() -> None:
        async with open_async_saver(tmp_path / "a.sqlite") as saver:
            assert type(saver.serde) is StrictSerializer

    asyncio.run(check_async())


def _commands(tmp_path: Path) -> list[list[str]]:
    db = str(tmp_path / "strict.sqlite")
    repair = write_script(tmp_path / "repair.json", repair_routes(2))
    drafts = [write_script(tmp_path / f"d{i}.json", [{"match": "", "reply": f"draft {i}"}]) for i in range(2)]
    stage = write_script(
        tmp_path / "stage.json",
        [
            {"match": "Frame the answers:", "reply": json.dumps({"claims": ["c"], "agreements": ["a"]})},
            {
                "match": "List the concrete problems",
                "reply": json.dumps({"problems": ["p"], "acceptable": True}),
            },
            {"match": "Write the final answer to the task", "reply": "final"},
        ],
    )
    common = ["--db", db, "--json"]
    roster, stage_args = ",".join(drafts), ["--model", stage, "--thread", "f1"]
    return [
        ["run", "repair", "--task", TASK, "--verifier", GAME24, "--model", repair, "--thread", "r1", *common],
        ["resume", "--thread", "r1", *common],
        ["show", "--thread", "r1", *common],
        ["run", "reflection", "--task", "Describe the sea.", "--roster", roster, *stage_args, *common],
        ["show", "--thread", "f1", *common],
        ["history", "--thread", "f1", *common],
        ["threads", *common],
    ]


@pytest.mark.slow
def test_cli_state_loads_under_langgraph_strict_msgpack(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "from reasoning_graphs.cli import main\n"
        "codes = [main(argv) for argv in json.loads(sys.argv[1])]\n"
        "sys.stderr.write('CODES ' + json.dumps(codes) + '\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(_commands(tmp_path))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=cli_env(LANGGRAPH_STRICT_MSGPACK="true"),
    )
    assert "CODES [0, 0, 0, 0, 0, 0, 0]" in proc.stderr, proc.stderr[-3000:]
    for warning in ("unregistered", "Blocked", "blocked", "Traceback"):
        assert warning not in proc.stderr, proc.stderr[-3000:]


def _crafted_thread(db: Path, tmp_path: Path, cli_main: Callable[[list[str]], int]) -> Path:
    """Run a repair thread through ``main``; then plant an os.system call in its latest checkpoint."""
    marker = tmp_path / "pwned"
    model = write_script(tmp_path / "s.json", repair_routes(1))
    args = ["run", "repair", "--task", TASK, "--verifier", GAME24, "--model", model, "--thread", "x1"]
    assert cli_main([*args, "--db", str(db)]) == 0
    payload = ormsgpack.Ext(EXT_SINGLE, ormsgpack.packb(("os", "system", f"touch {marker}")))
    conn = sqlite3.connect(db)
    with conn:
        blob, cid = conn.execute(
            "SELECT checkpoint, checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        raw = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
        raw["channel_values"]["final_answer"] = payload
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
            (ormsgpack.packb(raw, option=ormsgpack.OPT_NON_STR_KEYS), cid),
        )
    conn.close()
    return marker


READS = [
    ["show", "--thread", "x1"],
    ["show", "--thread", "x1", "--json"],
    ["show", "--thread", "x1", "--as", "generator"],
    ["history", "--thread", "x1"],
    ["threads"],
    ["resume", "--thread", "x1"],
]


def test_a_crafted_row_runs_nothing_through_an_unsealed_saver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without integrity checks, the strict serializer alone refuses to build ``os.system``."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "ck.sqlite"
    marker = _crafted_thread(db, tmp_path, main)
    events: list[SerdeEvent] = []
    unregister = register_serde_event_listener(events.append)
    try:
        with open_saver(db) as saver:
            latest = saver.get_tuple({"configurable": {"thread_id": "x1"}})
            assert latest is not None
            assert [t.thread_id for t in list_threads(saver)] == ["x1"]
            assert history(saver, "x1")
            view_thread(saver, "x1", "generator")
    finally:
        unregister()
    assert not marker.exists()
    assert {(e["module"], e["name"]) for e in events} == {("os", "system")}, "refused, and reported"


def test_a_crafted_row_is_refused_by_the_cli_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "ck.sqlite"
    marker = _crafted_thread(db, tmp_path, main)
    capsys.readouterr()
    events: list[SerdeEvent] = []
    unregister = register_serde_event_listener(events.append)
    try:
        for argv in READS:
            assert main([*argv, "--db", str(db)]) == 4
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "thread 'x1' failed its integrity check" in err, err
    finally:
        unregister()
    assert not marker.exists()
    assert events == [], "nothing was deserialized"
