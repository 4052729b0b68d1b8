"""Overhead of the package's graphs over bare LangGraph, and resume cost against thread length.

Run from the repository root: ``python -m benchmarks.overhead``.

Per-step overhead (target <= 1.5x): the repair graph (``build_repair_graph``: the model seam,
usage ledger, outputs under labels, access-list reads, frozen values in state) against the same
shape written as a bare LangGraph graph (plain dict state, the chat model invoked directly, the
same verifier function). Both use one zero-latency scripted fake (``ScriptedChatModel``, whose
reply depends only on how many attempts the prompt shows), the same SQLite saver
(``open_saver``: WAL, strict serializer) and the same number of steps: ``ATTEMPTS`` attempts, the
last one passing, i.e. start, generate, verify, then repair/verify pairs, then finish. Runs are
interleaved (the order alternates each round) on fresh threads; the ratio is the median wall time
of ours over the bare graph's (equal step counts, so it is the per-step ratio). ``cpu_ratio`` is
the same ratio of process CPU time, steadier than wall time on a machine shared with other work.

Resume cost (target <= 1.2x): a counter loop on the same saver leaves one thread with 1,000
checkpoints and one with 10, both in one file; the timed operation is what resuming a stored
thread costs, ``get_state`` plus ``invoke(None)`` (a finished thread: nothing left to run).
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

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.graphs import RepairSettings, build_repair_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel, prompt_text
from reasoning_graphs.types import Verdict

ATTEMPTS = 5
ROUNDS = 40
STEP_TARGET = 1.5
RESUME_TARGET = 1.2
LONG, SHORT = 1000, 10
RESUME_REPEATS = 300
TASK = "Write a function f that returns the number of the passing attempt."


def _attempt_of(text: str) -> int:
    return len(re.findall(r"### Attempt \d+", text))


def _reply(messages: Any) -> str:
    return f"def f():\n    return {_attempt_of(prompt_text(messages))}\n"


def _verifier(candidate: str, task: str = "") -> Verdict:
    ok = candidate.strip().endswith(f"return {ATTEMPTS - 1}")
    return Verdict(
        passed=ok, score=1.0 if ok else 0.0, feedback="" if ok else f"wrong: {candidate.strip()[-9:]}"
    )


class _Bare(TypedDict, total=False):
    task: str
    candidate: str | None
    history: Annotated[list[dict[str, Any]], operator.add]
    passed: bool
    final_answer: str | None


def bare_repair_graph(model: ScriptedChatModel) -> StateGraph[_Bare, Any, _Bare, _Bare]:
    """The repair topology as plain LangGraph: same prompts' shape, same verifier, no package layers."""

    def start(state: _Bare) -> dict[str, Any]:
        return {"history": [], "candidate": None}

    def attempt(state: _Bare) -> dict[str, Any]:
        shown = "\n\n".join(
            f"### Attempt {i + 1}\n{h['answer']}\n\nFeedback: {h['feedback']}"
            for i, h in enumerate(state.get("history") or [])
        )
        prompt = f"{state['task']}\n\n{shown}\n\nReply with the complete answer only."
        return {"candidate": str(model.invoke(prompt).content)}

    def verify(state: _Bare) -> dict[str, Any]:
        verdict = _verifier(state["candidate"] or "")
        entry = {"answer": state["candidate"], "passed": verdict.passed, "feedback": verdict.feedback}
        return {"history": [entry], "passed": verdict.passed}

    def finish(state: _Bare) -> dict[str, Any]:
        return {"final_answer": (state.get("history") or [{}])[-1].get("answer")}

    def route(state: _Bare) -> Literal["repair", "finish"]:
        done = state.get("passed") or len(state.get("history") or []) >= ATTEMPTS
        return "finish" if done else "repair"

    graph = StateGraph(_Bare)
    for name, fn in (("start", start), ("generate", attempt), ("verify", verify), ("repair", attempt)):
        graph.add_node(name, fn)
    graph.add_node("finish", finish)
    graph.add_edge(START, "start")
    graph.add_edge("start", "generate")
    graph.add_edge("generate", "verify")
    graph.add_edge("repair", "verify")
    graph.add_conditional_edges("verify", route)
    graph.add_edge("finish", END)
    return graph


