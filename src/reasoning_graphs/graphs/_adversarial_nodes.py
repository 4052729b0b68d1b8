"""Node bodies of the adversarial graph (private).

See :mod:`reasoning_graphs.graphs.adversarial` for the topology and the access lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from langgraph.types import Overwrite

from reasoning_graphs.access import AccessPolicy, Output
from reasoning_graphs.graphs._adversarial_checked import generate_checked
from reasoning_graphs.graphs._adversarial_parts import (
    SIDES,
    ArbiterReply,
    Arbitration,
    Case,
    CaseReply,
    check_case,
    settle,
)
from reasoning_graphs.graphs._adversarial_prompts import (
    ARBITER_PROMPT,
    CASE_PROMPT,
    PRODUCE_PROMPT,
    REBUTTAL_PROMPT,
    RULES,
    STANCE,
    render_case,
    render_slots,
)
from reasoning_graphs.graphs._adversarial_tasks import SEATS, ArbitrateTask, ArgueTask, text_of
from reasoning_graphs.graphs._common import budget_for_run, read_as, require_text
from reasoning_graphs.models import ModelRef
from reasoning_graphs.nodes import NodeIO, generate, pick_model, roster_from_context
from reasoning_graphs.types import Usage

if TYPE_CHECKING:
    from reasoning_graphs.graphs.adversarial import AdversarialSettings, AdversarialState

__all__ = ["AdversarialNodes"]


@dataclass(frozen=True)
class AdversarialNodes:
    """The node bodies, bound to the graph's settings, models and access policies."""

    cfg: AdversarialSettings
    """Structural settings."""
    members: list[ModelRef]
    """The roster (a context roster overrides it per run)."""
    policies: dict[str, AccessPolicy]
    """The access policies, checked for independence at build time."""
    proposition: str
    """The default proposition."""

    async def start(self, state: AdversarialState, io: NodeIO) -> dict[str, Any]:
        """Validate the input before any call; record budget, access and the task outputs."""
        task = require_text(state.get("task"), "task")
        proposition = require_text(state.get("proposition", self.proposition), "proposition")
        outputs = {
            "task": Output(label="task", text=task, role="user"),
            "proposition": Output(label="proposition", text=proposition, role="user"),
        }
        if state.get("artifact") is not None:
            artifact = require_text(state.get("artifact"), "artifact")
            outputs["artifact"] = Output(label="artifact", text=artifact, role="user")
        return {"budget": budget_for_run(state, self.cfg.budget), "access": self.policies, "outputs": outputs}

    async def produce(self, state: AdversarialState, io: NodeIO) -> dict[str, Any]:
        """Write the artifact once, from the task alone."""
        seen, record = read_as(state, "producer")
        client = pick_model(roster_from_context(self.members), SEATS["producer"])
        out = await generate(
            io,
            client,
            PRODUCE_PROMPT.render(task=text_of(seen, "task")),
            node="producer",
            system=self.cfg.system_prompt,
            max_calls=state["budget"].allowance(state.get("usage") or Usage()),
        )
        update: dict[str, Any] = {"usage": out.usage, "reads": [record]}
        text = str(out.value or "").strip()
        if not out.ok or not text:
            return update | ({} if out.budget_exhausted else {"error": out.error or "the artifact is empty"})
        output = Output(label="artifact", text=text, role="producer", model=out.model)
        return update | {"artifact": text, "outputs": {"artifact": output}}

    async def argue(self, task: ArgueTask, io: NodeIO) -> dict[str, Any]:
        """Argue one side (case or rebuttal); check it in code and re-prompt with every violation."""
        cfg, side, seen = self.cfg, task["side"], task["seen"]
        stage: Literal["case", "rebuttal"] = "case" if task["role"] in SIDES else "rebuttal"
        artifact = text_of(seen, "artifact")
        rules = RULES.render(side=side, max_claims=cfg.max_claims, min_quote_chars=cfg.min_quote_chars)
        common = {
            "stance": STANCE[side],
            "task": text_of(seen, "task"),
            "artifact": artifact,
            "proposition": text_of(seen, "proposition"),
            "rules": rules,
        }
        other = "con" if side == "pro" else "pro"
        prompt = (
            CASE_PROMPT.render(common)
            if stage == "case"
            else REBUTTAL_PROMPT.render(
                common, own=text_of(seen, f"case:{side}"), opposing=text_of(seen, f"case:{other}")
            )
        )

        def checked(reply: CaseReply) -> tuple[list[Any], list[Any], list[str]]:
            return check_case(
                reply,
                side=side,
                artifact=artifact,
                max_claims=cfg.max_claims,
                min_quote_chars=cfg.min_quote_chars,
            )

        client = pick_model(roster_from_context(self.members), SEATS[side])
        out = await generate_checked(
            io,
            client,
            prompt,
            node=task["role"],
            schema=CaseReply,
            check=lambda reply: checked(reply)[2],
            max_repairs=cfg.max_repairs,
            max_calls=task["max_calls"],
            system=cfg.system_prompt,
        )
        case = Case(
            side=side,
            stage=stage,
            model=out.model,
            repairs=out.repairs,
            error=out.error,
            budget_exhausted=out.budget_exhausted,
            violations=out.violations,
        )
        update: dict[str, Any] = {"usage": out.usage, "reads": [task["record"]]}
        if isinstance(out.value, CaseReply):
            valid, rejected, _ = checked(out.value)
            confidence = out.value.confidence
            case = case.model_copy(
                update={
                    "answered": True,
                    "position": out.value.position,
                    "thesis": out.value.thesis.strip(),
                    "claims": valid,
                    "rejected": rejected,
                    "confidence": None if confidence is None else min(1.0, max(0.0, confidence)),
                }
            )
            label = f"{stage}:{side}"
            # What other roles read carries no self-reported confidence, model or side name.
            data = case.model_dump(mode="json", exclude={"confidence", "model", "side", "position"})
            update["outputs"] = {
                label: Output(
                    label=label, text=render_case(case), role=task["role"], model=out.model, data=data
                )
            }
        return update | {"cases" if stage == "case" else "rebuttals": {side: case}}

    async def arbitrate(self, task: ArbitrateTask, io: NodeIO) -> dict[str, Any]:
        """Judge one order blind: slot labels only, validated claims only."""
        client = pick_model(roster_from_context(self.members), SEATS["arbiter"])
        prompt = ARBITER_PROMPT.render(
            task=task["task"],
            proposition=task["proposition"],
            artifact=task["artifact"],
            cases=render_slots(task["cases"], task["rebuttals"]),
        )
        out = await generate(
            io,
            client,
            prompt,
            node="arbiter",
            schema=ArbiterReply,
            system=self.cfg.system_prompt,
            max_calls=task["max_calls"],
        )
        slots = {f"Case {n}": side for n, side in enumerate(task["sides"], 1)}
        record = Arbitration(
            order=task["order"],
            slots=slots,
            model=out.model,
            error=out.error,
            budget_exhausted=out.budget_exhausted,
        )
        if out.ok and isinstance(out.value, ArbiterReply):
            choice = out.value.winner
            record = record.model_copy(
                update={
                    "choice": choice,
                    "side": slots.get(choice, "tie"),
                    "reason": out.value.reason,
                    "error": None,
                }
            )
        label = f"arbitration:{task['order']}"
        output = Output(
            label=label,
            text=record.reason or (record.error or ""),
            role="arbiter",
            model=out.model,
            data=record.model_dump(mode="json"),
        )
        return {
            "arbitration": [record],
            "usage": out.usage,
            "reads": [task["record"]],
            "outputs": {label: output},
        }

    async def finish(self, state: AdversarialState, io: NodeIO) -> dict[str, Any]:
        """Settle the verdict from both orders; record the stop reason."""
        arbitration = sorted(state.get("arbitration") or [], key=lambda a: a.order)
        verdict, reason, error = settle(
            artifact=state.get("artifact"),
            producer_error=state.get("error"),
            cases=state.get("cases") or {},
            rebuttals=(state.get("rebuttals") or {}) if self.cfg.rebuttal else None,
            arbitration=arbitration,
        )
        return {
            "verdict": verdict,
            "final_answer": f"{verdict.winner}: " + "; ".join(verdict.reasons),
            "stop_reason": reason,
            "arbitration": Overwrite(arbitration),
            "error": error,
        }
