"""Game of 24: check that an expression uses each of four numbers once and makes 24.

The expression is parsed with :mod:`ast` and evaluated by walking the tree with exact
``fractions.Fraction`` arithmetic; nothing is ever passed to ``eval``. Only whole numbers,
``+ - * /`` and parentheses are allowed. Answers such as ``(10 - 4) * (13 - 9) = 24`` or
``Answer: 4 * 6`` are accepted: the expression is cut out of the text first.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import combinations

from ..errors import InputError
from ..types import Verdict
from ._source import parse_quietly

__all__ = ["Game24", "evaluate_24", "extract_expression", "solve_24"]

_TARGET = 24
_MAX_LENGTH = 200
_OPERATORS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
# Multiplication sign, asterisk operator, middle dot, division sign, minus sign, en and em dash.
_LOOKALIKES = str.maketrans(
    dict.fromkeys("\u00d7\u2217\u00b7", "*") | {"\u00f7": "/"} | dict.fromkeys("\u2212\u2013\u2014", "-")
)
_ANSWER = re.compile(r"answer\s*(?:is)?\s*:?", re.IGNORECASE)
_HAS_OPERATOR = re.compile(r"\d\s*[-+*/]\s*[\d(]|\)\s*[-+*/]")


def extract_expression(text: str) -> str:
    """Cut the arithmetic expression out of an answer.

    Takes the line after the last "Answer:" (else the last line that holds an expression),
    drops markdown and a ``= 24`` side, and maps the multiplication, division and minus signs
    to ASCII.

    Args:
        text: The candidate answer.

    Returns:
        The expression text (possibly empty).
    """
    markers = list(_ANSWER.finditer(text))
    if markers:
        text = text[markers[-1].end() :]
    text = text.translate(_LOOKALIKES).replace("`", "").replace("$", "").replace("**", "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[0] if markers else next((x for x in reversed(lines) if _HAS_OPERATOR.search(x)), lines[-1])
    sides = [side.strip().rstrip(".") for side in line.split("=")]
    with_ops = [side for side in sides if _HAS_OPERATOR.search(side)]
    return with_ops[0] if with_ops else sides[0]


def _evaluate(node: ast.expr, numbers: list[int]) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        numbers.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left, numbers), _evaluate(node.right, numbers)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if right == 0:
            raise ValueError("it divides by zero")
        return left / right
    found = type(node.op if isinstance(node, ast.BinOp) else node).__name__
    raise ValueError(f"only whole numbers, + - * / and parentheses are allowed (found {found})")


def evaluate_24(expression: str) -> tuple[Fraction, list[int]]:
    """Evaluate an arithmetic expression exactly, without ``eval``.

    Args:
        expression: Numbers, ``+ - * /`` and parentheses.

    Returns:
        The exact value and the numbers used, in order of appearance.

    Raises:
        ValueError: The expression is empty, too long, not arithmetic, or divides by zero.
    """
    if not expression.strip():
        raise ValueError("no expression found")
    if len(expression) > _MAX_LENGTH:
        raise ValueError(f"the expression is longer than {_MAX_LENGTH} characters")
    try:
        tree = parse_quietly(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{expression!r} is not a valid expression ({exc.msg})") from exc
    numbers: list[int] = []
    return _evaluate(tree.body, numbers), numbers


def _words(numbers: list[int] | tuple[int, ...]) -> str:
    return " ".join(map(str, numbers))


@dataclass(frozen=True, slots=True)
class Game24:
    """Pass when the candidate's expression uses each puzzle number exactly once and equals 24."""

    numbers: tuple[int, ...]
    """The puzzle, e.g. ``(4, 9, 10, 13)``."""

    def __post_init__(self) -> None:
        """Validate the puzzle."""
        if not self.numbers or any(type(n) is not int or n < 0 for n in self.numbers):
            raise InputError(f"game24 needs whole numbers >= 0, got {self.numbers!r}")

    @classmethod
    def parse(cls, puzzle: str) -> Game24:
        """Build the verifier from a puzzle written as space-separated numbers (``"4 9 10 13"``).

        Args:
            puzzle: The numbers.

        Returns:
            The verifier.

        Raises:
            InputError: The text is not a list of whole numbers.
        """
        try:
            return cls(tuple(int(n) for n in puzzle.replace(",", " ").split()))
        except ValueError as exc:
            raise InputError(f"game24 needs numbers such as '4 9 10 13', got {puzzle!r}") from exc

    @property
    def spec(self) -> str:
        """``game24:4 9 10 13``."""
        return f"game24:{_words(self.numbers)}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Check the expression in the candidate."""
        expression = extract_expression(candidate)
        try:
            value, used = evaluate_24(expression)
        except ValueError as exc:
            return Verdict(
                passed=False, feedback=f"Invalid answer: {exc}.", details={"expression": expression}
            )
        details = {"expression": expression, "value": str(value)}
        if Counter(used) != Counter(self.numbers):
            missing = sorted((Counter(self.numbers) - Counter(used)).elements())
            extra = sorted((Counter(used) - Counter(self.numbers)).elements())
            problems = [
                f"missing {_words(missing)}" if missing else "",
                f"extra {_words(extra)}" if extra else "",
            ]
            return Verdict(
                passed=False,
                feedback=f"{expression} uses {_words(used)} but the numbers are {_words(self.numbers)} "
                f"({', '.join(p for p in problems if p)}); use each number exactly once.",
                details=details,
            )
        if value != _TARGET:
            return Verdict(passed=False, feedback=f"{expression} = {value}, not {_TARGET}.", details=details)
        return Verdict(passed=True, score=1.0, details=details)


