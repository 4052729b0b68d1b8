"""Spec strings: every built-in verifier round-trips; bad specs fail with the known names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.verifiers import AllOf, AnyOf, MaxLines, MaxWords, RegexSearch, from_spec, known_specs


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    tests = tmp_path / "test_double.py"
    tests.write_text("assert double(2) == 4\n")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["answer"]}))
    evidence = tmp_path / "evidence.txt"
    evidence.write_text("The sky is blue.")
    return {"tests": tests, "schema": schema, "evidence": evidence}


def examples(files: dict[str, Path], data_dir: Path) -> list[tuple[str, str, str]]:
    """(spec, passing candidate, failing candidate) for every registered name."""
    return [
        ("exact:Paris", "Paris", "paris"),
        ("game24:4 9 10 13", "(10 - 4) * (13 - 9)", "4 + 9 + 10 + 13"),
        (f"humaneval:HumanEval/2@{data_dir}", "    return number % 1.0\n", "    return number\n"),
        ('json-schema:{"type":"integer"}', "3", '"3"'),
        (f"json-schema:{files['schema']}", '{"answer": 1}', "{}"),
        ("max-lines:2", "a\nb", "a\nb\nc"),
        ("max-words:2", "a b", "a b c"),
        (
            f"mbpp:2@{data_dir}",
            "def similar_elements(a, b):\n    return set(a) & set(b)\n",
            "def x(): pass\n",
        ),
        ("normalized:New York", "new york!", "York"),
        ("numeric:18", "#### 18", "#### 19"),
        ("numeric:0.5~0.01", "0.495", "0.4"),
        ("pydantic:reasoning_graphs.types:Verdict", '{"passed": false}', "{}"),
        (
            f"python-tests:{files['tests']}",
            "def double(x):\n    return 2 * x\n",
            "def double(x):\n    return x\n",
        ),
        (f"quotes-in:{files['evidence']}", 'It says "the sky is blue".', '"the sky is green"'),
        ("regex:^\\d+$", "123", "12a"),
    ]


def test_every_name_round_trips(files: dict[str, Path], data_dir: Path) -> None:
    cases = examples(files, data_dir)
    assert {spec.split(":", 1)[0] for spec, _, _ in cases} == set(known_specs())
    for spec, good, bad in cases:
        verifier = from_spec(spec)
        assert verifier.spec == spec
        assert from_spec(verifier.spec) == verifier
        assert verifier(good).passed, (spec, verifier(good).feedback)
        failing = verifier(bad)
        assert not failing.passed and failing.feedback, spec


def test_data_path_is_optional(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REASONING_GRAPHS_DATA", raising=False)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the repository root
    assert from_spec("humaneval:0").spec == "humaneval:HumanEval/0"
    assert from_spec("mbpp: 2").spec == "mbpp:2"


def test_known_specs_describe_every_name() -> None:
    specs = known_specs()
    assert list(specs) == sorted(specs)
    assert all(description and "\n" not in description for description in specs.values())


def test_combinations() -> None:
    verifier = from_spec("max-lines:2 && regex:a || max-words:1")
    assert verifier == AnyOf((AllOf((MaxLines(2), RegexSearch("a"))), MaxWords(1)))
    grouped = from_spec("max-lines:2 && ( regex:a || max-words:1 )")
    assert grouped == AllOf((MaxLines(2), AnyOf((RegexSearch("a"), MaxWords(1)))))
    assert grouped.spec == "max-lines:2 && ( regex:a || max-words:1 )"
    assert grouped("a\nb").passed and grouped("b").passed and not grouped("b c\nd").passed
    assert from_spec("regex:(a|b)").spec == "regex:(a|b)"


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("nope:1", "unknown verifier name 'nope'"),
        ("exact", "expected 'name:argument'"),
        ("", "it is empty"),
        ("max-lines:x", "expected a whole number"),
        ("max-words:0", "positive whole number"),
        ("numeric:abc", "needs a number"),
        ("numeric:1~x", "bad tolerance"),
        ("game24:four", "game24 needs numbers"),
        ("regex:(", "bad regular expression"),
        ("mbpp:abc", "expected a whole number"),
        ("python-tests:/nonexistent/test_x.py", "the test file '/nonexistent/test_x.py' does not exist"),
        ("json-schema:/nonexistent/schema.json", "JSON Schema file '/nonexistent/schema.json' does not"),
        ("json-schema:{not json", "invalid JSON Schema"),
        ("quotes-in:/nonexistent/evidence.txt", "evidence file '/nonexistent/evidence.txt' does not"),
        ("pydantic:os:path", "not a pydantic model"),
        ("max-lines:2 &&", "it ends too early"),
        ("( max-lines:2", "not closed"),
        ("max-lines:2 )", "unexpected ')'"),
        ("&& max-lines:2", "unexpected '&&'"),
        ("max-lines:2 || || max-words:2", "unexpected '||'"),
    ],
)
def test_bad_specs_name_the_spec_and_list_the_names(spec: str, reason: str) -> None:
    with pytest.raises(InputError) as raised:
        from_spec(spec)
    message = str(raised.value)
    assert repr(spec) in message
    assert reason in message
    assert "known names: " + ", ".join(sorted(known_specs())) in message


def test_bad_task_ids(data_dir: Path) -> None:
    with pytest.raises(InputError, match="no task 'HumanEval/999'"):
        from_spec(f"humaneval:999@{data_dir}")
    with pytest.raises(InputError, match="data file"):
        from_spec("mbpp:2@/nonexistent/mbpp.jsonl")
