"""Game of 24: every puzzle's brute-force solution passes; wrong answers and code fail."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.verifiers import Game24, evaluate_24, extract_expression, from_spec, solve_24


def test_every_puzzle_has_a_passing_solution(data_dir: Path) -> None:
    with (data_dir / "game24.csv").open(newline="") as rows:
        puzzles = [row["Puzzles"] for row in csv.DictReader(rows)]
    assert len(puzzles) == 1262
    for puzzle in puzzles:
        verifier = Game24.parse(puzzle)
        solution = solve_24(verifier.numbers)
        assert solution is not None, puzzle
        assert verifier(f"Answer: {solution} = 24").passed, (puzzle, solution)


@pytest.mark.parametrize(
    "reply",
    [
        "(10 - 4) * (13 - 9)",
        "(10 - 4) * (13 - 9) = 24",
        "Answer: (13 - 9) * (10 - 4) = 24",
        "Steps:\n13 - 9 = 4\n10 - 4 = 6\n4 * 6 = 24\nAnswer: `(13 - 9) \u00d7 (10 - 4)`",
        "24 = (10-4)*(13-9)",
        "**Answer:** (10 \u2212 4) * (13 \u2212 9) = 24.",
    ],
)
def test_accepted_answer_forms(reply: str) -> None:
    assert Game24((4, 9, 10, 13))(reply).passed


@pytest.mark.parametrize(
    ("reply", "feedback"),
    [
        ("(10 - 4) * (12 - 8)", "uses 10 4 12 8 but the numbers are 4 9 10 13 (missing 9 13, extra 8 12)"),
        ("(10 - 4) * (10 - 4)", "uses 10 4 10 4 but the numbers are 4 9 10 13 (missing 9 13, extra 4 10)"),
        ("(10 - 4) * (13 - 9) - 1", "extra 1"),
        ("4 * 9 - 13 + 10 - 10", "extra 10"),
        ("(10 - 4) * (13 - 9) - 13 / 13", "extra 13"),
        ("13 + 10 + 4 - 9 * 1", "extra 1"),
        ("13 + 10 - 9 / 4 + 1", "extra 1"),
        ("9 + 10 + 4 - 13", "= 10, not 24"),
        ("(13 - 10) * 9 - 4", "= 23, not 24"),
        ("4 / (10 - 10) * 9 * 13", "divides by zero"),
        ("-4 + 9 + 13 + 10 - 4", "found UnaryOp"),
        ("4.0 * 6", "found Constant"),
        ("__import__('os').system('touch /tmp/pwned')", "found Call"),
        ("(lambda: 24)()", "found Call"),
        ("[4, 9, 10, 13]", "found List"),
        ("4 ** 9 + 10 + 13", "not a valid expression"),
        ("4 % 9 + 10 + 13", "found Mod"),
        ("", "no expression found"),
        ("4 9 10 13", "not a valid expression"),
    ],
)
def test_rejected_answers(reply: str, feedback: str) -> None:
    verdict = Game24((4, 9, 10, 13))(reply)
    assert not verdict.passed
    assert feedback in verdict.feedback


def test_code_in_an_answer_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    verdict = Game24((4, 9, 10, 13))(f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert not verdict.passed
    assert not marker.exists()


def test_evaluate_refuses_other_operators() -> None:
    with pytest.raises(ValueError, match="found Pow"):
        evaluate_24("2 ** 3")


def test_evaluate_is_exact() -> None:
    value, used = evaluate_24("8 / (3 - 8 / 3)")
    assert value == 24 and used == [8, 3, 8, 3]
    assert Game24((3, 3, 8, 8))("8 / (3 - 8 / 3)").passed


def test_solver_and_extraction_edge_cases() -> None:
    assert solve_24([1, 1, 1, 1]) is None
    assert solve_24([24]) == "24"
    assert extract_expression("Answer: 4 * 6 = 24") == "4 * 6"


def test_spec_and_bad_puzzles() -> None:
    verifier = from_spec("game24:4 9 10 13")
    assert verifier == Game24((4, 9, 10, 13)) and verifier.spec == "game24:4 9 10 13"
    with pytest.raises(InputError):
        Game24.parse("4 nine 10 13")
    with pytest.raises(InputError):
        Game24(())
