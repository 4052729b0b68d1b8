r"""Verifier spec strings: name a verifier in text, for Studio, the CLI and stored configs.

A spec is ``name:argument``; the argument runs to the end of the spec and is taken literally::

    python-tests:tests/test_sort.py     humaneval:HumanEval/0      mbpp:2
    game24:4 9 10 13                    numeric:18                 numeric:0.5~0.01
    exact:Paris                         normalized:paris           regex:(?i)\bparis\b
    json-schema:schema.json             json-schema:{"type":"object"}
    max-lines:3                         max-words:50               quotes-in:evidence.txt
    pydantic:my_pkg.models:Answer

``humaneval`` and ``mbpp`` take an optional ``@PATH`` naming the data file or its directory.
``numeric`` takes an optional ``~TOLERANCE`` (absolute; default 1e-6). ``quotes-in:`` with no
path uses the task text as the evidence. ``pydantic`` imports the named module.

Specs combine with `` && `` (all must pass) and `` || `` (any may pass); ``&&`` binds tighter,
and ``( `` ... `` )`` (parentheses set off by spaces) group::

    max-lines:3 && ( regex:Paris || regex:paris )

An argument therefore cannot contain `` && `` or `` || ``, nor start with ``( `` or end with
`` )``; use a file-based spec (``python-tests:``, ``json-schema:``) for such text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import InputError
from .base import SpecVerifier, all_of, any_of
from .game24 import Game24
from .python_tests import PythonTests
from .quotes import QuotesInEvidence
from .schema import JsonSchemaMatch, PydanticMatch
from .tasks import HumanEvalTests, MbppTests
from .text import ExactMatch, MaxLines, MaxWords, NormalizedMatch, NumericMatch, RegexSearch

__all__ = ["from_spec", "known_specs"]

_OPERATOR = re.compile(r"(?:(?<=\s)|^)(&&|\|\|)(?=\s|$)")


def _with_path(argument: str) -> tuple[str, str | None]:
    head, sep, path = argument.partition("@")
    return head.strip(), (path.strip() or None) if sep else None


def _whole(argument: str) -> int:
    try:
        return int(argument.strip())
    except ValueError:
        raise InputError(f"expected a whole number, got {argument!r}") from None


def _numeric(argument: str) -> NumericMatch:
    value, sep, tolerance = argument.partition("~")
    if not sep:
        return NumericMatch(value.strip())
    try:
        return NumericMatch(value.strip(), float(tolerance))
    except ValueError:
        raise InputError(f"bad tolerance {tolerance!r}") from None


def _json_schema(argument: str) -> JsonSchemaMatch:
    text = argument.strip()
    return JsonSchemaMatch(text) if text.startswith("{") else JsonSchemaMatch.from_file(text)


def _humaneval(argument: str) -> HumanEvalTests:
    task_id, path = _with_path(argument)
    return HumanEvalTests(task_id, path)


def _mbpp(argument: str) -> MbppTests:
    task_id, path = _with_path(argument)
    return MbppTests(_whole(task_id), path)


def _quotes(argument: str) -> QuotesInEvidence:
    return QuotesInEvidence.from_file(argument.strip()) if argument.strip() else QuotesInEvidence()


_REGISTRY: dict[str, tuple[Callable[[str], SpecVerifier], str]] = {
    "exact": (ExactMatch, "the answer equals TEXT (surrounding whitespace ignored)"),
    "game24": (Game24.parse, "an arithmetic expression using each of the numbers once makes 24"),
    "humaneval": (_humaneval, "HumanEval task TASK_ID[@DATA_PATH]: its tests pass in the sandbox"),
    "json-schema": (_json_schema, "the answer's JSON validates against the schema in PATH (or inline {...})"),
    "max-lines": (lambda a: MaxLines(_whole(a)), "the answer has at most N lines"),
    "max-words": (lambda a: MaxWords(_whole(a)), "the answer has at most N words"),
    "mbpp": (_mbpp, "MBPP task TASK_ID[@DATA_PATH]: its asserts pass in the sandbox"),
    "normalized": (NormalizedMatch, "the answer equals TEXT ignoring case, spacing and punctuation"),
    "numeric": (_numeric, "the answer's final number equals VALUE[~ABSOLUTE_TOLERANCE]"),
    "pydantic": (PydanticMatch.from_name, "the answer's JSON validates as the model module:ClassName"),
    "python-tests": (PythonTests.from_file, "the Python test file PATH passes against the code, sandboxed"),
    "quotes-in": (_quotes, "every quoted span occurs in the evidence file PATH (empty: the task text)"),
    "regex": (RegexSearch, "the regular expression PATTERN is found in the answer"),
}


def known_specs() -> dict[str, str]:
    """Return the spec names with a one-line description of each.

    Returns:
        Name to description, sorted by name.
    """
    return {name: description for name, (_, description) in sorted(_REGISTRY.items())}


def _error(spec: str, reason: str) -> InputError:
    return InputError(f"bad verifier spec {spec!r}: {reason}; known names: {', '.join(sorted(_REGISTRY))}")


def _atom(text: str, whole: str) -> SpecVerifier:
    name, sep, argument = text.partition(":")
    name = name.strip()
    if not sep or name not in _REGISTRY:
        reason = f"unknown verifier name {name!r}" if sep else "expected 'name:argument'"
        raise _error(whole, reason)
    try:
        return _REGISTRY[name][0](argument)
    except InputError as exc:
        raise _error(whole, f"{name}: {exc}") from exc


def _tokens(spec: str) -> list[str]:
    """Split into atoms, ``&&``, ``||``, ``(`` and ``)``."""
    tokens: list[str] = []
    for i, piece in enumerate(_OPERATOR.split(spec.strip())):
        if i % 2:
            tokens.append(piece)
            continue
        piece = piece.strip()
        while piece.startswith("(") and (len(piece) == 1 or piece[1].isspace()):
            tokens.append("(")
            piece = piece[1:].lstrip()
        closing = 0
        while piece.endswith(")") and (len(piece) == 1 or piece[-2].isspace()):
            closing += 1
            piece = piece[:-1].rstrip()
        tokens += ([piece] if piece else []) + [")"] * closing
    return tokens


class _Parser:
    def __init__(self, spec: str) -> None:
        self.spec, self.tokens, self.pos = spec, _tokens(spec), 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise _error(self.spec, "it ends too early")
        self.pos += 1
        return token

    def expression(self) -> SpecVerifier:
        parts = [self.conjunction()]
        while self.peek() == "||":
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else any_of(*parts)

    def conjunction(self) -> SpecVerifier:
        parts = [self.primary()]
        while self.peek() == "&&":
            self.take()
            parts.append(self.primary())
        return parts[0] if len(parts) == 1 else all_of(*parts)

    def primary(self) -> SpecVerifier:
        token = self.take()
        if token == "(":
            inner = self.expression()
            if self.peek() != ")":
                raise _error(self.spec, "a '(' is not closed")
            self.take()
            return inner
        if token in ("&&", "||", ")"):
            raise _error(self.spec, f"unexpected {token!r}")
        return _atom(token, self.spec)


def from_spec(spec: str) -> SpecVerifier:
    """Build a verifier from its spec string (see the module notes for the grammar).

    Args:
        spec: e.g. ``"numeric:18"`` or ``"max-lines:3 && regex:(?i)paris"``.

    Returns:
        The verifier; its ``spec`` property gives back an equivalent string.

    Raises:
        InputError: An unknown name or a bad argument; the message quotes the spec and lists
            the known names.
    """
    if not spec.strip():
        raise _error(spec, "it is empty")
    parser = _Parser(spec)
    verifier = parser.expression()
    if parser.peek() is not None:
        raise _error(spec, f"unexpected {parser.peek()!r}")
    return verifier
