"""Dialectic: thesis, antithesis, synthesis and a judge, the synthesis becoming the next thesis.

``start -> thesis -> antithesis -> synthesis -> judge -> {stop: finish | next_round -> antithesis}``

Round 1's thesis comes from the task; in round *r* > 1 the thesis is round *r-1*'s synthesis
(``next_round`` copies it, no call). The judge gives a structured verdict: an integer score from
1 to 10 against the stated criteria (clamped in code with a warning, as the rubric judge does)
and a decision, ``continue`` or ``stop``. A judge reply that breaks its schema is re-prompted by
the seam; if it still fails the round records no score, ``judge_failures`` counts it, and the
run goes on. The final answer is the best-scored synthesis (ties go to the later round), not
merely the last; with no scored synthesis it is the last synthesis, else the first thesis.

Stops, checked after each verdict in this order: ``judge_stop`` (the judge said stop),
``converged`` (the synthesis stopped changing: its word-level similarity to the previous round's
synthesis, after case-folding and collapsing whitespace, reaches ``convergence_threshold``;
1.0 means identical normalized text), ``max_rounds``, ``budget`` (a new round starts only when
its three calls fit; each step also checks its own call), and ``error`` (a thesis, antithesis or
synthesis call failed for good).

Access lists (roles and what they read; within round *r* a role reads only that round's labels):
    - ``proposer`` sees ``task``.
    - ``opponent`` sees ``task``, ``thesis:*``; blind (the thesis text, not who wrote it).
    - ``synthesizer`` sees ``task``, ``thesis:*``, ``antithesis:*``; blind.
    - ``judge`` sees ``task``, ``synthesis:*``; blind.

Roster rotation: each step uses the member after the previous step's author, so the thesis
author and the opponent, and the synthesizer and the judge, differ whenever the roster has two
or more members: the proposer is member 0; in round *r* the opponent is member ``2r-1``, the
synthesizer ``2r`` and the judge ``2r+1`` (modulo the roster length).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from pydantic import Field

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import CommonOutput, CommonState, LimitsInput
from reasoning_graphs.graphs._dialectic_nodes import DialecticNodes, halted, stop_reason
from reasoning_graphs.graphs._dialectic_parts import (
    ANTITHESIS_PROMPT,
    JUDGE_PROMPT,
    SYNTHESIS_PROMPT,
    THESIS_PROMPT,
    DialecticRound,
    JudgeReply,
    RoundVerdict,
)
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import dual_node
from reasoning_graphs.types import Frozen

__all__ = [
    "ACCESS",
    "ANTITHESIS_PROMPT",
    "JUDGE_PROMPT",
    "SYNTHESIS_PROMPT",
    "THESIS_PROMPT",
    "DialecticInput",
    "DialecticOutput",
    "DialecticRound",
    "DialecticSettings",
    "DialecticState",
    "JudgeReply",
    "RoundVerdict",
    "build_dialectic_graph",
]

# --- contracts (values: JudgeReply, RoundVerdict, DialecticRound; prompts: in _dialectic_parts) --


class DialecticSettings(Frozen):
    """Structural settings of a dialectic graph."""

    max_rounds: int = Field(default=3, ge=1, le=20)
    """Most thesis-antithesis-synthesis-judge rounds."""
    criteria: tuple[str, ...] = ("correctness", "completeness", "clarity")
    """What the judge scores a synthesis against (stated in its prompt)."""
    convergence_threshold: float = Field(default=0.95, gt=0.0, le=1.0)
    """Stop as ``converged`` when a synthesis is at least this similar to the previous one."""
    system_prompt: str | None = None
    """An optional system message for every call."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""


ACCESS: dict[str, AccessPolicy] = {
    "proposer": AccessPolicy(sees=("task",)),
    "opponent": AccessPolicy(sees=("task", "thesis:*"), blind=True),
    "synthesizer": AccessPolicy(sees=("task", "thesis:*", "antithesis:*"), blind=True),
    "judge": AccessPolicy(sees=("task", "synthesis:*"), blind=True),
}
"""Default access policies of the dialectic roles."""

# --- state -----------------------------------------------------------------------------------


class DialecticInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """The question or problem to argue out."""


class DialecticOutput(CommonOutput, total=False):
    """What a run returns."""

    rounds: Annotated[list[DialecticRound], delta(operator.add)]
    """Every round, the last one possibly partial."""
    best_round: int | None
    """The round whose synthesis is ``final_answer`` (None when it is not a synthesis)."""
    judge_failures: int
    """Judge replies that could not be used even after schema repair."""


class DialecticState(DialecticInput, DialecticOutput, CommonState, total=False):
    """Internal state."""

    round: int
    """The current round, from 1 (bounded by ``max_rounds``)."""
    exhausted: bool
    """The budget refused a call."""


# --- routing ---------------------------------------------------------------------------------


def after_start(state: DialecticState) -> Literal["thesis", "finish"]:
    """Write the thesis when a call fits."""
    return "finish" if halted(state) else "thesis"


def after_thesis(state: DialecticState) -> Literal["antithesis", "finish"]:
    """Argue against the thesis when it exists and a call fits."""
    return "finish" if halted(state) else "antithesis"


def after_antithesis(state: DialecticState) -> Literal["synthesis", "finish"]:
    """Synthesize when the antithesis exists and a call fits."""
    return "finish" if halted(state) else "synthesis"


def after_synthesis(state: DialecticState) -> Literal["judge", "finish"]:
    """Judge when the synthesis exists and a call fits."""
    return "finish" if halted(state) else "judge"


# --- graph -----------------------------------------------------------------------------------


def build_dialectic_graph(
    *,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    settings: DialecticSettings | None = None,
) -> StateGraph[DialecticState, Any, DialecticInput, DialecticOutput]:
    """Build the dialectic graph (uncompiled; compile it with the checkpointer you want).

    Args:
        model: the model of every role when no roster is given.
        roster: models the roles rotate over (see the module docstring).
        settings: rounds, judging criteria, convergence threshold, system prompt and budget.

    Raises:
        ValueError: an empty roster, or no (or a blank) judging criterion.
    """
    cfg = settings or DialecticSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    if not cfg.criteria or any(not c.strip() for c in cfg.criteria):
        raise ValueError(f"criteria {cfg.criteria!r} must name at least one non-blank criterion")
    nodes = DialecticNodes(cfg, members, ACCESS)

    def after_judge(state: DialecticState) -> Literal["next_round", "finish"]:
        return "finish" if stop_reason(state, cfg) else "next_round"

    graph = StateGraph(DialecticState, input_schema=DialecticInput, output_schema=DialecticOutput)
    for name in ("start", "thesis", "antithesis", "synthesis", "judge", "next_round", "finish"):
        graph.add_node(name, dual_node(getattr(nodes, name), name=name))
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", after_start)
    graph.add_conditional_edges("thesis", after_thesis)
    graph.add_conditional_edges("antithesis", after_antithesis)
    graph.add_conditional_edges("synthesis", after_synthesis)
    graph.add_conditional_edges("judge", after_judge)
    graph.add_edge("next_round", "antithesis")
    graph.add_edge("finish", END)
    return graph
