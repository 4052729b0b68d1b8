"""Shared node library: generation, verification and judging steps every pattern uses."""

from __future__ import annotations

from reasoning_graphs.nodes._runtime import ASYNC_IO, SYNC_IO, NodeIO, context_value, drive, dual_node
from reasoning_graphs.nodes.generation import (
    Generated,
    generate,
    model_id_of,
    pick_model,
    roster_from_context,
)
from reasoning_graphs.nodes.judging import (
    PAIRWISE_PROMPT,
    RUBRIC_PROMPT,
    PairReply,
    RubricReply,
    compare_pair,
    read_scores,
    score_rubric,
)
from reasoning_graphs.nodes.tools import (
    ToolFactory,
    ToolRun,
    Toolset,
    Turn,
    act,
    generate_with_tools,
    load_tools,
    observe,
    verifier_tool,
)
from reasoning_graphs.nodes.verification import choose_verifier, load_verifier, run_check

__all__ = [
    "ASYNC_IO",
    "PAIRWISE_PROMPT",
    "RUBRIC_PROMPT",
    "SYNC_IO",
    "Generated",
    "NodeIO",
    "PairReply",
    "RubricReply",
    "ToolFactory",
    "ToolRun",
    "Toolset",
    "Turn",
    "act",
    "choose_verifier",
    "compare_pair",
    "context_value",
    "drive",
    "dual_node",
    "generate",
    "generate_with_tools",
    "load_tools",
    "load_verifier",
    "model_id_of",
    "observe",
    "pick_model",
    "read_scores",
    "roster_from_context",
    "run_check",
    "score_rubric",
    "verifier_tool",
]
