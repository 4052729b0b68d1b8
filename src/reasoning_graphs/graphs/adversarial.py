"""Adversarial review: two independent advocates, checked in code, judged blind in both orders.

``start -> [produce] -> advocate (Send: pro, con) -> collect -> [rebut (Send) -> collect] ->
arbitrate (Send: order 1, order 2) -> finish``

The artifact comes from the input or is produced once by the ``producer`` and shared by every
reader (fan-in; never regenerated per reader). The ``pro`` advocate argues that the proposition
holds (by default: the artifact accomplishes the task), ``con`` that it does not. Neither sees the
other's case (``check_independent`` proves it when the graph is built). Each claim must be grounded
by a quotation that occurs verbatim in the artifact; the claim limit and the assigned position are
checked too; a reply with violations is re-prompted with all of them at once, and these re-prompts
share one bound (``max_repairs``) with the seam's schema repairs. Only valid claims reach the
arbiter. With ``rebuttal=True`` each side then answers the opposing case.

The arbiter sees neutral slot labels (``Case 1``/``Case 2``), never side or model names, and never
the advocates' self-reported confidence; it runs once per order. A side wins only when both orders
chose it; otherwise (disagreement, a tie, or a failed reply) the verdict is ``inconclusive``. When
neither case keeps a grounded claim, the verdict is ``inconclusive`` without arbitration.

Stops: ``completed`` (a winner), ``inconclusive``, ``budget`` (the next batch does not fit), or
``error`` (a model failed for good); the partial result is kept.

Access lists (roles and what they read):
    - ``producer`` sees ``task``.
    - ``pro`` and ``con`` see ``task``, ``proposition``, ``artifact``.
    - ``pro_rebuttal`` and ``con_rebuttal`` also see ``case:pro`` and ``case:con``.
    - ``arbiter`` (blind) sees ``task``, ``proposition``, ``artifact``, ``case:*``, ``rebuttal:*``.

Models: ``roster`` seats are producer 0, pro 1, con 2, arbiter 3 (wrapping around).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import Field

from reasoning_graphs.access import AccessPolicy, check_independent
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._adversarial_nodes import AdversarialNodes
from reasoning_graphs.graphs._adversarial_parts import (
    AdversarialVerdict,
    Arbitration,
    Case,
    Claim,
    merge_keyed,
)
from reasoning_graphs.graphs._adversarial_prompts import (
    ARBITER_PROMPT,
    CASE_PROMPT,
    PRODUCE_PROMPT,
    REBUTTAL_PROMPT,
    REPROMPT,
    RULES,
)
from reasoning_graphs.graphs._adversarial_tasks import SEATS, arbitrate_sends, argue_sends
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import CommonOutput, CommonState, LimitsInput
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import dual_node
from reasoning_graphs.types import Frozen, Usage

__all__ = [
    "ACCESS",
    "ARBITER_PROMPT",
    "CASE_PROMPT",
    "DEFAULT_PROPOSITION",
    "PRODUCES",
    "PRODUCE_PROMPT",
    "REBUTTAL_PROMPT",
    "REPROMPT",
    "RULES",
    "SEATS",
    "AdversarialInput",
    "AdversarialOutput",
    "AdversarialSettings",
    "AdversarialState",
    "AdversarialVerdict",
    "Arbitration",
    "Case",
    "Claim",
    "build_adversarial_graph",
]

# --- contracts -------------------------------------------------------------------------------


class AdversarialSettings(Frozen):
    """Structural settings of an adversarial graph."""

    max_claims: int = Field(default=3, ge=1, le=20)
    """Most claims per case; claims past the limit are withheld from the arbiter."""
    min_quote_chars: int = Field(default=8, ge=1)
    """Shortest quotation that can ground a claim."""
    max_repairs: int = Field(default=2, ge=0, le=10)
    """Re-prompts per case, schema repairs and contract re-prompts together."""
    rebuttal: bool = False
    """Add a rebuttal round in which each side answers the opposing case."""
    system_prompt: str | None = None
    """An optional system message for every call (it must not name sides or models)."""
    access: dict[str, AccessPolicy] = Field(default_factory=dict)
    """Overrides of :data:`ACCESS` by role; checked for independence when the graph is built."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""


DEFAULT_PROPOSITION = "The artifact fully and correctly accomplishes the task."
"""What ``pro`` defends and ``con`` attacks when the input names no proposition."""

_READS = ("task", "proposition", "artifact")
ACCESS: dict[str, AccessPolicy] = {
    "producer": AccessPolicy(sees=("task",)),
    "pro": AccessPolicy(sees=_READS),
    "con": AccessPolicy(sees=_READS),
    "pro_rebuttal": AccessPolicy(sees=(*_READS, "case:pro", "case:con")),
    "con_rebuttal": AccessPolicy(sees=(*_READS, "case:pro", "case:con")),
    "arbiter": AccessPolicy(sees=(*_READS, "case:*", "rebuttal:*"), blind=True),
}
"""Default access policies of the adversarial roles."""

PRODUCES: dict[str, tuple[str, ...]] = {
    "user": ("task", "proposition"),
    "producer": ("artifact",),
    "pro": ("case:pro",),
    "con": ("case:con",),
    "pro_rebuttal": ("rebuttal:pro",),
    "con_rebuttal": ("rebuttal:con",),
    "arbiter": ("arbitration:1", "arbitration:2"),
}
"""The labels each role writes (the independence proof follows them)."""

