"""What each CLI command does."""

from __future__ import annotations

import argparse
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reasoning_graphs._files import read_user_json, read_user_text
from reasoning_graphs.cli._eval import cmd_eval
from reasoning_graphs.cli._graphs import FLAGS, GraphEntry, RunOptions, get_graph
from reasoning_graphs.cli._guard import guarded_stream
from reasoning_graphs.cli._output import dumps, err, out, progress_line, to_jsonable
from reasoning_graphs.errors import ConfigurationError, InputError, UnknownThreadError

__all__ = ["dispatch"]

_FAILED_STOPS = frozenset(
    {"error", "budget", "max_attempts", "no_progress", "needs_human", "step_limit", "inconclusive"}
)
_MAX_INPUT_BYTES = 10 * 1024 * 1024


def _db(args: argparse.Namespace) -> str:
    return args.db or os.environ.get("REASONING_GRAPHS_DB") or ".reasoning_graphs/checkpoints.sqlite"


def _existing_db(args: argparse.Namespace, thread: str | None = None) -> str:
    """The database for a command that only reads threads: it must exist (never create it).

    A missing database is bad input (exit 2); a command naming a thread says which.
    """
    path = _db(args)
    if not Path(path).exists():
        problem = f"no checkpoint database at {path!r}; run a graph first or pass --db PATH"
        raise InputError(f"no thread {thread!r}: {problem}" if thread is not None else problem)
    return path


def _read_text(path: str, what: str) -> str:
    return read_user_text(path, what, max_bytes=_MAX_INPUT_BYTES)


def cmd_ask(args: argparse.Namespace) -> int:
    from reasoning_graphs.models import ModelSettings, resolve

    client = resolve(args.model, ModelSettings(max_tokens=args.max_tokens) if args.max_tokens else None)
    reply = client.call(args.prompt)
    if args.json:
        out(json.dumps({"answer": reply.text, "model": reply.model, "usage": reply.usage.model_dump()}))
    else:
        out(reply.text)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from reasoning_graphs.models import PROVIDERS, allow_real_models, model_status

    probes = {"openai": "openai:gpt-4o-mini", "google": "google:gemini-2.5-flash", "local": "local:smollm2"}
    rows = []
    with allow_real_models(True):
        for provider, form in PROVIDERS.items():
            if provider == "fake":
                rows.append(
                    {"provider": provider, "usable": True, "spec": form, "reason": "always (scripted file)"}
                )
                continue
            reason = model_status(probes[provider])
            if provider == "local" and reason is None:
                reason = _local_runtime_missing()
            rows.append(
                {"provider": provider, "usable": reason is None, "spec": form, "reason": reason or "ready"}
            )
    if args.json:
        out(json.dumps(rows, indent=2))
    else:
        for row in rows:
            mark = "yes" if row["usable"] else "no "
            out(f"{mark}  {row['provider']:<7} {row['spec']}\n       {row['reason']}")
    return 0


def _local_runtime_missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed: pip install 'reasoning-graphs[local]'"
    return None


def cmd_verify(args: argparse.Namespace) -> int:
    from reasoning_graphs.verifiers import from_spec, run_verifier

    verifier = from_spec(args.verifier)
    candidate = (
        args.candidate if args.candidate is not None else _read_text(args.candidate_file, "candidate file")
    )
    verdict = run_verifier(verifier, candidate, args.task)
    if args.json:
        out(verdict.model_dump_json(indent=2))
    else:
        out(("PASSED" if verdict.passed else "FAILED") + f" (score {verdict.score:.2f})")
        if verdict.feedback:
            out(verdict.feedback)
    return 0 if verdict.passed else 1


def _read_input_file(path: str) -> dict[str, Any]:
    loaded = read_user_json(path, "input file", max_bytes=_MAX_INPUT_BYTES)
    if not isinstance(loaded, dict):
        raise InputError(f"input file {path!r} must hold a JSON object, not {type(loaded).__name__}")
    return loaded


def _load_input(args: argparse.Namespace, entry: GraphEntry) -> dict[str, Any]:
    data: dict[str, Any] = _read_input_file(args.input) if args.input else {}
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
        answers = _read_input_file(args.answers)
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


def _options(args: argparse.Namespace, entry: GraphEntry) -> RunOptions:
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


