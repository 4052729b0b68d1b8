"""Tree of thoughts: propose steps, value them, keep a beam, repeat; the answer is verifier-gated.

``start -> {propose (one Send per beam node) | finish}``, ``propose -> evaluate -> select``,
``select -> {propose ... | finish}``.

Breadth-first search as in Yao et al. 2023. Each beam node gets its own ``propose`` call whose
prompt carries that node's partial solution (unlike LangGraph's ToT tutorial, whose expand
step never sees its parent, so its "beam search" is independent sampling). Replies are parsed
into steps in code; malformed lines are dropped and counted. ``evaluate`` checks terminal
nodes with the verifier and values open nodes by sampling a value prompt ``value_samples``
times (``sure``/``likely``/``impossible`` summed on a :class:`ValueScale`; equal prompts in a
level are asked once); the last level's open nodes are not valued, since they are never
expanded. ``select`` replaces the frontier (``Overwrite``) with the ``beam_width`` best open
nodes. The tree is plain data in state: a dict of :class:`ThoughtNode`.

The final answer is the shallowest terminal node that passes the verifier, else the top-valued
terminal node with ``passed=False``; ``any_passed`` says whether any terminal passed. Stops:
``passed``, ``completed`` (depth reached or nothing left to expand, no pass), ``budget`` (a
level's whole batch of proposals and values must fit before it starts) and ``error``.

Tasks are chosen by name (the input's ``kind``): ``game24`` and ``gsm8k`` are built in (see
:mod:`reasoning_graphs.graphs._tot_tasks` for the protocol).

Outputs: ``task``; ``thought:<id>`` per proposed step (role ``proposer``); ``value:<id>`` per
valued node (``valuer``: the sampled labels) or verified node (``verifier``: the feedback).

Access lists (roles and what they read):
    - ``proposer`` sees ``task`` and ``thought:*`` (it is shown its node's path only, and never
      a value).
    - ``valuer`` sees ``task`` and ``thought:*`` (it is shown the valued node's path only).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import Field
from typing_extensions import TypedDict

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import CommonOutput, CommonState, LimitsInput, read_as
from reasoning_graphs.graphs._tot_game24 import Game24Task
from reasoning_graphs.graphs._tot_nodes import SearchNodes
from reasoning_graphs.graphs._tot_parts import (
    SearchPlan,
    ValueScale,
    level_calls,
    path_labels,
    render_tree,
    stop_reason,
)
from reasoning_graphs.graphs._tot_tasks import Gsm8kTask, ThoughtNode, ThoughtTask
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import dual_node
from reasoning_graphs.types import Frozen, Usage
from reasoning_graphs.verifiers import Verifier

__all__ = [
    "ACCESS",
    "BUILTIN_TASKS",
    "ProposeJob",
    "SearchPlan",
    "ThoughtNode",
    "ThoughtTask",
    "ToTInput",
    "ToTOutput",
    "ToTSettings",
    "ToTState",
    "ValueScale",
    "build_tree_of_thoughts_graph",
    "merge_tree",
    "render_tree",
    "route_level",
]

# --- contracts -------------------------------------------------------------------------------


class ToTSettings(Frozen):
    """Structural settings of a tree-of-thoughts graph (the input may override the search shape)."""

    task: str = "game24"
    """The task kind used when the input names none (``game24``, ``gsm8k`` or a custom one)."""
    breadth: int = Field(default=5, ge=1, le=20)
    """Most proposals kept per expanded node (k)."""
    beam_width: int = Field(default=5, ge=1, le=50)
    """Most open nodes kept per level (b)."""
    max_depth: int = Field(default=3, ge=1, le=20)
    """Most steps from the root (``game24`` needs 3)."""
    value_samples: int = Field(default=3, ge=1, le=20)
    """Value prompts sampled per distinct state (n)."""
    value_scale: ValueScale = ValueScale()
    """Worth of each value label."""
    system_prompt: str | None = None
    """An optional system message for every call."""
    budget: Budget = Budget()
    """Default call and token limits (the input's ``max_calls``/``max_tokens`` override them)."""


ACCESS: dict[str, AccessPolicy] = {
    "proposer": AccessPolicy(sees=("task", "thought:*")),
    "valuer": AccessPolicy(sees=("task", "thought:*")),
}
"""Default access policies of the tree-of-thoughts roles."""

BUILTIN_TASKS: dict[str, ThoughtTask] = {"game24": Game24Task(), "gsm8k": Gsm8kTask()}
"""The task kinds every tree-of-thoughts graph knows, by name."""

# --- state -----------------------------------------------------------------------------------


def merge_tree(
    left: dict[str, ThoughtNode] | None, right: dict[str, ThoughtNode] | None
) -> dict[str, ThoughtNode]:
    """Reduce tree updates (a LangGraph reducer): new nodes are added, rewritten nodes replaced."""
    return {**(left or {}), **(right or {})}


class ToTInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """The task text (``game24``: the four numbers, ``"4 9 10 13"``)."""
    kind: str
    """The task kind (``game24`` or ``gsm8k``); defaults to the settings' ``task``."""
    verifier: str
    """A verifier spec (``numeric:18``); overrides the factory's and the task's default."""
    breadth: int
    """Overrides the settings' ``breadth`` for this run."""
    beam_width: int
    """Overrides the settings' ``beam_width`` for this run."""
    max_depth: int
    """Overrides the settings' ``max_depth`` for this run."""
    value_samples: int
    """Overrides the settings' ``value_samples`` for this run."""


class ToTOutput(CommonOutput, total=False):
    """What a run returns."""

    passed: bool
    """Whether ``final_answer`` passed the verifier."""
    any_passed: bool
    """Whether any terminal node passed (any-of-k)."""
    answer_node: str | None
    """The id of the node behind ``final_answer``."""
    tree: Annotated[dict[str, ThoughtNode], delta(merge_tree)]
    """Every node by id, root included."""
    depth: int
    """Levels expanded so far."""
    malformed: Annotated[int, operator.add]
    """Proposal lines dropped as malformed."""
    unparsed_values: Annotated[int, operator.add]
    """Value replies with no readable label (counted as worth 0)."""


class ToTState(ToTInput, ToTOutput, CommonState, total=False):
    """Internal state."""

    plan: SearchPlan
    """The search shape of this run (a fork may change it, e.g. a wider beam)."""
    frontier: Annotated[list[str], operator.add]
    """Ids of the beam to expand next; ``start`` and ``select`` replace it with ``Overwrite``
    (the reducer lets ``update_state`` on a fork append nodes to the beam)."""
    candidates: Annotated[list[str], operator.add]
    """Ids proposed in the current level (one append per ``propose`` branch)."""
    exhausted: Annotated[bool, operator.or_]
    """The budget refused a call."""
    failures: Annotated[list[str], operator.add]
    """Model failures that will end the run with ``error``."""


class ProposeJob(TypedDict):
    """The payload of one ``propose`` branch, built from the proposer's projected view."""

    node: ThoughtNode
    """The node to expand."""
    task: str
    """The task text."""
    kind: str
    """The task kind."""
    labels: list[str]
    """The labels the prompt shows (for the read record)."""
    index: int
    """Position in the frontier (picks the roster member)."""
    breadth: int
    """Most proposals kept."""
    allowance: int | None
    """Calls this branch may make."""


# --- routing ---------------------------------------------------------------------------------


def route_level(state: ToTState) -> list[Send] | Literal["finish"]:
    """Send one ``propose`` job per beam node, or finish when the search must stop.

    The jobs are built from the proposer's projected view (the task and the node's path), never
    from the whole state; each may make an equal share of the level's planned calls.
    """
    if stop_reason(state) is not None:
        return "finish"
    plan, frontier, tree = state["plan"], state.get("frontier") or [], state.get("tree") or {}
    seen, _ = read_as(state, "proposer")
    planned = level_calls(plan, len(frontier), state.get("depth", 0))
    allowance = state["budget"].allowance(state.get("usage") or Usage(), planned)
    jobs = []
    for index, node_id in enumerate(frontier):
        job = ProposeJob(
            node=tree[node_id].model_copy(update={"score": None, "samples": []}),  # values are not its to see
            task=seen["task"].text,
            kind=state.get("kind", ""),
            labels=["task", *(label for label in path_labels(node_id) if label in seen)],
            index=index,
            breadth=plan.breadth,
            allowance=allowance,
        )
        jobs.append(Send("propose", job))
    return jobs


# --- graph -----------------------------------------------------------------------------------


def build_tree_of_thoughts_graph(
    *,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    verifier: Verifier | None = None,
    tasks: Mapping[str, ThoughtTask] | None = None,
    settings: ToTSettings | None = None,
) -> StateGraph[ToTState, Any, ToTInput, ToTOutput]:
    """Build the tree-of-thoughts graph (uncompiled; compile it with the checkpointer you want).

    Args:
        model: the model when no roster is given (a provider string, chat model or client).
        roster: models for proposing and valuing; frontier node *i* is expanded by member *i*,
            value sample *j* is asked of member *j* (both modulo the roster's length).
        verifier: checks terminal answers when the input names no ``verifier`` spec; without
            either, the task's default is used (``game24:<numbers>``).
        tasks: extra task kinds by name (they may replace the built-in ``game24``/``gsm8k``).
        settings: search shape, value scale, system prompt and default budget.

    Raises:
        ValueError: an empty roster, or a settings task that no registered task provides.
    """
    cfg = settings or ToTSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    registry: dict[str, ThoughtTask] = {**BUILTIN_TASKS, **(tasks or {})}
    if cfg.task not in registry:
        raise ValueError(
            f"unknown task {cfg.task!r} in settings; known tasks: {', '.join(sorted(registry))} "
            "(register custom ones with tasks={name: task})"
        )
    nodes = SearchNodes(cfg, members, registry, verifier, ACCESS)
    graph = StateGraph(ToTState, input_schema=ToTInput, output_schema=ToTOutput)
    graph.add_node("start", dual_node(nodes.start, name="start"))
    graph.add_node("propose", dual_node(nodes.propose, name="propose"))
    graph.add_node("evaluate", dual_node(nodes.evaluate, name="evaluate"))
    graph.add_node("select", dual_node(nodes.select, name="select"))
    graph.add_node("finish", dual_node(nodes.finish, name="finish"))
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", route_level, ["propose", "finish"])
    graph.add_edge("propose", "evaluate")
    graph.add_edge("evaluate", "select")
    graph.add_conditional_edges("select", route_level, ["propose", "finish"])
    graph.add_edge("finish", END)
    return graph
