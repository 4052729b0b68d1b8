"""The debate's node bodies (each runs under ``invoke`` and ``ainvoke`` through ``dual_node``)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Literal, cast

from langgraph.types import interrupt

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord
from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._common import budget_for_run, read_as, require_text
from reasoning_graphs.graphs._debate_config import AgentSpec, DebateConfig
from reasoning_graphs.graphs._debate_parts import (
    Clarification,
    Contribution,
    Questions,
    Solution,
    StepFailure,
    SummaryRecord,
    agree,
    answer_of,
    latest_answers,
    latest_positions,
    tally,
)
from reasoning_graphs.graphs._debate_prompts import ASK_PROMPT, narrow, render
from reasoning_graphs.models import ModelClient, ModelRef, ModelSettings, resolve
from reasoning_graphs.nodes import Generated, NodeIO, generate, roster_from_context
from reasoning_graphs.types import StopReason

__all__ = ["DebateNodes", "agent_node"]


Update = dict[str, Any]
"""A node's state update."""

AgentStep = Literal["ask", "propose", "critique", "refine"]
"""A step every agent takes in its own node."""

_STEPS: dict[AgentStep, str] = {
    "ask": "asker",
    "propose": "proposer",
    "critique": "critic",
    "refine": "refiner",
}


def agent_node(step: AgentStep, agent_id: str) -> str:
    """The name of one agent's node for a step, e.g. ``critique.security``."""
    return f"{step}.{agent_id}"


def _failure(out: Generated[Any], rnd: int, step: str) -> StepFailure:
    kind = "budget" if out.budget_exhausted else "error"
    return StepFailure(round=rnd, step=step, kind=kind, message=out.error or "no reply")


