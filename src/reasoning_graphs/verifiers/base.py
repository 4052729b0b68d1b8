"""The verifier contract, the runners that call any verifier safely, and the combinators.

A verifier is just a function (as in DSPy): it takes the candidate text, and optionally the task
text, and returns a :class:`~reasoning_graphs.types.Verdict`. It may be sync or async::

    def short(candidate: str) -> Verdict: ...
    async def judge(candidate: str, task: str) -> Verdict: ...

Built-in verifiers are small frozen objects with ``__call__(candidate, task="")`` and a ``spec``
property (see :mod:`reasoning_graphs.verifiers.specs`), so a graph or the CLI can name them.
Call verifiers through :func:`run_verifier` or :func:`arun_verifier`: they accept every shape,
never block an event loop, and turn an exception raised by a verifier into a failing verdict.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..errors import InputError, SandboxError
from ..types import Verdict

__all__ = [
    "AllOf",
    "AnyOf",
    "SpecVerifier",
    "Verifier",
    "all_of",
    "any_of",
    "arun_verifier",
    "run_verifier",
]

Verifier: TypeAlias = (
    Callable[[str], Verdict]
    | Callable[[str, str], Verdict]
    | Callable[[str], Awaitable[Verdict]]
    | Callable[[str, str], Awaitable[Verdict]]
)
"""Any callable ``(candidate)`` or ``(candidate, task)`` returning a Verdict, sync or async."""


@runtime_checkable
class SpecVerifier(Protocol):
    """A verifier that can be named by a spec string (every built-in verifier is one)."""

    @property
    def spec(self) -> str:
        """The spec string that rebuilds this verifier with ``from_spec``."""
        ...

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Check one candidate."""
        ...


def _takes_task(verifier: Verifier) -> bool:
    """Whether ``verifier`` accepts a second positional argument (the task)."""
    try:
        params = inspect.signature(verifier).parameters.values()
    except (TypeError, ValueError):
        return True
    kinds = [p.kind for p in params]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return inspect.Parameter.VAR_POSITIONAL in kinds or sum(k in positional for k in kinds) >= 2


def _is_async(verifier: Verifier) -> bool:
    # An instance whose class defines ``async def __call__`` is async too.
    return inspect.iscoroutinefunction(verifier) or inspect.iscoroutinefunction(type(verifier).__call__)


def _failure(exc: BaseException) -> Verdict:
    return Verdict(
        passed=False,
        score=0.0,
        feedback=f"verifier raised {type(exc).__name__}: {exc}",
        details={"error": f"{type(exc).__name__}: {exc}"},
    )


def _checked(result: object) -> Verdict:
    if isinstance(result, Verdict):
        return result
    message = f"verifier returned {type(result).__name__}, not a Verdict"
    return Verdict(passed=False, score=0.0, feedback=message, details={"error": message})


def _call(verifier: Verifier, candidate: str, task: str) -> Any:
    if _takes_task(verifier):
        return verifier(candidate, task)  # type: ignore[call-arg]
    return verifier(candidate)  # type: ignore[call-arg]


async def _await_result(result: Awaitable[object]) -> object:
    return await result


def _run_coroutine(result: Awaitable[object]) -> object:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await_result(result))
    # A loop runs in this thread: the caller is blocking it anyway, so run in a fresh one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _await_result(result)).result()


def run_verifier(verifier: Verifier, candidate: str, task: str = "") -> Verdict:
    """Run any verifier synchronously and return its verdict.

    An async verifier runs with ``asyncio.run`` (in a worker thread if this thread already runs
    an event loop: prefer :func:`arun_verifier` there).

    Args:
        verifier: A 1- or 2-parameter callable, sync or async.
        candidate: The text to check.
        task: The task text, passed to verifiers that take a second parameter.

    Returns:
        The verdict; a failing one, with ``details["error"]``, if the verifier raised or
        returned something else than a Verdict.

    Raises:
        SandboxError: The sandbox could not run at all (a machine problem, not a failure of
            the candidate).
    """
    try:
        result = _call(verifier, candidate, task)
        if inspect.isawaitable(result):
            result = _run_coroutine(result)
    except SandboxError:
        raise
    except Exception as exc:
        return _failure(exc)
    return _checked(result)