# --- state -----------------------------------------------------------------------------------


class AdversarialInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """What the artifact is for (or the task that produces it)."""
    artifact: str
    """The artifact to review; when absent the producer writes it from the task."""
    proposition: str
    """What ``pro`` defends and ``con`` attacks (default :data:`DEFAULT_PROPOSITION`)."""


class AdversarialOutput(CommonOutput, total=False):
    """What a run returns (``final_answer`` is the verdict with its reasons)."""

    verdict: AdversarialVerdict
    """The winner (``pro``/``con``/``inconclusive``) and why."""
    artifact: str
    """The artifact that was reviewed (shared by every reader)."""
    cases: Annotated[dict[str, Case], delta(merge_keyed)]
    """Both cases by side, with their validated claims and any violations."""
    rebuttals: Annotated[dict[str, Case], delta(merge_keyed)]
    """Both rebuttals by side (rebuttal round only)."""
    arbitration: Annotated[list[Arbitration], delta(operator.add)]
    """Each arbitration order: slot mapping, choice, reason."""


class AdversarialState(AdversarialInput, AdversarialOutput, CommonState, total=False):
    """Internal state."""


# --- routing ---------------------------------------------------------------------------------


def _fits(state: AdversarialState, calls: int) -> bool:
    return state["budget"].fits(state.get("usage") or Usage(), calls)


def after_start(state: AdversarialState) -> list[Send] | Literal["produce", "finish"]:
    """Take the input's artifact to both advocates, or produce one first."""
    if "artifact" not in (state.get("outputs") or {}):
        return "produce" if _fits(state, 1) else "finish"
    return argue_sends(state, "case") if _fits(state, 2) else "finish"


def after_produce(state: AdversarialState) -> list[Send] | Literal["finish"]:
    """Share the one artifact with both advocates (the batch must fit as a whole)."""
    ready = "artifact" in (state.get("outputs") or {})
    return argue_sends(state, "case") if ready and _fits(state, 2) else "finish"


def after_collect(state: AdversarialState, rebuttal: bool) -> list[Send] | Literal["finish"]:
    """Go on to rebuttals or arbitration when every case was answered and one holds a claim."""
    cases, rebuttals = state.get("cases") or {}, state.get("rebuttals") or {}
    everything = [*cases.values(), *rebuttals.values()]
    if not all(c.answered for c in everything) or not any(c.claims for c in cases.values()):
        return "finish"
    if rebuttal and not rebuttals:
        return argue_sends(state, "rebuttal") if _fits(state, 2) else "finish"
    return arbitrate_sends(state) if _fits(state, 2) else "finish"


# --- graph -----------------------------------------------------------------------------------


def build_adversarial_graph(
    *,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    settings: AdversarialSettings | None = None,
) -> StateGraph[AdversarialState, Any, AdversarialInput, AdversarialOutput]:
    """Build the adversarial review graph (uncompiled; compile it with your checkpointer).

    Args:
        model: the model of every role when no roster is given.
        roster: models by seat (see :data:`SEATS`): producer, pro, con, arbiter.
        settings: claim limit, quotation length, re-prompts, rebuttal round, access, budget.

    Raises:
        ValueError: an empty roster, an access override for an unknown role, advocates that could
            read each other's case, or an arbiter that is not blind.
    """
    cfg = settings or AdversarialSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    unknown = sorted(set(cfg.access) - set(ACCESS))
    if unknown:
        raise ValueError(f"access override for unknown role {unknown[0]!r}; roles are {sorted(ACCESS)}")
    policies = {**ACCESS, **cfg.access}
    check_independent(("pro", "con"), policies, PRODUCES)
    if not policies["arbiter"].blind:
        raise ValueError("the arbiter's access policy must be blind=True (it must not see sides or models)")

    nodes = AdversarialNodes(cfg, members, policies, DEFAULT_PROPOSITION)

    def collect(state: AdversarialState) -> dict[str, Any]:
        # Fan-in: runs once after both branches, so the next batch is sent once (not per branch).
        return {}

    def route_collect(state: AdversarialState) -> list[Send] | Literal["finish"]:
        return after_collect(state, cfg.rebuttal)

    graph = StateGraph(AdversarialState, input_schema=AdversarialInput, output_schema=AdversarialOutput)
    graph.add_node("start", dual_node(nodes.start, name="start"))
    graph.add_node("produce", dual_node(nodes.produce, name="produce"))
    graph.add_node("advocate", dual_node(nodes.argue, name="advocate"))
    graph.add_node("collect", collect)
    graph.add_node("arbitrate", dual_node(nodes.arbitrate, name="arbitrate"))
    graph.add_node("finish", dual_node(nodes.finish, name="finish"))
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", after_start, ["produce", "advocate", "finish"])
    graph.add_conditional_edges("produce", after_produce, ["advocate", "finish"])
    graph.add_edge("advocate", "collect")
    targets = ["rebut", "arbitrate", "finish"] if cfg.rebuttal else ["arbitrate", "finish"]
    if cfg.rebuttal:
        graph.add_node("rebut", dual_node(nodes.argue, name="rebut"))
        graph.add_edge("rebut", "collect")
    graph.add_conditional_edges("collect", route_collect, targets)
    graph.add_edge("arbitrate", "finish")
    graph.add_edge("finish", END)
    return graph
