"""Cost of tamper detection: sealing every stored row, and verifying a thread before reading it.

Run from the repository root: ``python -m benchmarks.integrity``.

Three rows, each a ratio against the same work without integrity:

- ``write``: the repair graph (``ATTEMPTS`` attempts, the last passing: start, generate, verify,
  repair/verify pairs, finish) on ``open_saver(path, integrity=True)`` against ``open_saver(path)``:
  same graph, same zero-latency scripted model, same strict serializer, savers opened once, a
  fresh thread each run (so each run also pays the first-read verification of its thread), runs
  interleaved (the order alternates each round); median wall time of sealed over plain (target
  <= 1.25). ``cpu_ratio`` is the same ratio of process CPU time.
- ``verify``: ``IntegritySaver.verify_thread`` (recompute every seal from the raw rows) on a
  thread of ``LONG`` checkpoints against reading that thread's history through LangGraph
  (``list``: every checkpoint deserialized with its pending writes); target <= 2.0: checking
  every row of a thread costs at most twice reading its whole history. A resume pays it once per
  process, before its first read of the thread.
- ``size``: the two databases of the ``write`` row after all their runs (target <= 1.3).
"""

from __future__ import annotations

import operator
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.graphs import RepairSettings, build_repair_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel, prompt_text
from reasoning_graphs.types import Verdict

ATTEMPTS = 5
ROUNDS = 30
LONG = 1000
VERIFY_REPEATS = 20
WRITE_TARGET, VERIFY_TARGET, SIZE_TARGET = 1.25, 2.0, 1.3
_KEY = b"benchmark-key-benchmark-key-0001"


def _reply(messages: Any) -> str:
    attempt = len(re.findall(r"### Attempt \d+", prompt_text(messages)))
    return f"answer {attempt}"


def _verifier(candidate: str, task: str = "") -> Verdict:
    return Verdict(passed=candidate == f"answer {ATTEMPTS - 1}", feedback=f"not {candidate}")


def _repair_run(saver: Any) -> Callable[[int], tuple[float, float]]:
    model = ModelClient(
        ScriptedChatModel(responder=_reply), retry=RetrySettings(initial_delay=0, jitter=False)
    )
    builder = build_repair_graph(
        verifier=_verifier, model=model, settings=RepairSettings(max_attempts=ATTEMPTS)
    )
    graph = builder.compile(checkpointer=saver)

    def once(run: int) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = graph.invoke({"task": "t"}, {"configurable": {"thread_id": f"r{run}"}}, durability="sync")
        elapsed = (time.perf_counter() - wall, time.process_time() - cpu)
        if not out["passed"]:
            raise RuntimeError("the benchmark run did not pass")
        return elapsed

    return once


class _Count(TypedDict):
    n: Annotated[int, operator.add]


def _counter(saver: Any) -> Any:
    def step(state: _Count) -> dict[str, int]:
        return {"n": 1}

    def again(state: _Count) -> Literal["step", "__end__"]:
        return "step" if state["n"] < LONG else "__end__"

    builder = StateGraph(_Count)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", again, ["step", END])
    return builder.compile(checkpointer=saver)


def _long_thread(path: Path, integrity: bool) -> None:
    with open_saver(path, integrity=_KEY if integrity else False) as saver:
        _counter(saver).invoke(
            {"n": 0}, {"configurable": {"thread_id": "long"}, "recursion_limit": LONG + 10}
        )


def _verify_arms(path: Path) -> tuple[float, float, int]:
    config: Any = {"configurable": {"thread_id": "long"}}
    verify, read = [], []
    with open_saver(path, integrity=_KEY) as saver:
        rows = saver.verify_thread("long")
        for _ in range(VERIFY_REPEATS):
            start = time.perf_counter()
            saver.verify_thread("long")
            verify.append(time.perf_counter() - start)
            start = time.perf_counter()
            list(saver.list(config))  # verified once already: this is the plain read
            read.append(time.perf_counter() - start)
    return statistics.median(verify), statistics.median(read), rows


def _write_arms(base: Path, rounds: int) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    times: dict[str, list[tuple[float, float]]] = {"sealed": [], "plain": []}
    paths = {name: base / f"{name}.sqlite" for name in times}
    with open_saver(paths["sealed"], integrity=_KEY) as sealed, open_saver(paths["plain"]) as plain:
        arms = {"sealed": _repair_run(sealed), "plain": _repair_run(plain)}
        for arm in arms.values():
            arm(-1)  # warm up
        for run_index in range(rounds):
            order = list(arms) if run_index % 2 == 0 else list(reversed(arms))
            for name in order:
                times[name].append(arms[name](run_index))
    wall = {name: statistics.median(t[0] for t in ts) for name, ts in times.items()}
    cpu = {name: statistics.median(t[1] for t in ts) for name, ts in times.items()}
    sizes = {name: path.stat().st_size for name, path in paths.items()}
    return wall, cpu, sizes


def run(rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """Measure the three rows (see the module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        wall, cpu, sizes = _write_arms(base, rounds)
        _long_thread(base / "long.sqlite", True)
        verify, read, rows = _verify_arms(base / "long.sqlite")
    steps = 3 + 2 * (ATTEMPTS - 1) + 1
    return [
        {
            "name": f"integrity: repair run ({steps} steps) on a sealed vs a plain SQLite saver",
            "ratio": wall["sealed"] / wall["plain"],
            "cpu_ratio": cpu["sealed"] / cpu["plain"],
            "target": WRITE_TARGET,
            "sealed_ms": wall["sealed"] * 1000,
            "plain_ms": wall["plain"] * 1000,
            "per_step_us": (wall["sealed"] - wall["plain"]) / steps * 1e6,
        },
        {
            "name": f"integrity: verify a {LONG}-checkpoint thread vs reading its history",
            "ratio": verify / read,
            "target": VERIFY_TARGET,
            "verify_ms": verify * 1000,
            "read_ms": read * 1000,
            "rows": rows,
            "per_row_us": verify / rows * 1e6,
        },
        {
            "name": f"integrity: database size after {rounds + 1} sealed vs plain repair runs",
            "ratio": sizes["sealed"] / sizes["plain"],
            "target": SIZE_TARGET,
            "sealed_bytes": sizes["sealed"],
            "plain_bytes": sizes["plain"],
        },
    ]


def main() -> None:
    """Print one line per row."""
    for row in run():
        verdict = "ok" if row["ratio"] <= row["target"] else "ABOVE TARGET"
        extras = ", ".join(f"{k} {v:.3g}" for k, v in row.items() if k not in ("name", "ratio", "target"))
        print(f"{row['name']}: ratio {row['ratio']:.3f} (target <= {row['target']}) {verdict} [{extras}]")


if __name__ == "__main__":
    main()
