"""The pattern graphs. Each ``build_<name>_graph(...)`` returns an uncompiled ``StateGraph``.

Compile with the checkpointer you want::

    from reasoning_graphs.checkpoints import open_saver
    from reasoning_graphs.graphs import build_repair_graph

    with open_saver("runs.sqlite") as saver:
        graph = build_repair_graph(verifier=my_check).compile(checkpointer=saver)
        graph.invoke({"task": "..."}, {"configurable": {"thread_id": "t1"}})
"""

from __future__ import annotations

from reasoning_graphs.graphs._perspectives_report import to_csv as perspectives_to_csv
from reasoning_graphs.graphs._perspectives_report import to_json as perspectives_to_json
from reasoning_graphs.graphs._perspectives_report import to_markdown as perspectives_to_markdown
from reasoning_graphs.graphs._perspectives_report import write_report as write_perspectives_report
from reasoning_graphs.graphs.adversarial import AdversarialSettings, build_adversarial_graph
from reasoning_graphs.graphs.agent import AgentSettings, build_agent_graph
from reasoning_graphs.graphs.debate import DebateConfig, build_debate_graph, render_transcript
from reasoning_graphs.graphs.dialectic import DialecticSettings, build_dialectic_graph
from reasoning_graphs.graphs.evaluation import EvaluationConfig, build_evaluation_graph, evaluation_input
from reasoning_graphs.graphs.evaluation import to_json as evaluation_to_json
from reasoning_graphs.graphs.evaluation import to_markdown as evaluation_to_markdown
from reasoning_graphs.graphs.perspectives import PerspectivesSettings, build_perspectives_graph
from reasoning_graphs.graphs.reflection import ReflectionSettings, build_reflection_graph
from reasoning_graphs.graphs.repair import RepairSettings, build_repair_graph
from reasoning_graphs.graphs.self_refine import SelectionPolicy, SelfRefineSettings, build_self_refine_graph
from reasoning_graphs.graphs.tree_of_thoughts import (
    BUILTIN_TASKS,
    ThoughtTask,
    ToTSettings,
    build_tree_of_thoughts_graph,
    render_tree,
)

__all__ = [
    "BUILTIN_TASKS",
    "AdversarialSettings",
    "AgentSettings",
    "DebateConfig",
    "DialecticSettings",
    "EvaluationConfig",
    "PerspectivesSettings",
    "ReflectionSettings",
    "RepairSettings",
    "SelectionPolicy",
    "SelfRefineSettings",
    "ThoughtTask",
    "ToTSettings",
    "build_adversarial_graph",
    "build_agent_graph",
    "build_debate_graph",
    "build_dialectic_graph",
    "build_evaluation_graph",
    "build_perspectives_graph",
    "build_reflection_graph",
    "build_repair_graph",
    "build_self_refine_graph",
    "build_tree_of_thoughts_graph",
    "evaluation_input",
    "evaluation_to_json",
    "evaluation_to_markdown",
    "perspectives_to_csv",
    "perspectives_to_json",
    "perspectives_to_markdown",
    "render_transcript",
    "render_tree",
    "write_perspectives_report",
]
