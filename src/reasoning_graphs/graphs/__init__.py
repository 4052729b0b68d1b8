"""The pattern graphs. Each ``build_<name>_graph(...)`` returns an uncompiled ``StateGraph``.

Compile with the checkpointer you want::

    from reasoning_graphs.checkpoints import open_saver
    from reasoning_graphs.graphs import build_repair_graph

    with open_saver("runs.sqlite") as saver:
        graph = build_repair_graph(verifier=my_check).compile(checkpointer=saver)
        graph.invoke({"task": "..."}, {"configurable": {"thread_id": "t1"}})
"""

from __future__ import annotations

from reasoning_graphs.graphs.repair import RepairSettings, build_repair_graph

__all__ = ["RepairSettings", "build_repair_graph"]
