"""The real CLI with the proposed reliability wiring applied in a scratch copy.

``python -m tests.reliability.wired_cli ARGS`` (from the repository root) behaves like
``python -m reasoning_graphs.cli ARGS`` except that:

- every command opens the database with ``open_saver(db, integrity=True)`` (rows are sealed and
  a thread is verified before anything of it is read);
- every ``_stream`` call (``run`` and ``resume``) runs as :func:`guarded_stream` below: under
  the thread's lease, after its seals and run manifest checked out; ``resume`` takes
  ``--allow-changed COMPONENT`` (repeatable).

:func:`guarded_stream` and :func:`access_lists` are the code proposed for
``reasoning_graphs/cli/_commands.py`` (see ``docs/reliability.md``, "CLI wiring"); there they
take ``entry``, ``options``, ``db``, ``new`` and the flag from ``cmd_run``/``cmd_resume``, here
they are recovered from the run config's metadata, so the rest of the CLI stays the real one.
Once the CLI has the wiring itself (its ``resume`` accepts ``--allow-changed``), this module
only adds the kill hooks and calls the real ``main``.

Kill hooks, for crash tests: ``RG_TEST_KILL=before_put:N`` (or ``after_put:N``,
``before_writes:N``, ``after_writes:N``) makes the process SIGKILL itself just before (after)
its N-th checkpoint write (``put``) or task-write batch (``put_writes``).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any

import reasoning_graphs.checkpoints as checkpoints
from reasoning_graphs import cli
from reasoning_graphs.checkpoints.integrity import IntegritySaver
from reasoning_graphs.checkpoints.manifest import COMPONENTS, build_manifest, guard_thread
from reasoning_graphs.cli import _commands as commands
from reasoning_graphs.cli._graphs import GraphEntry, RunOptions, get_graph

KILL_ENV = "RG_TEST_KILL"
_GRAPH_MODULES = {"tot": "tree_of_thoughts"}

# --- the proposed wiring ------------------------------------------------------------------------


def access_lists(entry: GraphEntry) -> Any:
    """The graph module's default access lists (None for graphs that build theirs from settings)."""
    module = importlib.import_module(f"reasoning_graphs.graphs.{_GRAPH_MODULES.get(entry.name, entry.name)}")
    access = getattr(module, "ACCESS", None)
    return access if isinstance(access, dict) else None


def guarded_stream(
    saver: Any,
    db: str,
    compiled: Any,
    payload: Any,
    config: dict[str, Any],
    entry: GraphEntry,
    options: RunOptions,
    *,
    new: bool,
    allow_changed: Collection[str] = (),
) -> None:
    """Stream the run under the thread's lease, after its seals and run manifest check out."""
    thread_id = config["configurable"]["thread_id"]
    # Resuming, the input's verifier is read from the state (the saver verified the thread first).
    source = payload if new else compiled.get_state(config).values
    verifier = source.get("verifier")
    manifest = build_manifest(
        compiled,
        name=entry.name,
        inputs=payload if new else None,
        models=options.roster or [options.model],
        verifier=verifier if isinstance(verifier, str) else None,
        access=access_lists(entry),
        settings=options.flags,
    )
    allowed = frozenset(allow_changed)
    with guard_thread(saver, db, thread_id, manifest, new=new, allow_changes=allowed):
        _real_stream(compiled, payload, config)


def add_allow_changed(resume: argparse.ArgumentParser) -> None:
    """Add ``--allow-changed COMPONENT`` to the ``resume`` parser."""
    resume.add_argument(
        "--allow-changed",
        action="append",
        default=[],
        choices=COMPONENTS,
        metavar="COMPONENT",
        help="accept a changed component of the thread's run manifest (repeatable): " + ", ".join(COMPONENTS),
    )


# --- harness ------------------------------------------------------------------------------------

_real_stream = commands._stream
_allow_changed: list[str] = []


def _stream(compiled: Any, payload: Any, config: dict[str, Any]) -> None:
    """Stand-in for ``_commands._stream``: recover what ``cmd_run``/``cmd_resume`` would pass."""
    saver = compiled.checkpointer
    meta = config["metadata"]
    entry = get_graph(str(meta["graph"]))
    options = RunOptions.from_metadata(json.loads(meta.get("run_options") or "{}"))
    with saver.cursor(transaction=False) as cur:
        thread_id = config["configurable"]["thread_id"]
        stored = cur.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)).fetchone()
    new = stored[0] == 0
    guarded_stream(
        saver,
        saver.database,
        compiled,
        payload,
        config,
        entry,
        options,
        new=new,
        allow_changed=_allow_changed,
    )


def _dispatch(args: argparse.Namespace) -> int:
    _allow_changed[:] = getattr(args, "allow_changed", None) or []
    return _real_dispatch(args)


_real_dispatch = commands.dispatch


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise LookupError(name)


def _already_wired() -> bool:
    resume = _subparser(cli.build_parser(), "resume")
    return any("--allow-changed" in a.option_strings for a in resume._actions)


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
    """Apply the wiring to the imported CLI (unless it has it), plus a kill hook from the environment.

    Args:
        patch: how to set an attribute (``monkeypatch.setattr`` in process, to undo it after).
    """
    if not _already_wired():
        patch(checkpoints, "open_saver", functools.partial(checkpoints.open_saver, integrity=True))
        patch(commands, "_stream", _stream)
        patch(commands, "dispatch", _dispatch)
        original = cli.build_parser

        def build_parser() -> argparse.ArgumentParser:
            parser = original()
            add_allow_changed(_subparser(parser, "resume"))
            return parser

        patch(cli, "build_parser", build_parser)
    spec = os.environ.get(KILL_ENV)
    if spec:
        _kill_hook(spec, patch)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the wired CLI."""
    install()
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
