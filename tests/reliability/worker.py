"""Child process for the lease and concurrency tests.

Usage (from the repository root):

- ``python -m tests.reliability.worker lease DB THREAD SECONDS``: take the thread's lease, print
  ``{"event": "acquired"}``, hold it for SECONDS.
- ``python -m tests.reliability.worker resume DB THREAD SCRIPT``: resume a repair thread under
  ``guard_thread`` with the scripted model SCRIPT.
- ``python -m tests.reliability.worker run DB THREAD SCRIPT``: start a new repair thread under
  ``guard_thread`` and run it to the end.

Each prints one JSON line: the result, or ``{"error": TYPE, "message": ...}``. With
``RG_GO_FILE=PATH`` set, a worker first prints ``{"event": "ready"}`` (its imports done) and
waits until PATH exists, so several workers can start their attempt at the same moment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.checkpoints.lease import thread_lease
from reasoning_graphs.checkpoints.manifest import build_manifest, guard_thread
from reasoning_graphs.errors import ReasoningGraphsError
from reasoning_graphs.graphs import build_repair_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.verifiers import from_spec

GAME24 = "game24:4 9 10 13"
TASK = "make 24 from 4 9 10 13"


def _say(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def repair_graph(saver: Any, script: str, interrupt_before: list[str] | None = None) -> Any:
    """The repair graph the workers and the tests share (scripted model, game24 verifier)."""
    fake = ScriptedChatModel.from_file(script)
    model = ModelClient(fake, retry=RetrySettings(initial_delay=0, jitter=False))
    builder = build_repair_graph(verifier=from_spec(GAME24), model=model)
    return builder.compile(checkpointer=saver, interrupt_before=interrupt_before)


def manifest_for(graph: Any, script: str) -> Any:
    """The manifest the workers and the tests record for a repair thread."""
    return build_manifest(graph, name="repair", models=[f"fake:{script}"], verifier=GAME24)


def _lease(db: str, thread_id: str, seconds: str) -> None:
    with thread_lease(db, thread_id):
        _say({"event": "acquired"})
        time.sleep(float(seconds))


def _resume(db: str, thread_id: str, script: str) -> None:
    started = time.monotonic()
    with open_saver(db, integrity=True) as saver:
        graph = repair_graph(saver, script)
        config = {"configurable": {"thread_id": thread_id}}
        with guard_thread(saver, db, thread_id, manifest_for(graph, script), new=False):
            _say({"event": "acquired"})
            out = graph.invoke(None, config)
    _say(
        {"attempts": out.get("attempts"), "passed": out.get("passed"), "seconds": time.monotonic() - started}
    )


def _run(db: str, thread_id: str, script: str) -> None:
    with open_saver(db, integrity=True) as saver:
        graph = repair_graph(saver, script)
        config = {"configurable": {"thread_id": thread_id}, "metadata": {"graph": "repair"}}
        with guard_thread(saver, db, thread_id, manifest_for(graph, script), new=True):
            out = graph.invoke({"task": TASK}, config)
    _say({"attempts": out.get("attempts"), "passed": out.get("passed")})


def main(argv: list[str]) -> int:
    """Run one worker command; print its outcome."""
    command, *args = argv
    go = os.environ.get("RG_GO_FILE")
    if go:
        _say({"event": "ready"})
        while not Path(go).exists():
            time.sleep(0.01)
    started = time.monotonic()
    try:
        {"lease": _lease, "resume": _resume, "run": _run}[command](*args)
    except ReasoningGraphsError as exc:
        _say({"error": type(exc).__name__, "message": str(exc), "seconds": time.monotonic() - started})
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
