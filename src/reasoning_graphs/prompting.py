"""Strict prompt rendering: a missing or unused variable is an error, not an empty string."""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

__all__ = ["PromptTemplate", "render"]

_FORMATTER = string.Formatter()


def _fields(template: str) -> frozenset[str]:
    names = set()
    for _, field, _, _ in _FORMATTER.parse(template):
        if field is not None:
            if not field or not field.isidentifier():
                raise ValueError(
                    f"prompt field {field!r} must be a plain name like {{task}}; "
                    "write literal braces as {{ and }}"
                )
            names.add(field)
    return frozenset(names)


class PromptTemplate:
    """A ``str.format`` template that checks its variables.

    Example:
        >>> PromptTemplate("Solve: {task}").render(task="2+2")
        'Solve: 2+2'
    """

    __slots__ = ("template", "variables")

    def __init__(self, template: str) -> None:
        """Parse ``template`` and remember the variables it needs."""
        self.template = template
        self.variables = _fields(template)

    def render(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> str:
        """Fill the template.

        Raises:
            KeyError: a variable is missing, or a value was given that the template never uses.
        """
        merged = {**(values or {}), **kwargs}
        missing = sorted(self.variables - merged.keys())
        if missing:
            raise KeyError(f"prompt is missing values for {missing}; it needs {sorted(self.variables)}")
        unused = sorted(merged.keys() - self.variables)
        if unused:
            raise KeyError(f"prompt got values it does not use: {unused}; it needs {sorted(self.variables)}")
        return self.template.format(**merged)

    def __repr__(self) -> str:
        """Show the variables."""
        return f"PromptTemplate(variables={sorted(self.variables)})"


def render(template: str, /, **values: Any) -> str:
    """Render ``template`` strictly (see :class:`PromptTemplate`)."""
    return PromptTemplate(template).render(values)