async def arun_verifier(verifier: Verifier, candidate: str, task: str = "") -> Verdict:
    """Run any verifier from async code without blocking the event loop.

    A sync verifier runs in ``asyncio.to_thread``; an async one is awaited; a combinator awaits
    its parts (so async parts stay on this loop).

    Args:
        verifier: A 1- or 2-parameter callable, sync or async.
        candidate: The text to check.
        task: The task text, passed to verifiers that take a second parameter.

    Returns:
        The verdict; a failing one, with ``details["error"]``, if the verifier raised.

    Raises:
        SandboxError: The sandbox could not run at all.
    """
    try:
        if isinstance(verifier, (AllOf, AnyOf)):
            return await verifier.acall(candidate, task)
        if _is_async(verifier):
            result = await _call(verifier, candidate, task)
        else:
            result = await asyncio.to_thread(_call, verifier, candidate, task)
            if inspect.isawaitable(result):
                result = await result
    except SandboxError:
        raise
    except Exception as exc:
        return _failure(exc)
    return _checked(result)


def _part_spec(part: Verifier) -> str:
    spec = getattr(part, "spec", None)
    if not isinstance(spec, str):
        raise InputError(f"{part!r} has no spec: only verifiers built from specs can be named")
    return f"( {spec} )" if isinstance(part, (AllOf, AnyOf)) else spec


def _combine(verdicts: list[Verdict], passed: bool, score: float) -> Verdict:
    failing = [f"[{i + 1}] {v.feedback}" for i, v in enumerate(verdicts) if not v.passed and v.feedback]
    details: dict[str, Any] = {"parts": [v.model_dump(mode="json") for v in verdicts]}
    return Verdict(
        passed=passed, score=score, feedback="\n".join(failing) if not passed else "", details=details
    )


@dataclass(frozen=True, slots=True)
class AllOf:
    """Pass when every part passes; score is the mean of the parts' scores."""

    parts: tuple[Verifier, ...]
    """The verifiers, run in order."""

    @property
    def spec(self) -> str:
        """The parts' specs joined by `` && `` (nested combinators in ``( ... )``)."""
        return " && ".join(_part_spec(p) for p in self.parts)

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Run every part and combine the verdicts."""
        verdicts = [run_verifier(p, candidate, task) for p in self.parts]
        return _combine(
            verdicts, all(v.passed for v in verdicts), sum(v.score for v in verdicts) / len(verdicts)
        )

    async def acall(self, candidate: str, task: str = "") -> Verdict:
        """Run every part concurrently from async code and combine the verdicts."""
        verdicts = list(await asyncio.gather(*(arun_verifier(p, candidate, task) for p in self.parts)))
        return _combine(
            verdicts, all(v.passed for v in verdicts), sum(v.score for v in verdicts) / len(verdicts)
        )


@dataclass(frozen=True, slots=True)
class AnyOf:
    """Pass when any part passes; score is the best part's score."""

    parts: tuple[Verifier, ...]
    """The verifiers, run in order."""

    @property
    def spec(self) -> str:
        """The parts' specs joined by `` || `` (nested combinators in ``( ... )``)."""
        return " || ".join(_part_spec(p) for p in self.parts)

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Run every part and combine the verdicts."""
        verdicts = [run_verifier(p, candidate, task) for p in self.parts]
        return _combine(verdicts, any(v.passed for v in verdicts), max(v.score for v in verdicts))

    async def acall(self, candidate: str, task: str = "") -> Verdict:
        """Run every part concurrently from async code and combine the verdicts."""
        verdicts = list(await asyncio.gather(*(arun_verifier(p, candidate, task) for p in self.parts)))
        return _combine(verdicts, any(v.passed for v in verdicts), max(v.score for v in verdicts))


def all_of(*verifiers: Verifier) -> AllOf:
    """Combine verifiers: pass when all pass.

    Args:
        *verifiers: At least one verifier.

    Returns:
        A verifier whose feedback lists each failing part's feedback and whose score is the
        mean of the parts' scores.

    Raises:
        InputError: No verifier was given.
    """
    if not verifiers:
        raise InputError("all_of() needs at least one verifier")
    return AllOf(tuple(verifiers))


def any_of(*verifiers: Verifier) -> AnyOf:
    """Combine verifiers: pass when any passes.

    Args:
        *verifiers: At least one verifier.

    Returns:
        A verifier whose feedback lists the failing parts' feedback (when none passed) and whose
        score is the best part's score.

    Raises:
        InputError: No verifier was given.
    """
    if not verifiers:
        raise InputError("any_of() needs at least one verifier")
    return AnyOf(tuple(verifiers))
