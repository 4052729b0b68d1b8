"""reasoning-graphs: LLM reasoning patterns as LangGraph ``StateGraph``s.

Build a graph, compile it with the checkpointer you want, invoke it::

    from reasoning_graphs import build_repair_graph, from_spec, open_saver

    with open_saver("runs.sqlite") as saver:
        graph = build_repair_graph(verifier=from_spec("mbpp:2")).compile(checkpointer=saver)
        graph.invoke({"task": "..."}, {"configurable": {"thread_id": "t1"}})

The graphs are in :mod:`reasoning_graphs.graphs`, verifiers in :mod:`reasoning_graphs.verifiers`,
checkpoint helpers in :mod:`reasoning_graphs.checkpoints`. Importing this package builds no
model, reads no environment and compiles no graph.
"""

from __future__ import annotations

from reasoning_graphs.access import AccessPolicy, Output, check_independent
from reasoning_graphs.budget import Budget
from reasoning_graphs.checkpoints import list_threads, open_async_saver, open_saver, view, view_thread
from reasoning_graphs.errors import (
    BudgetExceeded,
    CheckpointError,
    ConfigurationError,
    InputError,
    ModelError,
    ReasoningGraphsError,
    SandboxError,
    SchemaError,
    UnknownThreadError,
)
from reasoning_graphs.graphs import (
    build_adversarial_graph,
    build_agent_graph,
    build_debate_graph,
    build_dialectic_graph,
    build_evaluation_graph,
    build_perspectives_graph,
    build_reflection_graph,
    build_repair_graph,
    build_self_refine_graph,
    build_tree_of_thoughts_graph,
)
from reasoning_graphs.models import DEFAULT_MODEL, ModelClient, ModelSettings, resolve
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.types import Attempt, Critique, Judgment, PairwiseJudgment, StopReason, Usage, Verdict
from reasoning_graphs.verifiers import all_of, any_of, from_spec

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MODEL",
    "AccessPolicy",
    "Attempt",
    "Budget",
    "BudgetExceeded",
    "CheckpointError",
    "ConfigurationError",
    "Critique",
    "InputError",
    "Judgment",
    "ModelClient",
    "ModelError",
    "ModelSettings",
    "Output",
    "PairwiseJudgment",
    "ReasoningGraphsError",
    "SandboxError",
    "SchemaError",
    "ScriptedChatModel",
    "StopReason",
    "UnknownThreadError",
    "Usage",
    "Verdict",
    "__version__",
    "all_of",
    "any_of",
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
    "check_independent",
    "from_spec",
    "list_threads",
    "open_async_saver",
    "open_saver",
    "resolve",
    "view",
    "view_thread",
]
