"""Independent perspectives: one snapshot, independent views, a matrix in code, a synthesis.

``start -> view (Send per role) -> compare -> {view (retry the failed roles only) | synthesize
-> [synthesize] | finish} -> finish``

Each role judges the same factual snapshot against its own disclosed criteria, without seeing
any other view (``check_independent`` proves it before any call). A view gives a position, a
summary, a judgment per topic with a reason and exact quotations, and a trade-off. Views are
checked in code: every quotation occurs verbatim in the snapshot, every topic is judged once,
judgments and positions come from the allowed set. Only missing or invalid views are retried,
each with every problem of its previous reply, at most ``max_view_attempts`` times per role.

The comparison matrix is computed in code from the valid views: ``consensus`` only when every
role has a view and all agree; ``disagreement`` keeps every group with its roles; agreement with
views missing is ``agreement_among_available``; a topic two or more roles judge unknown is a
shared unknown. The synthesis (recommendation, conditions, resolutions, unresolved topics each
with a follow-up) cannot rewrite the matrix (it is code-owned state) and is checked to answer
every disagreement and shared unknown, retried with every problem otherwise. The recommendation
is then capped in code: missing views or an invalid synthesis cap it at ``defer``; hard gates
(``Gate``: when a role gives a judgment, at most a level) cap it further.

Stops: ``completed``, ``needs_human`` (every view failed), ``max_attempts`` (the synthesis never
passed its checks), ``budget`` or ``error``. Reports: :func:`to_json`, :func:`to_markdown`,
:func:`to_csv`, :func:`write_report`.

Access lists (roles and what they read):
    - each view role ``R`` sees ``snapshot``, ``brief`` (question, topics, judgments),
      ``criteria:R`` and its own ``draft:R:*``; it writes ``view:R`` (or ``draft:R:n``).
    - ``synthesizer`` sees ``snapshot``, ``brief``, ``criteria:*``, ``view:*``, ``matrix`` and its
      own ``synthesis_draft:*``.

Models: role *i* of the panel uses roster seat *i*; the synthesizer uses the seat after the last
role (wrapping around).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import Field

from reasoning_graphs.access import check_independent
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import CommonOutput, CommonState, LimitsInput
from reasoning_graphs.graphs._perspectives_checks import build_matrix, compare_row
from reasoning_graphs.graphs._perspectives_flow import (
    panel_access,
    panel_produces,
    pending_roles,
    tries,
    view_sends,
)
from reasoning_graphs.graphs._perspectives_nodes import PerspectivesNodes
from reasoning_graphs.graphs._perspectives_parts import (
    DEFAULT_JUDGMENTS,
    DEFAULT_QUESTION,
    RECOMMENDATIONS,
    SYNTHESIZER,
    Agenda,
    FollowUp,
    Gate,
    Matrix,
    MatrixStatus,
    Recommendation,
    RoleSpec,
    StepAttempt,
    Synthesis,
    TopicAnswer,
    TopicJudgment,
    TopicRow,
    View,
)
from reasoning_graphs.graphs._perspectives_prompts import RETRY_PROMPT, SYNTHESIS_PROMPT, VIEW_PROMPT
from reasoning_graphs.graphs._perspectives_report import to_csv, to_json, to_markdown, write_report
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import dual_node
from reasoning_graphs.types import Frozen, Usage

__all__ = [
    "DEFAULT_JUDGMENTS",
    "DEFAULT_QUESTION",
    "RECOMMENDATIONS",
    "RETRY_PROMPT",
    "SYNTHESIS_PROMPT",
    "SYNTHESIZER",
    "VIEW_PROMPT",
    "Agenda",
    "FollowUp",
    "Gate",
    "Matrix",
    "MatrixStatus",
    "PerspectivesInput",
    "PerspectivesOutput",
    "PerspectivesSettings",
    "PerspectivesState",
    "Recommendation",
    "RoleSpec",
    "StepAttempt",
    "Synthesis",
    "TopicAnswer",
    "TopicJudgment",
    "TopicRow",
    "View",
    "build_matrix",
    "build_perspectives_graph",
    "compare_row",
    "panel_access",
    "panel_produces",
    "to_csv",
    "to_json",
    "to_markdown",
    "write_report",
]

# --- contracts -------------------------------------------------------------------------------


class PerspectivesSettings(Frozen):
    """Structural settings of a perspectives graph."""

    max_view_attempts: int = Field(default=2, ge=1, le=10)
    """Most attempts per role (the first included); only missing or invalid views are retried."""
    max_synthesis_attempts: int = Field(default=2, ge=1, le=10)
    """Most synthesis attempts (the first included)."""
    min_quote_chars: int = Field(default=8, ge=1)
    """Shortest quotation accepted as evidence."""
    unknown_judgment: str = "unknown"
    """The judgment that needs no quotation and marks an evidence gap (if in the allowed set)."""
    system_prompt: str | None = None
    """An optional system message for every call."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""


# --- state -----------------------------------------------------------------------------------


def _merge_views(left: dict[str, View] | None, right: dict[str, View] | None) -> dict[str, View]:
    return {**(left or {}), **(right or {})}