def _stream(compiled: Any, payload: Any, config: dict[str, Any]) -> None:
    for chunk in compiled.stream(payload, config, stream_mode="updates", durability="sync"):
        for node, update in chunk.items():
            if node.startswith("__"):
                continue
            err(progress_line(node, update if isinstance(update, dict) else None))


def _announced(message: str) -> Callable[[Any, Any, dict[str, Any]], None]:
    """Return a ``_stream`` that first says what runs (once the thread's guard let it run)."""

    def stream(compiled: Any, payload: Any, config: dict[str, Any]) -> None:
        err(message)
        _stream(compiled, payload, config)

    return stream


def _report(compiled: Any, config: Any, entry: GraphEntry, options: RunOptions, as_json: bool) -> int:
    state = compiled.get_state(config)
    values = dict(state.values)
    graph, thread_id = entry.name, config["configurable"]["thread_id"]
    result: dict[str, Any] = {"thread_id": thread_id, "graph": graph}
    result |= {k: v for k, v in values.items() if k not in ("outputs", "access", "reads", "budget")}
    waiting = _pending_interrupts(state)
    if state.next:
        result["pending"] = list(state.next)
        if waiting:
            result["waiting_for"] = waiting
    elif entry.after is not None:
        written = entry.after(values, options)
        if written:
            result["reports"] = written
            err("wrote " + ", ".join(written))
    if as_json:
        out(dumps(result))
    else:
        out(f"thread {thread_id} ({graph}): stop_reason={values.get('stop_reason')}")
        if "passed" in values:
            out(f"passed: {values['passed']}")
        usage = values.get("usage")
        if usage is not None:
            out(
                f"usage: {usage.total.calls} calls, {usage.total.input_tokens} in / "
                f"{usage.total.output_tokens} out tokens"
            )
        out("final answer:")
        out(str(values.get("final_answer")))
        if waiting:
            out(f"waiting for a human: {json.dumps(waiting[0], ensure_ascii=False)}")
            out(f"answer with: reasoning-graphs resume --thread {thread_id} --answer ID=TEXT ...")
        elif state.next:
            pending = ", ".join(state.next)
            out(f"unfinished (next: {pending}); run: reasoning-graphs resume --thread {thread_id}")
    if waiting:
        return 0  # paused on purpose, not failed
    succeeded = (
        values.get("passed", True) is True
        and values.get("stop_reason") not in _FAILED_STOPS
        and values.get("final_answer") is not None
        and not state.next
    )
    return 0 if succeeded else 1


def _compile(entry: GraphEntry, options: RunOptions, saver: Any) -> Any:
    from pydantic import ValidationError

    try:
        graph = entry.build(options)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InputError(f"bad option for graph {entry.name!r}: {problems}") from None
    except ValueError as exc:
        raise InputError(f"bad option for graph {entry.name!r}: {exc}") from None
    return graph.compile(checkpointer=saver, name=entry.name)


