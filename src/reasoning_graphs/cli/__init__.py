"""The ``reasoning-graphs`` command.

Exit codes: 0 success; 1 the run ended without success (a failed verdict, a budget stop, an
error stop); 2 bad input; 3 internal error (a bug: please report it); 4 configuration error
(model spec, credentials, database). Errors print one line; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import os
import traceback
from collections.abc import Sequence

from reasoning_graphs.errors import CheckpointError, ConfigurationError, InputError, ReasoningGraphsError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL, EXIT_CONFIG = 0, 1, 2, 3, 4
DEFAULT_DB = ".reasoning_graphs/checkpoints.sqlite"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _db_default() -> str:
    return os.environ.get("REASONING_GRAPHS_DB") or DEFAULT_DB


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser (exposed for documentation and tests)."""
    from reasoning_graphs.checkpoints.manifest import COMPONENTS
    from reasoning_graphs.models import DEFAULT_MODEL

    parser = argparse.ArgumentParser(
        prog="reasoning-graphs",
        description="LLM reasoning patterns as LangGraph graphs: run, resume, inspect and measure them.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def db_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--db", default=None, help=f"checkpoint database (default {DEFAULT_DB} or $REASONING_GRAPHS_DB)"
        )

    ask = sub.add_parser("ask", help="one plain model call (the control every pattern is compared to)")
    ask.add_argument("prompt")
    ask.add_argument("--model", default=DEFAULT_MODEL, help=f"provider string (default {DEFAULT_MODEL})")
    ask.add_argument("--max-tokens", type=_positive_int, default=None)
    ask.add_argument("--json", action="store_true", help="print one JSON object")

    models = sub.add_parser("models", help="which providers are usable here, and why not")
    models.add_argument("--json", action="store_true")

    verify = sub.add_parser("verify", help="run a verifier on a candidate")
    verify.add_argument("--verifier", required=True, help="verifier spec, e.g. 'game24:4 9 10 13'")
    src = verify.add_mutually_exclusive_group(required=True)
    src.add_argument("--candidate", help="candidate text")
    src.add_argument("--candidate-file", help="file holding the candidate")
    verify.add_argument("--task", default="", help="task text, for verifiers that use it")
    verify.add_argument("--json", action="store_true")

    run = sub.add_parser("run", help="run a graph on a task, stored as a resumable thread")
    run.add_argument("graph", help="graph name (see 'run --help' epilog)")
    run.add_argument("--task", help="task text")
    run.add_argument("--input", help="JSON file with the graph's input object")
    run.add_argument("--model", default=DEFAULT_MODEL, help=f"provider string (default {DEFAULT_MODEL})")
    run.add_argument("--roster", help="comma-separated provider strings, rotated or fanned out")
    run.add_argument(
        "--verifier", help="verifier spec (see 'verify'); mbpp:ID / humaneval:ID also supply the task"
    )
    run.add_argument("--thread", help="thread id for the new run (default: a fresh id)")
    run.add_argument("--max-calls", type=_positive_int, help="call budget for the run")
    run.add_argument("--max-tokens", type=_positive_int, help="token budget for the run")
    from reasoning_graphs.cli._graphs import FLAGS, GRAPHS

    run.epilog = "graphs: " + "; ".join(f"{g.name}: {g.summary}" for g in GRAPHS.values())
    for name, flag in FLAGS.items():
        if flag.kind is bool:
            run.add_argument(flag.option, dest=name, action="store_true", default=None, help=flag.help)
        else:
            run.add_argument(
                flag.option, dest=name, type=_positive_int if flag.kind is int else str, help=flag.help
            )
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    db_arg(run)

    resume = sub.add_parser("resume", help="finish a stored thread that crashed or waits for a human")
    resume.add_argument("--thread", required=True)
    resume.add_argument(
        "--answer", action="append", default=[], metavar="ID=TEXT",
        help="answer a pending question (repeatable); for an approval: yes, or no=FEEDBACK",
    )  # fmt: skip
    resume.add_argument("--answers", help="JSON file mapping question ids (or texts) to answers")
    resume.add_argument(
        "--allow-changed", action="append", default=[], choices=COMPONENTS, metavar="COMPONENT",
        help="accept a deliberate change since the thread started (repeatable): " + ", ".join(COMPONENTS),
    )  # fmt: skip
    resume.add_argument("--json", action="store_true")
    db_arg(resume)

    threads = sub.add_parser("threads", help="list stored threads")
    threads.add_argument("--json", action="store_true")
    db_arg(threads)

    history = sub.add_parser("history", help="list a thread's checkpoints")
    history.add_argument("--thread", required=True)
    history.add_argument("--json", action="store_true")
    db_arg(history)

    show = sub.add_parser("show", help="show a thread's state, optionally as one role sees it")
    show.add_argument("--thread", required=True)
    show.add_argument("--as", dest="as_role", help="show only what this role may read")
    show.add_argument("--checkpoint", help="an earlier checkpoint id (see 'history')")
    show.add_argument("--json", action="store_true")
    db_arg(show)

    seal = sub.add_parser(
        "seal", help="accept a thread that failed its integrity check, as it is now (trust it first)"
    )
    seal.add_argument("--thread", required=True)
    db_arg(seal)

    evaluate = sub.add_parser("evaluate", help="score a finished run against a rubric with evaluator agents")
    evaluate.add_argument("--thread", required=True, help="the finished run to evaluate")
    evaluate.add_argument("--config", help="evaluation JSON (agents, includeTranscript, budget)")
    evaluate.add_argument("--output", help="write here: .json for per-agent JSON, else a Markdown table")
    evaluate.add_argument("--model", default=DEFAULT_MODEL, help="evaluators' default model")
    evaluate.add_argument("--roster", help="comma-separated provider strings for the evaluators")
    db_arg(evaluate)

    from reasoning_graphs.cli._eval import add_eval_parser

    add_eval_parser(sub)
    return parser


def _exit_code(exc: ReasoningGraphsError) -> int:
    if isinstance(exc, ConfigurationError | CheckpointError):
        return EXIT_CONFIG
    if isinstance(exc, InputError):
        return EXIT_INPUT
    return EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    from reasoning_graphs.cli._commands import dispatch
    from reasoning_graphs.cli._output import err

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return dispatch(args)
    except ReasoningGraphsError as exc:
        if args.debug:
            traceback.print_exc()
        err(f"error: {exc}")
        return _exit_code(exc)
    except KeyboardInterrupt:
        err("interrupted; resume the thread with 'reasoning-graphs resume --thread ID'")
        return 130
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        err(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return EXIT_INTERNAL
