"""The verifier contract: every callable shape, sync and async, errors, and the combinators."""

from __future__ import annotations

import asyncio
import functools
import time

import pytest

from reasoning_graphs.errors import InputError, SandboxError
from reasoning_graphs.types import Verdict
from reasoning_graphs.verifiers import (
    AllOf,
    AnyOf,
    MaxLines,
    RegexSearch,
    all_of,
    any_of,
    arun_verifier,
    from_spec,
    run_verifier,
)


def is_a(candidate: str) -> Verdict:
    return Verdict(passed=candidate == "a", score=1.0 if candidate == "a" else 0.0, feedback="not a")


def equals_task(candidate: str, task: str) -> Verdict:
    return Verdict(passed=candidate == task, score=float(candidate == task))


async def async_is_a(candidate: str) -> Verdict:
    await asyncio.sleep(0)
    return is_a(candidate)


async def async_equals_task(candidate: str, task: str) -> Verdict:
    await asyncio.sleep(0)
    return equals_task(candidate, task)


class CallableObject:
    def __call__(self, candidate: str, task: str = "") -> Verdict:
        return equals_task(candidate, task)


class AsyncCallableObject:
    async def __call__(self, candidate: str) -> Verdict:
        return is_a(candidate)


SHAPES = [
    ("one-param", is_a, "a", ""),
    ("two-params", equals_task, "x", "x"),
    ("async-one", async_is_a, "a", ""),
    ("async-two", async_equals_task, "x", "x"),
    ("object", CallableObject(), "x", "x"),
    ("async-object", AsyncCallableObject(), "a", ""),
    ("partial", functools.partial(equals_task, task="x"), "x", "ignored"),
    ("lambda-default", lambda candidate, task="": is_a(candidate), "a", ""),
]


@pytest.mark.parametrize(("name", "verifier", "candidate", "task"), SHAPES, ids=[s[0] for s in SHAPES])
def test_every_shape_runs_sync_and_async(name: str, verifier: object, candidate: str, task: str) -> None:
    assert run_verifier(verifier, candidate, task).passed  # type: ignore[arg-type]
    assert asyncio.run(arun_verifier(verifier, candidate, task)).passed  # type: ignore[arg-type]
    assert not run_verifier(verifier, "wrong", "other").passed  # type: ignore[arg-type]


def test_async_verifier_from_sync_code_inside_a_running_loop() -> None:
    async def main() -> Verdict:
        return run_verifier(async_is_a, "a")

    assert asyncio.run(main()).passed


def boom(candidate: str) -> Verdict:
    raise ValueError("boom")


async def async_boom(candidate: str) -> Verdict:
    raise ValueError("boom")


@pytest.mark.parametrize("verifier", [boom, async_boom])
def test_exceptions_become_failing_verdicts(verifier: object) -> None:
    for verdict in (run_verifier(verifier, "x"), asyncio.run(arun_verifier(verifier, "x"))):  # type: ignore[arg-type]
        assert not verdict.passed and verdict.score == 0.0
        assert verdict.feedback == "verifier raised ValueError: boom"
        assert verdict.details == {"error": "ValueError: boom"}


def test_a_non_verdict_result_fails() -> None:
    verdict = run_verifier(lambda candidate: True, "x")  # type: ignore[arg-type]
    assert not verdict.passed
    assert verdict.feedback == "verifier returned bool, not a Verdict"


def test_sandbox_errors_propagate() -> None:
    def broken(candidate: str) -> Verdict:
        raise SandboxError("no sandbox here")

    with pytest.raises(SandboxError):
        run_verifier(broken, "x")
    with pytest.raises(SandboxError):
        asyncio.run(arun_verifier(broken, "x"))


def test_sync_verifiers_do_not_block_the_event_loop() -> None:
    def slow(candidate: str) -> Verdict:
        time.sleep(0.3)
        return is_a(candidate)

    async def main() -> int:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        verdict = await arun_verifier(slow, "a")
        ticker.cancel()
        assert verdict.passed
        return ticks

    assert asyncio.run(main()) >= 10


def test_all_of_and_any_of_combine_scores_and_feedback() -> None:
    half = lambda candidate: Verdict(passed=False, score=0.5, feedback="half")  # noqa: E731
    both = all_of(is_a, half)
    assert isinstance(both, AllOf)
    verdict = run_verifier(both, "a")
    assert not verdict.passed
    assert verdict.score == pytest.approx(0.75)
    assert verdict.feedback == "[2] half"
    either = any_of(half, is_a)
    assert isinstance(either, AnyOf)
    verdict = run_verifier(either, "a")
    assert verdict.passed and verdict.score == 1.0 and verdict.feedback == ""
    verdict = run_verifier(either, "b")
    assert not verdict.passed and verdict.score == 0.5
    assert verdict.feedback == "[1] half\n[2] not a"
    assert len(verdict.details["parts"]) == 2  # type: ignore[arg-type]


def test_combinators_await_async_parts_on_the_callers_loop() -> None:
    async def main() -> Verdict:
        loop = asyncio.get_running_loop()

        async def on_this_loop(candidate: str) -> Verdict:
            assert asyncio.get_running_loop() is loop
            return is_a(candidate)

        return await arun_verifier(all_of(on_this_loop, any_of(is_a, async_is_a)), "a")

    assert asyncio.run(main()).passed


def test_combinators_need_parts() -> None:
    with pytest.raises(InputError):
        all_of()
    with pytest.raises(InputError):
        any_of()


def test_combinator_specs_nest_and_round_trip() -> None:
    combined = all_of(MaxLines(3), any_of(RegexSearch("a"), RegexSearch("b")))
    assert combined.spec == "max-lines:3 && ( regex:a || regex:b )"
    assert from_spec(combined.spec) == combined
    with pytest.raises(InputError, match="has no spec"):
        _ = all_of(MaxLines(3), is_a).spec
