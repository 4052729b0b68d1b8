"""Parse untrusted source text in the (trusted) parent without letting it emit warnings."""

from __future__ import annotations

import ast
import threading
import warnings
from typing import Literal, overload

__all__ = ["parse_quietly"]

# CPython 3.11 can fail with "SystemError: AST constructor recursion depth mismatch" when two
# threads parse at once (parallel graph branches verify concurrently): parse one at a time.
_PARSE_LOCK = threading.Lock()


@overload
def parse_quietly(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...


@overload
def parse_quietly(source: str, mode: Literal["eval"]) -> ast.Expression: ...


def parse_quietly(source: str, mode: Literal["exec", "eval"] = "exec") -> ast.Module | ast.Expression:
    """Parse ``source`` with syntax warnings (invalid escapes ...) silenced.

    Candidate code is parsed only to inspect it; a warning about its string escapes is noise in
    the caller's output (and an error where warnings are errors).

    Args:
        source: Python source text.
        mode: ``"exec"`` for a module, ``"eval"`` for an expression.

    Returns:
        The tree.

    Raises:
        SyntaxError: The source does not parse.
    """
    with _PARSE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(source, mode=mode)
    assert isinstance(tree, (ast.Module, ast.Expression))
    return tree
