"""Run every benchmark in one process and print one table of ratios measured side by side.

Run from the repository root: ``python -m benchmarks`` (``--only overhead,checkpoint_growth``,
``--skip local_model``, ``--json`` for the raw rows).

Each benchmark module exposes ``run() -> list[dict]``; a row has at least ``name``, ``ratio``
and ``target``, and says with ``better`` whether a lower or a higher ratio is better (lower
unless the module's default below says otherwise). A benchmark that fails to import or run is a
row marked ``error`` with the reason; the others still run. The exit code is 0 when every row met
its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time
import traceback
from typing import Any

BENCHMARKS = ("sandbox", "local_model", "fanout", "overhead", "checkpoint_growth", "integrity")
"""Every benchmark module, in run order."""

HIGHER_IS_BETTER = frozenset({"local_model"})
"""Modules whose rows are better when higher (throughput ratios) unless a row says otherwise."""


def collect(names: list[str]) -> list[dict[str, Any]]:
    """Run the named benchmarks; return their rows (plus error rows), each tagged with its module."""
    rows: list[dict[str, Any]] = []
    for name in names:
        start = time.perf_counter()
        sys.stderr.write(f"running benchmarks.{name} ...\n")
        sys.stderr.flush()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            produced = module.run()
        except Exception as exc:
            rows.append({"module": name, "name": f"{name}: failed", "error": f"{type(exc).__name__}: {exc}"})
            if os.environ.get("BENCHMARKS_DEBUG"):
                traceback.print_exc()
            continue
        seconds = time.perf_counter() - start
        for row in produced:
            better = row.get("better") or ("higher" if name in HIGHER_IS_BETTER else "lower")
            rows.append({"module": name, "seconds": seconds, **row, "better": better})
    return rows


def verdict(row: dict[str, Any]) -> str:
    """Return ``ok``, ``MISSED`` or ``error`` for a row."""
    if "error" in row or not isinstance(row.get("ratio"), int | float) or math.isnan(row["ratio"]):
        return "error"
    met = row["ratio"] >= row["target"] if row["better"] == "higher" else row["ratio"] <= row["target"]
    return "ok" if met else "MISSED"


def table(rows: list[dict[str, Any]]) -> str:
    """Render the rows as one aligned text table."""
    lines = [
        f"{'ratio':>8}  {'target':>9}  {'verdict':<7}  benchmark",
        f"{'-' * 8}  {'-' * 9}  {'-' * 7}  {'-' * 60}",
    ]
    for row in rows:
        state = verdict(row)
        if state == "error":
            lines.append(f"{'-':>8}  {'-':>9}  {'error':<7}  {row['name']}: {row.get('error', 'no ratio')}")
            continue
        sign = ">=" if row["better"] == "higher" else "<="
        lines.append(
            f"{row['ratio']:>8.3f}  {sign + ' ' + format(row['target'], 'g'):>9}  {state:<7}  {row['name']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run the benchmarks and print the table; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    parser.add_argument("--skip", help="comma-separated benchmarks to leave out")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",")] if args.only else list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmarks {unknown}; known: {', '.join(BENCHMARKS)}")
    skipped = {n.strip() for n in args.skip.split(",")} if args.skip else set()
    rows = collect([n for n in names if n not in skipped])
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        load = os.getloadavg()[0]
        print(f"\nbenchmarks measured in one run (load average {load:.1f} on {os.cpu_count()} CPUs)\n")
        print(table(rows))
    return 0 if all(verdict(r) == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
