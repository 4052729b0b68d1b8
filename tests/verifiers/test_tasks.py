"""Benchmark tasks: HumanEval and MBPP references pass the sandbox, wrong solutions fail, GSM8K parses."""

from __future__ import annotations

import ast
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.verifiers import (
    HumanEvalTests,
    MbppTests,
    NumericMatch,
    Task,
    gsm8k_final_answer,
    load_gsm8k,
    load_humaneval,
    load_mbpp,
)

WRONG = """

def _rg_wrong(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value + [None]
    if isinstance(value, tuple):
        return value + (None,)
    if isinstance(value, dict):
        return {**value, "_rg": 1}
    if isinstance(value, set):
        return value | {None}
    return 0 if value is None else None


_rg_reference = NAME


def NAME(*args, **kwargs):
    return _rg_wrong(_rg_reference(*args, **kwargs))
"""


@pytest.fixture(scope="module")
def humaneval(data_dir: Path) -> list[Task]:
    return load_humaneval(str(data_dir))


@pytest.fixture(scope="module")
def mbpp(data_dir: Path) -> list[Task]:
    return load_mbpp(str(data_dir / "mbpp_sanitized.jsonl"))


def check_all(tasks: list[Task], candidates: list[str]) -> list[tuple[str, bool, str]]:
    """Verify the candidates two at a time (the machine has two cores)."""

    def one(pair: tuple[Task, str]) -> tuple[str, bool, str]:
        verdict = pair[0].verifier(pair[1])
        return pair[0].id, verdict.passed, verdict.feedback

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(one, zip(tasks, candidates, strict=True)))


def test_loaders_read_every_task(humaneval: list[Task], mbpp: list[Task], data_dir: Path) -> None:
    assert len(humaneval) == 164 and len(mbpp) == 427
    assert humaneval[0].id == "HumanEval/0" and humaneval[0].spec == f"humaneval:HumanEval/0@{data_dir}"
    assert mbpp[0].id == "mbpp/2" and "Your code should pass these tests" in mbpp[0].prompt
    assert "canonical" not in repr(humaneval[0])


def test_sample_of_humaneval_references_passes(humaneval: list[Task]) -> None:
    sample = humaneval[::17]
    assert len(sample) == 10
    results = check_all(sample, [t.reference for t in sample])
    assert [r for r in results if not r[1]] == []


def test_sample_of_mbpp_references_passes(mbpp: list[Task]) -> None:
    # Tasks 56 (defines its own ``check``) and 126 (defines ``sum``) are the tricky ones.
    sample = [t for t in mbpp if t.id in ("mbpp/56", "mbpp/126")] + mbpp[::54]
    assert len(sample) == 10
    results = check_all(sample, [t.reference for t in sample])
    assert [r for r in results if not r[1]] == []


@pytest.mark.slow
def test_all_humaneval_references_pass(humaneval: list[Task]) -> None:
    results = check_all(humaneval, [t.reference for t in humaneval])
    assert [r for r in results if not r[1]] == []


@pytest.mark.slow
def test_all_mbpp_references_pass(mbpp: list[Task]) -> None:
    results = check_all(mbpp, [t.reference for t in mbpp])
    assert [r for r in results if not r[1]] == []


def _called_function(task: Task) -> str:
    defined = {n.name for n in ast.parse(task.reference).body if isinstance(n, ast.FunctionDef)}
    test = task.prompt.split("Your code should pass these tests:", 1)[1]
    calls = [
        n.func.id
        for n in ast.walk(ast.parse(test))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    ]
    return next(name for name in calls if name in defined)


def test_wrong_solutions_fail_with_repair_feedback(humaneval: list[Task], mbpp: list[Task]) -> None:
    rng = random.Random(20240601)
    he = rng.sample(humaneval, 10)
    mb = rng.sample(mbpp, 10)
    candidates = [t.reference + WRONG.replace("NAME", t.verifier.record["entry_point"]) for t in he]  # type: ignore[attr-defined]
    candidates += [t.reference + WRONG.replace("NAME", _called_function(t)) for t in mb]
    for task_id, passed, feedback in check_all(he + mb, candidates):
        assert not passed, task_id
        assert 0 < len(feedback) <= 500, (task_id, feedback)
        assert len(feedback.splitlines()) <= 2, (task_id, feedback)
        assert "test line" in feedback, (task_id, feedback)
        assert feedback.startswith("Failed test line") or "Error" in feedback, (task_id, feedback)


def test_humaneval_accepts_a_completion_a_full_function_or_a_fenced_reply(humaneval: list[Task]) -> None:
    task = humaneval[0]
    verifier = task.verifier
    assert isinstance(verifier, HumanEvalTests)
    completion = task.reference[len(task.prompt) :]
    full = "def has_close_elements(numbers, threshold):\n" + completion
    fenced = f"Sure:\n```python\nfrom typing import List\n\n{full}```\nDone."
    for candidate in (completion, full, fenced):
        assert verifier(candidate).passed, candidate
    verdict = verifier("    return False\n")
    assert not verdict.passed and verdict.feedback.startswith("Failed test line")


def test_humaneval_rejects_an_always_equal_result(humaneval: list[Task]) -> None:
    code = (
        "class E:\n    def __eq__(self, o): return True\n\n"
        "def has_close_elements(numbers, threshold):\n    return E()\n"
    )
    verdict = humaneval[0].verifier(code)
    assert not verdict.passed
    assert "'E'" in verdict.feedback


def test_task_ids_and_paths(data_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert HumanEvalTests("0", str(data_dir)).task_id == "HumanEval/0"
    with pytest.raises(InputError, match="no task 'HumanEval/999'"):
        HumanEvalTests("HumanEval/999", str(data_dir))
    with pytest.raises(InputError, match="no task 99999"):
        MbppTests(99999, str(data_dir))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the repository root
    monkeypatch.delenv("REASONING_GRAPHS_DATA", raising=False)
    assert MbppTests(2).spec == "mbpp:2"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="REASONING_GRAPHS_DATA"):
        MbppTests(2)
    monkeypatch.setenv("REASONING_GRAPHS_DATA", str(data_dir))
    assert MbppTests(2).record["task_id"] == 2


def test_every_gsm8k_answer_parses_and_matches_itself(data_dir: Path) -> None:
    tasks = load_gsm8k(str(data_dir))
    assert len(tasks) == 1319
    for task in tasks:
        verifier = task.verifier
        assert isinstance(verifier, NumericMatch)
        assert verifier.expected == gsm8k_final_answer(task.reference)
        assert verifier(task.reference).passed, task.id
        assert not verifier(f"The answer is {verifier.value + 1}.").passed, task.id


def test_gsm8k_answers_in_model_styles() -> None:
    verifier = NumericMatch("1,450,000")
    for reply in ("#### 1,450,000", "So the answer is $1,450,000.", "1450000", "Answer: 1450000.00"):
        assert verifier(reply).passed, reply
    with pytest.raises(InputError, match="'####'"):
        gsm8k_final_answer("no final answer")


def test_verifiers_know_their_prompt(humaneval: list[Task], mbpp: list[Task]) -> None:
    for task in (humaneval[3], mbpp[5]):
        assert task.prompt == task.verifier.prompt  # type: ignore[attr-defined]
