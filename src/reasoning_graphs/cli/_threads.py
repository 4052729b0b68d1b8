"""Rebuild a stored thread's graph, and the commands that read threads (threads, history, show, evaluate)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from reasoning_graphs.cli._graphs import GraphEntry, RunOptions, get_graph
from reasoning_graphs.cli._inputs import existing_db
from reasoning_graphs.cli._output import dumps, err, out, to_jsonable
from reasoning_graphs.errors import InputError, UnknownThreadError

__all__ = [
    "cmd_evaluate",
    "cmd_history",
    "cmd_seal",
    "cmd_show",
    "cmd_threads",
    "compile_graph",
    "pending_interrupts",
    "stored_run",
]


def compile_graph(entry: GraphEntry, options: RunOptions, saver: Any) -> Any:
    """Build and compile a CLI graph on ``saver``; a bad option is bad input (exit 2)."""
    from pydantic import ValidationError

    try:
        graph = entry.build(options)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InputError(f"bad option for graph {entry.name!r}: {problems}") from None
    except ValueError as exc:
        raise InputError(f"bad option for graph {entry.name!r}: {exc}") from None
    return graph.compile(checkpointer=saver, name=entry.name)


def stored_run(saver: Any, thread_id: str) -> tuple[GraphEntry, RunOptions, dict[str, Any]]:
    """Return a stored thread's graph, the options it ran with, and the config to continue it."""
    config: Any = {"configurable": {"thread_id": thread_id}}
    stored = saver.get_tuple(config)
    if stored is None:
        raise UnknownThreadError(
            f"no thread {thread_id!r} in this database; list them with 'reasoning-graphs threads'"
        )
    meta = stored.metadata or {}
    entry = get_graph(str(meta.get("graph")))
    try:
        options = RunOptions.from_metadata(json.loads(meta.get("run_options") or "{}"))
    except json.JSONDecodeError:
        raise InputError(f"thread {thread_id!r} has unreadable run options") from None
    config["metadata"] = {"graph": entry.name, "run_options": meta.get("run_options", "{}")}
    return entry, options, config


def pending_interrupts(state: Any) -> list[Any]:
    """Return the values of the interrupts a paused thread waits on."""
    return [i.value for task in state.tasks for i in task.interrupts]


def cmd_threads(args: argparse.Namespace) -> int:
    """List every thread; a tampered one is listed too, and named on stderr (exit 4)."""
    from reasoning_graphs.checkpoints import list_threads, open_saver

    with open_saver(existing_db(args), integrity=True) as saver:
        threads = list_threads(saver)
    if args.json:
        out(dumps(threads))
    else:
        for t in threads:
            stop = t.stop_reason or "-"
            out(f"{t.thread_id}  {t.graph or '?':<13} {t.status:<11} {stop:<13} {t.updated_at}")
        if not threads:
            out("no threads yet")
    tampered = [t for t in threads if t.status == "tampered"]
    for t in tampered:
        err(f"error: {t.error}")
    return 4 if tampered else 0


def cmd_seal(args: argparse.Namespace) -> int:
    """Accept a thread that failed its integrity check as it is now (it must not be running)."""
    from reasoning_graphs.checkpoints import open_saver
    from reasoning_graphs.checkpoints.integrity import IntegrityError, IntegritySaver
    from reasoning_graphs.checkpoints.lease import thread_lease
    from reasoning_graphs.checkpoints.manifest import stored_manifest

    path = existing_db(args, args.thread)
    with open_saver(path, integrity=True) as saver:
        if not isinstance(saver, IntegritySaver):  # open_saver(integrity=True) always returns one
            raise TypeError(f"expected a sealing saver, got {type(saver).__name__}")
        if args.thread not in saver.thread_ids():
            raise UnknownThreadError(
                f"no thread {args.thread!r} in this database; list them with 'reasoning-graphs threads'"
            )
        with thread_lease(path, args.thread):
            try:
                rows = saver.verify_thread(args.thread)
                stored_manifest(saver, args.thread)
            except IntegrityError as exc:
                problems = exc.problems
            else:
                out(f"thread {args.thread!r} is intact ({rows} rows match their seals); nothing changed")
                return 0
            rows = saver.seal_thread(args.thread)
    err(f"thread {args.thread!r} had: " + "; ".join(problems))
    out(f"sealed thread {args.thread!r} as it is now ({rows} rows); it will be read and resumed as stored")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from reasoning_graphs.checkpoints import history, open_saver

    with open_saver(existing_db(args, args.thread), integrity=True) as saver:
        items = history(saver, args.thread)
    if args.json:
        out(dumps(items))
        return 0
    for item in items:
        data = to_jsonable(item)
        out("  ".join(f"{k}={v}" for k, v in data.items()))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from reasoning_graphs.checkpoints import open_saver, view_thread

    if args.checkpoint is not None and not args.checkpoint.strip():
        raise InputError("--checkpoint must not be empty (see 'history' for the checkpoint ids)")
    with open_saver(existing_db(args, args.thread), integrity=True) as saver:
        if args.as_role:
            shown: Any = view_thread(saver, args.thread, args.as_role, checkpoint_id=args.checkpoint)
        else:
            entry, options, config = stored_run(saver, args.thread)
            if args.checkpoint:
                config["configurable"]["checkpoint_id"] = args.checkpoint
            state = compile_graph(entry, options, saver).get_state(config)
            if not state.values:
                raise InputError(f"thread {args.thread!r} has no checkpoint {args.checkpoint!r}")
            shown = {"thread_id": args.thread, "graph": entry.name, "next": list(state.next), **state.values}
    if args.json:
        out(dumps(shown))
    else:
        from reasoning_graphs.cli._show import render

        out(render(to_jsonable(shown)))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from reasoning_graphs.checkpoints import open_saver
    from reasoning_graphs.graphs import (
        DebateConfig,
        EvaluationConfig,
        build_evaluation_graph,
        evaluation_input,
        evaluation_to_json,
        evaluation_to_markdown,
        render_transcript,
    )

    if args.output and Path(args.output).is_dir():
        raise InputError(f"--output {args.output!r} is a directory; name a file (.md or .json)")
    config = EvaluationConfig.from_file(args.config) if args.config else EvaluationConfig()
    with open_saver(existing_db(args, args.thread), integrity=True) as saver:
        entry, options, run_config = stored_run(saver, args.thread)
        values = dict(compile_graph(entry, options, saver).get_state(run_config).values)
    transcript = render_transcript(values) if isinstance(values.get("config"), DebateConfig) else None
    payload = evaluation_input(values, transcript=transcript)
    roster = [s.strip() for s in args.roster.split(",")] if args.roster else None
    graph = build_evaluation_graph(config=config, model=args.model, roster=roster).compile(name="evaluation")
    result = dict(graph.invoke(payload))
    as_json = bool(args.output and args.output.endswith(".json"))
    text = json.dumps(evaluation_to_json(result), indent=2) if as_json else evaluation_to_markdown(result)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        err(f"wrote {args.output}")
    else:
        out(text)
    return 0 if result.get("stop_reason") == "completed" else 1
