"""Reflection: independent drafts, then a frame, a critique and a synthesis.

``start -> gather (one Send per roster member) -> collect -> frame -> critique -> synthesize -> finish``

Every roster member drafts an answer in parallel, seeing only the task (labels ``draft:0`` ..
``draft:n-1``, each recorded with its model). The framer lists the key claims, agreements and
disagreements among the drafts (a :class:`Frame`), the critic lists problems in the drafts and
the frame (a :class:`~reasoning_graphs.types.Critique`), and the synthesizer writes the final
answer. The run records whether the roster was heterogeneous (two or more distinct model ids).

Access lists (roles and what they read; ``ReflectionSettings.sees`` replaces a role's patterns):
    - ``drafter`` (every gather member) sees ``task``.
    - ``framer`` sees ``task``, ``draft:*``; blind (producers and models hidden).
    - ``critic`` sees ``task``, ``frame``, ``draft:*``; blind.
    - ``synthesizer`` sees ``task``, ``frame``, ``critique``, ``draft:*``; blind.

With ``access_lists=False`` the framer, critic and synthesizer see every prior output (``*``)
with its model shown; drafters still see only the task, the one output that exists while they
run. The factory proves with :func:`~reasoning_graphs.access.check_independent` that no drafter
can read another's draft, directly or through another role, and raises ``ValueError`` otherwise.

Budget: the whole gather batch must fit before any member starts (else the run ends with
``budget`` and no call made); each later stage checks its call first. Stops: ``completed``,
``budget`` or ``error``; a run that ends before its synthesis returns the draft that agrees most
with the others (mean word-overlap), the best partial result without a judge.

Models: drafts come from the roster (member *i* writes ``draft:i``, wrapping around when
``drafts`` exceeds the roster); frame, critique and synthesis use the context's ``model``, else
the factory's ``model``, else the run's first roster member.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import Field

from reasoning_graphs.access import AccessPolicy, check_independent, matches
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import CommonOutput, CommonState, LimitsInput, read_as
from reasoning_graphs.graphs._reflection_nodes import ReflectionNodes
from reasoning_graphs.graphs._reflection_parts import (
    CRITIQUE_PROMPT,
    DRAFT_PROMPT,
    FRAME_PROMPT,
    SYNTHESIZE_PROMPT,
    Draft,
    DraftJob,
    Frame,
)
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import dual_node
from reasoning_graphs.types import Critique, Frozen, Usage

__all__ = [
    "ACCESS",
    "CRITIQUE_PROMPT",
    "DRAFT_PROMPT",
    "FRAME_PROMPT",
    "ROLES",
    "SYNTHESIZE_PROMPT",
    "Draft",
    "DraftJob",
    "Frame",
    "ReflectionInput",
    "ReflectionOutput",
    "ReflectionSettings",
    "ReflectionState",
    "build_reflection_graph",
]

# --- contracts (values: Frame, Draft; prompts: in _reflection_parts) ---------------------------


class ReflectionSettings(Frozen):
    """Structural settings of a reflection graph."""

    drafts: int | None = Field(default=None, ge=1, le=64)
    """Gather members; None: one per roster member, or 3 from ``model`` when no roster is given."""
    access_lists: bool = True
    """Enforce the access lists; False inlines every prior output into every later stage."""
    sees: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Replacement ``sees`` patterns per role (``drafter``, ``framer``, ``critic``, ``synthesizer``)."""
    system_prompt: str | None = None
    """An optional system message for every call."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""


ROLES = ("drafter", "framer", "critic", "synthesizer")
"""The roles of a reflection run."""

ACCESS: dict[str, AccessPolicy] = {
    "drafter": AccessPolicy(sees=("task",)),
    "framer": AccessPolicy(sees=("task", "draft:*"), blind=True),
    "critic": AccessPolicy(sees=("task", "frame", "draft:*"), blind=True),
    "synthesizer": AccessPolicy(sees=("task", "frame", "critique", "draft:*"), blind=True),
}
"""Default access policies of the reflection roles."""

_PRODUCES = {"framer": ("frame",), "critic": ("critique",), "synthesizer": ("synthesis",)}

# --- state -----------------------------------------------------------------------------------


class ReflectionInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """The task every drafter answers."""


class ReflectionOutput(CommonOutput, total=False):
    """What a run returns."""

    drafts: list[Draft]
    """Every gather member's draft with its model, by index."""
    frame: Frame | None
    """The framer's reading of the drafts (None when the run ended before it)."""
    critique: Critique | None
    """The critic's problems and suggestions (None when the run ended before it)."""
    heterogeneous: bool
    """True when the gather members span at least two distinct model ids."""


