"""Overhead of the Python sandbox: a trivial passing verification against a bare interpreter start.

Run from the repository root: ``python -m benchmarks.sandbox``.

Arms, measured interleaved in the same run (the order alternates each round), after a warm-up
that pays the one-off costs (isolation probe, harness compilation):

- ``sandbox``: ``PythonTests("assert f() == 1")("def f(): return 1")`` end to end: namespaces,
  privilege drop, limits, harness, tests, verdict.
- ``python -c pass``: ``subprocess.run([python, "-c", "pass"])`` with the same interpreter the
  sandbox runs.

The row's ``ratio`` is the sandbox median over the baseline median (lower is better; target
<= 2); ``paired_ratio`` is the median of per-round ratios (robust to load drifting during the
run).
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

from reasoning_graphs.verifiers import PythonTests, sandbox_isolation

ROUNDS = 40
TARGET = 2.0


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def run(rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """Measure both arms ``rounds`` times each, interleaved; return one row."""
    isolation = sandbox_isolation()
    python = isolation.interpreter
    verifier = PythonTests("assert f() == 1\n")

    def sandbox() -> None:
        verdict = verifier("def f():\n    return 1\n")
        assert verdict.passed, verdict.feedback

    def baseline() -> None:
        subprocess.run([python, "-c", "pass"], check=True, stdin=subprocess.DEVNULL)

    sandbox()
    baseline()
    sandboxed: list[float] = []
    plain: list[float] = []
    for i in range(rounds):
        arms = [(sandbox, sandboxed), (baseline, plain)]
        for call, times in arms if i % 2 == 0 else arms[::-1]:
            times.append(_timed(call))
    sandbox_median, plain_median = statistics.median(sandboxed), statistics.median(plain)
    return [
        {
            "name": "sandbox: trivial passing verification vs python -c pass",
            "ratio": sandbox_median / plain_median,
            "target": TARGET,
            "better": "lower",
            "paired_ratio": statistics.median(s / p for s, p in zip(sandboxed, plain, strict=True)),
            "sandbox_median_ms": sandbox_median * 1000,
            "baseline_median_ms": plain_median * 1000,
            "rounds": rounds,
            "interpreter": python,
            "isolation": "full" if isolation.complete else "degraded: " + "; ".join(isolation.missing),
        }
    ]


def main() -> None:
    """Print both medians and the ratio."""
    for row in run():
        verdict = "ok" if row["ratio"] <= row["target"] else "ABOVE TARGET"
        print(f"interpreter: {row['interpreter']}; isolation: {row['isolation']}")
        print(
            f"{row['name']}: {row['sandbox_median_ms']:.1f} ms vs {row['baseline_median_ms']:.1f} ms "
            f"(median of {row['rounds']} each), ratio {row['ratio']:.2f}, paired {row['paired_ratio']:.2f} "
            f"(target <= {row['target']:g}) {verdict}"
        )


if __name__ == "__main__":
    main()
