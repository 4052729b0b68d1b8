"""PythonTests: test files, checks and scores, feedback for repair prompts, code extraction."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.verifiers import PythonTests, arun_verifier, extract_code, from_spec

from .conftest import FAST

SORT_TESTS = """\
import math

assert sort_desc([3, 1, 2]) == [3, 2, 1]
assert sort_desc([]) == []
assert math.isclose(sum(sort_desc([0.1, 0.2])), 0.3)

def test_duplicates():
    assert sort_desc([2, 2, 1]) == [2, 2, 1]
"""


def test_passing_code_scores_one(tmp_path: Path) -> None:
    path = tmp_path / "test_sort.py"
    path.write_text(SORT_TESTS)
    verifier = PythonTests.from_file(str(path), limits=FAST)
    verdict = verifier("def sort_desc(xs):\n    return sorted(xs, reverse=True)\n")
    assert verdict.passed and verdict.score == 1.0 and verdict.feedback == ""
    assert verdict.details["checks"] == 4 and verdict.details["passed_checks"] == 4
    assert verifier.spec == f"python-tests:{path}"
    rebuilt = from_spec(verifier.spec)
    assert isinstance(rebuilt, PythonTests)
    assert rebuilt.spec == verifier.spec and rebuilt.tests == verifier.tests


def test_failing_check_names_the_assert_and_the_value() -> None:
    verdict = PythonTests(SORT_TESTS, limits=FAST)("def sort_desc(xs):\n    return sorted(xs)\n")
    assert not verdict.passed
    assert verdict.score == pytest.approx(2 / 4)
    assert verdict.feedback == (
        "Failed test line 3: `assert sort_desc([3, 1, 2]) == [3, 2, 1]`; the left side was [1, 2, 3] "
        "(2 of 4 checks failed)."
    )
    assert len(verdict.feedback.splitlines()) == 1


def test_exception_names_the_candidate_line_and_the_test() -> None:
    code = "def sort_desc(xs):\n    first = xs[0]\n    return sorted(xs, reverse=True)\n"
    verdict = PythonTests(SORT_TESTS, limits=FAST)(code)
    assert not verdict.passed
    assert verdict.feedback.startswith(
        "IndexError: list index out of range at candidate line 2: `first = xs[0]` "
        "while running test line 4: `assert sort_desc([]) == []`"
    )


def test_syntax_error_in_candidate() -> None:
    verdict = PythonTests(SORT_TESTS, limits=FAST)("def sort_desc(xs)\n    return xs\n")
    assert not verdict.passed
    assert verdict.feedback.startswith("SyntaxError: expected ':' at candidate line 1")


def test_fenced_reply_is_extracted() -> None:
    reply = (
        "Here is my solution:\n\n```python\ndef sort_desc(xs):\n    return sorted(xs, reverse=True)\n```\n"
        "\nExample:\n```python\nprint(sort_desc([1, 2]))\n```\n"
    )
    assert PythonTests(SORT_TESTS, limits=FAST)(reply).passed


@pytest.mark.parametrize(
    ("text", "entry_point", "expected"),
    [
        ("def f(): pass\n", None, "def f(): pass\n"),
        ("    return x + 1\n", None, "    return x + 1\n"),
        ("```py\nA = 1\n```", None, "A = 1\n"),
        ("```\nA = 1\n```", None, "A = 1\n"),
        ("```python\ndef g(): pass\n", None, "def g(): pass\n"),
        ("```bash\nls\n```\n```python\nB = 2\n```", None, "B = 2\n"),
        (
            "```python\nimport os\n```\n```python\ndef f():\n    return 1\n```",
            "f",
            "def f():\n    return 1\n",
        ),
        ("no code here", None, "no code here"),
    ],
    ids=["plain", "completion", "py", "unlabelled", "unterminated", "skip-bash", "entry-point", "prose"],
)
def test_extract_code(text: str, entry_point: str | None, expected: str) -> None:
    assert extract_code(text, entry_point) == expected


def test_tests_without_checks_fail() -> None:
    verdict = PythonTests("x = 1\n", limits=FAST)("def f(): pass\n")
    assert not verdict.passed
    assert "no assert or check call" in verdict.feedback


def test_non_strict_mode_allows_user_classes() -> None:
    tests = "assert make(1) == Box(1)\n"
    code = (
        "class Box:\n    def __init__(self, v): self.v = v\n    def __eq__(self, o): return self.v == o.v\n"
    )
    code += "def make(v): return Box(v)\n"
    assert not PythonTests(tests, limits=FAST)(code).passed
    assert PythonTests(tests, limits=FAST, strict_types=False)(code).passed


def test_exports_let_tests_use_a_candidate_function_named_like_a_builtin() -> None:
    code = "def sum(a, b):\n    return a * b\n"
    assert not PythonTests("assert sum(2, 3) == 6\n", limits=FAST)(code).passed
    assert PythonTests("assert sum(2, 3) == 6\n", exports=("sum",), limits=FAST)(code).passed


def test_bad_test_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"the test file .* does not exist"):
        PythonTests.from_file(str(tmp_path / "missing.py"))
    with pytest.raises(InputError, match="do not parse"):
        PythonTests("assert (\n")
    with pytest.raises(InputError, match="has no spec"):
        _ = PythonTests("assert True\n").spec


def test_async_callers_run_sandboxes_concurrently() -> None:
    verifier = PythonTests("assert f() == 1\n", limits=FAST)

    async def main() -> list[bool]:
        verdicts = await asyncio.gather(*(arun_verifier(verifier, "def f(): return 1\n") for _ in range(4)))
        return [v.passed for v in verdicts]

    assert asyncio.run(main()) == [True] * 4
