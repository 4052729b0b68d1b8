"""Debate: agents with roles propose independently, then critique and refine; a judge synthesizes.

``start -> [ask.<id>... -> clarify] -> propose.<id>... -> close_round ->
{critique.<id>... -> critiques_done -> refine.<id>... -> close_round | summarize | judge | finish}``

Every agent has its own node for each step (``propose.security``, ``critique.architect`` ...;
:func:`agent_node` builds the name, e.g. for ``interrupt_before``); a step's nodes run in
parallel in one super-step, each reading the state through its role's access list. (One node
per agent rather than a ``Send`` per agent: a ``Send`` packet carrying an agent's view is stored
twice, which made packets 39% of a long debate's checkpoint file.)

Round 1: every agent proposes on its own (it sees the task and its own clarifications only).
Round *k > 1*: every agent critiques the other agents' latest proposals, then refines its own from
the critiques it received. Later rounds see the earlier rounds in full (``include_full_history``),
or a bounded summary (``summary:<k>``, written by the judge's model through the seam, cut in code
to ``max_length``) once the transcript reaches the summarization threshold; a summary is only
written from round 2 on, when it replaces something. With ``clarifications`` on, agents first
list questions; answers come from the input's ``answers`` (keyed ``<agent id>:<n>`` or by the
exact question), and an unanswered question is recorded as ``NA``. The ``clarify`` node makes no
model call, so it can later pause with ``interrupt()`` when the input has no answers.

Stops: ``completed`` (every round ran), ``converged`` (``terminationCondition.type`` is
``convergence`` and the agents' answers agree before the last round), ``budget`` (a whole round,
or the judge, did not fit), ``error`` (a model failed for good). Agreement is decided in code on
each agent's answer (the rest of the line after its last ``ANSWER:``, else its whole reply),
normalized (case, emphasis, quotes, whitespace, trailing punctuation): answers of at most
``shortAnswerChars`` (100) characters must be equal; longer ones must all pairwise reach the
``difflib.SequenceMatcher`` ratio ``terminationCondition.threshold`` (0.9).

Synthesis: the judge writes the final solution from the blind transcript (or its summary); with
``synthesisMethod: voting`` the most common answer wins when no other ties it, and the judge
breaks ties. A run that ends without either returns the most common latest position (ties: the
first agent's) as a ``fallback`` solution.

Budget: each batch (questions, a round's proposals, a later round's critiques and refinements
together) must fit as a whole before any member starts, with the judge's calls (1, plus 1 for its
summary when summarization is on) kept in reserve; a round that does not fit ends the debate
and the judge still synthesizes.

Access lists (per agent ``X``; ``access=`` replaces a role's patterns):
    - ``asker:X`` sees ``task``; ``clarifier:X`` sees ``questions:X``.
    - ``proposer:X`` sees ``task``, ``clarify:X``.
    - ``critic:X`` and ``refiner:X`` see ``task``, ``clarify:X``, ``position:*``, ``critique:*``,
      ``summary:*`` (each step shows only its round's part, and records exactly that).
    - ``summarizer`` sees ``task``, ``position:*``, ``critique:*``, ``summary:*``; blind.
    - ``judge`` sees ``task``, ``clarify:*``, ``position:*``, ``critique:*``, ``summary:*``; blind.

The factory proves with :func:`~reasoning_graphs.access.check_independent` that no agent's round 1
(questions and proposal) can read another agent's output, directly or through another role.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph

from reasoning_graphs.access import AccessPolicy
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import CommonOutput, CommonState, LimitsInput
from reasoning_graphs.graphs._debate_config import (
    JUDGE_PROMPT_SYSTEM,
    ROLE_PROMPTS,
    AgentSpec,
    DebateConfig,
    DebateOptions,
    TerminationCondition,
)
from reasoning_graphs.graphs._debate_nodes import AgentStep, DebateNodes, agent_node
from reasoning_graphs.graphs._debate_parts import (
    Clarification,
    Contribution,
    DebateRecord,
    Solution,
    StepFailure,
    SummaryRecord,
    access_lists,
    check_round_one,
    latest_answers,
    tally,
)
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import dual_node
from reasoning_graphs.types import Usage

__all__ = [
    "JUDGE_PROMPT_SYSTEM",
    "ROLE_PROMPTS",
    "AgentSpec",
    "Clarification",
    "Contribution",
    "DebateConfig",
    "DebateInput",
    "DebateOptions",
    "DebateOutput",
    "DebateRecord",
    "DebateState",
    "Solution",
    "StepFailure",
    "SummaryRecord",
    "TerminationCondition",
    "agent_node",
    "build_debate_graph",
    "render_transcript",
]

# --- state -----------------------------------------------------------------------------------


class DebateInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """The problem to debate."""
    answers: dict[str, str]
    """Answers to clarifying questions, keyed ``<agent id>:<n>`` or by the exact question."""


class DebateOutput(CommonOutput, total=False):
    """What a run returns (a complete record: see :class:`DebateRecord`)."""

    config: DebateConfig
    """The configuration the run used."""
    clarifications: list[Clarification]
    """Every question asked and its answer (``NA`` when unanswered)."""
    transcript: Annotated[list[Contribution], delta(operator.add)]
    """Every proposal, critique and refinement with its agent id, role, model and round."""
    summaries: Annotated[list[SummaryRecord], delta(operator.add)]
    """Transcript summaries written during the run."""
    solution: Solution | None
    """The outcome (``final_answer`` is its text)."""
    rounds_completed: int
    """Rounds that finished."""
    converged: bool
    """Whether the latest answers agree (computed after every round, whatever the stop rule)."""
    failures: Annotated[list[StepFailure], delta(operator.add)]
    """Steps that failed or ran out of budget (any one ends the run)."""


class DebateState(DebateInput, DebateOutput, CommonState, total=False):
    """Internal state."""


# --- routing ---------------------------------------------------------------------------------

Next = Literal["summarize", "judge", "finish"]
"""Where a round, a summary or a half-finished round leads when no round starts."""


class _Router:
    """Pure routing functions of state for one configuration."""

    def __init__(self, cfg: DebateConfig) -> None:
        self.cfg = cfg
        self.opts = cfg.debate
        self.agents = cfg.active_agents
        self.reserve = 1 + int(self.opts.summarization.enabled)

    def _usage(self, state: DebateState) -> Usage:
        return state.get("usage") or Usage()

    def fits(self, state: DebateState, calls: int) -> bool:
        return state.get("budget", self.cfg.budget).fits(self._usage(state), calls)

    def share(self, state: DebateState, batch: int, after: int) -> int | None:
        left = state.get("budget", self.cfg.budget).remaining_calls(self._usage(state))
        return None if left is None else max(1, (left - after) // batch)

    def allowance(self, state: DebateState, step: AgentStep) -> int | None:
        """One agent's share of the remaining calls for ``step``.

        The rest of its batch and the judge's reserve are kept back.
        """
        n = len(self.agents)
        after = n + self.reserve if step in ("ask", "critique") else self.reserve
        return self.share(state, n, after)

    def nodes(self, step: AgentStep) -> list[str]:
        """Every agent's node for ``step``; they run in parallel, one branch each."""
        return [agent_node(step, spec.id) for spec in self.agents]

    def vote(self, state: DebateState) -> int | None:
        return tally(latest_answers(state.get("transcript") or [], self.agents))[1]

    def needs_summary(self, state: DebateState, *, for_agents: bool) -> int:
        s, k = self.opts.summarization, state.get("rounds_completed", 0)
        if not s.enabled or k < 2 or (for_agents and not self.opts.include_full_history):
            return 0
        if f"summary:{k}" in (state.get("outputs") or {}):
            return 0
        return int(sum(len(c.text) for c in state.get("transcript") or []) >= s.threshold)

    def conclude(self, state: DebateState) -> Next:
        if self.opts.synthesis_method == "voting" and self.vote(state) is not None:
            return "finish"
        need = self.needs_summary(state, for_agents=False)
        if not self.fits(state, 1 + need):
            return "finish"
        return "summarize" if need else "judge"

    def after_start(self, state: DebateState) -> list[str] | Literal["finish"]:
        n = len(self.agents)
        if self.opts.clarifications:
            ok = self.fits(state, 2 * n + self.reserve)
            return self.nodes("ask") if ok else "finish"
        return self.after_clarify(state)

    def after_clarify(self, state: DebateState) -> list[str] | Literal["finish"]:
        if state.get("failures") or not self.fits(state, len(self.agents) + self.reserve):
            return "finish"
        return self.nodes("propose")

    def after_round(self, state: DebateState) -> list[str] | Next:
        if state.get("failures"):
            return "finish"
        k, n = state.get("rounds_completed", 0), len(self.agents)
        stop = self.opts.termination_condition.type == "convergence" and state.get("converged", False)
        if k < self.opts.rounds and not stop:
            need = self.needs_summary(state, for_agents=True)
            if self.fits(state, 2 * n + need + self.reserve):
                return "summarize" if need else self.nodes("critique")
        return self.conclude(state)

    def after_summary(self, state: DebateState) -> list[str] | Literal["judge", "finish"]:
        step = self.after_round(state)
        return "finish" if step == "summarize" else step

    def after_critiques(self, state: DebateState) -> list[str] | Next:
        if state.get("failures"):
            return "finish"
        if self.fits(state, len(self.agents) + self.reserve):
            return self.nodes("refine")
        return self.conclude(state)


