"""The node bodies of the tree-of-thoughts graph, around the collaborators given to its factory.

Each method is a ``dual_node`` body (``async def body(state, io)``). Nothing here is kept in
state: the collaborators (models, verifier, task registry) live on the :class:`SearchNodes`
object the factory builds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.types import Overwrite
from pydantic import ValidationError

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord
from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._common import budget_for_run, read_as, require_text
from reasoning_graphs.graphs._tot_parts import (
    SearchPlan,
    best_terminal,
    choose_beam,
    path_labels,
    read_label,
    stop_reason,
)
from reasoning_graphs.graphs._tot_tasks import Step, ThoughtNode, ThoughtTask
from reasoning_graphs.models import ModelRef
from reasoning_graphs.nodes import (
    Generated,
    NodeIO,
    choose_verifier,
    generate,
    pick_model,
    roster_from_context,
    run_check,
)
from reasoning_graphs.types import Usage
from reasoning_graphs.verifiers import Verifier, from_spec

if TYPE_CHECKING:
    from reasoning_graphs.graphs.tree_of_thoughts import ProposeJob, ToTSettings, ToTState

__all__ = ["SHAPE", "SearchNodes"]

T = TypeVar("T")

SHAPE = ("breadth", "beam_width", "max_depth", "value_samples")
"""The search-shape keys the input may override."""


def _child(parent: ThoughtNode, k: int, step: Step, task: ThoughtTask, model: str) -> ThoughtNode:
    terminal = task.is_terminal(step)
    return ThoughtNode(
        id=f"{parent.id}.{k}",
        parent=parent.id,
        depth=parent.depth + 1,
        text=step.text,
        partial=f"{parent.partial}\n{step.text}" if parent.partial else step.text,
        data=step.data,
        model=model,
        terminal=terminal,
        answer=task.answer(step) if terminal else None,
    )


async def _each(io: NodeIO, calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run the calls concurrently on the async path, one by one on the sync path.

    On the sync path each coroutine is created only when its turn comes, so an exception that
    stops the node (a crash, an interrupt) leaves no coroutine un-awaited behind it.
    """
    if io.is_async:
        return await io.gather(*(call() for call in calls))
    return [await call() for call in calls]


def _label(out: Generated[Any]) -> str:
    if not out.ok:
        return "!"
    return read_label(out.text) or "?"


