"""Answer-matching and text-limit verifiers: exact, normalized, numeric, regex and length.

Numbers are read the way GSM8K writes them: ``1,234``, ``$5``, ``18.`` and ``-3`` are numbers;
a candidate's answer is the number after its last ``####`` or "answer is", else its last number.
Comparison is exact (``fractions.Fraction``) up to an absolute tolerance.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction

from ..errors import InputError
from ..types import Verdict

__all__ = [
    "ExactMatch",
    "MaxLines",
    "MaxWords",
    "NormalizedMatch",
    "NumericMatch",
    "RegexSearch",
    "extract_number_answer",
    "normalize_text",
    "parse_number",
]

_NUMBER = re.compile(r"(?<![\w.])-?\$?-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
_MARKER = re.compile(r"####|answer\s+is\s*:?|answer\s*:", re.IGNORECASE)
_SHOWN = 120


def _show(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def _normalize_once(text: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join("".join(c for c in folded if not unicodedata.category(c).startswith("P")).split())


def normalize_text(text: str) -> str:
    """Normalize text for a lenient comparison: case, punctuation and spacing are dropped.

    The text is NFKC-normalized and case-folded, punctuation characters are deleted (so
    ``U.S.A.`` matches ``usa``), and runs of whitespace become one space.

    Args:
        text: Any text.

    Returns:
        The normalized text; normalizing it again changes nothing.
    """
    for _ in range(4):  # a few exotic characters need a second pass to reach a fixed point
        again = _normalize_once(text)
        if again == text:
            break
        text = again
    return text


def parse_number(text: str) -> Fraction | None:
    """Parse one number written like ``1,234``, ``$5``, ``-3``, ``18.`` or ``2.50``.

    Args:
        text: The number's text (surrounding spaces, ``$`` and a trailing ``.`` are fine).

    Returns:
        The exact value, or None when the text is not a number.
    """
    cleaned = text.strip().rstrip(".").replace(",", "").replace("$", "").replace(" ", "")
    cleaned = cleaned.replace("\u2212", "-")  # the minus sign
    if cleaned.startswith("--"):
        return None
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


def extract_number_answer(text: str) -> str | None:
    """Find a candidate's final numeric answer.

    The number right after the last ``####``, "answer is" or "answer:" wins; otherwise the
    last number in the text.

    Args:
        text: A worked answer.

    Returns:
        The answer's text as written (e.g. ``"$1,200"``), or None when there is no number.
    """
    markers = list(_MARKER.finditer(text))
    if markers:
        found = _NUMBER.search(text, markers[-1].end())
        if found is not None:
            return found.group()
    numbers = _NUMBER.findall(text)
    return numbers[-1] if numbers else None


@dataclass(frozen=True, slots=True)
class ExactMatch:
    """Pass when the candidate, without surrounding whitespace, equals the expected text."""

    expected: str
    """The exact text expected."""

    @property
    def spec(self) -> str:
        """``exact:TEXT``."""
        return f"exact:{self.expected}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Compare the stripped candidate with the stripped expected text."""
        if candidate.strip() == self.expected.strip():
            return Verdict(passed=True, score=1.0)
        return Verdict(
            passed=False, feedback=f"Expected exactly {_show(self.expected)}, got {_show(candidate)}."
        )


@dataclass(frozen=True, slots=True)
class NormalizedMatch:
    """Pass when the candidate equals the expected text ignoring case, whitespace and punctuation."""

    expected: str
    """The expected text (normalized with :func:`normalize_text` before comparing)."""

    @property
    def spec(self) -> str:
        """``normalized:TEXT``."""
        return f"normalized:{self.expected}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Compare the normalized candidate with the normalized expected text."""
        if normalize_text(candidate) == normalize_text(self.expected):
            return Verdict(passed=True, score=1.0)
        return Verdict(
            passed=False,
            feedback=f"Expected {_show(self.expected)} (ignoring case, spaces and punctuation), "
            f"got {_show(candidate)}.",
        )


