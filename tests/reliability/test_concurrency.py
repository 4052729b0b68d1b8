"""Four processes run distinct threads on one database file: no errors, every checkpoint present."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.checkpoints import StrictSerializer, history, list_threads, open_saver
from tests.reliability.conftest import (
    ROOT,
    TASK,
    cli_env,
    integrity_check,
    log_lines,
    repair_routes,
    write_script,
)
from tests.reliability.worker import repair_graph

RUNNERS = 4


def _chain(infos: list[object]) -> int:
    """Follow parent links from the newest checkpoint; return how many it reaches."""
    by_id = {i.checkpoint_id: i for i in infos}  # type: ignore[attr-defined]
    node, seen = infos[0], 0
    while node is not None:
        seen += 1
        node = by_id.get(node.parent_id) if node.parent_id else None  # type: ignore[attr-defined]
    return seen


@pytest.mark.slow
def test_four_processes_on_one_file_lose_nothing(tmp_path: Path) -> None:
    db, log = tmp_path / "ck.sqlite", tmp_path / "calls.jsonl"
    script = write_script(tmp_path / "s.json", repair_routes(3), log=str(log), latency=0.05).removeprefix(
        "fake:"
    )
    reference = repair_graph(InMemorySaver(serde=StrictSerializer()), script)
    reference.invoke({"task": TASK}, {"configurable": {"thread_id": "ref"}})
    expected = len(list(reference.get_state_history({"configurable": {"thread_id": "ref"}})))
    log.unlink()
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.worker", "run", str(db), f"c{i}", script],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(RG_GO_FILE=str(go)),
            start_new_session=True,
        )
        for i in range(RUNNERS)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and json.loads(proc.stdout.readline()) == {"event": "ready"}
        go.touch()  # every runner writes at the same time from here
        outcomes = [proc.communicate(timeout=180) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    for proc, (out, err) in zip(procs, outcomes, strict=True):
        assert proc.returncode == 0 and err == "", err
        assert json.loads(out.splitlines()[-1]) == {"attempts": 3, "passed": True}
    assert integrity_check(db) == "ok"
    assert len(log_lines(log)) == RUNNERS * 3, "each runner made exactly its own calls"
    with open_saver(db, integrity=True) as saver:
        assert sorted((t.thread_id, t.status) for t in list_threads(saver)) == [
            (f"c{i}", "done") for i in range(RUNNERS)
        ]
        for i in range(RUNNERS):
            assert saver.verify_thread(f"c{i}") > 0
            infos = history(saver, f"c{i}")
            assert len(infos) == expected and _chain(infos) == expected, f"thread c{i} lost checkpoints"
