"""Shared helpers for the reliability tests: scripts, CLI runners, database snapshots."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
PUZZLE = "4 9 10 13"
TASK = f"make 24 from {PUZZLE}"
GAME24 = f"game24:{PUZZLE}"
SOLUTION = "(13-9)*(10-4)"
WRONG = ["4+9+10+13", "4*9-10-13", "4+9-10+13", "13-9+10+4", "4*9-13+10", "10+13-9-4", "4*13-10+9"]
"""Wrong answers with distinct values, so no two feedbacks repeat (no ``no_progress`` stop)."""
NO_WAIT = RetrySettings(initial_delay=0, jitter=False)


def client(fake: ScriptedChatModel) -> ModelClient:
    """Wrap a fake in the seam without retry delays."""
    return ModelClient(fake, retry=NO_WAIT)


def repair_routes(passing_attempt: int) -> list[dict[str, Any]]:
    """Routes of a repair run whose attempt ``passing_attempt`` (1-based) is the first to pass.

    Each attempt's prompt is unique (it lists every earlier attempt), so the log shows exactly
    which attempt each call made, in any process.
    """
    routes: list[dict[str, Any]] = []
    for k in range(passing_attempt - 1, 0, -1):
        reply = SOLUTION if k == passing_attempt - 1 else WRONG[k % len(WRONG)]
        routes.append({"match": f"### Attempt {k}\n", "reply": reply})
    first = SOLUTION if passing_attempt == 1 else WRONG[0]
    routes.append({"match": "Reply with the complete answer only.", "reply": first})
    return routes


def write_script(path: Path, routes: list[dict[str, Any]], **extra: Any) -> str:
    """Write a ``fake:`` script file; return its model spec."""
    path.write_text(json.dumps({"routes": routes, **extra}))
    return f"fake:{path}"


def log_lines(path: Path) -> list[str]:
    """Return the prompts a script's log recorded (one per model call, at call start)."""
    if not path.exists():
        return []
    return [json.loads(line)["prompt"] for line in path.read_text().splitlines() if line.strip()]


def db_snapshot(db: Path) -> str:
    """Return a digest of every row of every table, independent of the file's layout."""
    conn = sqlite3.connect(db)
    conn.text_factory = bytes
    try:
        digest = hashlib.sha256()
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
        for (name,) in tables:
            rows = conn.execute(f'SELECT * FROM "{name.decode()}"').fetchall()
            digest.update(repr((name, sorted(rows, key=repr))).encode())
    finally:
        conn.close()
    return digest.hexdigest()


def integrity_check(db: Path) -> str:
    """Return SQLite's ``PRAGMA integrity_check`` verdict."""
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


@dataclass
class Result:
    """A finished CLI process."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for CLI subprocesses: no real models, no inherited DB or kill hook."""
    env = {k: v for k, v in os.environ.items() if k not in ("REASONING_GRAPHS_DB", "RG_TEST_KILL")}
    return env | extra


CLI = [sys.executable, "-m", "tests.reliability.kill_cli"]
"""The real CLI, plus the kill hook ``RG_TEST_KILL`` names (see ``kill_cli.py``)."""


def run_cli(args: list[str], *, timeout: float = 180, **env: str) -> Result:
    """Run the CLI in a new process from the repository root."""
    proc = subprocess.run(
        [*CLI, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(**env),
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def start_cli(args: list[str], **env: str) -> subprocess.Popen[str]:
    """Start the CLI in a new process (own session, output discarded into pipes)."""
    return subprocess.Popen(
        [*CLI, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(**env),
        start_new_session=True,
    )
