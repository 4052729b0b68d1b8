"""Node bodies and stop rules of the dialectic graph (see :mod:`reasoning_graphs.graphs.dialectic`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord
from reasoning_graphs.graphs._common import budget_for_run, read_as, require_text
from reasoning_graphs.graphs._dialectic_parts import (
    ANTITHESIS_PROMPT,
    JUDGE_PROMPT,
    SYNTHESIS_PROMPT,
    THESIS_PROMPT,
    DialecticRound,
    JudgeReply,
    RoundVerdict,
    best_synthesis,
    render_criteria,
    similarity,
)
from reasoning_graphs.models import ModelRef
from reasoning_graphs.nodes import (
    Generated,
    NodeIO,
    RubricReply,
    generate,
    pick_model,
    read_scores,
    roster_from_context,
)
from reasoning_graphs.types import StopReason, Usage

if TYPE_CHECKING:
    from reasoning_graphs.graphs.dialectic import DialecticSettings, DialecticState

__all__ = ["DialecticNodes", "halted", "round_record", "stop_reason", "verdict_of"]

_STEPS = ("thesis", "antithesis", "synthesis", "verdict")


def verdict_of(state: DialecticState, number: int) -> RoundVerdict | None:
    """Return round ``number``'s verdict, or None when it was not judged."""
    out = (state.get("outputs") or {}).get(f"verdict:{number}")
    return RoundVerdict.model_validate(out.data) if out is not None else None


def halted(state: DialecticState, calls: int = 1) -> bool:
    """Return whether the run must stop before a step of ``calls`` calls."""
    usage = state.get("usage") or Usage()
    return bool(state.get("exhausted") or state.get("error")) or not state["budget"].fits(usage, calls)


def stop_reason(state: DialecticState, cfg: DialecticSettings) -> StopReason | None:
    """Return why the run stops after the current round, or None to start the next round."""
    if state.get("exhausted"):
        return "budget"
    if state.get("error"):
        return "error"
    number = state.get("round", 1)
    verdict = verdict_of(state, number)
    if verdict is None:
        return "budget"  # a router refused a step of this round
    if verdict.decision == "stop":
        return "judge_stop"
    outputs = state.get("outputs") or {}
    previous, current = outputs.get(f"synthesis:{number - 1}"), outputs.get(f"synthesis:{number}")
    if previous and current and similarity(previous.text, current.text) >= cfg.convergence_threshold:
        return "converged"
    if number >= cfg.max_rounds:
        return "max_rounds"
    return "budget" if halted(state, 3) else None


def round_record(state: DialecticState, number: int) -> DialecticRound | None:
    """Build round ``number``'s record from the outputs (None when it has no thesis)."""
    outputs = state.get("outputs") or {}
    found = {step: outputs.get(f"{step}:{number}") for step in _STEPS}
    thesis, antithesis, synthesis = found["thesis"], found["antithesis"], found["synthesis"]
    if thesis is None:
        return None
    models = {("judge" if step == "verdict" else step): out.model for step, out in found.items() if out}
    return DialecticRound(
        number=number,
        thesis=thesis.text,
        antithesis=antithesis.text if antithesis else None,
        synthesis=synthesis.text if synthesis else None,
        verdict=verdict_of(state, number),
        models=models,
    )


def _read_round(state: DialecticState, role: str) -> tuple[dict[str, str], ReadRecord]:
    """Read what ``role`` may see, narrowed to the current round (and the task)."""
    number = str(state["round"])
    seen, _ = read_as(state, role)
    mine = {
        label: out for label, out in seen.items() if label == "task" or label.rpartition(":")[2] == number
    }
    texts = {label.partition(":")[0]: out.text for label, out in mine.items()}
    return texts, ReadRecord(node=role, labels=sorted(mine))