@dataclass(frozen=True, slots=True)
class NumericMatch:
    """Pass when the candidate's final number equals the expected one (see the module notes)."""

    expected: str
    """The expected number as written (``18``, ``1,200``, ``-3.5``)."""
    tolerance: float = 1e-6
    """Absolute tolerance: passes when ``|got - expected| <= tolerance`` (exact arithmetic)."""
    value: Fraction = field(init=False, repr=False, compare=False)
    """The parsed expected value."""

    def __post_init__(self) -> None:
        """Parse the expected number."""
        value = parse_number(self.expected)
        if value is None:
            raise InputError(f"numeric verifier needs a number, got {self.expected!r}")
        if not self.tolerance >= 0:
            raise InputError(f"numeric tolerance must be >= 0, got {self.tolerance!r}")
        object.__setattr__(self, "value", value)

    @property
    def spec(self) -> str:
        """``numeric:VALUE``, or ``numeric:VALUE~TOLERANCE`` for a non-default tolerance."""
        suffix = "" if self.tolerance == 1e-6 else f"~{self.tolerance!r}"
        return f"numeric:{self.expected}{suffix}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Extract the candidate's final number and compare it with the expected value."""
        found = extract_number_answer(candidate)
        got = parse_number(found) if found is not None else None
        if got is None:
            return Verdict(passed=False, feedback=f"No number found in the answer; expected {self.expected}.")
        if abs(got - self.value) <= Fraction(self.tolerance):
            return Verdict(passed=True, score=1.0, details={"answer": found})
        return Verdict(
            passed=False, feedback=f"Expected {self.expected}, got {found}.", details={"answer": found}
        )


@dataclass(frozen=True, slots=True)
class RegexSearch:
    """Pass when the pattern is found anywhere in the candidate (``re.search``)."""

    pattern: str
    """A Python regular expression; use inline flags such as ``(?i)`` for options."""
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)
    """The compiled pattern."""

    def __post_init__(self) -> None:
        """Compile the pattern."""
        try:
            object.__setattr__(self, "compiled", re.compile(self.pattern))
        except re.error as exc:
            raise InputError(f"bad regular expression {self.pattern!r}: {exc}") from exc

    @property
    def spec(self) -> str:
        """``regex:PATTERN``."""
        return f"regex:{self.pattern}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Search the candidate for the pattern."""
        if self.compiled.search(candidate):
            return Verdict(passed=True, score=1.0)
        return Verdict(passed=False, feedback=f"The answer does not match the pattern {self.pattern!r}.")


def _positive(limit: int, what: str) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"{what} needs a positive whole number, got {limit!r}")


@dataclass(frozen=True, slots=True)
class MaxLines:
    """Pass when the candidate has at most ``limit`` lines (leading and trailing blank lines ignored)."""

    limit: int
    """Most lines allowed."""

    def __post_init__(self) -> None:
        """Validate the limit."""
        _positive(self.limit, "max-lines")

    @property
    def spec(self) -> str:
        """``max-lines:N``."""
        return f"max-lines:{self.limit}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Count the candidate's lines."""
        count = len(candidate.strip("\n").splitlines()) if candidate.strip() else 0
        if count <= self.limit:
            return Verdict(passed=True, score=1.0, details={"lines": count})
        feedback = f"The answer has {count} lines; the limit is {self.limit}. Cut {count - self.limit}."
        return Verdict(passed=False, score=self.limit / count, feedback=feedback, details={"lines": count})


@dataclass(frozen=True, slots=True)
class MaxWords:
    """Pass when the candidate has at most ``limit`` words (runs of non-space characters)."""

    limit: int
    """Most words allowed."""

    def __post_init__(self) -> None:
        """Validate the limit."""
        _positive(self.limit, "max-words")

    @property
    def spec(self) -> str:
        """``max-words:N``."""
        return f"max-words:{self.limit}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Count the candidate's words."""
        count = len(candidate.split())
        if count <= self.limit:
            return Verdict(passed=True, score=1.0, details={"words": count})
        feedback = f"The answer has {count} words; the limit is {self.limit}. Cut {count - self.limit}."
        return Verdict(passed=False, score=self.limit / count, feedback=feedback, details={"words": count})
