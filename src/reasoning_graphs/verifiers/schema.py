"""Structured-output verifiers: JSON Schema (``jsonschema``) and pydantic model validation.

The candidate may wrap its JSON in a markdown fence (```` ```json ````) or in prose: the JSON
value is cut out with :func:`extract_json` first. Feedback names each violation by its JSON
path, e.g. ``$.items[0].price: 'x' is not of type 'number'``.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, JsonValue, ValidationError

from .._files import read_user_text
from ..errors import InputError
from ..types import Verdict

__all__ = ["JsonSchemaMatch", "PydanticMatch", "extract_json"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_MAX_ERRORS = 5


def extract_json(text: str) -> str:
    """Cut a JSON value out of a reply.

    The first fenced block wins; otherwise the whole text if it parses; otherwise the span from
    the first ``{`` or ``[`` to the last matching closer.

    Args:
        text: The reply.

    Returns:
        The JSON text to parse (unchanged when nothing better is found).
    """
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    stripped = text.strip()
    try:
        json.loads(stripped)
    except ValueError:
        starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
        if starts:
            start = min(starts)
            end = stripped.rfind("}" if stripped[start] == "{" else "]")
            if end > start:
                return stripped[start : end + 1]
    return stripped


def _json_path(path: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _parse(candidate: str) -> tuple[Any, Verdict | None]:
    text = extract_json(candidate)
    try:
        return json.loads(text), None
    except ValueError as exc:
        return None, Verdict(passed=False, feedback=f"The answer is not valid JSON: {exc}.")


@dataclass(frozen=True, slots=True)
class JsonSchemaMatch:
    """Pass when the candidate's JSON validates against a JSON Schema (its ``$schema`` draft)."""

    schema_json: str
    """The schema, as canonical JSON text."""
    path: str | None = None
    """The schema file, as given in the spec (None for an inline schema)."""
    validator: Any = field(init=False, repr=False, compare=False)
    """The compiled ``jsonschema`` validator."""

    def __post_init__(self) -> None:
        """Parse and check the schema."""
        try:
            schema = json.loads(self.schema_json)
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
        except (ValueError, SchemaError) as exc:
            where = self.path or "the inline schema"
            raise InputError(f"invalid JSON Schema in {where!r}: {str(exc).splitlines()[0]}") from exc
        except RecursionError:
            where = self.path or "the inline schema"
            raise InputError(f"invalid JSON Schema in {where!r}: nested too deeply") from None
        object.__setattr__(self, "validator", cls(schema))

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any]) -> JsonSchemaMatch:
        """Build the verifier from a schema held in memory.

        Args:
            schema: A JSON Schema.

        Returns:
            The verifier (its spec carries the schema inline).
        """
        return cls(json.dumps(schema, sort_keys=True, separators=(",", ":")))

    @classmethod
    def from_file(cls, path: str) -> JsonSchemaMatch:
        """Build the verifier from a schema file.

        Args:
            path: A JSON file holding the schema.

        Returns:
            The verifier.

        Raises:
            InputError: The file cannot be read or is not a valid schema.
        """
        text = read_user_text(path, "the JSON Schema file")
        return cls(text, path=path)

    @property
    def spec(self) -> str:
        """``json-schema:PATH``, or ``json-schema:{...}`` with the schema inline."""
        return f"json-schema:{self.path if self.path is not None else self.schema_json}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Parse the candidate's JSON and validate it."""
        value, failure = _parse(candidate)
        if failure is not None:
            return failure
        errors = sorted(self.validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return Verdict(passed=True, score=1.0)
        messages = [f"{_json_path(e.absolute_path)}: {e.message}" for e in errors]
        details: dict[str, JsonValue] = {"errors": list(messages)}
        shown = "; ".join(messages[:_MAX_ERRORS]) + (" ..." if len(messages) > _MAX_ERRORS else "")
        return Verdict(
            passed=False, feedback=f"The JSON does not match the schema: {shown}.", details=details
        )


@dataclass(frozen=True, slots=True)
class PydanticMatch:
    """Pass when the candidate's JSON validates as an instance of a pydantic model."""

    model: type[BaseModel]
    """The model class."""

    @classmethod
    def from_name(cls, name: str) -> PydanticMatch:
        """Import a model named ``package.module:ClassName``.

        This imports the named module (as ``import`` would): name only code you trust.

        Args:
            name: ``module:QualifiedName``.

        Returns:
            The verifier.

        Raises:
            InputError: The name is malformed, cannot be imported, or is not a pydantic model.
        """
        module_name, _, qualname = name.partition(":")
        if not module_name or not qualname:
            raise InputError(f"pydantic verifier needs 'package.module:ClassName', got {name!r}")
        try:
            target: Any = importlib.import_module(module_name)
            for part in qualname.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise InputError(f"cannot import the pydantic model {name!r}: {exc}") from exc
        if not (isinstance(target, type) and issubclass(target, BaseModel)):
            raise InputError(f"{name!r} is not a pydantic model class")
        return cls(target)

    @property
    def spec(self) -> str:
        """``pydantic:module:QualifiedName``."""
        qualname = self.model.__qualname__
        if "<locals>" in qualname or self.model.__module__ == "__main__":
            raise InputError(f"the model {qualname!r} is not importable by name, so it has no spec")
        return f"pydantic:{self.model.__module__}:{qualname}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Validate the candidate's JSON as the model."""
        try:
            self.model.model_validate_json(extract_json(candidate))
        except ValidationError as exc:
            messages = [
                f"{_json_path(err['loc'])}: {err['msg']}" if err["loc"] else err["msg"]
                for err in exc.errors()
            ]
            shown = "; ".join(messages[:_MAX_ERRORS]) + (" ..." if len(messages) > _MAX_ERRORS else "")
            return Verdict(
                passed=False,
                feedback=f"The JSON does not match {self.model.__name__}: {shown}.",
                details={"errors": list(messages)},
            )
        return Verdict(passed=True, score=1.0)
