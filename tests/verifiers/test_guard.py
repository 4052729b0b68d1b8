"""The assert guard, in process: plain copies and the rewritten asserts."""

from __future__ import annotations

import ast
import re
from collections import Counter, OrderedDict, defaultdict, deque, namedtuple
from typing import Any

import pytest

from reasoning_graphs.verifiers._guard import NotPlainError, guard_asserts, make_checker, plain

Point = namedtuple("Point", "x y")


class Rigged:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class RiggedInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize(
    ("value", "expected", "kind"),
    [
        (3, 3, int),
        (RiggedInt(4), 4, int),
        ("x", "x", str),
        (Point(1, 2), (1, 2), tuple),
        (Counter("aab"), {"a": 2, "b": 1}, dict),
        (OrderedDict(a=1), {"a": 1}, dict),
        (defaultdict(int, a=1), {"a": 1}, dict),
        (deque([1, 2]), deque([1, 2]), deque),
        ({1, 2}, {1, 2}, set),
        ([{"a": (1, 2.5)}], [{"a": (1, 2.5)}], list),
        (range(3), range(3), range),
        (None, None, type(None)),
    ],
)
def test_plain_copies_built_in_data(value: object, expected: object, kind: type) -> None:
    copy = plain(value)
    assert copy == expected
    assert type(copy) is kind


@pytest.mark.parametrize("value", [Rigged(), [Rigged()], {"k": Rigged()}, {Rigged(): 1}, (1, (2, Rigged()))])
def test_plain_refuses_objects_that_are_not_data(value: object) -> None:
    with pytest.raises(NotPlainError, match="Rigged"):
        plain(value)


def test_plain_refuses_cycles() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(NotPlainError, match="too deeply"):
        plain(cycle)


def run_guarded(source: str, **names: Any) -> dict[tuple[int, int], object]:
    tree = compile(source, "<tests>", "exec", ast.PyCF_ONLY_AST)
    assert isinstance(tree, ast.Module)
    guard_asserts(tree, "_check")
    seen: dict[tuple[int, int], object] = {}
    namespace = {"_check": make_checker(seen), **names}
    exec(compile(tree, "<tests>", "exec"), namespace)
    return seen


def test_guarded_asserts_keep_their_meaning() -> None:
    seen = run_guarded(
        "assert f() == 3\n"
        "assert not g()\n"
        "assert 2 in f2()\n"
        "assert f() is not None and f() > 2\n"
        "assert all(x == y for x, y in [(f(), 3)])\n"
        "assert h() != None\n",
        f=lambda: 3,
        g=lambda: 0,
        f2=lambda: [1, 2],
        h=lambda: re.match("a", "a"),
    )
    assert seen[(1, 0)] == 3 and seen[(1, 1)] == 3


@pytest.mark.parametrize(
    "source",
    [
        "assert f() == 1\n",
        "assert f() != 2 or f() == 1\n",
        "assert 1 in f()\n",
        "assert f()\n",
        "assert all(f() == y for y in [1])\n",
    ],
)
def test_guarded_asserts_refuse_rigged_values(source: str) -> None:
    class RiggedContainer:
        def __contains__(self, item: object) -> bool:
            return True

        def __bool__(self) -> bool:
            return True

        __eq__ = Rigged.__eq__
        __hash__ = object.__hash__

    with pytest.raises(NotPlainError):
        run_guarded(source, f=RiggedContainer)


def test_guarded_assert_records_failing_sides() -> None:
    seen: dict[tuple[int, int], object] = {}
    tree = compile("assert f() == [1, 2]\n", "<tests>", "exec", ast.PyCF_ONLY_AST)
    assert isinstance(tree, ast.Module)
    guard_asserts(tree, "_check")
    with pytest.raises(AssertionError):
        exec(compile(tree, "<tests>", "exec"), {"_check": make_checker(seen), "f": lambda: [1]})
    assert seen == {(1, 0): [1], (1, 1): [1, 2]}
