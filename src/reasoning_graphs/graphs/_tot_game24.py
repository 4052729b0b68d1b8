"""The ``game24`` tree-of-thoughts task: Game of 24 in the step format of Yao et al. 2023.

A step reads ``4 + 9 = 13 (left: 10 13 13)``: two of the numbers left, one operation, the
result, and the numbers left after it. The arithmetic is checked exactly (``Fraction``; a decimal
result such as ``2.67`` for 8/3 may be off by 0.01) and the numbers left are recomputed in code
(the model's list is ignored). Each node keeps the expression behind every number left, so a
terminal node's answer is the full expression over the original numbers, rebuilt in code and
checked exactly by the ``game24`` verifier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._tot_tasks import Parsed, Step, ThoughtNode, clean_line, list_of
from reasoning_graphs.prompting import PromptTemplate

__all__ = ["GAME24_PROPOSE_PROMPT", "GAME24_VALUE_PROMPT", "Game24Task"]

GAME24_PROPOSE_PROMPT = PromptTemplate(
    "Use the numbers and basic arithmetic operations (+ - * /) to obtain 24. Each step picks two "
    "of the numbers left, combines them with one operation, and lists the numbers left.\n"
    "Example:\nInput: 2 8 8 14\nPossible next steps:\n"
    "2 + 8 = 10 (left: 8 10 14)\n8 / 2 = 4 (left: 4 8 14)\n14 + 2 = 16 (left: 8 8 16)\n"
    "2 * 8 = 16 (left: 8 14 16)\n8 - 2 = 6 (left: 6 8 14)\n14 - 8 = 6 (left: 2 6 8)\n\n"
    "Puzzle: {puzzle}\nSteps so far:\n{steps}\nInput: {left}\n"
    "Write up to {breadth} possible next steps, one per line, in the format above.\n"
    "Possible next steps:\n"
)
"""Ask for next steps; the parent's partial solution (its steps) is part of the prompt."""

GAME24_VALUE_PROMPT = PromptTemplate(
    "Evaluate if the given numbers can reach 24 (sure/likely/impossible).\n"
    "Numbers: 10 14\n10 + 14 = 24\nsure\n"
    "Numbers: 4 4 10\n(10 - 4) * 4 = 24\nsure\n"
    "Numbers: 11 12\n11 + 12 = 23\n12 - 11 = 1\n11 * 12 = 132\n11 / 12 = 0.91\nimpossible\n"
    "Numbers: 5 7 8\n5 + 7 + 8 = 20\n(8 - 5) * 7 = 21\n"
    "I cannot obtain 24 now, but the numbers are within a reasonable range\nlikely\n"
    "Numbers: 1 3 3\n1 * 3 * 3 = 9\n(1 + 3) * 3 = 12\n1 3 3 are all too small\nimpossible\n"
    "Numbers: {left}\n"
)
"""Ask whether the numbers left can still reach 24; the last line of the reply is the label."""

_NUM = r"-?\d+(?:\.\d+)?(?:/\d+)?"
_STEP = re.compile(
    rf"^(?P<a>{_NUM})\s*(?P<op>[-+*/x\u00d7\u00f7\u2212])\s*(?P<b>{_NUM})\s*=\s*(?P<c>{_NUM})(?!\d)"
)
_OPS = {"+": "+", "-": "-", "\u2212": "-", "*": "*", "\u00d7": "*", "x": "*", "/": "/", "\u00f7": "/"}
"""Operator spellings (ASCII, minus sign, times sign, division sign) to ASCII."""
_DECIMAL_SLACK = Fraction(1, 100)


def _fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _take(values: list[Fraction], written: str) -> int | None:
    """Return the index of the number ``written`` refers to (decimals may be rounded)."""
    wanted = Fraction(written)
    for i, value in enumerate(values):
        if value == wanted:
            return i
    if "." in written:
        near = [(abs(v - wanted), i) for i, v in enumerate(values) if abs(v - wanted) <= _DECIMAL_SLACK]
        return min(near)[1] if near else None
    return None


