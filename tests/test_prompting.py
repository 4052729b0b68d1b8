from __future__ import annotations

import pytest

from reasoning_graphs.prompting import PromptTemplate, render


def test_render_fills_every_variable() -> None:
    assert render("{a} and {b}", a="x", b="y") == "x and y"


def test_missing_variable_is_an_error_naming_it() -> None:
    with pytest.raises(KeyError, match="'b'"):
        render("{a} and {b}", a="x")


def test_unused_value_is_an_error() -> None:
    with pytest.raises(KeyError, match="extra"):
        PromptTemplate("{a}").render(a="x", extra="y")


def test_literal_braces_and_bad_fields() -> None:
    assert render('{{"k": {v}}}', v=1) == '{"k": 1}'
    with pytest.raises(ValueError, match="plain name"):
        PromptTemplate("{a.b}")
