"""Run an evaluation: the graph and its controls on every item, then a receipt and a report.

Order of work: the graph arm runs first, since the sampling arms' N is its mean calls per item
(rounded half up) unless ``samples`` is given; then the plain call, best-of-N and
self-consistency; then, for open-ended items, the blind judge compares the graph's answer with
each other arm's. Every item of every arm (and every comparison) is a thread in
``<out>/runs.sqlite``; a finished one is recorded there and read back on a later run with the
same configuration, so an interrupted evaluation resumes where it stopped. The receipt is
written before anything is summarized; the summary, report and plot are computed from it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.errors import InputError
from reasoning_graphs.evals._arms import ArmPlan, Executor, usage_fields
from reasoning_graphs.evals.arm_graphs import VoteKey, build_judge_graph, build_sampling_graph
from reasoning_graphs.evals.config import ARMS, Arm, EvalConfig
from reasoning_graphs.evals.datasets import Dataset, EvalItem, load_dataset
from reasoning_graphs.evals.patterns import Pattern, get_pattern
from reasoning_graphs.evals.receipt import build_receipt, read_receipt, write_json
from reasoning_graphs.evals.records import ItemRecord, JudgeRecord, RecordStore
from reasoning_graphs.evals.report import render_markdown, write_plot
from reasoning_graphs.evals.summary import EvalSummary, summarize
from reasoning_graphs.models import ModelClient, ModelSettings, resolve
from reasoning_graphs.verifiers import extract_expression, extract_number_answer, parse_number

__all__ = ["EvalResult", "ModelFactory", "available_arms", "matched_samples", "run_eval", "write_report"]

ModelFactory = Callable[[str, ModelSettings], ModelClient]
"""Turn a model spec and sampling settings into a seam client (default: ``models.resolve``)."""


@dataclass(frozen=True)
class EvalResult:
    """Where an evaluation's files are, and its summary."""

    out_dir: Path
    """The output folder."""
    receipt: Path
    """``receipt.json``."""
    report: Path
    """``report.md``."""
    plot: Path | None
    """``plot.png`` (None when matplotlib is missing)."""
    summary: EvalSummary
    """The summary the report shows."""
    records: list[ItemRecord]
    """Every per-item record."""
    judgments: list[JudgeRecord]
    """Every blind comparison."""


def _number_key(text: str) -> str | None:
    found = extract_number_answer(text)
    value = parse_number(found) if found is not None else None
    return None if value is None else str(value)


def _expression_key(text: str) -> str | None:
    return "".join(extract_expression(text).split()) or None


_VOTE_KEYS: dict[str, VoteKey] = {"gsm8k": _number_key, "game24": _expression_key}


def available_arms(pattern: Pattern, dataset: Dataset) -> tuple[Arm, ...]:
    """Return the arms that apply to a pattern on a dataset.

    Best-of-N needs a verifier that the graph also uses; self-consistency needs short answers.
    """
    arms: list[Arm] = ["graph", "single"]
    if dataset.verifiable and pattern.uses_verifier:
        arms.append("best_of_n")
    if dataset.short_answers:
        arms.append("self_consistency")
    return tuple(arms)


def _check_arms(config: EvalConfig, pattern: Pattern, dataset: Dataset) -> tuple[Arm, ...]:
    available = available_arms(pattern, dataset)
    if config.arms is None:
        return available
    for arm in config.arms:
        if arm == "best_of_n" and arm not in available:
            raise InputError(
                f"best_of_n needs a verifier that the pattern itself uses to choose its answer; "
                f"{pattern.name!r} on {dataset.format} does not, so a verifier-selected best-of-N would "
                "have an oracle the graph lacks (use self_consistency or single)"
            )
        if arm == "self_consistency" and arm not in available:
            raise InputError(f"self_consistency needs short answers (gsm8k, game24), not {dataset.format}")
    if (
        "graph" not in config.arms
        and config.samples is None
        and set(config.arms) & {"best_of_n", "self_consistency"}
    ):
        raise InputError(
            "sampling arms without the graph arm need --samples N (their matched N is the graph's)"
        )
    return tuple(a for a in ARMS if a in config.arms)


def matched_samples(records: Sequence[ItemRecord]) -> int:
    """Return the graph's mean calls per item, rounded half up (at least 1)."""
    if not records:
        return 1
    return max(1, int(sum(r.calls for r in records) / len(records) + 0.5))


def _read_sampling(item: EvalItem, values: Mapping[str, Any]) -> dict[str, Any]:
    drawn = values.get("drawn") or []
    checked = [s.passed for s in drawn if s.passed is not None]
    errors = [s.error for s in sorted(drawn, key=lambda s: s.index) if s.error]
    answer = values.get("final_answer")
    return {
        "answer": answer,
        "stop_reason": values.get("stop_reason"),
        "any_passed": any(checked) if checked else None,
        "samples": len(drawn),
        "error": errors[0] if answer is None and errors else None,
        **usage_fields(values),
    }