class ReflectionState(ReflectionInput, ReflectionOutput, CommonState, total=False):
    """Internal state."""

    draft_count: int
    """Gather members of this run."""
    gathered: Annotated[list[Draft], delta(operator.add)]
    """Drafts in completion order (the fan-in channel)."""
    exhausted: bool
    """The budget refused a call."""


# --- routing ---------------------------------------------------------------------------------


def _halted(state: ReflectionState, calls: int) -> bool:
    usage = state.get("usage") or Usage()
    return bool(state.get("exhausted") or state.get("error")) or not state["budget"].fits(usage, calls)


def fan_out(state: ReflectionState) -> list[Send] | Literal["finish"]:
    """Send one job per gather member, or finish when the whole batch does not fit."""
    count = state["draft_count"]
    if _halted(state, count):
        return "finish"
    seen, record = read_as(state, "drafter")
    share = state["budget"].allowance(state.get("usage") or Usage(), count)
    task = seen["task"].text
    return [Send("gather", DraftJob(index=i, task=task, read=record, max_calls=share)) for i in range(count)]


def after_collect(state: ReflectionState) -> Literal["frame", "finish"]:
    """Frame when a draft exists and a call fits."""
    return "finish" if _halted(state, 1) else "frame"


def after_frame(state: ReflectionState) -> Literal["critique", "finish"]:
    """Critique when the frame exists and a call fits."""
    return "finish" if _halted(state, 1) else "critique"


def after_critique(state: ReflectionState) -> Literal["synthesize", "finish"]:
    """Synthesize when the critique exists and a call fits."""
    return "finish" if _halted(state, 1) else "synthesize"


# --- graph -----------------------------------------------------------------------------------


def _policies(cfg: ReflectionSettings) -> dict[str, AccessPolicy]:
    unknown = sorted(set(cfg.sees) - set(ROLES))
    if unknown:
        raise ValueError(f"ReflectionSettings.sees names unknown role(s) {unknown}; roles are {list(ROLES)}")
    if cfg.sees and not cfg.access_lists:
        raise ValueError("ReflectionSettings.sees needs access_lists=True; drop sees or turn access lists on")
    if not cfg.access_lists:
        return {role: ACCESS["drafter"] if role == "drafter" else AccessPolicy(sees=("*",)) for role in ROLES}
    policies = dict(ACCESS)
    for role, patterns in cfg.sees.items():
        if not matches("task", patterns):
            raise ValueError(f"role {role!r} must see 'task'; add 'task' to its patterns {list(patterns)}")
        policies[role] = policies[role].model_copy(update={"sees": tuple(patterns)})
    return policies


def _check_drafters(policies: dict[str, AccessPolicy], count: int) -> None:
    """Prove that no drafter can read another's draft (checked for at least two members)."""
    members = [f"drafter:{i}" for i in range(max(2, count))]
    readers: dict[str, AccessPolicy] = {m: policies["drafter"] for m in members}
    readers |= {role: policies[role] for role in _PRODUCES}
    produces = {"user": ("task",), **{m: (f"draft:{i}",) for i, m in enumerate(members)}, **_PRODUCES}
    check_independent(members, readers, produces)


def build_reflection_graph(
    *,
    roster: Sequence[ModelRef] | None = None,
    model: ModelRef | None = None,
    settings: ReflectionSettings | None = None,
) -> StateGraph[ReflectionState, Any, ReflectionInput, ReflectionOutput]:
    """Build the reflection graph (uncompiled; compile it with the checkpointer you want).

    Args:
        roster: the gather members' models (member *i* drafts ``draft:i``); defaults to ``[model]``.
        model: the model of the frame, critique and synthesis stages; defaults to the first
            roster member (and to the embedded model when neither is given).
        settings: draft count, access lists, system prompt and default budget.

    Raises:
        ValueError: an empty roster, an unknown role or a role that cannot see the task in
            ``settings.sees``, or access lists that let a drafter read another's draft.
    """
    cfg = settings or ReflectionSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model or DEFAULT_MODEL]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    policies = _policies(cfg)
    _check_drafters(policies, cfg.drafts or (len(members) if roster is not None else 3))
    nodes = ReflectionNodes(cfg, members, model, roster is not None, policies)

    graph = StateGraph(ReflectionState, input_schema=ReflectionInput, output_schema=ReflectionOutput)
    for name in ("start", "gather", "collect", "frame", "critique", "synthesize", "finish"):
        graph.add_node(name, dual_node(getattr(nodes, name), name=name))
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", fan_out, ["gather", "finish"])
    graph.add_edge("gather", "collect")
    graph.add_conditional_edges("collect", after_collect)
    graph.add_conditional_edges("frame", after_frame)
    graph.add_conditional_edges("critique", after_critique)
    graph.add_edge("synthesize", "finish")
    graph.add_edge("finish", END)
    return graph
