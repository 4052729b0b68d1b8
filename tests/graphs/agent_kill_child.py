"""Child process of the agent kill test: run or resume thread ``k1`` of an agent on a SQLite file.

Usage: ``python agent_kill_child.py DB SCRIPT COUNTER (run|resume)``. The one tool, ``stamp``,
appends a line to COUNTER each time it runs (the side effect the test counts) and returns a
receipt. The model is a scripted fake read from SCRIPT (routes, a call log and a latency), so
the run is the same in every process. Prints the result as one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langchain_core.tools import BaseTool, tool

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.graphs.agent import build_agent_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel

TASK = "Stamp the form with label A, then report the receipt."


def stamp_tool(counter: Path) -> BaseTool:
    @tool
    def stamp(label: str) -> str:
        """Stamp the form with a label; returns the receipt."""
        with counter.open("a", encoding="utf-8") as sink:
            sink.write(f"{label}\n")
        return f"receipt-{label}"

    return stamp


def main(db: str, script: str, counter: str, mode: str) -> None:
    model = ModelClient(
        ScriptedChatModel.from_file(script), retry=RetrySettings(initial_delay=0, jitter=False)
    )
    graph = build_agent_graph(tools=[stamp_tool(Path(counter))], model=model)
    with open_saver(db) as saver:
        app = graph.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "k1"}}
        out = app.invoke({"task": TASK} if mode == "run" else None, config, durability="sync")
    result = {
        "final_answer": out.get("final_answer"),
        "stop_reason": out.get("stop_reason"),
        "calls": out["usage"].total.calls,
        "tool_calls": [record.model_dump(mode="json") for record in out.get("tool_calls", [])],
    }
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:5])
