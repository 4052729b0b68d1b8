"""Store delta-channel snapshots of the package's types under strict msgpack and read them back.

Run by ``test_ckpt_delta.py`` through ``conftest.run_strict`` (``python -W error
delta_strict.py DB`` with ``LANGGRAPH_STRICT_MSGPACK=true``: LangGraph reads it at import time,
so the environment is set before this script starts). Exit 0 and print "snapshots ok" when
every value round-trips with no blocked type and no warning.
"""

from __future__ import annotations

import operator
import sys
from typing import Annotated, Any

from frozen_samples import strict_problems  # the script's own folder is on sys.path
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord, merge_outputs
from reasoning_graphs.checkpoints import open_saver, view_thread
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.types import Verdict


class State(TypedDict, total=False):
    access: dict[str, AccessPolicy]
    outputs: Annotated[dict[str, Output], delta(merge_outputs, snapshot_frequency=1)]
    reads: Annotated[list[ReadRecord], delta(operator.add, snapshot_frequency=1)]
    verdicts: Annotated[list[Verdict], delta(operator.add, snapshot_frequency=1)]


def main(db: str) -> int:
    """Run a graph whose delta channels snapshot on every update; reload it; compare."""
    problems = strict_problems()
    if problems is None:
        return 2

    def step(n: int) -> Any:
        def run(state: State) -> dict[str, Any]:
            label = f"step:{n}"
            return {
                "access": {"judge": AccessPolicy(sees=("step:*",), blind=True)},
                "outputs": {label: Output(label=label, text=f"text {n}", role="r", model="m")},
                "reads": [ReadRecord(node="judge", labels=[label])],
                "verdicts": [Verdict(passed=n % 2 == 0, score=n / 10, feedback=f"f{n}")],
            }

        return run

    builder = StateGraph(State)
    builder.add_node("a", step(1))
    builder.add_node("b", step(2))
    builder.add_node("c", step(3))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", END)
    config: Any = {"configurable": {"thread_id": "strict"}}
    with open_saver(db) as saver:
        before = builder.compile(checkpointer=saver)
        before.invoke({}, config)
        expected = before.get_state(config).values
    with open_saver(db) as saver:
        loaded = builder.compile(checkpointer=saver).get_state(config).values
        stored = saver.get_tuple(config).checkpoint["channel_values"]  # type: ignore[union-attr]
        shown = view_thread(saver, "strict", "judge")
    if loaded != expected or len(loaded["verdicts"]) != 3:
        problems.append(f"stored {expected!r}, loaded {loaded!r}")
    for key in ("outputs", "reads", "verdicts"):
        if not isinstance(stored.get(key), _DeltaSnapshot):
            problems.append(f"{key} is not a snapshot: {stored.get(key)!r}")
    if sorted(shown["outputs"]) != ["step:1", "step:2", "step:3"]:
        problems.append(f"view: {shown!r}")
    for problem in problems:
        print(problem, file=sys.stderr)
    print("snapshots ok" if not problems else "snapshots failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
