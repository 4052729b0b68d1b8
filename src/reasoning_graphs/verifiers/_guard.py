"""Assert guard of the Python sandbox: every value an assert uses must be plain built-in data.

Runs in the sandbox child, where this file's text is prepended to ``_harness.py``; it imports
only built-in modules. :func:`guard_asserts` rewrites each ``assert`` of the tests (an AST from
``compile(..., PyCF_ONLY_AST)``) so that each operand of a comparison and each value tested for
truth passes through the checker from :func:`make_checker`. The checker replaces the value by a
plain copy rebuilt through the base types' own C methods (``dict.items``, ``int.__int__`` ...),
so a subclass's overrides never run and the comparison uses built-in semantics: a namedtuple
still equals a tuple and a Counter a dict, but an object whose ``__eq__`` always returns True
has no plain copy and fails. Objects of immutable (C) types with identity equality
(``re.Match``) may be compared as they are; any object of an immutable type may be tested for
truth. Comparisons by identity (``is``) are left alone.
"""

from __future__ import annotations

import _ast
import _collections  # type: ignore[import-not-found]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["NotPlainError", "guard_asserts", "make_checker", "plain"]

_ATOMS = frozenset({bool, int, float, complex, str, bytes, type(None), type, range})


class NotPlainError(Exception):
    """An assert used a value whose comparison or truth the candidate could rig."""


_COMPARE, _MEMBER, _TRUTH = 0, 1, 2
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: built-in and C types, never a class statement
_CONTAINERS: tuple[Any, ...] = (list, tuple, frozenset, set, _collections.deque)
_SCALARS: tuple[tuple[type, Any], ...] = (
    (int, int.__int__),
    (float, float.__float__),
    (str, str.__str__),
    (bytes, bytes.__bytes__),
)
# Read through ``type`` itself: a metaclass cannot fake these.
_type_flags, _object_eq = type.__dict__["__flags__"].__get__, object.__eq__


def plain(value: Any, depth: int = 0) -> Any:
    """Return a copy of ``value`` built only from plain built-in types.

    Args:
        value: Any value.
        depth: Nesting depth so far (copies deeper than 100 levels are refused).

    Returns:
        The copy (atoms are returned as they are).

    Raises:
        NotPlainError: The value, or something inside it, is not built-in data.
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if depth > 100:
        raise NotPlainError("an assert used a value nested too deeply")
    if issubclass(kind, dict):
        return {plain(k, depth + 1): plain(v, depth + 1) for k, v in dict.items(value)}
    for base in _CONTAINERS:
        if issubclass(kind, base):
            return base(plain(item, depth + 1) for item in base.__iter__(value))
    for base, copy in _SCALARS:
        if issubclass(kind, base):
            return copy(value)
    raise NotPlainError(
        f"an assert used a value of type {kind.__name__!r}; compare plain built-in data (int, float, "
        "str, list, tuple, dict, set, None ...)"
    )


def make_checker(seen: dict[tuple[int, int], object]) -> Callable[[object, int, int, int], object]:
    """Return the checker that guarded asserts call (see the module notes).

    Args:
        seen: Filled with ``(line, side) -> plain value`` for the two sides of each assert's
            top-level comparison (side 0 for a value tested for truth), for failure reports.

    Returns:
        ``check(value, line, side, mode)``, returning the value to use in its place.
    """

    def check(value: object, line: int, side: int, mode: int) -> object:
        kind = type(value)
        try:
            result = plain(value)
        except NotPlainError:
            immutable = _type_flags(kind) & _IMMUTABLE_TYPE
            if not immutable or mode == _MEMBER or (mode == _COMPARE and kind.__eq__ is not _object_eq):
                raise
            result = value
        if side >= 0:
            seen[(line, side)] = result
        return result

    return check


def _located(node: _ast.expr, new: _ast.expr) -> _ast.expr:
    new.lineno, new.col_offset = node.lineno, node.col_offset
    new.end_lineno, new.end_col_offset = node.end_lineno, node.end_col_offset
    return new


def _wrap(node: _ast.expr, helper: str, line: int, side: int, mode: int) -> _ast.expr:
    func = _located(node, _ast.Name(id=helper, ctx=_ast.Load()))
    args = [node, *(_located(node, _ast.Constant(value=v)) for v in (line, side, mode))]
    return _located(node, _ast.Call(func=func, args=args, keywords=[]))


def _walk(node: _ast.AST) -> list[_ast.AST]:
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        found.append(item)
        for name in item._fields:
            child = getattr(item, name, None)
            if isinstance(child, list):
                stack.extend(c for c in child if isinstance(c, _ast.AST))
            elif isinstance(child, _ast.AST):
                stack.append(child)
    return found


def _guard_compare(node: _ast.Compare, helper: str, line: int) -> None:
    """Wrap each operand of a comparison, except those only compared by identity."""
    by_identity = [isinstance(op, (_ast.Is, _ast.IsNot)) for op in node.ops]
    member = [isinstance(op, (_ast.In, _ast.NotIn)) for op in node.ops]
    record = line > 0
    if not by_identity[0]:
        node.left = _wrap(node.left, helper, line, 0 if record else -1, _COMPARE)
    for i, comparator in enumerate(node.comparators):
        if not (by_identity[i] and (i + 1 == len(by_identity) or by_identity[i + 1])):
            side = 1 if record and i == 0 else -1
            node.comparators[i] = _wrap(comparator, helper, line, side, _MEMBER if member[i] else _COMPARE)


def _guard_test(test: _ast.expr, helper: str, line: int) -> _ast.expr:
    if isinstance(test, _ast.BoolOp):
        test.values = [_guard_test(v, helper, line) for v in test.values]
        return test
    if isinstance(test, _ast.UnaryOp) and isinstance(test.op, _ast.Not):
        test.operand = _guard_test(test.operand, helper, line)
        return test
    if isinstance(test, _ast.Compare):
        return test
    return _wrap(test, helper, line, 0, _TRUTH)


def guard_asserts(tree: _ast.Module, helper: str) -> None:
    """Rewrite every ``assert`` in ``tree`` in place to call the checker named ``helper``.

    Args:
        tree: A module AST.
        helper: The global name the checker will have when the module runs.
    """
    for node in _walk(tree):
        if isinstance(node, _ast.Assert):
            for compare in [n for n in _walk(node.test) if isinstance(n, _ast.Compare)]:
                _guard_compare(compare, helper, node.lineno if compare is node.test else 0)
            node.test = _guard_test(node.test, helper, node.lineno)
