"""How command-line arguments become a graph's input, its run options and the database path."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from reasoning_graphs._files import read_user_json, read_user_text
from reasoning_graphs.cli._graphs import FLAGS, GraphEntry, RunOptions
from reasoning_graphs.errors import ConfigurationError, InputError

__all__ = ["db_path", "existing_db", "load_input", "read_input_file", "read_text", "run_options"]

_MAX_INPUT_BYTES = 10 * 1024 * 1024


def db_path(args: argparse.Namespace) -> str:
    """The checkpoint database: ``--db``, else ``$REASONING_GRAPHS_DB``, else the default."""
    return args.db or os.environ.get("REASONING_GRAPHS_DB") or ".reasoning_graphs/checkpoints.sqlite"


def existing_db(args: argparse.Namespace, thread: str | None = None) -> str:
    """The database for a command that only reads threads: it must exist (never create it).

    A missing database is bad input (exit 2); a command naming a thread says which.
    """
    path = db_path(args)
    if not Path(path).exists():
        problem = f"no checkpoint database at {path!r}; run a graph first or pass --db PATH"
        raise InputError(f"no thread {thread!r}: {problem}" if thread is not None else problem)
    return path


def read_text(path: str, what: str) -> str:
    """A user's text file (at most 10 MiB, UTF-8); anything else is bad input."""
    return read_user_text(path, what, max_bytes=_MAX_INPUT_BYTES)


def read_input_file(path: str) -> dict[str, Any]:
    """A user's JSON file that must hold an object (``--input``, ``--answers``)."""
    loaded = read_user_json(path, "input file", max_bytes=_MAX_INPUT_BYTES)
    if not isinstance(loaded, dict):
        raise InputError(f"input file {path!r} must hold a JSON object, not {type(loaded).__name__}")
    return loaded


def load_input(args: argparse.Namespace, entry: GraphEntry) -> dict[str, Any]:
    """The graph's input from ``--input`` and the flags that override it, checked before any run."""
    data: dict[str, Any] = read_input_file(args.input) if args.input else {}
    for key in ("task", "verifier", "max_calls", "max_tokens"):
        value = getattr(args, key, None)
        if value is not None:
            data[key] = value
    if isinstance(data.get("verifier"), str):
        from reasoning_graphs.verifiers import from_spec

        verifier = from_spec(data["verifier"])
        if not data.get("task"):
            data["task"] = _dataset_task(verifier) or data.get("task")
    if getattr(args, "answers", None):
        answers = read_input_file(args.answers)
        if not all(isinstance(v, str) for v in answers.values()):
            raise InputError(f"answers file {args.answers!r} must map questions to answer strings")
        data["answers"] = answers
    task = data.get("task")
    if entry.needs_task and (not isinstance(task, str) or not task.strip()):
        raise InputError(
            "missing task: pass --task TEXT, an --input FILE.json with a 'task' string, "
            "or a dataset verifier such as --verifier mbpp:2"
        )
    for key in ("max_calls", "max_tokens"):
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], int) or data[key] < 1):
            raise InputError(f"input field {key!r} must be a positive integer, got {data[key]!r}")
    return data


def _dataset_task(verifier: object) -> str | None:
    """Return the prompt of the dataset item a verifier checks (mbpp:ID, humaneval:ID)."""
    from reasoning_graphs.verifiers import HumanEvalTests, MbppTests, load_humaneval, load_mbpp

    if isinstance(verifier, MbppTests):
        wanted, tasks = f"mbpp/{verifier.task_id}", load_mbpp(verifier.path)
    elif isinstance(verifier, HumanEvalTests):
        wanted, tasks = verifier.task_id, load_humaneval(verifier.path)
    else:
        return None
    return next((t.prompt for t in tasks if t.id == wanted), None)


def _absolute_refs(spec: str) -> str:
    """Make the ``.py`` paths in ``MODULE:NAME[,...]`` absolute, so resume finds the same tools."""
    refs = []
    for ref in spec.split(","):
        module, sep, name = ref.strip().rpartition(":")
        refs.append(f"{os.path.abspath(module)}:{name}" if sep and module.endswith(".py") else ref.strip())
    return ",".join(refs)


def run_options(args: argparse.Namespace, entry: GraphEntry) -> RunOptions:
    """The run's model, roster and graph flags; model specs are resolved here, before anything is stored."""
    from reasoning_graphs.models import resolve

    roster = [s.strip() for s in args.roster.split(",")] if args.roster else None
    if roster is not None and not all(roster):
        raise ConfigurationError(f"--roster {args.roster!r} has an empty entry")
    for spec in roster or [args.model]:
        resolve(spec)  # a bad spec or missing credentials fail here, before anything is stored
    flags = {name: getattr(args, name) for name in FLAGS if getattr(args, name, None) is not None}
    stray = sorted(set(flags) - entry.flags)
    if stray:
        raise InputError(f"{FLAGS[stray[0]].option} does not apply to graph {entry.name!r}")
    for key in ("config", "out"):
        if key in flags:  # stored with the thread: make resume independent of the directory
            flags[key] = os.path.abspath(flags[key])
    if "tools" in flags:
        flags["tools"] = _absolute_refs(flags["tools"])
    flags.pop("answers", None)  # input, not a build option
    return RunOptions(model=args.model, roster=roster, flags=flags)