class DebateNodes:
    """Node bodies for one configuration, roster and set of access policies."""

    def __init__(
        self,
        cfg: DebateConfig,
        members: Sequence[ModelRef],
        policies: Mapping[str, AccessPolicy],
        share: Callable[[Any, int, int], int | None],
        allowance: Callable[[Any, AgentStep], int | None],
    ) -> None:
        """Bind the bodies to a configuration.

        ``share(state, batch, after)`` splits the remaining calls among ``batch`` members with
        ``after`` calls kept back; ``allowance(state, step)`` is one agent's share for a step.
        """
        self.cfg, self.opts, self.members = cfg, cfg.debate, list(members)
        self.policies, self.share, self.allowance = dict(policies), share, allowance
        self.agents = cfg.active_agents
        self.ids = [a.id for a in self.agents]

    def client(self, spec: AgentSpec, position: int) -> ModelClient:
        """Return the seam client of an agent (or the judge), from the run's roster."""
        roster = roster_from_context(self.members)
        if isinstance(spec.model, str):
            ref: ModelRef = spec.model
        else:
            ref = roster[spec.model if isinstance(spec.model, int) else position % len(roster)]
        if isinstance(ref, str) and spec.temperature is not None:
            return resolve(ref, ModelSettings(temperature=spec.temperature))
        return resolve(ref)

    async def start(self, state: Any, io: NodeIO) -> dict[str, Any]:
        """Validate the input and models before any call; record budget, access and task."""
        task = require_text(state.get("task"), "task")
        answers = state.get("answers")
        if answers is not None and not (
            isinstance(answers, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in answers.items())
        ):
            raise InputError(
                f"input 'answers' must map question ids ('<agent id>:<n>') or questions to "
                f"answer strings, got {answers!r}"
            )
        roster = roster_from_context(self.members)
        for i, spec in enumerate((*self.agents, self.cfg.judge)):
            if isinstance(spec.model, int) and spec.model >= len(roster):
                raise InputError(
                    f"agent {spec.id!r} uses roster index {spec.model} but this run's roster has "
                    f"{len(roster)} model(s); pass a longer roster"
                )
            self.client(spec, i if i < len(self.agents) else 0)  # bad specs fail before any call
        return {
            "budget": budget_for_run(state, self.cfg.budget),
            "access": self.policies,
            "config": self.cfg,
            "outputs": {"task": Output(label="task", text=task, role="user")},
            "rounds_completed": 0,
            "converged": False,
            "clarifications": [],
            "solution": None,
        }

    def agent_step(
        self, step: AgentStep, agent: int
    ) -> Callable[[Any, NodeIO], Coroutine[Any, Any, dict[str, Any]]]:
        """Return the body of agent ``agent``'s node for ``step`` (see :func:`agent_node`).

        The node reads the state through the role's access list (``<role>:<agent id>``), narrowed
        to its round for critics and refiners, and records that read.
        """

        async def body(state: Any, io: NodeIO) -> dict[str, Any]:
            return await self._turn(state, io, step, agent)

        return body

    async def _turn(self, state: Any, io: NodeIO, node: AgentStep, agent: int) -> dict[str, Any]:
        step, spec = _STEPS[node], self.agents[agent]
        rnd = {"ask": 0, "propose": 1}.get(node, state.get("rounds_completed", 0) + 1)
        who = f"{step}:{spec.id}"
        view, _ = read_as(state, who)
        if step in ("critic", "refiner"):
            narrowed = cast(Literal["critic", "refiner"], step)
            full = self.opts.include_full_history
            view = narrow(view, narrowed, agent=spec.id, round=rnd, full_history=full)
        read = ReadRecord(node=who, labels=sorted(view))
        max_calls = self.allowance(state, node)
        if step == "asker":
            limit = self.opts.clarifications_max_per_agent
            prompt = ASK_PROMPT.render(task=view["task"].text, limit=limit, role=spec.role)
            out = await generate(
                io,
                self.client(spec, agent),
                prompt,
                node=node,
                schema=Questions,
                system=spec.system(),
                max_calls=max_calls,
            )
        else:
            view_step = cast(Literal["proposer", "critic", "refiner"], step)
            prompt = render(view_step, view, agent=spec.id, role=spec.role, round=rnd, order=self.ids)
            out = await generate(
                io,
                self.client(spec, agent),
                prompt,
                node=node,
                system=spec.system(),
                max_calls=max_calls,
            )
        update: dict[str, Any] = {"usage": out.usage, "reads": [read]}
        if not out.ok:
            return update | {"failures": [_failure(out, rnd, who)]}
        if isinstance(out.value, Questions):
            asked = [q.strip() for q in out.value.questions if q.strip()][
                : self.opts.clarifications_max_per_agent
            ]
            label = f"questions:{spec.id}"
            return update | {
                "outputs": {
                    label: Output(
                        label=label, text="\n".join(asked), role=who, model=out.model, data=list(asked)
                    )
                }
            }
        kind = "proposal" if step == "proposer" else "critique" if step == "critic" else "refinement"
        c = Contribution(
            round=rnd, kind=kind, agent_id=spec.id, role=spec.role, model=out.model, text=str(out.value)
        )
        return update | {
            "transcript": [c],
            "outputs": {c.label: Output(label=c.label, text=c.text, role=who, model=out.model)},
        }

    async def clarify(self, state: Any, io: NodeIO) -> dict[str, Any]:
        """Pair every question with its answer from the input (``NA`` when it has none).

        When the input has no ``answers`` key at all and some agent asked something, the node
        pauses with ``interrupt()``; the value it is resumed with (``Command(resume={...})``, keyed
        like ``answers``) supplies the answers. No model call happens here, and the node has no
        side effect before the pause, so re-running its body on resume is harmless.
        """
        asked_by: dict[str, list[str]] = {}
        reads: list[ReadRecord] = []
        for spec in self.agents:
            seen, record = read_as(state, f"clarifier:{spec.id}")
            reads.append(record)
            asked = seen.get(f"questions:{spec.id}")
            asked_by[spec.id] = (
                [str(q) for q in asked.data] if asked is not None and isinstance(asked.data, list) else []
            )
        answers = state.get("answers")
        if answers is None and any(asked_by.values()):
            pending = [
                {"id": f"{agent}:{n}", "agent": agent, "question": q}
                for agent, questions in asked_by.items()
                for n, q in enumerate(questions, 1)
            ]
            hint = "a mapping of question id (or text) to its answer"
            reply = interrupt({"kind": "clarifications", "questions": pending, "resume_with": hint})
            answers = {str(k): str(v) for k, v in reply.items()} if isinstance(reply, dict) else {}
        answers = answers or {}
        records: list[Clarification] = []
        outputs: dict[str, Output] = {}
        for spec in self.agents:
            questions = asked_by[spec.id]
            items = [
                Clarification(
                    agent_id=spec.id,
                    question_id=f"{spec.id}:{n}",
                    question=q,
                    answer=(answers.get(f"{spec.id}:{n}") or answers.get(q) or "").strip() or "NA",
                )
                for n, q in enumerate(questions, 1)
            ]
            records += items
            if items:
                label = f"clarify:{spec.id}"
                text = "\n".join(f"Q: {c.question}\nA: {c.answer}" for c in items)
                outputs[label] = Output(
                    label=label, text=text, role=f"clarifier:{spec.id}", data=[c.model_dump() for c in items]
                )
        return {"clarifications": records, "outputs": outputs, "reads": reads}

    async def close_round(self, state: Any, io: NodeIO) -> dict[str, Any]:
        """Count a finished round and check whether the agents' answers agree."""
        if state.get("failures"):
            return {}
        latest = latest_positions(state.get("transcript") or [], self.agents)
        cond = self.opts.termination_condition
        agreed = len(latest) == len(self.agents) and agree(
            [answer_of(c.text) for c in latest],
            short_chars=self.opts.short_answer_chars,
            threshold=cond.threshold,
        )
        return {"rounds_completed": state.get("rounds_completed", 0) + 1, "converged": agreed}

    async def critiques_done(self, state: Any, io: NodeIO) -> dict[str, Any]:
        """Join the critique branches (the refinements fan out from here)."""
        return {}

    async def summarize(self, state: Any, io: NodeIO) -> dict[str, Any]:
        """Summarize the transcript through the last round, within ``max_length`` characters."""
        k, s = state.get("rounds_completed", 0), self.opts.summarization
        seen, _ = read_as(state, "summarizer")
        view = narrow(seen, "summarizer", agent="", round=k, full_history=True)
        prompt = render(
            "summarizer", view, agent="", role="summarizer", round=k, order=self.ids, max_length=s.max_length
        )
        out = await generate(
            io,
            self.client(self.cfg.judge, 0),
            prompt,
            node="summarize",
            system=self.cfg.judge_system(),
            max_calls=self.share(state, 1, 1),
        )
        update: dict[str, Any] = {
            "usage": out.usage,
            "reads": [ReadRecord(node="summarizer", labels=sorted(view))],
        }
        if not out.ok:
            return update | {"failures": [_failure(out, k, "summarizer")]}
        text = str(out.value).strip()
        label, cut = f"summary:{k}", text[: s.max_length]
        record = SummaryRecord(
            through_round=k,
            text=cut,
            model=out.model,
            truncated=len(text) > s.max_length,
            before_chars=sum(len(c.text) for c in state.get("transcript") or []),
        )
        return update | {
            "summaries": [record],
            "outputs": {label: Output(label=label, text=cut, role="summarizer", model=out.model)},
        }

    async def judge(self, state: Any, io: NodeIO) -> dict[str, Any]:
        """Synthesize the final solution from the (blind) transcript or its summary."""
        k = state.get("rounds_completed", 0)
        seen, _ = read_as(state, "judge")
        view = narrow(seen, "judge", agent="", round=k, full_history=True)
        prompt = render("judge", view, agent="", role="judge", round=k, order=self.ids)
        out = await generate(
            io,
            self.client(self.cfg.judge, 0),
            prompt,
            node="judge",
            system=self.cfg.judge_system(),
            max_calls=self.share(state, 1, 0),
        )
        update: dict[str, Any] = {
            "usage": out.usage,
            "reads": [ReadRecord(node="judge", labels=sorted(view))],
        }
        if not out.ok:
            return update | {"failures": [_failure(out, k + 1, "judge")]}
        text = str(out.value).strip()
        votes = tally(latest_answers(state.get("transcript") or [], self.agents))[0]
        solution = Solution(text=text, answer=answer_of(text), method="judge", model=out.model, votes=votes)
        return update | {
            "solution": solution,
            "outputs": {"judge": Output(label="judge", text=text, role="judge", model=out.model)},
        }

    async def finish(self, state: Any, io: NodeIO) -> dict[str, Any]:
        """Settle the solution (judge, vote or fallback) and the stop reason."""
        failures: list[StepFailure] = state.get("failures") or []
        latest = latest_positions(state.get("transcript") or [], self.agents)
        counts, winner, first = tally([answer_of(c.text) for c in latest])
        voted = self.opts.synthesis_method == "voting" and winner is not None and not failures
        solution: Solution | None = state.get("solution")
        judged = solution is not None
        pick = winner if voted else first
        if solution is None and pick is not None:
            chosen = latest[pick]
            solution = Solution(
                text=chosen.text,
                answer=answer_of(chosen.text),
                method="vote" if voted else "fallback",
                votes=counts,
            )
        errors = [f.message for f in failures if f.kind == "error"]
        return {
            "solution": solution,
            "final_answer": solution.text if solution is not None else None,
            "stop_reason": self._stop_reason(state, failures, judged or voted),
            "error": errors[0] if errors else None,
        }

    def _stop_reason(self, state: Any, failures: list[StepFailure], decided: bool) -> StopReason:
        if any(f.kind == "error" for f in failures):
            return "error"
        if failures or not decided:
            return "budget"
        k = state.get("rounds_completed", 0)
        if (
            k < self.opts.rounds
            and self.opts.termination_condition.type == "convergence"
            and state.get("converged")
        ):
            return "converged"
        return "budget" if k < self.opts.rounds else "completed"
