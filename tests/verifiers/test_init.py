"""The package surface: a sorted, complete ``__all__``; every built-in verifier is named by a spec."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import reasoning_graphs.verifiers as package
from reasoning_graphs.verifiers import SpecVerifier

BUILT_INS = {
    "ExactMatch",
    "Game24",
    "HumanEvalTests",
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
}


def public_modules() -> list[str]:
    return [m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]


def test_all_is_sorted_and_complete() -> None:
    assert package.__all__ == sorted(package.__all__)
    assert all(hasattr(package, name) for name in package.__all__)
    exported = set(package.__all__)
    for module_name in public_modules():
        module = importlib.import_module(f"{package.__name__}.{module_name}")
        assert module.__all__ == sorted(module.__all__), module_name
        missing = set(module.__all__) - exported
        assert not missing, (module_name, missing)


def test_every_built_in_verifier_has_a_spec_and_a_docstring() -> None:
    for name in BUILT_INS:
        cls = getattr(package, name)
        assert inspect.getdoc(cls)
        assert isinstance(inspect.getattr_static(cls, "spec"), property), name
        assert callable(cls)
    classes = {
        name
        for name in package.__all__
        if inspect.isclass(getattr(package, name)) and hasattr(getattr(package, name), "spec")
    }
    assert classes - {"AllOf", "AnyOf", "SpecVerifier", "Task"} == BUILT_INS


def test_spec_verifier_protocol_matches_built_ins() -> None:
    assert isinstance(package.MaxLines(1), SpecVerifier)
    assert isinstance(package.all_of(package.MaxLines(1)), SpecVerifier)
