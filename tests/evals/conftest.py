"""Fixtures for the harness tests: tiny data files in the shared formats and scripted fakes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.models import ModelClient, ModelSettings, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)

QUESTIONS = [
    ("Tom has 2 apples and buys 3 more. How many apples does he have?", "5"),
    ("A box holds 4 rows of 6 eggs. How many eggs are in the box?", "24"),
    ("Sam had 10 dollars and spent 7. How many dollars are left?", "3"),
    ("There are 9 birds and 4 fly away. How many birds remain?", "5"),
]


def write_gsm8k(path: Path, rows: list[tuple[str, str]] = QUESTIONS) -> Path:
    """Write a GSM8K-format file (question, worked answer ending in ``#### N``)."""
    with path.open("w", encoding="utf-8") as out:
        for question, answer in rows:
            out.write(json.dumps({"question": question, "answer": f"Work it out.\n#### {answer}"}) + "\n")
    return path


def write_questions(path: Path, n: int = 3) -> Path:
    """Write an MT-Bench-format file of open-ended questions."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "question_id": 100 + i,
                "category": "writing",
                "turns": [f"Write a haiku about topic {i}."],
            }
            out.write(json.dumps(record) + "\n")
    return path


@pytest.fixture
def gsm8k_file(tmp_path: Path) -> Path:
    return write_gsm8k(tmp_path / "gsm8k_tiny.jsonl")


@pytest.fixture
def questions_file(tmp_path: Path) -> Path:
    return write_questions(tmp_path / "questions_tiny.jsonl")


def client(fake: ScriptedChatModel) -> ModelClient:
    return ModelClient(fake, retry=NO_WAIT)


Factory = Callable[[str, ModelSettings], ModelClient]


def shared(fake: ScriptedChatModel) -> Factory:
    """A model factory that returns one client (one fake) for every spec and setting."""
    seam = client(fake)
    return lambda spec, settings: seam


def question_of(prompt: str) -> str:
    """Return which tiny question a prompt is about (its first words)."""
    for question, _ in QUESTIONS:
        if question in prompt:
            return question
    raise AssertionError(f"prompt about no known question: {prompt[:120]!r}")


def answer_of(question: str) -> str:
    return dict(QUESTIONS)[question]


def attempts_in(prompt: str) -> int:
    """How many earlier attempts a repair prompt shows."""
    return len(re.findall(r"### Attempt \d+", prompt))


def right_after(failures: dict[str, int]) -> Callable[[Any], str]:
    """A responder: for each question, wrong (distinct) answers for ``failures[q]`` attempts, then right."""

    def respond(messages: Any) -> str:
        text = messages[-1].content
        question = question_of(text)
        attempt = attempts_in(text)
        if attempt >= failures.get(question, 0):
            return f"The answer is {answer_of(question)}."
        return f"The answer is {100 + attempt}."

    return respond
