"""One Markdown table over several evaluation runs, read from their receipts.

``python -m reasoning_graphs.evals.table docs/results`` prints the README's "Results" table: one
row per receipt (pattern, dataset, items, each arm's quality at its mean calls, the paired
comparisons), then the command that reproduces each row. Nothing is recomputed by hand: every
number comes from the receipt's summary, which the harness wrote from its per-item records.

Example:
    >>> print(results_table(["docs/results/repair-mbpp/receipt.json"]))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from reasoning_graphs.errors import InputError
from reasoning_graphs.evals.config import EvalConfig
from reasoning_graphs.evals.receipt import read_receipt
from reasoning_graphs.evals.report import command_line
from reasoning_graphs.evals.summary import ArmSummary, EvalSummary

__all__ = ["find_receipts", "main", "results_table"]

_ARMS = ("graph", "single", "best_of_n", "self_consistency")
_HEADER = (
    "| run | items | graph | single | best-of-N | self-consistency | paired (graph vs arm) |\n"
    "|---|---:|---|---|---|---|---|"
)


def find_receipts(paths: Sequence[str | Path]) -> list[Path]:
    """Return the receipts named by ``paths``: files, or folders searched one level deep, sorted.

    Raises:
        InputError: a path does not exist, or nothing holds a receipt.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.glob("*/receipt.json") if p.is_file())
            found += [path / "receipt.json"] if (path / "receipt.json").is_file() else []
        elif path.exists():
            found.append(path)
        else:
            raise InputError(f"{str(raw)!r} does not exist; pass receipt files or folders of runs")
    if not found:
        raise InputError(f"no receipt.json under {', '.join(map(str, paths))}")
    return sorted(set(found))


def _cell(arm: ArmSummary | None) -> str:
    if arm is None:
        return "—"
    if arm.pass_rate is not None:
        quality = f"{100 * arm.pass_rate:.0f}%"
    elif arm.preference is not None:
        quality = f"pref {arm.preference:+.2f}"
    else:
        quality = "n/a"
    return f"{quality} @ {arm.mean_calls:.1f} calls"


def _paired(summary: EvalSummary) -> str:
    parts = []
    for c in summary.comparisons:
        s = c.stats
        interval = f"[{s.low:+.2f}, {s.high:+.2f}]"
        parts.append(f"vs {c.other}: {s.wins}W/{s.ties}T/{s.losses}L, diff {s.mean_diff:+.2f} {interval}")
    return "; ".join(parts) or "—"


def _row(receipt_path: Path, relative_to: Path) -> tuple[str, str]:
    receipt = read_receipt(receipt_path)
    try:
        summary = EvalSummary.model_validate(receipt["summary"])
        config = EvalConfig.model_validate(receipt["config"])
    except (KeyError, ValueError) as exc:
        raise InputError(f"receipt {str(receipt_path)!r} has no valid summary: {exc}") from None
    arms = {a.arm: a for a in summary.arms}
    report = Path(os.path.relpath(receipt_path.parent / "report.md", relative_to)).as_posix()
    name = f"[{summary.pattern} on {Path(summary.dataset).name}]({report})"
    cells = " | ".join(_cell(arms.get(arm)) for arm in _ARMS)
    row = f"| {name} | {summary.items} | {cells} | {_paired(summary)} |"
    return row, f"- {summary.pattern}: `{command_line(config)}`"


def results_table(receipts: Sequence[str | Path], *, relative_to: str | Path = ".") -> str:
    """Return the Markdown table of the runs, then the command that reproduces each.

    Args:
        receipts: receipt files, or folders holding one run per subfolder.
        relative_to: the folder the Markdown file that shows the table is in (for its links).

    Raises:
        InputError: a receipt is missing, unreadable, or has no summary.
    """
    rows = [_row(path, Path(relative_to)) for path in find_receipts(receipts)]
    lines = [_HEADER, *(row for row, _ in rows), "", "Reproduce each row (from the repository root):", ""]
    lines += [command for _, command in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table for the receipts or run folders given; exit 2 on bad input."""
    parser = argparse.ArgumentParser(
        prog="python -m reasoning_graphs.evals.table", description=__doc__.splitlines()[0]
    )
    parser.add_argument("paths", nargs="+", help="receipt.json files or folders of runs")
    parser.add_argument("--relative-to", default=".", help="folder the links are relative to")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(results_table(args.paths, relative_to=args.relative_to) + "\n")
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
