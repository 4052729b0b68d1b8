"""Benchmark tasks with their verifiers: HumanEval, MBPP and GSM8K, read from the data files.

Data files are found, in order, at the ``path`` you pass (a file or a directory), in the
directory named by the ``REASONING_GRAPHS_DATA`` environment variable, or in ``../shared/data``
relative to the current directory. A spec may name the file after ``@``:
``humaneval:HumanEval/0@/data/humaneval.jsonl``.

A :class:`Task` carries the dataset's reference answer so tests can check that a verifier
accepts it; never put the reference into a prompt.
"""

from __future__ import annotations

import ast
import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import InputError
from ..types import Verdict
from ._source import parse_quietly
from .base import SpecVerifier
from .python_tests import extract_code, sandbox_verdict
from .sandbox import SandboxLimits, run_python_tests
from .text import NumericMatch

__all__ = [
    "HumanEvalTests",
    "MbppTests",
    "Task",
    "data_file",
    "gsm8k_final_answer",
    "load_gsm8k",
    "load_humaneval",
    "load_mbpp",
]

HUMANEVAL_FILE = "humaneval.jsonl"
MBPP_FILE = "mbpp_sanitized.jsonl"
GSM8K_FILE = "gsm8k_test.jsonl"
_ENV = "REASONING_GRAPHS_DATA"


@dataclass(frozen=True, slots=True)
class Task:
    """One benchmark item: what to ask, and how to check the answer."""

    id: str
    """Stable id, e.g. ``HumanEval/0``, ``mbpp/2`` or ``gsm8k/0``."""
    prompt: str
    """The text to give the model."""
    verifier: SpecVerifier
    """Checks a candidate answer."""
    reference: str = field(repr=False)
    """The dataset's reference answer: for checking verifiers only, never for prompts."""

    @property
    def spec(self) -> str:
        """The verifier's spec string."""
        return self.verifier.spec


def data_file(name: str, path: str | os.PathLike[str] | None = None) -> Path:
    """Locate a data file (see the module notes for the search order).

    Args:
        name: The file name, e.g. ``humaneval.jsonl``.
        path: A file, or a directory holding ``name``.

    Returns:
        The file's path.

    Raises:
        InputError: The file does not exist.
    """
    if path is not None:
        found = Path(path)
        found = found / name if found.is_dir() else found
    elif os.environ.get(_ENV):
        found = Path(os.environ[_ENV]) / name
    else:
        found = Path.cwd().parent / "shared" / "data" / name
    if not found.is_file():
        raise InputError(
            f"data file {str(found)!r} not found; pass its path, or set {_ENV} to the directory "
            f"holding {name!r}"
        )
    return found


@functools.lru_cache(maxsize=16)
def _read_jsonl(path: Path, mtime_ns: int, size: int) -> tuple[Mapping[str, Any], ...]:
    try:
        with path.open(encoding="utf-8") as lines:
            return tuple(MappingProxyType(json.loads(line)) for line in lines if line.strip())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {str(path)!r} as JSON lines: {exc}") from exc


def _records(name: str, path: str | os.PathLike[str] | None) -> tuple[Mapping[str, Any], ...]:
    found = data_file(name, path).resolve()
    stat = found.stat()
    return _read_jsonl(found, stat.st_mtime_ns, stat.st_size)


def _find(name: str, path: str | None, key: str, wanted: object) -> Mapping[str, Any]:
    for record in _records(name, path):
        if record.get(key) == wanted:
            return record
    raise InputError(f"no task {wanted!r} in {str(data_file(name, path))!r}")


def _body(code: str) -> list[ast.stmt]:
    return parse_quietly(code).body


def _spec(kind: str, task_id: object, path: str | None) -> str:
    return f"{kind}:{task_id}" + (f"@{path}" if path is not None else "")


