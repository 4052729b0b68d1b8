"""Node bodies of the reflection graph (see :mod:`reasoning_graphs.graphs.reflection`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from reasoning_graphs.access import AccessPolicy, Output
from reasoning_graphs.graphs._common import budget_for_run, read_as, require_text
from reasoning_graphs.graphs._reflection_parts import (
    CRITIQUE_PROMPT,
    DRAFT_PROMPT,
    FRAME_PROMPT,
    SYNTHESIZE_PROMPT,
    CritiqueReply,
    Draft,
    DraftJob,
    Frame,
    central_index,
    critique_text,
    frame_text,
    render_material,
)
from reasoning_graphs.models import ModelClient, ModelRef, resolve
from reasoning_graphs.nodes import (
    NodeIO,
    context_value,
    generate,
    model_id_of,
    pick_model,
    roster_from_context,
)
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Critique, StopReason, Usage

if TYPE_CHECKING:
    from reasoning_graphs.graphs.reflection import ReflectionSettings, ReflectionState

__all__ = ["STAGES", "ReflectionNodes", "stop_reason"]

STAGES: dict[str, tuple[str, str, PromptTemplate, type[BaseModel] | None]] = {
    "frame": ("framer", "frame", FRAME_PROMPT, Frame),
    "critique": ("critic", "critique", CRITIQUE_PROMPT, CritiqueReply),
    "synthesize": ("synthesizer", "synthesis", SYNTHESIZE_PROMPT, None),
}
"""Sequential stage node to its role, output label, prompt and schema."""


def stop_reason(state: ReflectionState) -> StopReason:
    """Return why a run ended: the budget refused a call, a call failed, or the pipeline ran."""
    if state.get("exhausted"):
        return "budget"
    if state.get("error"):
        return "error"
    return "completed" if "synthesis" in (state.get("outputs") or {}) else "budget"


def _ordered(drafts: list[Draft]) -> list[Draft]:
    return sorted(drafts, key=lambda d: d.index)


@dataclass(frozen=True)
class ReflectionNodes:
    """The node bodies, bound to the collaborators injected when the graph is built."""

    cfg: ReflectionSettings
    """The graph's settings."""
    members: list[ModelRef]
    """The factory's roster (the run's context may replace it)."""
    model: ModelRef | None
    """The factory's stage model, if one was given."""
    from_roster: bool
    """Whether the factory got an explicit roster (one draft per member by default)."""
    policies: dict[str, AccessPolicy]
    """The effective access policies, written to state at the start."""

    def stage_client(self) -> ModelClient:
        """Return the stage model: the context's, else the factory's, else the first member."""
        chosen = context_value("model") or self.model
        return resolve(chosen) if chosen is not None else pick_model(roster_from_context(self.members), 0)

    async def start(self, state: ReflectionState, io: NodeIO) -> dict[str, Any]:
        """Validate the input; write the budget, the access lists, the task and the roster facts."""
        task = require_text(state.get("task"), "task")
        run_roster = roster_from_context(self.members)
        given = self.from_roster or bool(context_value("roster"))
        count = self.cfg.drafts or (len(run_roster) if given else 3)
        ids = {model_id_of(run_roster[i % len(run_roster)]) for i in range(count)}
        return {
            "budget": budget_for_run(state, self.cfg.budget),
            "access": self.policies,
            "outputs": {"task": Output(label="task", text=task, role="user")},
            "draft_count": count,
            "heterogeneous": len(ids) >= 2,
        }

    async def gather(self, job: DraftJob, io: NodeIO) -> dict[str, Any]:
        """Draft one answer from the task alone (one ``Send`` per member)."""
        index = job["index"]
        client = pick_model(roster_from_context(self.members), index)
        prompt = DRAFT_PROMPT.render(task=job["task"])
        out = await generate(
            io, client, prompt, node="gather", system=self.cfg.system_prompt, max_calls=job["max_calls"]
        )
        label = f"draft:{index}"
        update: dict[str, Any] = {"usage": out.usage, "reads": [job["read"]]}
        if not out.ok:
            failed = Draft(
                index=index,
                label=label,
                model=out.model,
                error=out.error or "no reply",
                budget_exhausted=out.budget_exhausted,
            )
            return update | {"gathered": [failed]}
        text = str(out.value)
        return update | {
            "gathered": [Draft(index=index, label=label, text=text, model=out.model)],
            "outputs": {label: Output(label=label, text=text, role="drafter", model=out.model)},
        }

    async def collect(self, state: ReflectionState, io: NodeIO) -> dict[str, Any]:
        """Fan in: order the drafts; flag the run when no member produced one."""
        drafts = _ordered(state.get("gathered") or [])
        update: dict[str, Any] = {"drafts": drafts}
        if any(d.error is None for d in drafts):
            return update
        if any(d.budget_exhausted for d in drafts):
            return update | {"exhausted": True}
        return update | {"error": drafts[0].error if drafts else "no drafts"}

    async def _stage(self, state: ReflectionState, io: NodeIO, node: str) -> dict[str, Any]:
        role, label, prompt, schema = STAGES[node]
        seen, record = read_as(state, role)
        text = prompt.render(task=seen["task"].text, material=render_material(seen))
        allowance = state["budget"].allowance(state.get("usage") or Usage())
        out = await generate(
            io,
            self.stage_client(),
            text,
            node=node,
            schema=schema,
            system=self.cfg.system_prompt,
            max_calls=allowance,
        )
        update: dict[str, Any] = {"usage": out.usage, "reads": [record]}
        if out.budget_exhausted:
            return update | {"exhausted": True}
        if not out.ok:
            return update | {"error": out.error}
        value = out.value
        shown = str(value)
        if isinstance(value, Frame):
            shown, update["frame"] = frame_text(value), value
        elif isinstance(value, Critique):
            value = Critique.model_validate(value.model_dump())
            shown, update["critique"] = critique_text(value), value
        data = value.model_dump(mode="json") if isinstance(value, BaseModel) else None
        output = Output(label=label, text=shown, role=role, model=out.model, data=data)
        return update | {"outputs": {label: output}}

    async def frame(self, state: ReflectionState, io: NodeIO) -> dict[str, Any]:
        """Frame the drafts: key claims, agreements, disagreements."""
        return await self._stage(state, io, "frame")

    async def critique(self, state: ReflectionState, io: NodeIO) -> dict[str, Any]:
        """Critique the drafts and the frame."""
        return await self._stage(state, io, "critique")

    async def synthesize(self, state: ReflectionState, io: NodeIO) -> dict[str, Any]:
        """Write the final answer."""
        return await self._stage(state, io, "synthesize")

    async def finish(self, state: ReflectionState, io: NodeIO) -> dict[str, Any]:
        """Write the stop reason and the answer: the synthesis, else the most central draft."""
        drafts = state.get("drafts") or _ordered(state.get("gathered") or [])
        synthesis = (state.get("outputs") or {}).get("synthesis")
        usable = [d for d in drafts if d.error is None]
        best = central_index([d.text for d in usable])
        answer = synthesis.text if synthesis else (usable[best].text if best is not None else None)
        return {
            "stop_reason": stop_reason(state),
            "final_answer": answer,
            "drafts": drafts,
            "frame": state.get("frame"),
            "critique": state.get("critique"),
            "heterogeneous": bool(state.get("heterogeneous")),
        }
