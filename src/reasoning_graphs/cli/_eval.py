"""The ``eval`` command: run the evaluation harness from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from reasoning_graphs.errors import ConfigurationError, InputError

__all__ = ["add_eval_parser", "cmd_eval"]

_ARMS = ("graph", "single", "best_of_n", "self_consistency")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _arms(text: str) -> tuple[str, ...]:
    arms = tuple(a.strip() for a in text.split(",") if a.strip())
    unknown = [a for a in arms if a not in _ARMS]
    if unknown or not arms:
        raise argparse.ArgumentTypeError(f"arms must be a comma-separated subset of {','.join(_ARMS)}")
    return arms


def _setting(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` subcommand to the CLI's subparsers; returns its parser."""
    from reasoning_graphs.models import DEFAULT_MODEL

    p: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="does a pattern beat a plain call at matched cost? (evaluation harness)",
        description="Run a pattern's graph against a prompt-matched single call, best-of-N and "
        "self-consistency at matched calls on a dataset file; write receipt.json, report.md and "
        "plot.png. Re-running the same command resumes an interrupted evaluation.",
    )
    p.add_argument("--pattern", help="repair, self_refine, tot, reflection, dialectic or debate")
    p.add_argument("--dataset", help="data file: HumanEval, MBPP, GSM8K, MT-Bench/Vicuna, game24.csv")
    p.add_argument("--from-receipt", help="re-run the configuration stored in a receipt.json")
    p.add_argument("--n", type=_positive_int, help="items to run (default: all)")
    p.add_argument("--shuffle", action="store_true", default=None, help="pick items in seeded random order")
    p.add_argument(
        "--arms", type=_arms, help=f"comma-separated arms (default: all that apply): {','.join(_ARMS)}"
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument("--model", help=f"provider string for every arm (default {DEFAULT_MODEL})")
    who.add_argument("--roster", help="comma-separated provider strings the graph rotates or fans out over")
    p.add_argument("--judge-model", help="the blind judge's model for open-ended items (default: --model)")
    p.add_argument(
        "--samples", type=_positive_int, help="N of best-of-N and self-consistency (default: matched)"
    )
    p.add_argument("--temperature", type=float, help="temperature of the graph and the single call")
    p.add_argument("--sample-temperature", type=float, help="temperature of the N samples (default 0.7)")
    p.add_argument("--max-tokens", type=_positive_int, help="most output tokens per call")
    p.add_argument("--max-calls", type=_positive_int, help="call budget of each graph run")
    p.add_argument(
        "--set",
        dest="settings",
        type=_setting,
        action="append",
        metavar="KEY=VALUE",
        help="pattern setting (JSON value)",
    )
    p.add_argument("--seed", type=int, help="seed of models, shuffle and bootstrap (default 0)")
    p.add_argument("--concurrency", type=_positive_int, help="items run at once (default 1)")
    p.add_argument("--out", help="output folder (default .reasoning_graphs/evals/<pattern>-<data>-<hash>)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def _roster(text: str) -> tuple[str, ...]:
    entries = tuple(s.strip() for s in text.split(","))
    if not all(entries):
        raise ConfigurationError(f"--roster {text!r} has an empty entry")
    return entries


def _config(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from reasoning_graphs.evals import EvalConfig, read_receipt

    base: dict[str, Any] = dict(read_receipt(args.from_receipt)["config"]) if args.from_receipt else {}
    given = {
        "pattern": args.pattern,
        "dataset": args.dataset,
        "n": args.n,
        "shuffle": args.shuffle,
        "arms": args.arms,
        "model": args.model,
        "roster": _roster(args.roster) if args.roster is not None else None,
        "judge_model": args.judge_model,
        "samples": args.samples,
        "temperature": args.temperature,
        "sample_temperature": args.sample_temperature,
        "max_tokens": args.max_tokens,
        "max_calls": args.max_calls,
        "settings": dict(args.settings) if args.settings else None,
        "seed": args.seed,
        "concurrency": args.concurrency,
        "out": args.out,
    }
    if args.model:
        base.pop("roster", None)
    base |= {k: v for k, v in given.items() if v is not None}
    missing = [
        flag for flag, key in (("--pattern", "pattern"), ("--dataset", "dataset")) if not base.get(key)
    ]
    if missing:
        raise InputError(f"eval needs {' and '.join(missing)} (or --from-receipt PATH)")
    try:
        return EvalConfig.model_validate(base)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InputError(f"bad eval configuration: {problems}") from None


def cmd_eval(args: argparse.Namespace) -> int:
    """Run the evaluation the flags describe; print where the report is and the arms' numbers."""
    from reasoning_graphs.evals import run_eval

    config = _config(args)
    try:
        result = run_eval(config, stream=None if args.quiet else sys.stderr)
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted; run the same command again to resume (finished items are kept)\n")
        return 130
    if args.json:
        payload = {
            "out": str(result.out_dir),
            "receipt": str(result.receipt),
            "report": str(result.report),
            "plot": str(result.plot) if result.plot else None,
            "summary": result.summary.model_dump(mode="json"),
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return 0
    lines = [f"{'arm':<18} {'quality':>8} {'any-of-k':>8} {'calls':>6} {'tokens':>8} {'no answer':>9}"]
    for arm in result.summary.arms:
        quality = "n/a" if arm.quality is None else f"{100 * arm.quality:.1f}%"
        anyk = "n/a" if arm.any_of_k is None else f"{100 * arm.any_of_k:.1f}%"
        cost = f"{arm.mean_calls:>6.2f} {arm.mean_tokens:>8.0f}"
        lines.append(f"{arm.arm:<18} {quality:>8} {anyk:>8} {cost} {arm.errors:>9}")
    for c in result.summary.comparisons:
        s = c.stats
        lines.append(
            f"graph vs {c.other}: {s.wins} wins, {s.ties} ties, {s.losses} losses"
            + (f", {s.judge_failures} judge failures" if c.basis == "judge" else "")
            + f"; mean difference {s.mean_diff:+.3f}, 95% interval [{s.low:+.3f}, {s.high:+.3f}]"
        )
    lines += [f"report:  {result.report}", f"receipt: {result.receipt}"]
    if result.plot:
        lines.append(f"plot:    {result.plot}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