def _strip_parens(expression: str) -> str:
    return expression[1:-1] if expression.startswith("(") and expression.endswith(")") else expression


@lru_cache(maxsize=1 << 16)
def _search(values: tuple[Fraction, ...]) -> bool:
    """Whether some arrangement of the (sorted) values reaches the target."""
    if len(values) == 1:
        return values[0] == _TARGET
    return any(_search(rest) for _, rest in _moves(values))


def _moves(values: tuple[Fraction, ...]) -> list[tuple[tuple[int, int, str], tuple[Fraction, ...]]]:
    moves = []
    for i, j in combinations(range(len(values)), 2):
        a, b = values[i], values[j]
        others = [v for k, v in enumerate(values) if k not in (i, j)]
        results = [(a + b, "+", i, j), (a - b, "-", i, j), (b - a, "-", j, i), (a * b, "*", i, j)]
        results += [(a / b, "/", i, j)] if b else []
        results += [(b / a, "/", j, i)] if a else []
        moves += [((x, y, op), tuple(sorted([*others, value]))) for value, op, x, y in results]
    return moves


def solve_24(numbers: list[int] | tuple[int, ...]) -> str | None:
    """Find an expression that uses each number once and makes 24, by exhaustive search.

    Args:
        numbers: The puzzle, e.g. ``[4, 9, 10, 13]``.

    Returns:
        An expression such as ``(10 - 4) * (13 - 9)``, or None when there is none.
    """
    items = sorted((Fraction(n), str(n)) for n in numbers)
    while len(items) > 1:
        values = tuple(v for v, _ in items)
        move = next((move for move, rest in _moves(values) if _search(rest)), None)
        if move is None:
            return None
        x, y, op = move
        combined = (_apply(values[x], values[y], op), f"({items[x][1]} {op} {items[y][1]})")
        items = sorted([*(item for k, item in enumerate(items) if k not in (x, y)), combined])
    if not items or items[0][0] != _TARGET:
        return None
    return _strip_parens(items[0][1])


def _apply(a: Fraction, b: Fraction, op: str) -> Fraction:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    return a * b if op == "*" else a / b