def _config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _timed_both(call: Callable[[], object]) -> tuple[float, float]:
    """Return (wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure_steps(saver: Any, rounds: int = ROUNDS) -> dict[str, Any]:
    """Time both repair graphs on fresh threads, interleaved; check they took the same steps."""
    model = ScriptedChatModel(responder=_reply)
    client = ModelClient(model, retry=RetrySettings(initial_delay=0, jitter=False))
    ours = build_repair_graph(
        model=client,
        verifier=_verifier,
        settings=RepairSettings(max_attempts=ATTEMPTS, stop_on_no_progress=False),
    ).compile(checkpointer=saver)
    bare = bare_repair_graph(model).compile(checkpointer=saver)
    counter = iter(range(10**9))

    def run(app: Any) -> Callable[[], object]:
        def once() -> object:
            out = app.invoke({"task": TASK}, _config(f"steps-{next(counter)}"))
            assert out["final_answer"] and out["final_answer"].strip().endswith(f"return {ATTEMPTS - 1}")
            return out

        return once

    arms = {"ours": run(ours), "bare": run(bare)}
    for once in arms.values():
        once()
    times: dict[str, list[float]] = {name: [] for name in arms}
    cpu: dict[str, list[float]] = {name: [] for name in arms}
    for i in range(rounds):
        order = list(arms) if i % 2 == 0 else list(arms)[::-1]
        for name in order:
            wall, used = _timed_both(arms[name])
            times[name].append(wall)
            cpu[name].append(used)
    steps = {name: len(list(saver.list(_config(f"steps-{k}")))) for name, k in (("ours", 0), ("bare", 1))}
    return {
        "medians": {name: statistics.median(values) for name, values in times.items()},
        "cpu": {name: statistics.median(values) for name, values in cpu.items()},
        "checkpoints": steps,
        "paired": [o / b for o, b in zip(times["ours"], times["bare"], strict=True)],
    }


class _Loop(TypedDict, total=False):
    i: int
    limit: int
    note: str


def _loop_graph() -> StateGraph[_Loop, Any, _Loop, _Loop]:
    def step(state: _Loop) -> dict[str, Any]:
        return {"i": state.get("i", 0) + 1, "note": f"step {state.get('i', 0)}"}

    def route(state: _Loop) -> Literal["step", "__end__"]:
        return "step" if state["i"] < state["limit"] else "__end__"

    graph = StateGraph(_Loop)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", route)
    return graph


def measure_resume(saver: Any, repeats: int = RESUME_REPEATS) -> dict[str, Any]:
    """Time get_state + invoke(None) on finished threads of about LONG and SHORT checkpoints."""
    app = _loop_graph().compile(checkpointer=saver)
    counts = {}
    for n in (LONG, SHORT):
        app.invoke({"i": 0, "limit": n - 2}, {**_config(f"resume-{n}"), "recursion_limit": 10 * n})
        counts[n] = len(list(saver.list(_config(f"resume-{n}"))))

    def resume(n: int) -> Callable[[], object]:
        def once() -> object:
            config = _config(f"resume-{n}")
            state = app.get_state(config)
            assert not state.next
            return app.invoke(None, config)

        return once

    arms = {n: resume(n) for n in (LONG, SHORT)}
    for once in arms.values():
        once()
    times: dict[int, list[float]] = {n: [] for n in arms}
    for i in range(repeats):
        for n in (LONG, SHORT) if i % 2 == 0 else (SHORT, LONG):
            times[n].append(_timed(arms[n]))
    return {"medians": {n: statistics.median(v) for n, v in times.items()}, "checkpoints": counts}


def run() -> list[dict[str, Any]]:
    """Measure both ratios in one run; one row each."""
    with tempfile.TemporaryDirectory() as tmp, open_saver(Path(tmp) / "overhead.sqlite") as saver:
        steps = measure_steps(saver)
        resume = measure_resume(saver)
    ours, bare = steps["medians"]["ours"], steps["medians"]["bare"]
    n_steps = steps["checkpoints"]["ours"]
    long_s, short_s = resume["medians"][LONG], resume["medians"][SHORT]
    return [
        {
            "name": f"overhead: repair graph vs bare LangGraph, same SQLite saver ({ATTEMPTS} attempts)",
            "ratio": ours / bare,
            "target": STEP_TARGET,
            "better": "lower",
            "paired_ratio": statistics.median(steps["paired"]),
            "cpu_ratio": steps["cpu"]["ours"] / steps["cpu"]["bare"],
            "ours_ms_per_step": 1000 * ours / n_steps,
            "bare_ms_per_step": 1000 * bare / steps["checkpoints"]["bare"],
            "checkpoints": steps["checkpoints"],
        },
        {
            "name": f"overhead: resume (get_state + invoke(None)) {LONG} vs {SHORT} checkpoints",
            "ratio": long_s / short_s,
            "target": RESUME_TARGET,
            "better": "lower",
            "long_ms": 1000 * long_s,
            "short_ms": 1000 * short_s,
            "checkpoints": resume["checkpoints"],
        },
    ]


def main() -> None:
    """Print one line per row."""
    for row in run():
        verdict = "ok" if row["ratio"] <= row["target"] else "ABOVE TARGET"
        extra = {k: v for k, v in row.items() if k not in ("name", "ratio", "target", "better")}
        print(f"{row['name']}: ratio {row['ratio']:.3f} (target <= {row['target']}) {verdict} {extra}")


if __name__ == "__main__":
    main()
