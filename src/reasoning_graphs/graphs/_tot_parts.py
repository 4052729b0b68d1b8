"""Tree-of-thoughts helpers in plain code.

The search plan, the stop rule, value reading, beam and final choice, and the text rendering of
a tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from reasoning_graphs.budget import Budget
from reasoning_graphs.graphs._tot_tasks import ThoughtNode
from reasoning_graphs.types import Frozen, StopReason, Usage

__all__ = [
    "SearchPlan",
    "ValueScale",
    "best_terminal",
    "choose_beam",
    "level_calls",
    "node_order",
    "path_labels",
    "read_label",
    "render_tree",
    "stop_reason",
]


class ValueScale(Frozen):
    """What each value label is worth; a node's value sums its samples (Yao et al. 2023)."""

    sure: float = Field(default=20.0, ge=0.0)
    """The state can surely still reach a solution."""
    likely: float = Field(default=1.0, ge=0.0)
    """It might."""
    impossible: float = Field(default=0.001, ge=0.0)
    """It cannot."""

    def of(self, label: str | None) -> float:
        """Return the worth of a label (0 for an unreadable reply)."""
        return float(getattr(self, label)) if label in ("sure", "likely", "impossible") else 0.0


class SearchPlan(Frozen):
    """The shape of one search, fixed at the start of a run (a fork may change it)."""

    breadth: int = Field(default=5, ge=1, le=20)
    """Most proposals kept per expanded node."""
    beam_width: int = Field(default=5, ge=1, le=50)
    """Most open nodes kept per level."""
    max_depth: int = Field(default=3, ge=1, le=20)
    """Most steps from the root."""
    value_samples: int = Field(default=3, ge=1, le=20)
    """Value prompts sampled per distinct state."""


def level_calls(plan: SearchPlan, frontier: int, depth: int) -> int:
    """Return the most calls the level below ``depth`` can need (its whole batch).

    One propose call per frontier node, and ``value_samples`` calls per proposal, except on the
    last level, whose open nodes are never expanded and so are not valued.
    """
    values = 0 if depth + 1 >= plan.max_depth else frontier * plan.breadth * plan.value_samples
    return frontier + values


def path_labels(node_id: str) -> list[str]:
    """Return the ``thought:`` labels from the root's first child down to ``node_id``."""
    parts = node_id.split(".")
    return [f"thought:{'.'.join(parts[: i + 1])}" for i in range(1, len(parts))]


def stop_reason(state: Mapping[str, Any]) -> StopReason | None:
    """Return why the search must stop now, or None when the next level may run.

    A passing terminal wins; then a model failure, an exhausted budget, the depth bound or an
    empty frontier; last, the next level's whole batch must fit in the budget.
    """
    tree: Mapping[str, ThoughtNode] = state.get("tree") or {}
    if any(n.verdict is not None and n.verdict.passed for n in tree.values()):
        return "passed"
    if state.get("failures"):
        return "error"
    if state.get("exhausted"):
        return "budget"
    plan: SearchPlan = state["plan"]
    depth: int = state.get("depth", 0)
    frontier: list[str] = state.get("frontier") or []
    if depth >= plan.max_depth or not frontier:
        return "completed"
    budget: Budget = state["budget"]
    if not budget.fits(state.get("usage") or Usage(), level_calls(plan, len(frontier), depth)):
        return "budget"
    return None


_LABEL = re.compile(r"\b(sure|likely|impossible)\b", re.IGNORECASE)


def read_label(reply: str) -> str | None:
    """Return the value label of a reply: the last one on its last non-empty line, else in it all."""
    lines = [line for line in reply.splitlines() if line.strip()]
    for text in (lines[-1] if lines else "", reply):
        found = _LABEL.findall(text)
        if found:
            return str(found[-1]).lower()
    return None


def node_order(node_id: str) -> tuple[int, ...]:
    """Sort key of a path-shaped id (``0.10`` after ``0.9``)."""
    return tuple(int(part) for part in node_id.split(".") if part.isdigit())


def choose_beam(nodes: Iterable[ThoughtNode], width: int) -> list[ThoughtNode]:
    """Return the ``width`` best open nodes by value (ties: earlier id first)."""
    open_nodes = [n for n in nodes if not n.terminal]
    open_nodes.sort(key=lambda n: (-(n.score or 0.0), node_order(n.id)))
    return open_nodes[:width]


def best_terminal(tree: Mapping[str, ThoughtNode]) -> ThoughtNode | None:
    """Return the answer node: the shallowest passing terminal, else the top-valued terminal.

    A failing terminal's value is its verifier score; ties go to the one whose parent the
    valuer rated highest, then to the earlier id.
    """
    terminals = [n for n in tree.values() if n.terminal]
    passing = [n for n in terminals if n.verdict is not None and n.verdict.passed]
    if passing:
        return min(passing, key=lambda n: (n.depth, node_order(n.id)))
    if not terminals:
        return None

    def rank(n: ThoughtNode) -> tuple[float, float, tuple[int, ...]]:
        parent = tree.get(n.parent or "")
        parent_score = parent.score if parent is not None and parent.score is not None else 0.0
        return (-(n.score or 0.0), -parent_score, node_order(n.id))

    return min(terminals, key=rank)


def _describe(node: ThoughtNode) -> str:
    parts = [f"[{node.id}] {node.text}"]
    if node.terminal:
        verdict = node.verdict
        state = "unchecked" if verdict is None else "PASSED" if verdict.passed else "failed"
        parts.append(f"=> {node.answer} ({state})")
        if verdict is not None and not verdict.passed and verdict.feedback:
            parts.append(f"- {verdict.feedback}")
    elif node.score is not None:
        parts.append(f"value {node.score:g}" + (f" ({' '.join(node.samples)})" if node.samples else ""))
    if node.selected:
        parts.append("*beam")
    return "  ".join(parts)


def render_tree(tree: Mapping[str, ThoughtNode | Mapping[str, Any]]) -> str:
    """Render a search tree as indented text: one node a line, with values and verdicts.

    Args:
        tree: node id to node, as kept in state (``ThoughtNode``) or as JSON-ready dicts.

    Returns:
        The text; ``*beam`` marks nodes kept in the beam, terminal nodes show their answer and
        verdict. An empty tree renders as ``(empty tree)``.
    """
    nodes = {k: v if isinstance(v, ThoughtNode) else ThoughtNode.model_validate(v) for k, v in tree.items()}
    children: dict[str | None, list[ThoughtNode]] = {}
    for node in nodes.values():
        parent = node.parent if node.parent in nodes else None
        children.setdefault(parent, []).append(node)
    lines: list[str] = []
    done: set[str] = set()
    stack = sorted(children.get(None, []), key=lambda n: node_order(n.id), reverse=True)
    while stack:
        node = stack.pop()
        if node.id in done:
            continue
        done.add(node.id)
        lines.append("  " * node.depth + _describe(node))
        stack.extend(sorted(children.get(node.id, []), key=lambda n: node_order(n.id), reverse=True))
    return "\n".join(lines) if lines else "(empty tree)"