class PerspectivesInput(LimitsInput, total=False):
    """What a caller passes in (see ``examples/snapshot.json``)."""

    snapshot: str
    """The factual snapshot every role judges (the only evidence quotations may come from)."""
    topics: list[str]
    """Topics every view must judge."""
    roles: list[RoleSpec]
    """The panel: ``{"name": ..., "criteria": ...}`` per role."""
    judgments: list[str]
    """Allowed judgments (default :data:`DEFAULT_JUDGMENTS`)."""
    question: str
    """The decision under review (default :data:`DEFAULT_QUESTION`)."""
    gates: list[Gate]
    """Hard gates: ``{"role", "judgment", "topic" (optional), "cap"}``."""


class PerspectivesOutput(CommonOutput, total=False):
    """What a run returns (``final_answer`` is the capped recommendation and its rationale)."""

    snapshot: str
    """The snapshot (kept so a report is self-contained)."""
    agenda: Agenda
    """Question, topics and allowed judgments, as checked."""
    panel: list[RoleSpec]
    """The roles and their disclosed criteria."""
    gates: list[Gate]
    """The hard gates, as checked."""
    views: Annotated[dict[str, View], delta(_merge_views)]
    """Valid views by role."""
    missing: list[str]
    """Roles without a valid view."""
    attempts: Annotated[list[StepAttempt], delta(operator.add)]
    """Every view and synthesis attempt, with its problems."""
    matrix: Matrix
    """The comparison matrix (code-owned)."""
    synthesis: Synthesis | None
    """The last parsed synthesis (``violations`` empty when it passed its checks)."""
    recommendation: Recommendation | None
    """The recommendation after every cap, or None without a synthesis."""
    caps: list[str]
    """Each cap applied (missing views, invalid synthesis, gates)."""


class PerspectivesState(PerspectivesInput, PerspectivesOutput, CommonState, total=False):
    """Internal state."""


# --- routing ---------------------------------------------------------------------------------


def _fits(state: PerspectivesState, calls: int) -> bool:
    return state["budget"].fits(state.get("usage") or Usage(), calls)


def after_start(state: PerspectivesState, cfg: PerspectivesSettings) -> list[Send] | Literal["finish"]:
    """Send every role its view task, if the whole batch fits."""
    pending = pending_roles(state, cfg)
    return view_sends(state, pending) if pending and _fits(state, len(pending)) else "finish"


def after_compare(
    state: PerspectivesState, cfg: PerspectivesSettings
) -> list[Send] | Literal["synthesize", "finish"]:
    """Retry only the missing or invalid views; then synthesize (nothing valid: a human must look)."""
    pending = pending_roles(state, cfg)
    if pending:
        return view_sends(state, pending) if _fits(state, len(pending)) else "finish"
    if not state.get("views"):
        return "finish"
    return "synthesize" if _fits(state, 1) else "finish"


def after_synthesize(state: PerspectivesState, cfg: PerspectivesSettings) -> Literal["synthesize", "finish"]:
    """Retry an invalid or failed synthesis while attempts and budget last."""
    done = tries(state, SYNTHESIZER)
    last = done[-1] if done else None
    if last is None or last.ok or last.failure == "budget" or len(done) >= cfg.max_synthesis_attempts:
        return "finish"
    return "synthesize" if _fits(state, 1) else "finish"


# --- graph -----------------------------------------------------------------------------------


def build_perspectives_graph(
    *,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    settings: PerspectivesSettings | None = None,
) -> StateGraph[PerspectivesState, Any, PerspectivesInput, PerspectivesOutput]:
    """Build the perspectives graph (uncompiled; compile it with your checkpointer).

    Args:
        model: the model of every role when no roster is given.
        roster: models by seat: role *i* uses seat *i*, the synthesizer the next seat.
        settings: attempts, quotation length, unknown judgment, system prompt, budget.

    Raises:
        ValueError: an empty roster, or access lists that would let one view read another.
    """
    cfg = settings or PerspectivesSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    sample = ["role_a", "role_b", "role_c"]
    check_independent(sample, panel_access(sample), panel_produces(sample, cfg.max_view_attempts))
    nodes = PerspectivesNodes(cfg, members)

    def route_start(state: PerspectivesState) -> list[Send] | Literal["finish"]:
        return after_start(state, cfg)

    def route_compare(state: PerspectivesState) -> list[Send] | Literal["synthesize", "finish"]:
        return after_compare(state, cfg)

    def route_synthesize(state: PerspectivesState) -> Literal["synthesize", "finish"]:
        return after_synthesize(state, cfg)

    graph = StateGraph(PerspectivesState, input_schema=PerspectivesInput, output_schema=PerspectivesOutput)
    graph.add_node("start", dual_node(nodes.start, name="start"))
    graph.add_node("view", dual_node(nodes.view, name="view"))
    graph.add_node("compare", dual_node(nodes.compare, name="compare"))
    graph.add_node("synthesize", dual_node(nodes.synthesize, name="synthesize"))
    graph.add_node("finish", dual_node(nodes.finish, name="finish"))
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", route_start, ["view", "finish"])
    graph.add_edge("view", "compare")
    graph.add_conditional_edges("compare", route_compare, ["view", "synthesize", "finish"])
    graph.add_conditional_edges("synthesize", route_synthesize, ["synthesize", "finish"])
    graph.add_edge("finish", END)
    return graph
