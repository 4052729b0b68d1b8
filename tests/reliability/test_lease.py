"""Thread leases: one runner per thread; a second fails at once; a dead runner never blocks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.checkpoints.lease import ThreadBusyError, acquire_lease, lease_path, thread_lease
from reasoning_graphs.checkpoints.manifest import guard_thread
from tests.reliability.conftest import ROOT, TASK, cli_env, log_lines, repair_routes, write_script
from tests.reliability.worker import manifest_for, repair_graph


def test_a_second_lease_fails_at_once_and_names_the_holder(tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    with thread_lease(db, "t1") as lease:
        assert lease.held and lease.path == lease_path(db, "t1")
        started = time.monotonic()
        with pytest.raises(ThreadBusyError, match=rf"thread 't1' is busy: .*pid {os.getpid()} on "):
            acquire_lease(db, "t1")
        assert time.monotonic() - started < 0.5
        with thread_lease(db, "t2"):  # other threads are independent
            pass
        with pytest.raises(ThreadBusyError):  # the same file through another spelling
            acquire_lease(tmp_path / "." / "ck.sqlite", "t1")
    assert not lease_path(db, "t1").exists(), "a released lease leaves no file"
    with thread_lease(db, "t1"):
        pass


def test_in_memory_databases_lease_per_process() -> None:
    with thread_lease(":memory:", "m1"), pytest.raises(ThreadBusyError):
        acquire_lease(":memory:", "m1")
    acquire_lease(":memory:", "m1").release()


def test_guard_thread_holds_the_lease_for_its_block(tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    script = write_script(tmp_path / "s.json", repair_routes(1))
    with open_saver(db, integrity=True) as saver:
        graph = repair_graph(saver, script.removeprefix("fake:"))
        manifest = manifest_for(graph, script.removeprefix("fake:"))
        with guard_thread(saver, db, "g1", manifest, new=True):
            with pytest.raises(ThreadBusyError):
                acquire_lease(db, "g1")
            graph.invoke({"task": TASK}, {"configurable": {"thread_id": "g1"}})
        with guard_thread(saver, db, "g1", manifest, new=False) as guarded:
            assert guarded.rows > 0 and guarded.accepted == {}
    with thread_lease(db, "g1"):
        pass


def _worker(*args: str, go: Path | None = None) -> subprocess.Popen[str]:
    env = cli_env(**({"RG_GO_FILE": str(go)} if go else {}))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.worker", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _reap(proc: subprocess.Popen[str]) -> None:
    """Kill a worker still running (by its own process group) and close its pipes."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)


def _line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else "no output"
    data: dict[str, Any] = json.loads(line)
    return data


@pytest.mark.slow
def test_a_lease_held_by_a_killed_process_is_free_at_once(tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    holder = _worker("lease", str(db), "t1", "600")
    try:
        assert _line(holder) == {"event": "acquired"}
        with pytest.raises(ThreadBusyError, match=f"pid {holder.pid} "):
            acquire_lease(db, "t1")
        _reap(holder)
        started = time.monotonic()
        with thread_lease(db, "t1"):  # no expiry to wait for: the kernel dropped the lock
            assert time.monotonic() - started < 0.5
    finally:
        _reap(holder)


@pytest.mark.slow
def test_four_runners_on_one_thread_one_runs_three_fail_at_once(tmp_path: Path) -> None:
    db, log = tmp_path / "ck.sqlite", tmp_path / "calls.jsonl"
    spec = write_script(tmp_path / "s.json", repair_routes(2), log=str(log), latency=3.0)
    script = spec.removeprefix("fake:")
    with open_saver(db, integrity=True) as saver:  # attempt 1 failed; the thread waits before repair
        graph = repair_graph(saver, script, interrupt_before=["repair"])
        manifest = manifest_for(graph, script)
        with guard_thread(saver, db, "shared", manifest, new=True):
            graph.invoke({"task": TASK}, {"configurable": {"thread_id": "shared"}})
    assert len(log_lines(log)) == 1
    go = tmp_path / "go"
    workers = [_worker("resume", str(db), "shared", script, go=go) for _ in range(4)]
    try:
        for proc in workers:
            assert _line(proc) == {"event": "ready"}
        go.touch()
        outcomes = [
            json.loads(line) for proc in workers for line in proc.communicate(timeout=120)[0].splitlines()
        ]
    finally:
        for proc in workers:
            _reap(proc)
    results = [o for o in outcomes if "passed" in o]
    busy = [o for o in outcomes if o.get("error")]
    assert len(results) == 1 and results[0]["passed"] is True and results[0]["attempts"] == 2
    assert len(busy) == 3 and {o["error"] for o in busy} == {"ThreadBusyError"}
    assert all("thread 'shared' is busy" in o["message"] and o["seconds"] < 2.0 for o in busy)
    assert len(log_lines(log)) == 2, "only the one runner called the model"
