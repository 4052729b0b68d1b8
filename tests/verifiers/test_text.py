"""Answer matching and text limits: exact, normalized, numeric, regex, lines and words."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoning_graphs.errors import InputError
from reasoning_graphs.verifiers import (
    ExactMatch,
    MaxLines,
    MaxWords,
    NormalizedMatch,
    NumericMatch,
    RegexSearch,
    extract_number_answer,
    normalize_text,
    parse_number,
)

WORDS = st.lists(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), min_size=1, max_size=6)


def test_exact_match() -> None:
    assert ExactMatch("Paris")("  Paris\n").passed
    verdict = ExactMatch("Paris")("paris")
    assert not verdict.passed
    assert verdict.feedback == "Expected exactly 'Paris', got 'paris'."


@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


@given(WORDS, st.sampled_from([" ", "  ", "\n", "\t "]), st.sampled_from(["", ".", "!", "?!", ","]))
def test_normalized_match_ignores_case_spacing_and_punctuation(words: list[str], gap: str, mark: str) -> None:
    expected = " ".join(words)
    variant = gap + (mark + gap).join(w.upper() for w in words) + mark + gap
    assert NormalizedMatch(expected)(variant).passed


@given(WORDS, st.from_regex(r"[a-z]", fullmatch=True))
def test_normalized_match_still_compares_letters(words: list[str], extra: str) -> None:
    expected = " ".join(words)
    assert not NormalizedMatch(expected)(expected + extra).passed


def test_normalized_examples() -> None:
    assert normalize_text("  The U.S.A.,  NOT\tthe UK! ") == "the usa not the uk"
    assert not NormalizedMatch("Paris")("London").passed


@pytest.mark.parametrize(
    ("text", "value"),
    [("1,234", 1234), ("$5", 5), ("18.", 18), ("-3", -3), ("2.50", Fraction(5, 2)), ("$-1,000", -1000)],
)
def test_parse_number(text: str, value: Fraction) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "--4"])
def test_parse_number_rejects(text: str) -> None:
    assert parse_number(text) is None


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("She has 3 apples and buys 4, so 7 in total.\n#### 7", "7"),
        ("The answer is $1,200. (I double-checked 3 times.)", "$1,200"),
        ("First 12, then 30. Final answer: 42", "42"),
        ("Costs 5 dollars and 20 cents, so 5.20", "5.20"),
        ("x2 and y3 are names, the result is -8.", "-8"),
        ("no numbers here", None),
    ],
)
def test_extract_number_answer(reply: str, answer: str | None) -> None:
    assert extract_number_answer(reply) == answer


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_numeric_match_reads_formatted_integers(value: int) -> None:
    verifier = NumericMatch(str(value))
    assert verifier(f"So the answer is ${value:,}.").passed
    assert not verifier(f"So the answer is {value + 1}.").passed


def test_numeric_match_tolerance_and_feedback() -> None:
    assert NumericMatch("0.5", 0.01)("about 0.499").passed
    assert not NumericMatch("0.5")("about 0.499").passed
    verdict = NumericMatch("18")("It is 17.")
    assert verdict.feedback == "Expected 18, got 17."
    assert NumericMatch("18")("none").feedback == "No number found in the answer; expected 18."
    with pytest.raises(InputError):
        NumericMatch("eighteen")
    with pytest.raises(InputError):
        NumericMatch("1", -1.0)


def test_regex_search() -> None:
    assert RegexSearch(r"(?i)\bparis\b")("I think PARIS.").passed
    assert not RegexSearch(r"\d{3}")("12").passed
    with pytest.raises(InputError, match="bad regular expression"):
        RegexSearch("(")


def test_line_and_word_limits() -> None:
    assert MaxLines(2)("\n\na\nb\n\n").passed
    verdict = MaxLines(2)("a\nb\nc\nd")
    assert not verdict.passed and verdict.score == 0.5
    assert verdict.feedback == "The answer has 4 lines; the limit is 2. Cut 2."
    assert MaxWords(3)("one two  three").passed
    verdict = MaxWords(3)("one two three four five six")
    assert not verdict.passed and verdict.score == 0.5 and verdict.details == {"words": 6}
    for bad in (0, -1, True):
        with pytest.raises(InputError):
            MaxLines(bad)