class _Run:
    """One evaluation's moving parts (the saver is open while it lives)."""

    def __init__(self, config: EvalConfig, pattern: Pattern, factory: ModelFactory, saver: Any) -> None:
        self.config, self.pattern, self.factory, self.saver = config, pattern, factory, saver

    def graph_plan(self) -> ArmPlan:
        cfg, pattern = self.config, self.pattern
        clients = [self.factory(spec, cfg.model_settings()) for spec in cfg.members]
        app = pattern.build(clients, cfg.settings).compile(checkpointer=self.saver)
        limits = {"max_calls": cfg.max_calls} if cfg.max_calls else {}

        def read(item: EvalItem, values: Mapping[str, Any]) -> dict[str, Any]:
            answer, error = values.get("final_answer"), values.get("error")
            return {
                "answer": answer if isinstance(answer, str) else None,
                "stop_reason": values.get("stop_reason"),
                "any_passed": pattern.any_of_k(values) if item.verifier else None,
                "error": error if isinstance(error, str) else None,
                **usage_fields(values),
            }

        return ArmPlan("graph", "graph", app, lambda item: {**pattern.graph_input(item), **limits}, read)

    def sampling_plan(self, arm: Arm, samples: int, dataset: Dataset) -> ArmPlan:
        cfg, members = self.config, self.config.members
        if arm == "single":
            graph = build_sampling_graph(client_for=lambda i: self.factory(members[0], cfg.model_settings()))
            samples, label = 1, "single"
        else:
            graph = build_sampling_graph(
                client_for=lambda i: self.factory(members[i % len(members)], cfg.sample_settings(i)),
                selection="verified" if arm == "best_of_n" else "vote",
                verify=dataset.verifiable,
                vote_key=_VOTE_KEYS.get(dataset.format),
            )
            label = f"{arm}@{samples}"
        app = graph.compile(checkpointer=self.saver)

        def payload(item: EvalItem) -> dict[str, Any]:
            verifier = {"verifier": item.verifier} if item.verifier else {}
            return {"prompt": self.pattern.single_prompt(item), "samples": samples, **verifier}

        return ArmPlan(arm, label, app, payload, _read_sampling)


def _preflight(config: EvalConfig, pattern: Any, factory: ModelFactory) -> None:
    """Check the models, the judge and the pattern settings before anything is written.

    Raises:
        ConfigurationError: a model spec is malformed or its provider is unavailable.
        InputError: the pattern settings are invalid.
    """
    clients = [factory(spec, config.model_settings()) for spec in config.members]
    if config.judge_model:
        factory(config.judge_model, config.model_settings())
    pattern.build(clients, config.settings)


def run_eval(
    config: EvalConfig, *, models: ModelFactory | None = None, stream: TextIO | None = sys.stderr
) -> EvalResult:
    """Run (or resume) an evaluation and write its receipt, report and plot.

    Args:
        config: what to run.
        models: builds seam clients from specs (tests pass scripted fakes); default ``resolve``.
        stream: where progress bars go (None: nowhere).

    Raises:
        InputError: an unknown pattern, a dataset the pattern does not fit, or an arm that does
            not apply.
    """
    started = datetime.now(UTC)
    pattern = get_pattern(config.pattern)
    dataset = load_dataset(config.dataset, n=config.n, shuffle=config.shuffle, seed=config.seed)
    if dataset.format not in pattern.formats:
        raise InputError(
            f"pattern {pattern.name!r} does not fit {dataset.format} data; it takes "
            f"{', '.join(sorted(pattern.formats))}"
        )
    arms = _check_arms(config, pattern, dataset)
    fingerprint = config.fingerprint(dataset.sha256)
    _preflight(config, pattern, models or resolve)
    out = config.out_dir(dataset.sha256)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {str(out)!r} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the --out folder {str(out)!r}: {exc.strerror or exc}") from None
    if stream is not None:
        stream.write(
            f"evaluating {pattern.name} on {len(dataset.items)} {dataset.format} items, arms "
            f"{', '.join(arms)}; output in {out}\n"
        )
    records: list[ItemRecord] = []
    judgments: list[JudgeRecord] = []
    samples: int | None = config.samples
    db = out / "runs.sqlite"
    with open_saver(db) as saver:
        store = RecordStore(db)
        try:
            run = _Run(config, pattern, models or resolve, saver)
            ex = Executor(store, fingerprint, config.concurrency, stream)
            graph_records = ex.run_arm(run.graph_plan(), dataset.items) if "graph" in arms else []
            records += graph_records
            if samples is None and set(arms) & {"best_of_n", "self_consistency"}:
                samples = matched_samples(graph_records)
            for arm in (a for a in arms if a != "graph"):
                records += ex.run_arm(run.sampling_plan(arm, samples or 1, dataset), dataset.items)
            if not dataset.verifiable and graph_records:
                judge = build_judge_graph(judge=run.factory(config.judge, config.model_settings()))
                judge_app = judge.compile(checkpointer=saver)
                mine = {r.item: r.answer for r in graph_records}
                for arm in (a for a in arms if a != "graph"):
                    theirs = {r.item: r.answer for r in records if r.arm == arm}
                    pairs = [(i, mine[i.id], theirs[i.id]) for i in dataset.items]
                    judgments += ex.run_judge(judge_app, arm, pairs)
        finally:
            store.close()
    receipt = build_receipt(
        config,
        dataset,
        fingerprint=fingerprint,
        samples=samples,
        records=records,
        judgments=judgments,
        started=started,
    )
    receipt_path = out / "receipt.json"
    write_json(receipt_path, receipt)
    summary, report, plot = write_report(receipt_path)
    return EvalResult(out, receipt_path, report, plot, summary, records, judgments)


def write_report(receipt_path: Path) -> tuple[EvalSummary, Path, Path | None]:
    """Summarize a receipt, add the summary to it, and write ``report.md`` and ``plot.png`` beside it."""
    receipt = read_receipt(receipt_path)
    summary = summarize(receipt)
    receipt["summary"] = summary.model_dump(mode="json")
    write_json(receipt_path, receipt)
    out = receipt_path.parent
    plot: Path | None = out / "plot.png" if write_plot(summary, out / "plot.png") else None
    config = EvalConfig.model_validate(receipt["config"])
    report = out / "report.md"
    text = render_markdown(summary, config, receipt, plot=plot.name if plot else None)
    report.write_text(text, encoding="utf-8")
    return summary, report, plot