def _check_input_keys(compiled: Any, entry: GraphEntry, payload: dict[str, Any]) -> None:
    """Refuse input keys the graph does not take (they would be silently ignored)."""
    try:
        allowed = set(compiled.get_input_jsonschema().get("properties", {}))
    except Exception:
        return
    unknown = sorted(set(payload) - allowed)
    if allowed and unknown:
        raise InputError(
            f"unknown input key(s) for graph {entry.name!r}: {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def cmd_run(args: argparse.Namespace) -> int:
    from reasoning_graphs.checkpoints import open_saver

    entry = get_graph(args.graph)
    payload = _load_input(args, entry)
    options = _options(args, entry)
    if args.thread is not None and not args.thread.strip():
        raise InputError("--thread must not be empty (omit it for a fresh thread id)")
    thread_id = args.thread or uuid.uuid4().hex[:12]
    with open_saver(_db(args), integrity=True) as saver:
        config: Any = {"configurable": {"thread_id": thread_id}}
        if saver.get_tuple(config) is not None:
            raise InputError(
                f"thread {thread_id!r} already exists; resume it with 'resume --thread {thread_id}'"
            )
        config["metadata"] = {"graph": entry.name, "run_options": json.dumps(options.to_metadata())}
        compiled = _compile(entry, options, saver)
        _check_input_keys(compiled, entry, payload)
        running = (
            f"thread {thread_id}: running {entry.name} on {', '.join(options.roster or [options.model])}"
        )
        guarded_stream(
            _announced(running), saver, _db(args), compiled, payload, config, entry, options, new=True
        )
        return _report(compiled, config, entry, options, args.json)


def _stored_run(saver: Any, thread_id: str) -> tuple[GraphEntry, RunOptions, dict[str, Any]]:
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


def _pending_interrupts(state: Any) -> list[Any]:
    return [i.value for task in state.tasks for i in task.interrupts]


def _resume_value(args: argparse.Namespace, pending: list[Any]) -> Any:
    """Turn ``--answer``/``--answers`` into the value a paused node resumes with."""
    given: dict[str, str] = {}
    if args.answers:
        data = _read_input_file(args.answers)
        given |= {str(k): str(v) for k, v in data.items()}
    for item in args.answer:
        key, sep, value = item.partition("=")
        given[key.strip()] = value.strip() if sep else ""
    kind = pending[0].get("kind") if isinstance(pending[0], dict) else None
    if not given:
        raise InputError(
            f"the thread is waiting for a human ({kind or 'input'}): {json.dumps(pending[0])[:400]}; "
            "resume it with --answer ID=TEXT (repeatable) or --answers FILE.json"
        )
    if kind == "approval":
        (decision, feedback), *_ = given.items()
        if decision.lower() not in ("yes", "no"):
            raise InputError(f"an approval takes --answer yes or --answer no=FEEDBACK, not {decision!r}")
        return {"approved": decision.lower() == "yes", "feedback": feedback}
    return given


def cmd_resume(args: argparse.Namespace) -> int:
    from langgraph.types import Command

    from reasoning_graphs.checkpoints import open_saver

    with open_saver(_existing_db(args, args.thread), integrity=True) as saver:
        entry, options, config = _stored_run(saver, args.thread)
        compiled = _compile(entry, options, saver)
        state = compiled.get_state(config)
        pending = _pending_interrupts(state)
        payload: Any = None
        if not state.tasks:  # not state.next: a kill between a step's writes and its checkpoint
            err(f"thread {args.thread}: already finished")
            return _report(compiled, config, entry, options, args.json)
        resuming = f"thread {args.thread}: resuming {entry.name}"
        if pending:
            payload = Command(resume=_resume_value(args, pending))
            resuming += " with the human's answers"
        elif args.answer or args.answers:
            raise InputError(f"thread {args.thread!r} is not waiting for answers")
        guarded_stream(
            _announced(resuming), saver, _db(args), compiled, payload, config, entry, options,
            new=False, allow_changed=args.allow_changed,
        )  # fmt: skip
        return _report(compiled, config, entry, options, args.json)


def cmd_threads(args: argparse.Namespace) -> int:
    from reasoning_graphs.checkpoints import list_threads, open_saver

    with open_saver(_existing_db(args), integrity=True) as saver:
        threads = list_threads(saver)
    if args.json:
        out(dumps(threads))
        return 0
    if not threads:
        out("no threads yet")
    for t in threads:
        out(f"{t.thread_id}  {t.graph or '?':<13} {t.status:<11} {t.stop_reason or '-':<13} {t.updated_at}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from reasoning_graphs.checkpoints import history, open_saver

    with open_saver(_existing_db(args, args.thread), integrity=True) as saver:
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
    with open_saver(_existing_db(args, args.thread), integrity=True) as saver:
        if args.as_role:
            shown: Any = view_thread(saver, args.thread, args.as_role, checkpoint_id=args.checkpoint)
        else:
            entry, options, config = _stored_run(saver, args.thread)
            if args.checkpoint:
                config["configurable"]["checkpoint_id"] = args.checkpoint
            state = _compile(entry, options, saver).get_state(config)
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
    with open_saver(_existing_db(args, args.thread), integrity=True) as saver:
        entry, options, run_config = _stored_run(saver, args.thread)
        values = dict(_compile(entry, options, saver).get_state(run_config).values)
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


_COMMANDS = {
    "ask": cmd_ask,
    "models": cmd_models,
    "verify": cmd_verify,
    "run": cmd_run,
    "resume": cmd_resume,
    "threads": cmd_threads,
    "history": cmd_history,
    "show": cmd_show,
    "evaluate": cmd_evaluate,
    "eval": cmd_eval,
}


def dispatch(args: argparse.Namespace) -> int:
    """Run the chosen command."""
    return _COMMANDS[args.command](args)
