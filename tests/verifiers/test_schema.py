"""Structured output: JSON Schema and pydantic model validation, fenced or bare JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.types import Verdict
from reasoning_graphs.verifiers import JsonSchemaMatch, PydanticMatch, extract_json, from_spec

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"price": {"type": "number"}}}}
    },
    "required": ["items"],
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('Here:\n```json\n{"a": 1}\n```\nThanks', '{"a": 1}'),
        ("```\n[1, 2]\n```", "[1, 2]"),
        ('The result is {"a": {"b": 2}} as requested.', '{"a": {"b": 2}}'),
        ("not json", "not json"),
    ],
)
def test_extract_json(text: str, expected: str) -> None:
    assert extract_json(text) == expected


def test_json_schema_match() -> None:
    verifier = JsonSchemaMatch.from_schema(SCHEMA)
    assert verifier('```json\n{"items": [{"price": 2.5}]}\n```').passed
    verdict = verifier('{"items": [{"price": "x"}, {"price": 1}, {"price": "y"}]}')
    assert not verdict.passed
    assert verdict.feedback == (
        "The JSON does not match the schema: $.items[0].price: 'x' is not of type 'number'; "
        "$.items[2].price: 'y' is not of type 'number'."
    )
    verdict = verifier("{'items': []}")
    assert not verdict.passed and verdict.feedback.startswith("The answer is not valid JSON")


def test_json_schema_specs(tmp_path: Path) -> None:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    from_file = from_spec(f"json-schema:{path}")
    assert isinstance(from_file, JsonSchemaMatch) and from_file.spec == f"json-schema:{path}"
    inline = JsonSchemaMatch.from_schema({"type": "integer"})
    assert inline.spec == 'json-schema:{"type":"integer"}'
    assert from_spec(inline.spec) == inline
    assert inline("7").passed and not inline('"7"').passed


def test_bad_schemas_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="invalid JSON Schema"):
        JsonSchemaMatch.from_schema({"type": "no-such-type"})
    with pytest.raises(InputError, match=r"the JSON Schema file .* does not exist"):
        JsonSchemaMatch.from_file(str(tmp_path / "missing.json"))


def test_pydantic_match() -> None:
    verifier = PydanticMatch(Verdict)
    assert verifier('{"passed": true, "score": 1.0}').passed
    verdict = verifier('{"passed": true, "score": 2}')
    assert not verdict.passed
    assert (
        verdict.feedback
        == "The JSON does not match Verdict: $.score: Input should be less than or equal to 1."
    )
    verdict = verifier("not json")
    assert not verdict.passed and "Invalid JSON" in verdict.feedback


def test_pydantic_specs() -> None:
    verifier = from_spec("pydantic:reasoning_graphs.types:Verdict")
    assert verifier == PydanticMatch(Verdict)
    assert verifier.spec == "pydantic:reasoning_graphs.types:Verdict"
    for bad in (
        "pydantic:Verdict",
        "pydantic:no_such_module_xyz:X",
        "pydantic:reasoning_graphs.types:StopReason",
    ):
        with pytest.raises(InputError):
            from_spec(bad)
