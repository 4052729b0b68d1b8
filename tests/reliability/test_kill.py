"""Crash safety: a CLI run killed with SIGKILL at any point resumes in a new process cleanly.

Every test drives the real CLI (sealed saver, thread lease, run manifest) in child processes,
through ``kill_cli.py`` (which only adds the kill hooks), with scripted models whose log records one line
per model call at call start, in every process. Kills are deterministic (the child SIGKILLs
itself just before or after its N-th checkpoint write or task-write batch, or the test kills it
while a sandboxed verifier runs) or random (the torture loop). After the resume:

- ``PRAGMA integrity_check`` is ok and every stored row still matches its seal;
- the final state has every completed output exactly once;
- no completed model call is repeated: only the step in flight at the kill may call again;
- no sandbox process outlives the killed run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.checkpoints import open_saver
from tests.reliability.conftest import (
    GAME24,
    SOLUTION,
    TASK,
    WRONG,
    Result,
    integrity_check,
    log_lines,
    repair_routes,
    run_cli,
    start_cli,
    write_script,
)

pytestmark = pytest.mark.kill

GENERATE = "Reply with the complete answer only."
REPAIR = "Earlier answers failed"


def _run_args(db: Path, model: str, thread: str, *extra: str) -> list[str]:
    task = ["--task", TASK, "--verifier", GAME24]
    return ["run", "repair", *task, "--model", model, "--thread", thread, "--db", str(db), *extra]


def _resume(db: Path, thread: str) -> Result:
    result = run_cli(["resume", "--thread", thread, "--json", "--db", str(db)])
    assert result.code in (0, 1), result.err
    return result


def _killed(args: list[str], point: str) -> None:
    """Run the CLI with a kill hook; it must die by SIGKILL."""
    proc = start_cli(args, RG_TEST_KILL=point)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {point} (exit {proc.returncode}): {err[-800:]}"


def _check_store(db: Path, thread: str) -> None:
    assert integrity_check(db) == "ok"
    with open_saver(db, integrity=True) as saver:
        assert saver.verify_thread(thread) > 0


def _check_repair(result: dict[str, Any], answers: list[str]) -> None:
    summary = {k: result.get(k) for k in ("stop_reason", "passed", "pending", "final_answer")}
    assert result.get("passed") is True and result.get("stop_reason") == "passed", (
        f"resume ended as {summary}"
    )
    assert [a["answer"] for a in result["history"]] == answers, "every completed attempt exactly once"
    assert result["usage"]["total"]["calls"] == len(answers), "the ledger counts each completed call once"


@pytest.mark.parametrize(
    ("point", "generate_calls"),
    [
        # Writes and checkpoints alternate: put 1 is the input, writes 1 the input's task, put 2
        # step 0, writes 2 the start node, put 3 step 1, writes 3 generate, put 4 step 2 ...
        ("before_put:4", 1),  # generate's writes are stored, its checkpoint is not: not re-run
        ("after_put:4", 1),  # killed right after the checkpoint that follows generate
        ("before_writes:3", 2),  # generate finished but its writes were not stored: it re-runs
    ],
)
def test_kill_around_a_checkpoint_write(point: str, generate_calls: int, tmp_path: Path) -> None:
    db, log = tmp_path / "ck.sqlite", tmp_path / "calls.jsonl"
    model = write_script(tmp_path / "s.json", repair_routes(2), log=str(log))
    _killed(_run_args(db, model, "k1"), point)
    assert len(log_lines(log)) == 1, "the kill came after the first model call"
    result = _resume(db, "k1").json()
    _check_repair(result, [WRONG[0], SOLUTION])
    prompts = log_lines(log)
    assert sum(GENERATE in p and REPAIR not in p for p in prompts) == generate_calls
    assert sum(REPAIR in p for p in prompts) == 1
    _check_store(db, "k1")


def test_kill_during_a_parallel_batch(tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    logs = [tmp_path / f"d{i}.jsonl" for i in range(3)]
    roster = [
        write_script(
            tmp_path / f"d{i}.json", [{"match": "", "reply": f"draft {i}"}], log=str(logs[i]), latency=lat
        )
        for i, lat in enumerate((0.1, 0.1, 3.0))
    ]
    stage_log = tmp_path / "stage.jsonl"
    stage = write_script(
        tmp_path / "stage.json",
        [
            {"match": "Frame the answers:", "reply": json.dumps({"claims": ["c"], "agreements": ["a"]})},
            {
                "match": "List the concrete problems",
                "reply": json.dumps({"problems": [], "acceptable": True}),
            },
            {"match": "Write the final answer to the task", "reply": "final"},
        ],
        log=str(stage_log),
    )
    args = [
        "run",
        "reflection",
        "--task",
        "Describe the sea.",
        "--roster",
        ",".join(roster),
        "--model",
        stage,
    ]
    # put_writes 1 and 2 are the input's and the start node's; 3 and 4 the two fast drafts.
    _killed([*args, "--thread", "p1", "--db", str(db)], "after_writes:4")
    assert [len(log_lines(log)) for log in logs] == [1, 1, 1], "all three drafts had started"
    result = _resume(db, "p1").json()
    assert result["stop_reason"] == "completed" and result["final_answer"] == "final"
    assert [d["text"] for d in result["drafts"]] == ["draft 0", "draft 1", "draft 2"]
    assert [len(log_lines(log)) for log in logs] == [1, 1, 2], "only the draft in flight ran again"
    assert len(log_lines(stage_log)) == 3
    assert result["usage"]["total"]["calls"] == 6
    _check_store(db, "p1")


def _tree() -> dict[int, int]:
    """Map every pid to its parent pid."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def _identity(pid: int) -> str | None:
    """Return a process's start time (to tell it from a later process with the same pid)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def _uid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _descendants(root: int) -> set[int]:
    parents = _tree()
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def test_kill_while_a_sandboxed_verifier_runs(tmp_path: Path) -> None:
    db, log = tmp_path / "ck.sqlite", tmp_path / "calls.jsonl"
    tests = tmp_path / "test_solve.py"
    tests.write_text("import time\ntime.sleep(4)\nassert solve() == 24\n")
    model = write_script(
        tmp_path / "s.json", [{"match": "", "reply": "def solve():\n    return 24\n"}], log=str(log)
    )
    args = ["run", "repair", "--task", "Write solve() returning 24.", "--verifier", f"python-tests:{tests}"]
    proc = start_cli([*args, "--model", model, "--thread", "v1", "--db", str(db)])
    sandbox: dict[int, str | None] = {}
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            children = _descendants(proc.pid)
            if any(_uid(pid) == 65534 for pid in children):  # the sandboxed harness is running
                sandbox = {pid: _identity(pid) for pid in children}
                break
            time.sleep(0.05)
        assert sandbox, "the sandboxed verifier never started"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_identity(p) == s for p, s in sandbox.items()):
            time.sleep(0.05)
        orphans = sorted(p for p, s in sandbox.items() if _identity(p) == s)
        assert not orphans, f"sandbox processes outlived the killed run: {orphans}"
    finally:
        for pid, start in sandbox.items():
            if _identity(pid) == start:
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert len(log_lines(log)) == 1
    result = _resume(db, "v1").json()
    assert result["passed"] is True and [a["passed"] for a in result["history"]] == [True]
    assert len(log_lines(log)) == 1, "the generation finished before the kill and was not repeated"
    _check_store(db, "v1")


TORTURE_ITERATIONS = 10
PASSING_ATTEMPT = 6


def test_torture_random_kills_then_resume(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("RG_TORTURE_SEED", "20240611")))
    db, log = tmp_path / "ck.sqlite", tmp_path / "calls.jsonl"
    model = write_script(tmp_path / "s.json", repair_routes(PASSING_ATTEMPT), log=str(log), latency=0.4)
    kills = 0
    for iteration in range(TORTURE_ITERATIONS):
        args = (
            _run_args(db, model, "t1", "--max-attempts", "8")
            if iteration == 0
            else ["resume", "--thread", "t1", "--db", str(db)]
        )
        if rng.random() < 0.5:
            point = f"{rng.choice(['before', 'after'])}_{rng.choice(['put', 'writes'])}:{rng.randint(1, 3)}"
            proc = start_cli(args, RG_TEST_KILL=point)
            proc.communicate(timeout=180)
        else:
            before = len(log_lines(log))
            proc = start_cli(args)
            deadline = time.monotonic() + 90
            while len(log_lines(log)) == before and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.5))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
        if proc.returncode == -signal.SIGKILL:
            kills += 1
        else:
            assert proc.returncode in (0, 1), f"iteration {iteration}: exit {proc.returncode}"
        assert integrity_check(db) == "ok"
    result = _resume(db, "t1").json()
    expected = [WRONG[k % len(WRONG)] if k else WRONG[0] for k in range(PASSING_ATTEMPT - 1)] + [SOLUTION]
    _check_repair(result, expected)
    prompts = Counter(log_lines(log))
    assert len(prompts) == PASSING_ATTEMPT, "every attempt called the model"
    repeats = sum(count - 1 for count in prompts.values())
    assert repeats <= kills, f"{repeats} repeated calls for {kills} kills: a completed call was repeated"
    _check_store(db, "t1")
