"""A CLI run killed with SIGKILL resumes in a new process without repeating completed calls."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATE = "Reply with the complete answer only."


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.kill
def test_sigkill_mid_run_then_resume_in_a_new_process(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "log": str(log),
                "latency": 1.5,
                "routes": [
                    {"match": "### Attempt 2", "reply": "(13-9)*(10-4)"},
                    {"match": "Earlier answers failed", "reply": "2+2"},
                    {"match": GENERATE, "reply": "1+1"},
                ],
            }
        )
    )
    db = tmp_path / "runs.sqlite"
    base = [sys.executable, "-m", "reasoning_graphs.cli"]
    common = ["--db", str(db)]
    child = subprocess.Popen(
        [
            *base,
            "run",
            "repair",
            "--task",
            "make 24 from 4 9 10 13",
            "--verifier",
            "game24:4 9 10 13",
            "--model",
            f"fake:{script}",
            "--thread",
            "k1",
            "--max-attempts",
            "4",
            *common,
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while len(_lines(log)) < 2 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert len(_lines(log)) == 2, "the second model call never started"
    os.killpg(child.pid, signal.SIGKILL)  # attempt 1 is stored; the repair call is in flight
    child.wait(timeout=10)

    resumed = subprocess.run(
        [*base, "resume", "--thread", "k1", "--json", *common],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["passed"] is True and result["stop_reason"] == "passed"
    assert [a["answer"] for a in result["history"]] == ["1+1", "2+2", "(13-9)*(10-4)"]

    prompts = [json.loads(line)["prompt"] for line in _lines(log)]
    # The completed first call is never repeated; only the in-flight one ran again.
    assert sum("Earlier answers failed" not in p for p in prompts) == 1
    assert len(prompts) == 4
    # The ledger counts each completed call once.
    assert result["usage"]["total"]["calls"] == 3

    threads = subprocess.run([*base, "threads", "--json", *common], cwd=ROOT, capture_output=True, text=True)
    assert json.loads(threads.stdout)[0]["status"] == "done"
