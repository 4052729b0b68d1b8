"""What the ask, models, verify, run and resume commands do, and the command table."""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Callable
from typing import Any

from reasoning_graphs.cli._eval import cmd_eval
from reasoning_graphs.cli._graphs import GraphEntry, RunOptions, get_graph
from reasoning_graphs.cli._guard import guarded_stream
from reasoning_graphs.cli._inputs import (
    db_path,
    existing_db,
    load_input,
    read_input_file,
    read_text,
    run_options,
)
from reasoning_graphs.cli._output import dumps, err, out, progress_line
from reasoning_graphs.cli._threads import (
    cmd_evaluate,
    cmd_history,
    cmd_seal,
    cmd_show,
    cmd_threads,
    compile_graph,
    pending_interrupts,
    stored_run,
)
from reasoning_graphs.errors import InputError

__all__ = ["dispatch"]

_FAILED_STOPS = frozenset(
    {"error", "budget", "max_attempts", "no_progress", "needs_human", "step_limit", "inconclusive"}
)


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
        args.candidate if args.candidate is not None else read_text(args.candidate_file, "candidate file")
    )
    verdict = run_verifier(verifier, candidate, args.task)
    if args.json:
        out(verdict.model_dump_json(indent=2))
    else:
        out(("PASSED" if verdict.passed else "FAILED") + f" (score {verdict.score:.2f})")
        if verdict.feedback:
            out(verdict.feedback)
    return 0 if verdict.passed else 1


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
    waiting = pending_interrupts(state)
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
    payload = load_input(args, entry)
    options = run_options(args, entry)
    if args.thread is not None and not args.thread.strip():
        raise InputError("--thread must not be empty (omit it for a fresh thread id)")
    thread_id = args.thread or uuid.uuid4().hex[:12]
    with open_saver(db_path(args), integrity=True) as saver:
        config: Any = {"configurable": {"thread_id": thread_id}}
        if saver.get_tuple(config) is not None:
            raise InputError(
                f"thread {thread_id!r} already exists; resume it with 'resume --thread {thread_id}'"
            )
        config["metadata"] = {"graph": entry.name, "run_options": json.dumps(options.to_metadata())}
        compiled = compile_graph(entry, options, saver)
        _check_input_keys(compiled, entry, payload)
        running = (
            f"thread {thread_id}: running {entry.name} on {', '.join(options.roster or [options.model])}"
        )
        guarded_stream(
            _announced(running), saver, db_path(args), compiled, payload, config, entry, options, new=True
        )
        return _report(compiled, config, entry, options, args.json)


def _resume_value(args: argparse.Namespace, pending: list[Any]) -> Any:
    """Turn ``--answer``/``--answers`` into the value a paused node resumes with."""
    given: dict[str, str] = {}
    if args.answers:
        data = read_input_file(args.answers)
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

    with open_saver(existing_db(args, args.thread), integrity=True) as saver:
        entry, options, config = stored_run(saver, args.thread)
        compiled = compile_graph(entry, options, saver)
        state = compiled.get_state(config)
        pending = pending_interrupts(state)
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
            _announced(resuming), saver, db_path(args), compiled, payload, config, entry, options,
            new=False, allow_changed=args.allow_changed,
        )  # fmt: skip
        return _report(compiled, config, entry, options, args.json)


_COMMANDS = {
    "ask": cmd_ask,
    "models": cmd_models,
    "verify": cmd_verify,
    "run": cmd_run,
    "resume": cmd_resume,
    "threads": cmd_threads,
    "history": cmd_history,
    "show": cmd_show,
    "seal": cmd_seal,
    "evaluate": cmd_evaluate,
    "eval": cmd_eval,
}


def dispatch(args: argparse.Namespace) -> int:
    """Run the chosen command."""
    return _COMMANDS[args.command](args)
