"""Run an arm over items: one resumable thread per item, scored and recorded when it finishes."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from reasoning_graphs.errors import InputError, SandboxError
from reasoning_graphs.evals._progress import Progress
from reasoning_graphs.evals.datasets import EvalItem
from reasoning_graphs.evals.records import ItemRecord, JudgeRecord, RecordStore, outcome_of
from reasoning_graphs.types import PairwiseJudgment, Usage
from reasoning_graphs.verifiers import SpecVerifier, from_spec, run_verifier

__all__ = ["ArmPlan", "Executor", "score"]

T = TypeVar("T")
U = TypeVar("U")
_FEEDBACK_CHARS = 500
_ITEM_ERRORS = (InputError, SandboxError)
"""Errors that end one item (recorded as a failure); anything else stops the evaluation."""


@functools.lru_cache(maxsize=4096)
def _verifier(spec: str) -> SpecVerifier:
    return from_spec(spec)


def score(item: EvalItem, answer: str | None) -> tuple[bool | None, str]:
    """Check an answer with the item's verifier: (passed or None when unverifiable, feedback)."""
    if item.verifier is None:
        return None, ""
    if answer is None:
        return False, "no answer"
    verdict = run_verifier(_verifier(item.verifier), answer, item.prompt)
    return verdict.passed, verdict.feedback[:_FEEDBACK_CHARS]


@dataclass(frozen=True)
class ArmPlan:
    """How one arm runs an item."""

    arm: str
    """The arm's name in records."""
    label: str
    """The arm's segment of thread ids (includes N for sampling arms)."""
    app: CompiledStateGraph[Any, Any, Any, Any]
    """The compiled graph (with the run's SQLite saver)."""
    payload: Callable[[EvalItem], dict[str, Any]]
    """The graph's input for an item."""
    read: Callable[[EvalItem, Mapping[str, Any]], dict[str, Any]]
    """Record fields from the thread's final state (answer, any_passed, samples ...)."""


def usage_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """Record fields from a state's usage ledger: counters and the model ids that answered."""
    usage = values.get("usage") or Usage()
    return {**ItemRecord.usage_fields(usage), "models": sorted(usage.by_model)}


class Executor:
    """Runs items as threads of one checkpoint file, ``concurrency`` at a time.

    Args:
        store: the finished-records table.
        prefix: the run's fingerprint (the first segment of every thread id).
        concurrency: items run at once.
        stream: where progress bars go (None: nowhere).
    """

    def __init__(self, store: RecordStore, prefix: str, concurrency: int, stream: TextIO | None) -> None:
        """Keep the run's shared parts."""
        self.store, self.prefix, self.concurrency, self.stream = store, prefix, concurrency, stream

    def thread_id(self, label: str, item: EvalItem) -> str:
        """Return the thread id of an arm's item."""
        return f"{self.prefix}/{label}/{item.id}"

    def map(
        self, label: str, inputs: Sequence[T], fn: Callable[[T, Progress], U], *, noun: str = "passed"
    ) -> list[U]:
        """Apply ``fn`` to every input (in parallel when allowed), keeping input order."""
        progress = Progress(label, len(inputs), self.stream, noun=noun)
        if self.concurrency == 1 or len(inputs) < 2:
            return [fn(x, progress) for x in inputs]
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="eval")
        try:
            futures = [pool.submit(fn, x, progress) for x in inputs]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()  # raise the first failure before waiting on the rest
            return [f.result() for f in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _drive(
        self, app: CompiledStateGraph[Any, Any, Any, Any], tid: str, payload: dict[str, Any], graph: str
    ) -> tuple[dict[str, Any], float, bool]:
        config: RunnableConfig = {"configurable": {"thread_id": tid}, "metadata": {"graph": graph}}
        started = time.perf_counter()
        state = app.get_state(config)
        resumed = state.created_at is not None
        if not resumed:
            app.invoke(payload, config)
        elif state.next:
            app.invoke(None, config)
        values = dict(app.get_state(config).values)
        return values, time.perf_counter() - started, resumed

    def run_arm(self, plan: ArmPlan, items: Sequence[EvalItem]) -> list[ItemRecord]:
        """Run (or read back) every item of one arm; returns records in item order."""

        def one(item: EvalItem, progress: Progress) -> ItemRecord:
            tid = self.thread_id(plan.label, item)
            stored = self.store.get_item(tid)
            if stored is not None:
                progress.advance(passed=stored.passed, skipped=True)
                return stored
            try:
                values, wall, resumed = self._drive(plan.app, tid, plan.payload(item), f"eval:{plan.arm}")
                fields = plan.read(item, values)
            except _ITEM_ERRORS as exc:
                wall, resumed = 0.0, False
                fields = {"answer": None, "error": f"{type(exc).__name__}: {exc}", "stop_reason": "error"}
            passed, feedback = score(item, fields.get("answer"))
            record = ItemRecord(
                item=item.id,
                arm=plan.arm,
                thread_id=tid,
                passed=passed,
                feedback=feedback,
                wall_s=round(wall, 4),
                resumed=resumed,
                **fields,
            )
            self.store.put(tid, record)
            progress.advance(passed=passed)
            return record

        return self.map(plan.label, items, one)

    def run_judge(
        self,
        app: CompiledStateGraph[Any, Any, Any, Any],
        arm: str,
        pairs: Sequence[tuple[EvalItem, str | None, str | None]],
    ) -> list[JudgeRecord]:
        """Judge the graph's answer (first) against ``arm``'s (second) on every item, blind."""

        def one(pair: tuple[EvalItem, str | None, str | None], progress: Progress) -> JudgeRecord:
            item, mine, theirs = pair
            tid = self.thread_id(f"judge-{arm}", item)
            stored = self.store.get_judge(tid)
            if stored is not None:
                progress.advance(passed=stored.outcome == "win", skipped=True)
                return stored
            if mine is None or theirs is None:
                outcome = "tie" if mine is None and theirs is None else ("loss" if mine is None else "win")
                record = JudgeRecord(
                    item=item.id,
                    arm=arm,
                    thread_id="",
                    outcome=outcome,
                    note="an answer is missing: not judged",
                )
            else:
                payload = {"task": item.prompt, "first": mine, "second": theirs}
                values, wall, _ = self._drive(app, tid, payload, "eval:judge")
                judgment: PairwiseJudgment = values["judgment"]
                usage = values.get("usage") or Usage()
                record = JudgeRecord(
                    item=item.id,
                    arm=arm,
                    thread_id=tid,
                    outcome=outcome_of(judgment),
                    orders=list(judgment.orders),
                    parse_failures=judgment.parse_failures,
                    calls=usage.total.calls,
                    input_tokens=usage.total.input_tokens,
                    output_tokens=usage.total.output_tokens,
                    wall_s=round(wall, 4),
                )
            self.store.put(tid, record)
            progress.advance(passed=record.outcome == "win")
            return record

        return self.map(f"judge vs {arm}", pairs, one, noun="graph wins")