@dataclass(frozen=True)
class DialecticNodes:
    """The node bodies, bound to the collaborators injected when the graph is built."""

    cfg: DialecticSettings
    """The graph's settings."""
    members: list[ModelRef]
    """The factory's roster (the run's context may replace it)."""
    access: dict[str, AccessPolicy]
    """The access policies written to state at the start."""

    async def start(self, state: DialecticState, io: NodeIO) -> dict[str, Any]:
        """Validate the input; write the budget, the access lists, the task and round 1."""
        task = require_text(state.get("task"), "task")
        return {
            "budget": budget_for_run(state, self.cfg.budget),
            "access": self.access,
            "outputs": {"task": Output(label="task", text=task, role="user")},
            "round": 1,
            "judge_failures": 0,
        }

    async def _ask(
        self,
        state: DialecticState,
        io: NodeIO,
        node: str,
        member: int,
        prompt: str,
        schema: type[BaseModel] | None = None,
    ) -> Generated[Any]:
        client = pick_model(roster_from_context(self.members), member)
        allowance = state["budget"].allowance(state.get("usage") or Usage())
        return await generate(
            io, client, prompt, node=node, schema=schema, system=self.cfg.system_prompt, max_calls=allowance
        )

    async def _step(
        self, state: DialecticState, io: NodeIO, role: str, kind: str, member: int
    ) -> dict[str, Any]:
        texts, record = _read_round(state, role)
        if kind == "thesis":
            prompt = THESIS_PROMPT.render(task=texts["task"])
        elif kind == "antithesis":
            prompt = ANTITHESIS_PROMPT.render(task=texts["task"], thesis=texts["thesis"])
        else:
            prompt = SYNTHESIS_PROMPT.render(
                task=texts["task"], thesis=texts["thesis"], antithesis=texts["antithesis"]
            )
        out = await self._ask(state, io, kind, member, prompt)
        update: dict[str, Any] = {"usage": out.usage, "reads": [record]}
        if out.budget_exhausted:
            return update | {"exhausted": True}
        if not out.ok:
            return update | {"error": out.error}
        label = f"{kind}:{state['round']}"
        return update | {
            "outputs": {label: Output(label=label, text=str(out.value), role=role, model=out.model)}
        }

    async def thesis(self, state: DialecticState, io: NodeIO) -> dict[str, Any]:
        """Round 1: the proposer answers the task (roster member 0)."""
        return await self._step(state, io, "proposer", "thesis", 0)

    async def antithesis(self, state: DialecticState, io: NodeIO) -> dict[str, Any]:
        """The opponent argues against the thesis, blind to its author (member ``2r-1``)."""
        return await self._step(state, io, "opponent", "antithesis", 2 * state["round"] - 1)

    async def synthesis(self, state: DialecticState, io: NodeIO) -> dict[str, Any]:
        """The synthesizer answers again from thesis and antithesis (member ``2r``)."""
        return await self._step(state, io, "synthesizer", "synthesis", 2 * state["round"])

    async def judge(self, state: DialecticState, io: NodeIO) -> dict[str, Any]:
        """Score the synthesis and decide continue/stop (member ``2r+1``); count failed replies."""
        number = state["round"]
        texts, record = _read_round(state, "judge")
        prompt = JUDGE_PROMPT.render(
            criteria=render_criteria(self.cfg.criteria), task=texts["task"], synthesis=texts["synthesis"]
        )
        out = await self._ask(state, io, "judge", 2 * number + 1, prompt, JudgeReply)
        update: dict[str, Any] = {"usage": out.usage, "reads": [record]}
        if out.budget_exhausted:
            return update | {"exhausted": True}
        if out.ok and isinstance(out.value, JudgeReply):
            reply = out.value
            checked = read_scores(RubricReply(scores={"score": reply.score}), ["score"])
            verdict = RoundVerdict(
                score=checked.scores.get("score"),
                decision=reply.decision,
                rationale=reply.rationale,
                warnings=checked.warnings,
            )
            shown = f"Score: {verdict.score}/10. Decision: {verdict.decision}. {verdict.rationale}".strip()
        else:
            verdict = RoundVerdict(error=out.error or "the judge's reply was not a verdict")
            update["judge_failures"] = state.get("judge_failures", 0) + 1
            shown = f"No verdict: {verdict.error}"
        label = f"verdict:{number}"
        data = verdict.model_dump(mode="json")
        return update | {
            "outputs": {label: Output(label=label, text=shown, role="judge", model=out.model, data=data)}
        }

    async def next_round(self, state: DialecticState, io: NodeIO) -> dict[str, Any]:
        """Record the round and make its synthesis the next thesis (no call)."""
        number = state["round"]
        record = round_record(state, number)
        made = (state.get("outputs") or {})[f"synthesis:{number}"]
        label = f"thesis:{number + 1}"
        thesis = Output(label=label, text=made.text, role="synthesizer", model=made.model)
        return {"rounds": [record] if record else [], "round": number + 1, "outputs": {label: thesis}}

    async def finish(self, state: DialecticState, io: NodeIO) -> dict[str, Any]:
        """Record the last (possibly partial) round; pick the best-scored synthesis."""
        done = list(state.get("rounds") or [])
        number = state.get("round", 1)
        current = round_record(state, number) if all(r.number != number for r in done) else None
        added = [current] if current else []
        answer, best = best_synthesis([*done, *added])
        return {
            "rounds": added,
            "stop_reason": stop_reason(state, self.cfg) or "max_rounds",
            "final_answer": answer,
            "best_round": best,
            "judge_failures": state.get("judge_failures", 0),
        }
