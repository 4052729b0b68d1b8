"""Verify Python code by running tests against it in the sandbox.

:class:`PythonTests` runs a test file (asserts, check calls or ``test*`` functions) against the
candidate; the HumanEval and MBPP verifiers in :mod:`~reasoning_graphs.verifiers.tasks` build on
the same runner. Feedback is one or two lines meant for a repair prompt: the failing assert and
the value its left side had, or the exception and the candidate line that raised it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from .._files import read_user_text
from ..errors import InputError
from ..types import Verdict
from ._source import parse_quietly
from .sandbox import SandboxLimits, SandboxResult, run_python_tests

__all__ = ["PythonTests", "extract_code", "sandbox_verdict"]

_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([\w+#-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.MULTILINE | re.DOTALL
)
_PYTHON = {"python", "py", "python3", "py3", ""}
_KEEP_OUTPUT = 1000


def _defines(code: str, name: str) -> bool:
    try:
        tree = parse_quietly(code)
    except SyntaxError:
        return f"def {name}(" in code
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name
        for n in tree.body
    )


def extract_code(text: str, entry_point: str | None = None) -> str:
    """Return the Python code in a reply, taken out of its markdown fence if it has one.

    With several fenced blocks, the first Python (or unlabelled) block that defines
    ``entry_point`` wins, else the first Python block. An unterminated fence runs to the end.
    Text without a fence is returned unchanged (indentation kept: it may be a completion).

    Args:
        text: The model's reply.
        entry_point: The function the code must define, if known.

    Returns:
        The code.
    """
    python = [body for lang, body in _FENCE.findall(text) if str(lang).lower() in _PYTHON]
    if not python:
        return text
    chosen: str = next((body for body in python if entry_point and _defines(body, entry_point)), python[0])
    return chosen


def _line(report: Mapping[str, JsonValue], where: str) -> str:
    line, source = report.get(f"{where}_line"), report.get(f"{where}_source")
    if source:
        return f"{where} line {line}: `{source}`"
    return f"{where} line {line}" if line else ""


def _failure_feedback(result: SandboxResult) -> str:
    failure = result.report.get("failure")
    report: Mapping[str, JsonValue] = failure if isinstance(failure, dict) else {}
    kind, message = str(report.get("type", "")), str(report.get("message", ""))
    test, candidate = _line(report, "test"), _line(report, "candidate")
    checks, failed = result.report.get("checks", 0), result.report.get("failed_checks", 0)
    tally = f" ({failed} of {checks} checks failed)" if isinstance(checks, int) and checks > 1 else ""
    if kind == "NoChecks":
        return "The tests contain no assert or check call, so nothing was verified."
    if kind == "SystemExit":
        where = f" at {candidate or test}" if candidate or test else ""
        return f"The code called exit({message}){where} before the tests finished; remove it."
    if kind == "NotPlainError" and test:
        return f"Failed {test}: {message}."
    if kind == "AssertionError" and test and not candidate:
        left = report.get("left")
        got = f"; the left side was {left}" if left is not None else ""
        note = f" (assert message: {message})" if message else ""
        return f"Failed {test}{got}{note}{tally}."
    if kind == "MemoryError":
        message = f"memory limit of {result.limits.memory_bytes // 2**20} MiB exceeded"
    text = f"{kind}: {message}" if message else kind
    places = [f"at {candidate}" if candidate else "", f"while running {test}" if test else ""]
    return f"{' '.join([text, *(p for p in places if p)])}{tally}."


def _feedback(result: SandboxResult) -> str:
    limits = result.limits
    if result.status == "timeout":
        return f"Timed out: the code ran longer than {limits.wall_seconds:g} s and was killed."
    if result.status == "cpu_limit":
        return f"Exceeded the CPU time limit of {limits.cpu_seconds} s (an endless loop, or too slow)."
    if result.status == "killed":
        return (
            f"The process was killed by signal {-(result.returncode or 0)} (CPU limit of "
            f"{limits.cpu_seconds} s, memory limit of {limits.memory_bytes // 2**20} MiB, or a crash)."
        )
    if result.status == "no_report":
        return (
            f"The process exited with code {result.returncode} before the tests finished "
            "(os._exit, exit from a thread, or a crash); the tests did not pass."
        )
    return _failure_feedback(result)


def sandbox_verdict(result: SandboxResult) -> Verdict:
    """Turn a sandbox run into a verdict.

    Args:
        result: What :func:`~reasoning_graphs.verifiers.sandbox.run_python_tests` returned.

    Returns:
        A verdict whose score is the fraction of checks that passed and whose details hold the
        run's status, counts, failure record, isolation guarantees and output tails.
    """
    checks, passed_checks = result.report.get("checks", 0), result.report.get("passed_checks", 0)
    details: dict[str, JsonValue] = {
        "status": result.status,
        "checks": checks,
        "passed_checks": passed_checks,
        "isolation": result.isolation.as_details(),
        "python": result.python,
        "returncode": result.returncode,
        "wall_seconds": round(result.wall_seconds, 4),
        "cpu_seconds": round(result.cpu_seconds, 4),
    }
    if result.status == "passed":
        return Verdict(passed=True, score=1.0, details=details)
    details.update(
        failure=result.report.get("failure"),
        stdout=result.stdout[-_KEEP_OUTPUT:],
        stderr=result.stderr[-_KEEP_OUTPUT:],
    )
    fraction = (
        passed_checks / checks if isinstance(checks, int) and isinstance(passed_checks, int) and checks else 0
    )
    return Verdict(passed=False, score=float(fraction), feedback=_feedback(result), details=details)


@dataclass(frozen=True, slots=True)
class PythonTests:
    """Pass when the candidate's code passes a Python test file in the sandbox.

    Each top-level ``assert`` or call statement and each top-level ``test*`` function (called
    with no arguments) is one check; the score is the fraction that passed.
    """

    tests: str
    """The test code."""
    path: str | None = None
    """The test file, as given in the spec (None when built from a string)."""
    setup: str = ""
    """Code run before the candidate and before the tests (imports)."""
    exports: tuple[str, ...] = ()
    """Candidate names the tests may use although they shadow a built-in."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    """Sandbox limits."""
    strict_types: bool = True
    """Require plain built-in data in every compared value (see ``run_python_tests``)."""

    def __post_init__(self) -> None:
        """Check that the tests parse."""
        try:
            parse_quietly(self.tests)
        except SyntaxError as exc:
            where = self.path or "the test code"
            raise InputError(f"the tests in {where!r} do not parse: {exc.msg} (line {exc.lineno})") from exc

    @classmethod
    def from_file(
        cls,
        path: str,
        *,
        setup: str = "",
        limits: SandboxLimits | None = None,
        strict_types: bool = True,
    ) -> PythonTests:
        """Build the verifier from a test file.

        Args:
            path: A Python file of asserts, check calls or ``test*`` functions.
            setup: Code run before the candidate and the tests.
            limits: Sandbox limits (default ``SandboxLimits()``).
            strict_types: See the field of the same name.

        Returns:
            The verifier.

        Raises:
            InputError: The file cannot be read or does not parse.
        """
        tests = read_user_text(path, "the test file")
        return cls(tests, path, setup, limits=limits or SandboxLimits(), strict_types=strict_types)

    @property
    def spec(self) -> str:
        """``python-tests:PATH``."""
        if self.path is None:
            raise InputError("PythonTests built from a string has no spec; use PythonTests.from_file(path)")
        return f"python-tests:{self.path}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Run the tests against the candidate's code (a markdown fence is removed first)."""
        result = run_python_tests(
            extract_code(candidate),
            self.tests,
            setup=self.setup,
            exports=self.exports,
            limits=self.limits,
            strict_types=self.strict_types,
        )
        return sandbox_verdict(result)