@dataclass(frozen=True, slots=True)
class HumanEvalTests:
    """Pass when the candidate passes a HumanEval task's tests in the sandbox.

    The candidate is either a completion of the prompt (the function body) or a full function
    (possibly in a markdown fence); either way it runs after the prompt, then the task's
    ``check(entry_point)``.
    """

    task_id: str
    """``HumanEval/N`` (``N`` alone is accepted too)."""
    path: str | None = None
    """The data file or directory, as given (None: the default search)."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    """Sandbox limits."""
    record: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    """The dataset record (read-only)."""

    def __post_init__(self) -> None:
        """Normalize the id and load the record."""
        task_id = self.task_id if self.task_id.startswith("HumanEval/") else f"HumanEval/{self.task_id}"
        object.__setattr__(self, "task_id", task_id)
        object.__setattr__(self, "record", _find(HUMANEVAL_FILE, self.path, "task_id", task_id))

    @property
    def spec(self) -> str:
        """``humaneval:HumanEval/N`` (with ``@PATH`` when a path was given)."""
        return _spec("humaneval", self.task_id, self.path)

    @property
    def prompt(self) -> str:
        """The task's prompt: the function's signature and docstring."""
        return str(self.record["prompt"])

    def program(self, candidate: str) -> str:
        """Return the code that runs: the prompt, then the candidate's completion or function."""
        prompt, entry_point = self.record["prompt"], self.record["entry_point"]
        code = extract_code(candidate, entry_point)
        try:
            full = any(
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point
                for node in _body(code)
            )
        except SyntaxError:
            full = False
        return f"{prompt}\n\n{code}" if full else prompt + code

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Run the task's tests against the candidate."""
        entry_point = self.record["entry_point"]
        tests = f"{self.record['test']}\n\ncheck({entry_point})\n"
        result = run_python_tests(self.program(candidate), tests, exports=(entry_point,), limits=self.limits)
        return sandbox_verdict(result)


@dataclass(frozen=True, slots=True)
class MbppTests:
    """Pass when the candidate passes an MBPP (sanitized) task's asserts in the sandbox."""

    task_id: int
    """The MBPP task number."""
    path: str | None = None
    """The data file or directory, as given (None: the default search)."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    """Sandbox limits."""
    record: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    """The dataset record (read-only)."""

    def __post_init__(self) -> None:
        """Load the record."""
        object.__setattr__(self, "record", _find(MBPP_FILE, self.path, "task_id", self.task_id))

    @property
    def spec(self) -> str:
        """``mbpp:N`` (with ``@PATH`` when a path was given)."""
        return _spec("mbpp", self.task_id, self.path)

    @property
    def prompt(self) -> str:
        """The task's prompt as in the MBPP paper: the description, then the asserts to pass."""
        tests = "\n".join(self.record["test_list"])
        return f"{self.record['prompt']}\nYour code should pass these tests:\n\n{tests}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Run the task's asserts against the candidate (its ``test_imports`` run first)."""
        exports = tuple(
            node.name
            for node in _body(self.record["code"])
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        )
        result = run_python_tests(
            extract_code(candidate),
            "\n".join(self.record["test_list"]),
            setup="\n".join(self.record["test_imports"]),
            exports=exports,
            limits=self.limits,
        )
        return sandbox_verdict(result)


def load_humaneval(path: str | None = None) -> list[Task]:
    """Load the 164 HumanEval tasks; the prompt is the function signature and docstring.

    Args:
        path: The data file or its directory (see the module notes).

    Returns:
        The tasks, in file order.
    """
    tasks = []
    for record in _records(HUMANEVAL_FILE, path):
        verifier = HumanEvalTests(record["task_id"], path)
        tasks.append(
            Task(verifier.task_id, verifier.prompt, verifier, record["prompt"] + record["canonical_solution"])
        )
    return tasks


def load_mbpp(path: str | None = None) -> list[Task]:
    """Load the 427 MBPP (sanitized) tasks, prompted as in the MBPP paper (text plus the asserts).

    Args:
        path: The data file or its directory (see the module notes).

    Returns:
        The tasks, in file order.
    """
    tasks = []
    for record in _records(MBPP_FILE, path):
        verifier = MbppTests(record["task_id"], path)
        tasks.append(Task(f"mbpp/{verifier.task_id}", verifier.prompt, verifier, record["code"]))
    return tasks


def gsm8k_final_answer(solution: str) -> str:
    """Return the final answer of a GSM8K solution: the text after its last ``####``.

    Args:
        solution: A GSM8K ``answer`` field.

    Returns:
        The final answer as written (e.g. ``1,450,000``).

    Raises:
        InputError: The solution has no ``####`` line.
    """
    if "####" not in solution:
        raise InputError(f"GSM8K solution without a '####' final answer: {solution[-80:]!r}")
    return solution.rsplit("####", 1)[1].strip()


def load_gsm8k(path: str | None = None) -> list[Task]:
    """Load the 1319 GSM8K test questions, each checked by :class:`NumericMatch`.

    Args:
        path: The data file or its directory (see the module notes).

    Returns:
        The tasks, ids ``gsm8k/0`` ... in file order.
    """
    return [
        Task(f"gsm8k/{i}", r["question"], NumericMatch(gsm8k_final_answer(r["answer"])), r["answer"])
        for i, r in enumerate(_records(GSM8K_FILE, path))
    ]
