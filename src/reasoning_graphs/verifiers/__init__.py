"""Verifiers: plain callables that check a candidate answer and return a ``Verdict``.

A verifier is any function ``(candidate)`` or ``(candidate, task)`` returning a
:class:`~reasoning_graphs.types.Verdict`, sync or async; call one through :func:`run_verifier`
or :func:`arun_verifier`. Built-in verifiers are frozen objects that can be named by a spec
string (:func:`from_spec`, :func:`known_specs`) and combined with :func:`all_of` / :func:`any_of`
(or ``&&`` / ``||`` in specs). Python code is checked in a sandboxed subprocess
(:func:`run_python_tests`, :func:`sandbox_isolation`).
"""

from __future__ import annotations

from .base import AllOf, AnyOf, SpecVerifier, Verifier, all_of, any_of, arun_verifier, run_verifier
from .game24 import Game24, evaluate_24, extract_expression, solve_24
from .python_tests import PythonTests, extract_code, sandbox_verdict
from .quotes import QuotesInEvidence, find_quotes
from .sandbox import (
    Isolation,
    SandboxLimits,
    SandboxResult,
    SandboxStatus,
    run_python_tests,
    sandbox_isolation,
)
from .schema import JsonSchemaMatch, PydanticMatch, extract_json
from .specs import from_spec, known_specs
from .tasks import (
    HumanEvalTests,
    MbppTests,
    Task,
    data_file,
    gsm8k_final_answer,
    load_gsm8k,
    load_humaneval,
    load_mbpp,
)
from .text import (
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

__all__ = [
    "AllOf",
    "AnyOf",
    "ExactMatch",
    "Game24",
    "HumanEvalTests",
    "Isolation",
    "JsonSchemaMatch",
    "MaxLines",
    "MaxWords",
    "MbppTests",
    "NormalizedMatch",
    "NumericMatch",
    "PydanticMatch",
    "PythonTests",
    "QuotesInEvidence",
    "RegexSearch",
    "SandboxLimits",
    "SandboxResult",
    "SandboxStatus",
    "SpecVerifier",
    "Task",
    "Verifier",
    "all_of",
    "any_of",
    "arun_verifier",
    "data_file",
    "evaluate_24",
    "extract_code",
    "extract_expression",
    "extract_json",
    "extract_number_answer",
    "find_quotes",
    "from_spec",
    "gsm8k_final_answer",
    "known_specs",
    "load_gsm8k",
    "load_humaneval",
    "load_mbpp",
    "normalize_text",
    "parse_number",
    "run_python_tests",
    "run_verifier",
    "sandbox_isolation",
    "sandbox_verdict",
    "solve_24",
]