# --- graph -----------------------------------------------------------------------------------


def _policies(
    ids: Sequence[str], access: Mapping[str, AccessPolicy | Sequence[str]] | None
) -> dict[str, AccessPolicy]:
    policies = access_lists(ids)
    for role, given in (access or {}).items():
        if role not in policies:
            raise ValueError(f"access names unknown role {role!r}; roles are {sorted(policies)}")
        policies[role] = given if isinstance(given, AccessPolicy) else AccessPolicy(sees=tuple(given))
    return policies


def build_debate_graph(
    *,
    config: DebateConfig | None = None,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    access: Mapping[str, AccessPolicy | Sequence[str]] | None = None,
) -> StateGraph[DebateState, Any, DebateInput, DebateOutput]:
    """Build the debate graph (uncompiled; compile it with the checkpointer you want).

    Args:
        config: agents, judge, rounds, stopping, synthesis, history, summarization, budget
            (see :meth:`DebateConfig.from_file`); defaults to an architect and a performance agent.
        model: the model when no roster is given.
        roster: the run's models: an agent without a model uses member *i* (its position), an
            integer ``model`` indexes it; the judge defaults to member 0.
        access: replacement access patterns by role (``proposer:<id>``, ``judge`` ...).

    Raises:
        ValueError: an empty roster, a roster index out of range, an unknown role in ``access``,
            or access lists that let one agent's round 1 read another's.
    """
    cfg = config or DebateConfig()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    for spec in (*cfg.active_agents, cfg.judge):
        if isinstance(spec.model, int) and spec.model >= len(members):
            raise ValueError(
                f"agent {spec.id!r} uses roster index {spec.model} but the roster has "
                f"{len(members)} model(s); pass a longer roster or change its model"
            )
    ids = [a.id for a in cfg.active_agents]
    policies = _policies(ids, access)
    check_round_one(ids, policies, cfg.debate.rounds)
    route = _Router(cfg)
    nodes = DebateNodes(cfg, members, policies, route.share, route.allowance)
    ask, propose, critique, refine = (route.nodes(step) for step in ("ask", "propose", "critique", "refine"))

    graph = StateGraph(DebateState, input_schema=DebateInput, output_schema=DebateOutput)
    graph.add_node("start", dual_node(nodes.start, name="start"))
    graph.add_edge(START, "start")
    steps: dict[AgentStep, str] = {
        "propose": "close_round",
        "critique": "critiques_done",
        "refine": "close_round",
    }
    if cfg.debate.clarifications:
        steps = {"ask": "clarify", **steps}
        graph.add_node("clarify", dual_node(nodes.clarify, name="clarify"))
        graph.add_conditional_edges("start", route.after_start, [*ask, "finish"])
        graph.add_conditional_edges("clarify", route.after_clarify, [*propose, "finish"])
    else:
        graph.add_conditional_edges("start", route.after_start, [*propose, "finish"])
    for step, joined in steps.items():
        for i, spec in enumerate(cfg.active_agents):
            name = agent_node(step, spec.id)
            graph.add_node(name, dual_node(nodes.agent_step(step, i), name=name))
            graph.add_edge(name, joined)
    graph.add_node("close_round", dual_node(nodes.close_round, name="close_round"))
    graph.add_node("critiques_done", dual_node(nodes.critiques_done, name="critiques_done"))
    graph.add_node("summarize", dual_node(nodes.summarize, name="summarize"))
    graph.add_node("judge", dual_node(nodes.judge, name="judge"))
    graph.add_node("finish", dual_node(nodes.finish, name="finish"))
    graph.add_conditional_edges("close_round", route.after_round, [*critique, "summarize", "judge", "finish"])
    graph.add_conditional_edges(
        "critiques_done", route.after_critiques, [*refine, "summarize", "judge", "finish"]
    )
    graph.add_conditional_edges("summarize", route.after_summary, [*critique, "judge", "finish"])
    graph.add_edge("judge", "finish")
    graph.add_edge("finish", END)
    return graph


def render_transcript(values: Mapping[str, Any] | DebateRecord) -> str:
    """Render a debate (a state or a record) as Markdown: clarifications, rounds, summaries, outcome."""
    record = values if isinstance(values, DebateRecord) else DebateRecord.from_state(values)
    kinds = {"proposal": "proposal", "critique": "critique", "refinement": "refined proposal"}
    lines = [f"# Debate\n\n## Task\n\n{record.task}"]
    if record.clarifications:
        lines.append("## Clarifications\n")
        lines += [
            f"- **{c.question_id}** {c.question}\n  - answer: {c.answer}" for c in record.clarifications
        ]
    for rnd in sorted({c.round for c in record.transcript}):
        lines.append(f"## Round {rnd}")
        for c in (c for c in record.transcript if c.round == rnd):
            lines.append(f"### {c.agent_id} ({c.role}, {c.model}): {kinds[c.kind]}\n\n{c.text}")
    for s in record.summaries:
        lines.append(f"## Summary through round {s.through_round} ({s.model})\n\n{s.text}")
    if record.solution is not None:
        lines.append(f"## Final solution ({record.solution.method})\n\n{record.solution.text}")
    lines.append(f"Stop reason: {record.stop_reason}")
    return "\n\n".join(lines) + "\n"
