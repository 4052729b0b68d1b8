"""The real CLI, plus kill hooks for crash tests.

``python -m tests.reliability.kill_cli ARGS`` (from the repository root) is
``python -m reasoning_graphs.cli ARGS``; with ``RG_TEST_KILL=before_put:N`` (or ``after_put:N``,
``before_writes:N``, ``after_writes:N``) the process SIGKILLs itself just before (after) its
N-th checkpoint write (``put``) or task-write batch (``put_writes``) of the sealing saver the CLI
opens.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from reasoning_graphs import cli
from reasoning_graphs.checkpoints.integrity import IntegritySaver

KILL_ENV = "RG_TEST_KILL"


def _kill_hook(spec: str, patch: Callable[[Any, str, Any], None]) -> None:
    """SIGKILL this process just before the N-th call starts, or just after the N-th completes.

    LangGraph stores a task's writes from a background thread, so calls are counted as they
    complete (the saver serializes them): "after the N-th" means N are durable, whatever their
    order, and "before checkpoint N" waits until every task-write batch already started is stored.
    """
    point, _, count = spec.partition(":")
    when, _, method = point.partition("_")
    target_name = {"put": "put", "writes": "put_writes"}[method]
    target = int(count)
    counts = {name: {"started": 0, "done": 0} for name in ("put", "put_writes")}
    lock = threading.Condition()

    def hook(name: str) -> None:
        original: Callable[..., Any] = getattr(IntegritySaver, name)

        @functools.wraps(original)
        def hooked(self: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:
                counts[name]["started"] += 1
                if name == target_name and when == "before" and counts[name]["started"] == target:
                    writes = counts["put_writes"]
                    lock.wait_for(lambda: writes["done"] == writes["started"] or name == "put_writes", 10)
                    os.kill(os.getpid(), signal.SIGKILL)
            result = original(self, *args, **kwargs)
            with lock:
                counts[name]["done"] += 1
                lock.notify_all()
                if name == target_name and when == "after" and counts[name]["done"] == target:
                    os.kill(os.getpid(), signal.SIGKILL)
            return result

        patch(IntegritySaver, name, hooked)

    hook("put")
    hook("put_writes")


def install(patch: Callable[[Any, str, Any], None] = setattr) -> None:
    """Install the kill hook named by the environment, if any.

    Args:
        patch: how to set an attribute (``monkeypatch.setattr`` in process, to undo it after).
    """
    spec = os.environ.get(KILL_ENV)
    if spec:
        _kill_hook(spec, patch)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with the kill hook installed."""
    install()
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
