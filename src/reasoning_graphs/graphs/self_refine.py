"""Self-refine: generate, critique, refine, then select one candidate by a policy.

``start -> generate -> critique -> {refine -> critique ... | select} -> finish``

Every candidate is kept. The loop stops after ``max_refinements`` refinements, when the critic
finds nothing to fix (``judge_stop``), when the answer repeats (``converged``; under the
``convergence`` policy), on budget or on a model error. Then a policy picks the answer:

- ``last``: the latest candidate.
- ``plurality``: the most frequent answer key (latest wins ties).
- ``convergence``: stop as soon as the answer repeats and return it; if it never repeats,
  fall back to ``plurality``.
- ``checker``: an oracle-free checker scores each candidate and the best wins: a callable you
  pass (any verifier that needs no gold answer, e.g. "parses as Python") or, when none is given,
  the model scoring each candidate against the task (pointwise rubric, 1..10).

An optional ``verifier`` (which may use a gold answer) is run only on the selected answer, to
report ``passed``; it never influences selection.

Access lists:
    - ``generator`` sees ``task``.
    - ``critic`` sees ``task`` and ``draft`` (the latest candidate only).
    - ``refiner`` sees ``task``, ``draft`` and ``critique`` (the latest critique only).
    - ``checker`` sees ``task`` and one candidate at a time (never the critiques).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph

from reasoning_graphs.access import Output
from reasoning_graphs.graphs._channels import delta
from reasoning_graphs.graphs._common import (
    CommonOutput,
    CommonState,
    LimitsInput,
    budget_for_run,
    read_as,
    require_text,
)
from reasoning_graphs.models import DEFAULT_MODEL, ModelRef
from reasoning_graphs.nodes import (
    NodeIO,
    dual_node,
    generate,
    pick_model,
    roster_from_context,
    run_check,
    score_rubric,
)
from reasoning_graphs.nodes.verification import load_verifier
from reasoning_graphs.types import Critique, StopReason, Usage
from reasoning_graphs.verifiers import Verifier

__all__ = [
    "ACCESS",
    "CRITIQUE_PROMPT",
    "GENERATE_PROMPT",
    "REFINE_PROMPT",
    "Candidate",
    "SelectionPolicy",
    "SelfRefineInput",
    "SelfRefineOutput",
    "SelfRefineSettings",
    "SelfRefineState",
    "answer_key",
    "build_self_refine_graph",
    "select_candidate",
]

from reasoning_graphs.graphs._self_refine_parts import (
    ACCESS,
    CRITIQUE_PROMPT,
    GENERATE_PROMPT,
    REFINE_PROMPT,
    Candidate,
    SelectionPolicy,
    SelfRefineSettings,
    answer_key,
    select_candidate,
)

# --- state -----------------------------------------------------------------------------------


class SelfRefineInput(LimitsInput, total=False):
    """What a caller passes in."""

    task: str
    """The task text."""
    verifier: str
    """Optional verifier spec, run on the selected answer only (reporting, not selection)."""


class SelfRefineOutput(CommonOutput, total=False):
    """What a run returns."""

    candidates: Annotated[list[Candidate], delta(operator.add)]
    """Every candidate, in order."""
    selected: int | None
    """Index of the returned candidate in ``candidates``."""
    policy: SelectionPolicy
    """The policy that selected it."""
    passed: bool | None
    """Whether the selected answer passed the verifier (None without one)."""


class SelfRefineState(SelfRefineInput, SelfRefineOutput, CommonState, total=False):
    """Internal state."""

    critiques: Annotated[list[Critique], delta(operator.add)]
    """Every critique, in order (candidate i's critique is ``critiques[i]``)."""
    halt: StopReason | None
    """Why the loop stopped early, if it did."""
    check_scores: list[float | None]
    """Checker scores per candidate (``checker`` policy)."""


def _halt(state: SelfRefineState, cfg: SelfRefineSettings) -> StopReason | None:
    candidates = state.get("candidates") or []
    if state.get("halt"):
        return state["halt"]
    if not candidates:
        return "error"
    critiques = state.get("critiques") or []
    if cfg.stop_when_acceptable and len(critiques) == len(candidates) and critiques[-1].acceptable:
        return "judge_stop"
    if len(candidates) > cfg.max_refinements:
        return "max_rounds"
    if not state.get("budget", cfg.budget).fits(state.get("usage") or Usage(), 2):
        return "budget"
    return None


# --- graph -----------------------------------------------------------------------------------


class _Nodes:
    def __init__(
        self,
        members: list[ModelRef],
        cfg: SelfRefineSettings,
        checker: Verifier | None,
        verifier: Verifier | None,
    ) -> None:
        self.members, self.cfg, self.checker, self.verifier = members, cfg, checker, verifier

    def _allowance(self, state: SelfRefineState, batch: int = 1) -> int | None:
        return state.get("budget", self.cfg.budget).allowance(state.get("usage") or Usage(), batch)

    async def start(self, state: SelfRefineState, io: NodeIO) -> dict[str, Any]:
        task = require_text(state.get("task"), "task")
        if state.get("verifier"):
            await load_verifier(io, None, state["verifier"])
        return {
            "budget": budget_for_run(state, self.cfg.budget),
            "access": ACCESS,
            "policy": self.cfg.policy,
            "outputs": {"task": Output(label="task", text=task, role="user")},
        }

    async def _write(self, state: SelfRefineState, io: NodeIO, role: str, prompt: str) -> dict[str, Any]:
        client = pick_model(roster_from_context(self.members), len(state.get("candidates") or []))
        out = await generate(io, client, prompt, node=role, system=self.cfg.system_prompt,
                             max_calls=self._allowance(state))  # fmt: skip
        if not out.ok:
            return {
                "usage": out.usage,
                "halt": "budget" if out.budget_exhausted else "error",
                "error": out.error,
            }
        text = str(out.value)
        previous = state.get("candidates") or []
        candidate = Candidate(answer=text, key=answer_key(text, self.cfg.answer_format), model=out.model)
        update: dict[str, Any] = {
            "usage": out.usage,
            "candidates": [candidate],
            "outputs": {"draft": Output(label="draft", text=text, role=role, model=out.model)},
        }
        if self.cfg.policy == "convergence" and previous and previous[-1].key == candidate.key:
            update["halt"] = "converged"
        return update

    async def generate(self, state: SelfRefineState, io: NodeIO) -> dict[str, Any]:
        seen, record = read_as(state, "generator")
        return {"reads": [record]} | await self._write(
            state, io, "generator", GENERATE_PROMPT.render(task=seen["task"].text)
        )

    async def critique(self, state: SelfRefineState, io: NodeIO) -> dict[str, Any]:
        seen, record = read_as(state, "critic")
        prompt = CRITIQUE_PROMPT.render(task=seen["task"].text, draft=seen["draft"].text)
        client = pick_model(roster_from_context(self.members), len(state.get("critiques") or []))
        out = await generate(
            io, client, prompt, node="critic", schema=Critique, max_calls=self._allowance(state)
        )
        update: dict[str, Any] = {"usage": out.usage, "reads": [record]}
        if not out.ok or not isinstance(out.value, Critique):
            return update | {"halt": "budget" if out.budget_exhausted else "error", "error": out.error}
        text = "\n".join(out.value.problems) or "(no problems found)"
        return update | {
            "critiques": [out.value],
            "outputs": {"critique": Output(label="critique", text=text, role="critic", model=out.model,
                                           data=out.value.model_dump(mode="json"))},
        }  # fmt: skip

    async def refine(self, state: SelfRefineState, io: NodeIO) -> dict[str, Any]:
        seen, record = read_as(state, "refiner")
        critique = (state.get("critiques") or [Critique()])[-1]
        prompt = REFINE_PROMPT.render(
            task=seen["task"].text,
            draft=seen["draft"].text,
            problems="\n".join(f"- {p}" for p in critique.problems) or "- (none listed)",
            suggestions="\n".join(f"- {s}" for s in critique.suggestions) or "- (none listed)",
        )
        return {"reads": [record]} | await self._write(state, io, "refiner", prompt)

    async def select(self, state: SelfRefineState, io: NodeIO) -> dict[str, Any]:
        candidates = state.get("candidates") or []
        update: dict[str, Any] = {"stop_reason": _halt(state, self.cfg) or "max_rounds"}
        scores: list[float | None] | None = None
        if self.cfg.policy == "checker" and candidates:
            scores, usage = await self._check(state, io, candidates)
            update["usage"] = usage
            update["check_scores"] = scores
        index = select_candidate([c.key for c in candidates], self.cfg.policy, scores)
        update["selected"] = index
        update["final_answer"] = candidates[index].answer if index is not None else None
        if index is not None and state.get("verifier"):
            check = await load_verifier(io, None, state["verifier"])
            verdict = await run_check(io, check, candidates[index].answer,
                                      state.get("task", ""))  # fmt: skip
            update["passed"] = verdict.passed
        elif index is not None and self.verifier is not None:
            update["passed"] = (
                await run_check(io, self.verifier, candidates[index].answer, state.get("task", ""))
            ).passed
        return update

    async def _check(
        self, state: SelfRefineState, io: NodeIO, candidates: list[Candidate]
    ) -> tuple[list[float | None], Usage]:
        if self.checker is not None:
            verdicts = await io.gather(
                *(run_check(io, self.checker, c.answer, state.get("task", "")) for c in candidates)
            )
            return [v.score for v in verdicts], Usage()
        budget = state.get("budget", self.cfg.budget)
        if not budget.fits(state.get("usage") or Usage(), len(candidates)):
            return [None] * len(candidates), Usage()
        client = pick_model(roster_from_context(self.members), 0)
        allowance = budget.allowance(state.get("usage") or Usage(), len(candidates))
        results = await io.gather(*(
            score_rubric(io, client, task=state.get("task", ""), response=c.answer,
                         criteria={"correctness": "the answer solves the task correctly"},
                         node="checker", max_calls=allowance)
            for c in candidates
        ))  # fmt: skip
        usage = Usage()
        scores: list[float | None] = []
        for judgment, spent, _ in results:
            usage = usage + spent
            scores.append(judgment.mean if judgment is not None else None)
        return scores, usage


def build_self_refine_graph(
    *,
    model: ModelRef = DEFAULT_MODEL,
    roster: Sequence[ModelRef] | None = None,
    checker: Verifier | None = None,
    verifier: Verifier | None = None,
    settings: SelfRefineSettings | None = None,
) -> StateGraph[SelfRefineState, Any, SelfRefineInput, SelfRefineOutput]:
    """Build the self-refine graph (uncompiled).

    Args:
        model: the model when no roster is given.
        roster: models rotated per step (generation/refinement and critique alternate members).
        checker: an oracle-free verifier used by the ``checker`` policy (else the model scores).
        verifier: a check run on the selected answer only, to report ``passed``.
        settings: refinements, policy, answer format, default budget.

    Raises:
        ValueError: an empty roster, or a checker given with a policy that does not use it.
    """
    cfg = settings or SelfRefineSettings()
    members: list[ModelRef] = list(roster) if roster is not None else [model]
    if not members:
        raise ValueError("roster is empty; pass at least one model or leave roster=None")
    if checker is not None and cfg.policy != "checker":
        raise ValueError(f"a checker was given but policy is {cfg.policy!r}; use policy='checker'")
    nodes = _Nodes(members, cfg, checker, verifier)

    def after_write(state: SelfRefineState) -> Literal["critique", "select"]:
        return "select" if _halt(state, cfg) else "critique"

    def after_critique(state: SelfRefineState) -> Literal["refine", "select"]:
        return "select" if _halt(state, cfg) else "refine"

    graph = StateGraph(SelfRefineState, input_schema=SelfRefineInput, output_schema=SelfRefineOutput)
    for name in ("start", "generate", "critique", "refine", "select"):
        graph.add_node(name, dual_node(getattr(nodes, name), name=name))
    graph.add_edge(START, "start")
    graph.add_edge("start", "generate")
    graph.add_conditional_edges("generate", after_write)
    graph.add_conditional_edges("refine", after_write)
    graph.add_conditional_edges("critique", after_critique)
    graph.add_edge("select", END)
    return graph