def _apply(a: Fraction, op: str, b: Fraction) -> Fraction | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a / b if b else None


@dataclass(frozen=True)
class Game24Task:
    """Game of 24 in the Yao et al. step format (see the module docstring)."""

    name: str = "game24"
    """The task's name."""
    min_depth: int = 3
    """Three steps leave one number."""

    def root(self, task: str) -> ThoughtNode:
        """Parse four whole numbers (``"4 9 10 13"``) into the root node."""
        words = task.replace(",", " ").split()
        if len(words) != 4 or not all(w.isdigit() for w in words):
            raise InputError(f"game24 needs four whole numbers such as '4 9 10 13', got {task!r}")
        numbers = sorted(int(w) for w in words)
        text = " ".join(map(str, numbers))
        return ThoughtNode(id="0", text=text, data={"left": text.split(), "exprs": text.split()})

    def propose_prompt(self, task: str, node: ThoughtNode, breadth: int) -> str:
        """Show the puzzle, the steps so far and the numbers left."""
        left = " ".join(str(x) for x in list_of(node.data, "left"))
        return GAME24_PROPOSE_PROMPT.render(
            puzzle=task.strip(), steps=node.partial or "(none yet)", left=left, breadth=breadth
        )

    def parse(self, reply: str, node: ThoughtNode) -> Parsed:
        """Keep lines ``a op b = c`` whose numbers are left and whose arithmetic is right."""
        left = [Fraction(str(x)) for x in list_of(node.data, "left")]
        exprs = [str(x) for x in list_of(node.data, "exprs")]
        steps: list[Step] = []
        seen: set[str] = set()
        malformed = 0
        for raw in reply.splitlines():
            line = clean_line(raw)
            if not line:
                continue
            step = self._step(line, left, exprs)
            if step is None:
                malformed += 1
            elif step.text not in seen:
                seen.add(step.text)
                steps.append(step)
        return Parsed(steps, malformed)

    def _step(self, line: str, left: list[Fraction], exprs: list[str]) -> Step | None:
        match = _STEP.match(line)
        if match is None:
            return None
        op = _OPS[match["op"]]
        i = _take(left, match["a"])
        if i is None:
            return None
        rest = [v for k, v in enumerate(left) if k != i]
        j = _take(rest, match["b"])
        if j is None:
            return None
        j = j if j < i else j + 1
        a, b = left[i], left[j]
        result = _apply(a, op, b)
        claimed = Fraction(match["c"])
        slack = _DECIMAL_SLACK if "." in match["c"] else Fraction(0)
        if result is None or abs(result - claimed) > slack:
            return None
        pairs = [(v, e) for k, (v, e) in enumerate(zip(left, exprs, strict=True)) if k not in (i, j)]
        pairs = sorted([*pairs, (result, f"({exprs[i]} {op} {exprs[j]})")], key=lambda p: p[0])
        new_left = [_fmt(v) for v, _ in pairs]
        text = f"{_fmt(a)} {op} {_fmt(b)} = {_fmt(result)} (left: {' '.join(new_left)})"
        return Step(text, {"left": list(new_left), "exprs": [e for _, e in pairs]})

    def value_prompt(self, task: str, node: ThoughtNode) -> str:
        """Ask about the numbers left only (so equal states share one value)."""
        return GAME24_VALUE_PROMPT.render(left=" ".join(str(x) for x in list_of(node.data, "left")))

    def is_terminal(self, step: Step) -> bool:
        """One number left."""
        return len(list_of(step.data, "left")) == 1

    def answer(self, step: Step) -> str:
        """The full expression built from the original numbers."""
        expr = str(list_of(step.data, "exprs")[0])
        return expr[1:-1] if expr.startswith("(") and expr.endswith(")") else expr

    def default_verifier(self, task: str) -> str | None:
        """``game24:<the numbers>``."""
        return "game24:" + " ".join(task.replace(",", " ").split())
