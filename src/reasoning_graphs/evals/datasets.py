"""Evaluation datasets read by path, in the formats of ``shared/data``; the format is detected.

=============  =========================================================  ====================
format         how it is recognised                                       checked by
=============  =========================================================  ====================
``humaneval``  JSON lines with ``entry_point`` and ``canonical_solution``  ``humaneval:ID@PATH``
``mbpp``       JSON lines with ``test_list`` and ``code``                  ``mbpp:N@PATH``
``gsm8k``      JSON lines with ``question`` and ``answer`` (``####``)      ``numeric:ANSWER``
``questions``  JSON lines with ``question_id`` and ``turns`` (MT-Bench,    none: a blind judge
               Vicuna)
``game24``     CSV with a ``Puzzles`` column                               ``game24:NUMBERS``
=============  =========================================================  ====================

Each row becomes an :class:`EvalItem`: a self-contained ``prompt`` (what a plain call and most
patterns get as their task), the ``raw`` task text of the dataset (the puzzle numbers, the bare
question) for patterns with their own task protocol, and a verifier spec (None for open-ended
questions, which only the first turn of is used). Reference answers never enter an item's text.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from reasoning_graphs.errors import InputError
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Frozen

__all__ = [
    "GAME24_PROMPT",
    "GSM8K_PROMPT",
    "Dataset",
    "DatasetFormat",
    "EvalItem",
    "detect_format",
    "file_sha256",
    "load_dataset",
]

DatasetFormat = Literal["humaneval", "mbpp", "gsm8k", "questions", "game24"]
"""The dataset formats the harness reads (see the module table)."""

GAME24_PROMPT = PromptTemplate(
    "Use the numbers {numbers} and basic arithmetic operations (+ - * /) to obtain 24. Use each "
    "number exactly once. Reply with one arithmetic expression on the last line, as "
    "'Answer: <expression>'."
)
"""The self-contained Game of 24 task (the plain-call control of Yao et al. 2023)."""

GSM8K_PROMPT = PromptTemplate(
    "{question}\n\nSolve the problem step by step. End with the final answer on its own line, as "
    "'The answer is N.'"
)
"""The self-contained GSM8K task."""


class EvalItem(Frozen):
    """One evaluation item."""

    id: str
    """Stable id: ``HumanEval/0``, ``mbpp/2``, ``gsm8k/0``, ``game24/1``, ``<file stem>/81``."""
    prompt: str
    """The self-contained task text: what a plain call (and a pattern's ``task``) receives."""
    raw: str
    """The dataset's own task text (the puzzle's numbers, the bare question)."""
    verifier: str | None = None
    """The verifier spec of the answer; None for open-ended items (compared by a blind judge)."""
    category: str = ""
    """The dataset's category, where it has one (MT-Bench)."""


class Dataset(Frozen):
    """A loaded dataset and what identifies it in a receipt."""

    path: str
    """The file, resolved to an absolute path."""
    sha256: str
    """The file's SHA-256 digest (hex)."""
    format: DatasetFormat
    """The detected format."""
    items: list[EvalItem] = Field(default_factory=list)
    """The items selected for the run, in run order."""

    @property
    def verifiable(self) -> bool:
        """Whether answers are checked by code (else they are judged)."""
        return self.format != "questions"

    @property
    def short_answers(self) -> bool:
        """Whether answers are short enough to vote on (self-consistency)."""
        return self.format in ("gsm8k", "game24")


def file_sha256(path: str | Path) -> str:
    """Return the SHA-256 hex digest of a file."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _first_record(path: Path) -> dict[str, object]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"dataset {str(path)!r} is not JSON lines: {exc.msg}") from None
                if not isinstance(record, dict):
                    raise InputError(f"dataset {str(path)!r} must hold one JSON object per line")
                return record
    raise InputError(f"dataset {str(path)!r} is empty")


def detect_format(path: str | Path) -> DatasetFormat:
    """Detect a dataset's format from its content (see the module table).

    Raises:
        InputError: the file is missing, empty or of no known format.
    """
    file = Path(path)
    if not file.is_file():
        raise InputError(f"dataset {str(file)!r} does not exist; pass the path of a data file")
    with file.open(encoding="utf-8", newline="") as handle:
        head = handle.readline()
    if head.lstrip().startswith("{"):
        keys = set(_first_record(file))
        if {"entry_point", "canonical_solution", "test"} <= keys:
            return "humaneval"
        if {"test_list", "code", "prompt"} <= keys:
            return "mbpp"
        if {"question", "answer"} <= keys:
            return "gsm8k"
        if {"question_id", "turns"} <= keys:
            return "questions"
        raise InputError(f"dataset {str(file)!r} has unknown JSON fields {sorted(keys)}")
    if "Puzzles" in next(csv.reader([head]), []):
        return "game24"
    raise InputError(
        f"dataset {str(file)!r} is neither JSON lines of a known benchmark nor a CSV with a "
        "'Puzzles' column (HumanEval, MBPP, GSM8K, MT-Bench/Vicuna questions, Game of 24)"
    )


def _verifiable(kind: DatasetFormat, path: Path) -> list[EvalItem]:
    from reasoning_graphs.verifiers import load_gsm8k, load_humaneval, load_mbpp

    where = str(path)
    if kind == "gsm8k":
        return [
            EvalItem(id=t.id, prompt=GSM8K_PROMPT.render(question=t.prompt), raw=t.prompt, verifier=t.spec)
            for t in load_gsm8k(where)
        ]
    tasks = load_humaneval(where) if kind == "humaneval" else load_mbpp(where)
    return [EvalItem(id=t.id, prompt=t.prompt, raw=t.prompt, verifier=t.spec) for t in tasks]


def _game24(path: Path) -> list[EvalItem]:
    items: list[EvalItem] = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            numbers = " ".join((row.get("Puzzles") or "").split())
            if not numbers:
                continue
            rank = (row.get("Rank") or "").strip() or str(len(items) + 1)
            items.append(
                EvalItem(
                    id=f"game24/{rank}",
                    prompt=GAME24_PROMPT.render(numbers=numbers),
                    raw=numbers,
                    verifier=f"game24:{numbers}",
                )
            )
    return items


def _questions(path: Path) -> list[EvalItem]:
    items: list[EvalItem] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            turns = record.get("turns") or []
            if not turns or not isinstance(turns[0], str):
                raise InputError(f"question {record.get('question_id')!r} in {str(path)!r} has no turns")
            items.append(
                EvalItem(
                    id=f"{path.stem}/{record['question_id']}",
                    prompt=turns[0],
                    raw=turns[0],
                    category=str(record.get("category") or ""),
                )
            )
    return items


@dataclass(frozen=True)
class _Selection:
    n: int | None
    shuffle: bool
    seed: int

    def apply(self, items: list[EvalItem]) -> list[EvalItem]:
        chosen = list(items)
        if self.shuffle:
            random.Random(self.seed).shuffle(chosen)
        return chosen if self.n is None else chosen[: self.n]


def load_dataset(path: str | Path, *, n: int | None = None, shuffle: bool = False, seed: int = 0) -> Dataset:
    """Load a dataset file, detecting its format, and select the items of a run.

    Args:
        path: the data file.
        n: how many items to keep (None: all).
        shuffle: pick the items in a seeded random order instead of file order.
        seed: the shuffle's seed.

    Raises:
        InputError: the file is missing, of no known format, or ``n`` is below 1.
    """
    if n is not None and n < 1:
        raise InputError(f"n must be a positive number of items, got {n!r}")
    file = Path(path).expanduser().resolve()
    if file.exists() and not file.is_file():
        raise InputError(f"dataset {str(file)!r} is not a regular file")
    try:
        kind = detect_format(file)
        if kind == "game24":
            items = _game24(file)
        elif kind == "questions":
            items = _questions(file)
        else:
            items = _verifiable(kind, file)
    except UnicodeDecodeError:
        raise InputError(f"dataset {str(file)!r} is not UTF-8 text") from None
    except RecursionError:
        raise InputError(f"dataset {str(file)!r} holds JSON nested too deeply") from None
    except csv.Error as exc:
        raise InputError(f"dataset {str(file)!r} is not a readable CSV file: {exc}") from None
    if not items:
        raise InputError(f"dataset {str(file)!r} holds no items")
    chosen = _Selection(n, shuffle, seed).apply(items)
    return Dataset(path=str(file), sha256=file_sha256(file), format=kind, items=chosen)