class SearchNodes:
    """The graph's node bodies, bound to the factory's collaborators.

    Args:
        settings: the factory's settings.
        members: the default roster (the run's context may replace it).
        registry: task kinds by name.
        verifier: the factory's verifier, if any.
        access: the roles' access policies, recorded in state at the start.
    """

    def __init__(
        self,
        settings: ToTSettings,
        members: Sequence[ModelRef],
        registry: Mapping[str, ThoughtTask],
        verifier: Verifier | None,
        access: Mapping[str, AccessPolicy],
    ) -> None:
        """Keep the collaborators."""
        self.cfg = settings
        self.members = list(members)
        self.registry = dict(registry)
        self.verifier = verifier
        self.access = dict(access)

    def task_of(self, state: Mapping[str, Any]) -> ThoughtTask:
        """Return the run's task (the input's ``kind``, else the settings' task).

        Raises:
            InputError: the kind is unknown; the message lists the known ones.
        """
        kind = state.get("kind") or self.cfg.task
        if kind not in self.registry:
            raise InputError(f"unknown task kind {kind!r}; known kinds: {', '.join(sorted(self.registry))}")
        return self.registry[kind]

    def verifier_of(self, state: Mapping[str, Any], task: ThoughtTask) -> Verifier:
        """Return the run's verifier: the input's spec, the factory's, or the task's default.

        Blocking (a spec may read a data file): node bodies call :meth:`averifier_of`.

        Raises:
            InputError: a bad spec, or no verifier at all for this task.
        """
        default = task.default_verifier(state.get("task", ""))
        built = self.verifier if self.verifier is not None else (from_spec(default) if default else None)
        return choose_verifier(built, state.get("verifier"))

    async def averifier_of(self, io: NodeIO, state: Mapping[str, Any], task: ThoughtTask) -> Verifier:
        """:meth:`verifier_of`, off the event loop."""
        return await io.run(self.verifier_of, state, task)

    def plan_of(self, state: Mapping[str, Any], task: ThoughtTask) -> SearchPlan:
        """Return the search shape: the settings, with the input's overrides.

        Raises:
            InputError: an override is out of range, or the depth cannot reach a terminal node.
        """
        values = {key: getattr(self.cfg, key) for key in SHAPE}
        values |= {key: state[key] for key in SHAPE if state.get(key) is not None}
        try:
            plan = SearchPlan.model_validate(values, strict=True)
        except ValidationError as exc:
            raise InputError(
                f"bad search setting in the input: {exc.errors()[0]['msg']} ({values})"
            ) from None
        if plan.max_depth < task.min_depth:
            raise InputError(f"task {task.name!r} needs max_depth >= {task.min_depth}, got {plan.max_depth}")
        return plan

    async def start(self, state: ToTState, io: NodeIO) -> dict[str, Any]:
        """Validate the input before any call; plant the root; reset the search keys."""
        text = require_text(state.get("task"), "task")
        task = self.task_of(state)
        root = task.root(text)
        plan = self.plan_of(state, task)
        await self.averifier_of(io, state, task)
        return {
            "budget": budget_for_run(state, self.cfg.budget),
            "access": self.access,
            "plan": plan,
            "kind": task.name,
            "outputs": {"task": Output(label="task", text=text, role="user")},
            "depth": 0,
            "tree": Overwrite({root.id: root}),
            "frontier": Overwrite([root.id]),
            "candidates": Overwrite([]),
            "malformed": Overwrite(0),
            "unparsed_values": Overwrite(0),
            "exhausted": Overwrite(False),
            "failures": Overwrite([]),
        }

    async def propose(self, job: ProposeJob, io: NodeIO) -> dict[str, Any]:
        """Ask for next steps from one beam node (its partial solution is in the prompt)."""
        task, node = self.registry[job["kind"]], job["node"]
        client = pick_model(roster_from_context(self.members), job["index"])
        prompt = task.propose_prompt(job["task"], node, job["breadth"])
        out = await generate(
            io, client, prompt, node="proposer", system=self.cfg.system_prompt, max_calls=job["allowance"]
        )
        update: dict[str, Any] = {
            "usage": out.usage,
            "reads": [ReadRecord(node="proposer", labels=job["labels"])],
        }
        if out.budget_exhausted:
            return update | {"exhausted": True}
        if not out.ok:
            return update | {"failures": [out.error or "the proposer failed"]}
        parsed = task.parse(out.text, node)
        kept = parsed.steps[: job["breadth"]]
        children = [_child(node, k, step, task, out.model) for k, step in enumerate(kept, 1)]
        outputs = {
            f"thought:{c.id}": Output(
                label=f"thought:{c.id}", text=c.text, role="proposer", model=c.model, data={"parent": node.id}
            )
            for c in children
        }
        return update | {
            "tree": {c.id: c for c in children},
            "candidates": [c.id for c in children],
            "outputs": outputs,
            "malformed": parsed.malformed,
        }

    async def evaluate(self, state: ToTState, io: NodeIO) -> dict[str, Any]:
        """Verify the level's terminal nodes; value its open nodes (not on the last level)."""
        task, plan, tree = self.task_of(state), state["plan"], state.get("tree") or {}
        seen, _ = read_as(state, "valuer")
        text = seen["task"].text
        new = [tree[c] for c in state.get("candidates") or []]
        check = await self.averifier_of(io, state, task)
        nodes: dict[str, ThoughtNode] = {}
        outputs: dict[str, Output] = {}
        for node in (n for n in new if n.terminal):
            verdict = await run_check(io, check, node.answer or "", text)
            nodes[node.id] = node.model_copy(update={"verdict": verdict, "score": verdict.score})
            outputs[f"value:{node.id}"] = Output(
                label=f"value:{node.id}", text=verdict.feedback or "passed", role="verifier"
            )
        update: dict[str, Any] = {"tree": nodes, "outputs": outputs}
        last = state.get("depth", 0) + 1 >= plan.max_depth
        open_nodes = [] if last else [n for n in new if not n.terminal]
        if not open_nodes:
            return update
        prompts = {n.id: task.value_prompt(text, n) for n in open_nodes}
        asks = [(p, j) for p in dict.fromkeys(prompts.values()) for j in range(plan.value_samples)]
        budget, usage = state["budget"], state.get("usage") or Usage()
        if not budget.fits(usage, len(asks)):
            return update | {"exhausted": True}
        allowance = budget.allowance(usage, len(asks))
        roster = roster_from_context(self.members)
        system = self.cfg.system_prompt
        calls = [
            partial(generate, io, pick_model(roster, j), p, node="valuer", system=system, max_calls=allowance)
            for p, j in asks
        ]
        results = await _each(io, calls)
        labels: dict[str, list[str]] = {}
        for (prompt, _), out in zip(asks, results, strict=True):
            labels.setdefault(prompt, []).append(_label(out))
        for node in open_nodes:
            samples = labels[prompts[node.id]]
            score = sum(self.cfg.value_scale.of(s) for s in samples)
            nodes[node.id] = node.model_copy(update={"score": score, "samples": samples})
            outputs[f"value:{node.id}"] = Output(
                label=f"value:{node.id}", text=" ".join(samples), role="valuer"
            )
        read = sorted({"task", *(x for n in open_nodes for x in path_labels(n.id) if x in seen)})
        return update | {
            "usage": sum((out.usage for out in results), Usage()),
            "reads": [ReadRecord(node="valuer", labels=read)],
            "unparsed_values": sum(s.count("?") for s in labels.values()),
            "exhausted": any(out.budget_exhausted for out in results),
            "failures": [out.error for out in results if out.error and not out.budget_exhausted],
        }

    async def select(self, state: ToTState, io: NodeIO) -> dict[str, Any]:
        """Replace the frontier with the best open nodes of the level (none after the last level)."""
        plan, tree, depth = state["plan"], state.get("tree") or {}, state.get("depth", 0) + 1
        new = [tree[c] for c in state.get("candidates") or []]
        beam = choose_beam(new, plan.beam_width) if depth < plan.max_depth else []
        return {
            "frontier": Overwrite([n.id for n in beam]),
            "candidates": Overwrite([]),
            "depth": depth,
            "tree": {n.id: n.model_copy(update={"selected": True}) for n in beam},
        }

    async def finish(self, state: ToTState, io: NodeIO) -> dict[str, Any]:
        """Return the verifier-gated answer and the stop reason."""
        tree = state.get("tree") or {}
        best = best_terminal(tree)
        failures = state.get("failures") or []
        return {
            "stop_reason": stop_reason(state) or "completed",
            "final_answer": best.answer if best else None,
            "passed": bool(best and best.verdict and best.verdict.passed),
            "any_passed": any(n.verdict is not None and n.verdict.passed for n in tree.values()),
            "answer_node": best.id if best else None,
            "error": failures[0] if failures else None,
        }
