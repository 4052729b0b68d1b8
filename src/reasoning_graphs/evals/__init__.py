"""The evaluation harness: does a pattern beat a plain call on your task, and at what cost?

:func:`run_eval` runs a pattern's graph and its controls on a dataset file (HumanEval, MBPP,
GSM8K, Game of 24, MT-Bench/Vicuna questions; the format is detected):

- ``graph``: the pattern's graph;
- ``single``: one plain call, prompt-matched to the graph's first generation;
- ``best_of_n``: N samples at matched calls (N = the graph's mean calls per item), the first
  that passes the verifier returned, only for patterns whose graph also uses the verifier;
- ``self_consistency``: N samples, the majority answer returned (short answers only).

It reports pass rates of the returned answers (and any-of-k), calls, tokens, failures and wall
time, paired win/tie/loss with a seeded bootstrap interval, and for open-ended questions a blind
judge in both orders (disagreement is a tie, judge failures are counted). Every item is a
resumable thread in a SQLite file; each run writes ``receipt.json`` before it summarizes, then
``report.md`` and ``plot.png`` (cost against quality, with the frontier).

Example:
    >>> from reasoning_graphs.evals import EvalConfig, run_eval
    >>> config = EvalConfig(pattern="repair", dataset="mbpp_sanitized.jsonl", n=10)
    >>> result = run_eval(config)  # doctest: +SKIP
    >>> print(result.report.read_text())  # doctest: +SKIP
"""

from __future__ import annotations

from reasoning_graphs.evals.arm_graphs import Sample, build_judge_graph, build_sampling_graph
from reasoning_graphs.evals.config import ARMS, Arm, EvalConfig
from reasoning_graphs.evals.datasets import Dataset, DatasetFormat, EvalItem, detect_format, load_dataset
from reasoning_graphs.evals.patterns import PATTERNS, Pattern, get_pattern, register_pattern
from reasoning_graphs.evals.receipt import read_receipt
from reasoning_graphs.evals.records import ItemRecord, JudgeRecord, Outcome, outcome_of
from reasoning_graphs.evals.report import command_line, frontier
from reasoning_graphs.evals.runner import (
    EvalResult,
    ModelFactory,
    available_arms,
    matched_samples,
    run_eval,
    write_report,
)
from reasoning_graphs.evals.stats import PairedStats, bootstrap_interval, paired_stats
from reasoning_graphs.evals.summary import ArmSummary, Comparison, EvalSummary, summarize

__all__ = [
    "ARMS",
    "PATTERNS",
    "Arm",
    "ArmSummary",
    "Comparison",
    "Dataset",
    "DatasetFormat",
    "EvalConfig",
    "EvalItem",
    "EvalResult",
    "EvalSummary",
    "ItemRecord",
    "JudgeRecord",
    "ModelFactory",
    "Outcome",
    "PairedStats",
    "Pattern",
    "Sample",
    "available_arms",
    "bootstrap_interval",
    "build_judge_graph",
    "build_sampling_graph",
    "command_line",
    "detect_format",
    "frontier",
    "get_pattern",
    "load_dataset",
    "matched_samples",
    "outcome_of",
    "paired_stats",
    "read_receipt",
    "register_pattern",
    "run_eval",
    "summarize",
    "write_report",
]
