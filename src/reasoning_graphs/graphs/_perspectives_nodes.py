"""Node bodies of the perspectives graph (private; see :mod:`reasoning_graphs.graphs.perspectives`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reasoning_graphs.access import Output, check_independent
from reasoning_graphs.graphs._common import budget_for_run, read_as
from reasoning_graphs.graphs._perspectives_checks import apply_caps, build_matrix, check_synthesis, check_view
from reasoning_graphs.graphs._perspectives_flow import (
    ViewTask,
    panel_access,
    panel_produces,
    stop_reason,
    tries,
)
from reasoning_graphs.graphs._perspectives_inputs import read_input
from reasoning_graphs.graphs._perspectives_parts import (
    RECOMMENDATIONS,
    SYNTHESIZER,
    Agenda,
    Matrix,
    StepAttempt,
    Synthesis,
    SynthesisReply,
    ViewReply,
)
from reasoning_graphs.graphs._perspectives_prompts import (
    RETRY_PROMPT,
    SYNTHESIS_PROMPT,
    render_duties,
    render_matrix,
    render_view,
    view_prompt,
)
from reasoning_graphs.models import ModelRef
from reasoning_graphs.nodes import NodeIO, generate, pick_model, roster_from_context
from reasoning_graphs.types import Usage

if TYPE_CHECKING:
    from reasoning_graphs.graphs.perspectives import PerspectivesSettings, PerspectivesState

__all__ = ["PerspectivesNodes"]


def _errors_of(out: Output | None) -> list[str]:
    data = out.data if out is not None else None
    errors = data.get("errors") if isinstance(data, dict) else None
    return [str(e) for e in errors] if isinstance(errors, list) else []


def _retry(base: str, seen: Mapping[str, Output], prefix: str) -> str:
    drafts = sorted(
        (o for label, o in seen.items() if label.startswith(prefix)),
        key=lambda o: int(o.label.rsplit(":", 1)[1]),
    )
    if not drafts:
        return base
    errors = "\n".join(f"- {e}" for e in _errors_of(drafts[-1]))
    return RETRY_PROMPT.render(base=base, errors=errors, previous=drafts[-1].text)


@dataclass(frozen=True)
class PerspectivesNodes:
    """The node bodies, bound to the graph's settings and models."""

    cfg: PerspectivesSettings
    """Structural settings."""
    members: list[ModelRef]
    """The roster (a context roster overrides it per run): role *i* sits at seat *i*."""

    async def start(self, state: PerspectivesState, io: NodeIO) -> dict[str, Any]:
        """Validate the input before any call; prove the views independent; record the brief."""
        snapshot, agenda, panel, gates = read_input(state, self.cfg.unknown_judgment)
        names = [r.name for r in panel]
        access = panel_access(names)
        check_independent(names, access, panel_produces(names, self.cfg.max_view_attempts))
        brief = Output(label="brief", text=agenda.question, role="user", data=agenda.model_dump(mode="json"))
        outputs = {"snapshot": Output(label="snapshot", text=snapshot, role="user"), "brief": brief}
        for role in panel:
            outputs[f"criteria:{role.name}"] = Output(
                label=f"criteria:{role.name}", text=role.criteria, role="user"
            )
        return {
            "budget": budget_for_run(state, self.cfg.budget),
            "access": access,
            "outputs": outputs,
            "agenda": agenda,
            "panel": panel,
            "gates": gates,
        }

    async def view(self, task: ViewTask, io: NodeIO) -> dict[str, Any]:
        """Write one role's view from the snapshot alone; check it in code."""
        role, seen, number = task["role"], task["seen"], task["attempt"]
        agenda = Agenda.model_validate(seen["brief"].data)
        snapshot = seen["snapshot"].text
        base = view_prompt(role, seen[f"criteria:{role}"].text, agenda, snapshot, self.cfg.min_quote_chars)
        client = pick_model(roster_from_context(self.members), task["seat"])
        out = await generate(
            io,
            client,
            _retry(base, seen, f"draft:{role}:"),
            node=f"view:{role}",
            schema=ViewReply,
            system=self.cfg.system_prompt,
            max_calls=task["max_calls"],
        )
        update: dict[str, Any] = {"usage": out.usage, "reads": [task["record"]]}
        attempt = StepAttempt(role=role, attempt=number, ok=False, model=out.model)
        if not out.ok or not isinstance(out.value, ViewReply):
            failure = "budget" if out.budget_exhausted else "error"
            return update | {
                "attempts": [attempt.model_copy(update={"failure": failure, "errors": [out.error or ""]})]
            }
        view, errors = check_view(
            out.value, role=role, agenda=agenda, snapshot=snapshot, min_quote_chars=self.cfg.min_quote_chars
        )
        if view is None:
            label = f"draft:{role}:{number}"
            draft = Output(
                label=label, text=out.text, role=role, model=out.model, data={"errors": list(errors)}
            )
            failed = attempt.model_copy(update={"failure": "invalid", "errors": errors})
            return update | {"attempts": [failed], "outputs": {label: draft}}
        view = view.model_copy(update={"model": out.model, "attempt": number})
        output = Output(
            label=f"view:{role}",
            text=render_view(view),
            role=role,
            model=out.model,
            data=view.model_dump(mode="json"),
        )
        return update | {
            "views": {role: view},
            "attempts": [attempt.model_copy(update={"ok": True})],
            "outputs": {f"view:{role}": output},
        }

    async def compare(self, state: PerspectivesState, io: NodeIO) -> dict[str, Any]:
        """Compute the comparison matrix in code from the validated views."""
        names = [r.name for r in state["panel"]]
        matrix = build_matrix(state["agenda"], names, state.get("views") or {})
        output = Output(
            label="matrix", text=render_matrix(matrix), role="code", data=matrix.model_dump(mode="json")
        )
        return {"matrix": matrix, "outputs": {"matrix": output}}

    async def synthesize(self, state: PerspectivesState, io: NodeIO) -> dict[str, Any]:
        """Write the synthesis from the views and the matrix; check it answers every disagreement."""
        seen, record = read_as(state, SYNTHESIZER)
        agenda = Agenda.model_validate(seen["brief"].data)
        matrix = Matrix.model_validate(seen["matrix"].data)
        views = "\n\n".join(
            f"[{r} view]\n{seen[f'view:{r}'].text}\n[end of {r} view]" for r in matrix.available
        )
        criteria = "\n".join(
            f"- {label.split(':', 1)[1]}: {o.text}"
            for label, o in seen.items()
            if label.startswith("criteria:")
        )
        missing = (
            f"Views missing (these roles failed): {', '.join(matrix.missing)}.\n\n" if matrix.missing else ""
        )
        base = SYNTHESIS_PROMPT.render(
            question=agenda.question,
            snapshot=seen["snapshot"].text,
            criteria=criteria,
            views=views,
            matrix=seen["matrix"].text,
            missing=missing,
            duties=render_duties(matrix),
            recommendations=", ".join(RECOMMENDATIONS),
        )
        number = len(tries(state, SYNTHESIZER)) + 1
        client = pick_model(roster_from_context(self.members), len(state["panel"]))
        out = await generate(
            io,
            client,
            _retry(base, seen, "synthesis_draft:"),
            node=SYNTHESIZER,
            schema=SynthesisReply,
            system=self.cfg.system_prompt,
            max_calls=state["budget"].allowance(state.get("usage") or Usage()),
        )
        update: dict[str, Any] = {"usage": out.usage, "reads": [record]}
        attempt = StepAttempt(role=SYNTHESIZER, attempt=number, ok=False, model=out.model)
        if not out.ok or not isinstance(out.value, SynthesisReply):
            failure = "budget" if out.budget_exhausted else "error"
            return update | {
                "attempts": [attempt.model_copy(update={"failure": failure, "errors": [out.error or ""]})]
            }
        reply = out.value
        errors = check_synthesis(reply, matrix, agenda.topics)
        synthesis = Synthesis(
            recommendation=reply.recommendation.strip(),
            rationale=reply.rationale.strip(),
            conditions=[c.strip() for c in reply.conditions if c.strip()],
            resolutions=reply.resolutions,
            unresolved=reply.unresolved,
            violations=errors,
            model=out.model,
            attempt=number,
        )
        label = "synthesis" if not errors else f"synthesis_draft:{number}"
        output = Output(
            label=label,
            text=out.text,
            role=SYNTHESIZER,
            model=out.model,
            data={"errors": list(errors)} if errors else synthesis.model_dump(mode="json"),
        )
        done = attempt.model_copy(
            update={"ok": not errors, "failure": "invalid" if errors else "", "errors": errors}
        )
        return update | {"synthesis": synthesis, "attempts": [done], "outputs": {label: output}}

    async def finish(self, state: PerspectivesState, io: NodeIO) -> dict[str, Any]:
        """Apply the caps in code; write the recommendation, the final answer and the stop reason."""
        views = state.get("views") or {}
        matrix = state.get("matrix") or build_matrix(state["agenda"], [r.name for r in state["panel"]], views)
        reason = stop_reason(state, self.cfg)
        synthesis = state.get("synthesis")
        update: dict[str, Any] = {
            "matrix": matrix,
            "missing": matrix.missing,
            "stop_reason": reason,
            "recommendation": None,
            "caps": [],
            "final_answer": None,
        }
        if synthesis is None or not views:
            return update
        rec, caps = apply_caps(
            synthesis.recommendation,
            matrix=matrix,
            gates=state.get("gates") or [],
            views=views,
            valid=not synthesis.violations,
        )
        answer = f"{rec}: {synthesis.rationale}" + (f" (capped: {'; '.join(caps)})" if caps else "")
        return update | {"recommendation": rec, "caps": caps, "final_answer": answer}
