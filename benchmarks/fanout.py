"""Fan-out: does the reflection gather run its members concurrently?

Run from the repository root: ``python -m benchmarks.fanout``.

Eight roster members, each a scripted fake that takes 200 ms per call
(``ScriptedChatModel(latency=0.2)``), draft in parallel through ``Send`` under ``ainvoke``. The
graph is compiled with ``interrupt_after=["gather"]`` (and an in-memory saver with the package's
strict serializer), so only the start node and the gather phase are timed: frame, critique and
synthesis never run.

Two floors are measured in the same run, interleaved with the gather so that machine load hits
all arms alike:

- one call through the same seam to a 200 ms fake: what a perfectly concurrent gather could not
  beat (the row's ``ratio`` is the gather's wall time over this floor);
- the same graph with a one-member roster: the same path without any fan-out (second row).

Each arm is warmed up once, then timed ``REPEATS`` times; medians are reported. The target is a
ratio of at most 1.15 (a serial gather would be about 8).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.checkpoints import StrictSerializer
from reasoning_graphs.graphs.reflection import build_reflection_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel

MEMBERS = 8
LATENCY = 0.2
REPEATS = 7
TARGET = 1.15
_NO_WAIT = RetrySettings(initial_delay=0, jitter=False)


def _client(name: str, latency: float) -> ModelClient:
    model = ScriptedChatModel(responder=lambda _: f"draft from {name}", model_name=name, latency=latency)
    return ModelClient(model, retry=_NO_WAIT)


def _gather_arm(members: int) -> Callable[[int], Awaitable[None]]:
    roster = [_client(f"m{i}", LATENCY) for i in range(members)]
    graph = build_reflection_graph(roster=roster, model=_client("stage", 0.0)).compile(
        checkpointer=InMemorySaver(serde=StrictSerializer()), interrupt_after=["gather"]
    )

    async def once(run: int) -> None:
        config: dict[str, Any] = {"configurable": {"thread_id": f"fanout-{members}-{run}"}}
        await graph.ainvoke({"task": "Describe the sea."}, config)
        drafts = (await graph.aget_state(config)).values.get("gathered") or []
        if len(drafts) != members:
            raise RuntimeError(f"expected {members} drafts after the gather, got {len(drafts)}")

    return once


def _call_arm() -> Callable[[int], Awaitable[None]]:
    client = _client("floor", LATENCY)

    async def once(run: int) -> None:
        await client.acall(f"one call {run}")

    return once


async def _measure() -> dict[str, float]:
    arms = {"call": _call_arm(), "single": _gather_arm(1), "gather": _gather_arm(MEMBERS)}
    times: dict[str, list[float]] = {name: [] for name in arms}
    for run in range(REPEATS + 1):
        for name, arm in arms.items():
            start = time.perf_counter()
            await arm(run)
            if run:  # run 0 warms every arm up
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def run() -> list[dict[str, Any]]:
    """Time the gather of ``MEMBERS`` 200 ms members against both floors; one row per floor."""
    m = asyncio.run(_measure())
    common = {
        "target": TARGET,
        "wall_s": m["gather"],
        "members": MEMBERS,
        "serial_s": LATENCY * MEMBERS,
        "load_avg_1m": os.getloadavg()[0],
    }
    label = f"fanout: reflection gather, {MEMBERS} members x {LATENCY * 1000:.0f} ms (ainvoke)"
    return [
        {
            "name": f"{label} vs one 200 ms call",
            "ratio": m["gather"] / m["call"],
            "floor_s": m["call"],
            **common,
        },
        {
            "name": f"{label} vs a 1-member gather",
            "ratio": m["gather"] / m["single"],
            "floor_s": m["single"],
            **common,
        },
    ]


def main() -> None:
    """Print one line per row."""
    for row in run():
        verdict = "ok" if row["ratio"] <= row["target"] else "ABOVE TARGET"
        print(
            f"{row['name']}: gather {row['wall_s'] * 1000:.1f} ms vs floor {row['floor_s'] * 1000:.1f} ms "
            f"(serial would be {row['serial_s'] * 1000:.0f} ms), ratio {row['ratio']:.3f} "
            f"(target <= {row['target']}) {verdict} [load average {row['load_avg_1m']:.1f}]"
        )


if __name__ == "__main__":
    main()
