"""Per-item records, and the table in the checkpoint file that marks an item as finished.

An arm's item runs as a LangGraph thread in the run's SQLite file; when the thread has finished
and its answer is scored, an :class:`ItemRecord` is written to the ``eval_records`` table of the
same file under the thread id. A resumed evaluation reads finished records back instead of
running their items again; an item whose thread exists but has no record is resumed from its
last checkpoint.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Literal

from pydantic import Field

from reasoning_graphs.types import Frozen, PairwiseJudgment, Usage

__all__ = ["ItemRecord", "JudgeRecord", "Outcome", "RecordStore", "outcome_of"]

Outcome = Literal["win", "tie", "loss", "judge_failure"]
"""A judged item's outcome for the pattern's graph against another arm."""


class ItemRecord(Frozen):
    """What one arm did on one item."""

    item: str
    """The item's id."""
    arm: str
    """The arm (``graph``, ``single``, ``best_of_n``, ``self_consistency``)."""
    thread_id: str
    """The item's thread in the run's checkpoint file."""
    answer: str | None
    """The returned answer (None when there is none)."""
    passed: bool | None
    """Whether the returned answer passed the item's verifier (None: no verifier, judged)."""
    any_passed: bool | None = None
    """Whether any candidate the arm produced passed (any-of-k); None when not reported."""
    feedback: str = ""
    """The verifier's feedback on the returned answer (cut to 500 characters)."""
    stop_reason: str | None = None
    """Why the arm's run ended."""
    samples: int = 1
    """Samples drawn (sampling arms)."""
    calls: int = 0
    """Model calls, failed calls, retries and schema repairs included."""
    input_tokens: int = 0
    """Prompt tokens reported by the providers."""
    output_tokens: int = 0
    """Completion tokens reported by the providers."""
    unknown_usage_calls: int = 0
    """Calls whose provider reported no token usage."""
    failed_calls: int = 0
    """Calls that raised."""
    error: str | None = None
    """Why the arm produced no answer, if it did not."""
    models: list[str] = Field(default_factory=list)
    """Model ids that answered."""
    wall_s: float = 0.0
    """Seconds the item took in this arm (the resumed part only, when ``resumed``)."""
    resumed: bool = False
    """The thread existed before this run started it (it was interrupted and resumed)."""

    @classmethod
    def usage_fields(cls, usage: Usage) -> dict[str, int]:
        """Return the usage counters of a ledger as record fields."""
        total = usage.total
        return {
            "calls": total.calls,
            "input_tokens": total.input_tokens,
            "output_tokens": total.output_tokens,
            "unknown_usage_calls": total.unknown_usage_calls,
            "failed_calls": total.failed_calls,
        }

    def comparable(self) -> dict[str, object]:
        """Return the record without its timing, for reproducibility checks."""
        return self.model_dump(exclude={"wall_s", "resumed"})


class JudgeRecord(Frozen):
    """One blind comparison of the graph's answer against another arm's, on one item."""

    item: str
    """The item's id."""
    arm: str
    """The arm the graph was compared with."""
    thread_id: str
    """The judge's thread (empty when no judge ran because an answer was missing)."""
    outcome: Outcome
    """For the graph: ``win``, ``tie`` (both orders said tie, or they disagreed), ``loss``, or
    ``judge_failure`` (a judge reply could not be parsed; counted, never dropped)."""
    orders: list[str] = Field(default_factory=list)
    """Each order's raw pick (``A``, ``B``, ``tie``, ``unparsed``); the graph is ``A`` first."""
    parse_failures: int = 0
    """Judge replies that could not be parsed."""
    note: str = ""
    """Why no judge ran (a missing answer decides the item)."""
    calls: int = 0
    """The judge's calls."""
    input_tokens: int = 0
    """The judge's prompt tokens."""
    output_tokens: int = 0
    """The judge's completion tokens."""
    wall_s: float = 0.0
    """Seconds the comparison took."""

    def comparable(self) -> dict[str, object]:
        """Return the record without its timing."""
        return self.model_dump(exclude={"wall_s"})


def outcome_of(judgment: PairwiseJudgment) -> Outcome:
    """Map a judgment (graph as ``first``) to an outcome: disagreement is a tie, failures count."""
    if judgment.parse_failures:
        return "judge_failure"
    if judgment.winner == "first":
        return "win"
    if judgment.winner == "second":
        return "loss"
    return "tie"


class RecordStore:
    """The ``eval_records`` table: finished records by thread id (thread-safe).

    Args:
        path: the run's checkpoint file (the table sits beside LangGraph's).
    """

    def __init__(self, path: str | Path) -> None:
        """Open (and create) the table."""
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), timeout=30.0, check_same_thread=False)
        with self._lock, self._conn:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS eval_records (key TEXT PRIMARY KEY, kind TEXT, record TEXT)"
            )

    def get_item(self, key: str) -> ItemRecord | None:
        """Return the finished item record stored under ``key``, if any."""
        raw = self._get(key)
        return ItemRecord.model_validate_json(raw) if raw is not None else None

    def get_judge(self, key: str) -> JudgeRecord | None:
        """Return the finished judge record stored under ``key``, if any."""
        raw = self._get(key)
        return JudgeRecord.model_validate_json(raw) if raw is not None else None

    def put(self, key: str, record: ItemRecord | JudgeRecord) -> None:
        """Store a finished record (committed at once)."""
        kind = "item" if isinstance(record, ItemRecord) else "judge"
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO eval_records (key, kind, record) VALUES (?, ?, ?)",
                (key, kind, record.model_dump_json()),
            )

    def keys(self) -> list[str]:
        """Return every stored key."""
        with self._lock:
            return [row[0] for row in self._conn.execute("SELECT key FROM eval_records ORDER BY key")]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def _get(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT record FROM eval_records WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])
