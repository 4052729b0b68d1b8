"""The graphs the CLI can run, and how flags become a graph and its input."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph import StateGraph

from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs.repair import RepairSettings, build_repair_graph

__all__ = ["GRAPHS", "GraphEntry", "RunOptions", "get_graph"]


@dataclass(frozen=True)
class RunOptions:
    """What the CLI knows when it builds a graph; stored with the thread for ``resume``."""

    model: str
    """The model spec (``--model``)."""
    roster: list[str] | None = None
    """The roster (``--roster``), if any."""
    flags: dict[str, Any] = field(default_factory=dict)
    """Graph-specific flags that were given (e.g. ``max_attempts``)."""

    def to_metadata(self) -> dict[str, Any]:
        """Return a JSON-ready form for checkpoint metadata."""
        return {"model": self.model, "roster": self.roster, "flags": self.flags}

    @classmethod
    def from_metadata(cls, data: dict[str, Any]) -> RunOptions:
        """Rebuild options stored by :meth:`to_metadata`."""
        return cls(
            model=str(data.get("model")), roster=data.get("roster"), flags=dict(data.get("flags") or {})
        )


@dataclass(frozen=True)
class GraphEntry:
    """One runnable graph."""

    name: str
    """The name ``run NAME`` takes."""
    summary: str
    """One line for ``run --help``."""
    build: Callable[[RunOptions], StateGraph[Any, Any, Any, Any]]
    """Build the uncompiled graph from options."""
    flags: frozenset[str] = frozenset()
    """Graph-specific flags it accepts."""
    needs_task: bool = True
    """Whether the input must contain a ``task``."""


def _repair(o: RunOptions) -> StateGraph[Any, Any, Any, Any]:
    settings = RepairSettings(max_attempts=int(o.flags.get("max_attempts", 3)))
    return build_repair_graph(model=o.model, roster=o.roster, settings=settings)


GRAPHS: dict[str, GraphEntry] = {
    "repair": GraphEntry(
        "repair",
        "generate, verify, repair against every failure until it passes",
        _repair,
        frozenset({"max_attempts"}),
    ),
}
"""Every graph ``run`` knows, by name."""


def get_graph(name: str) -> GraphEntry:
    """Return the entry for ``name``.

    Raises:
        InputError: unknown graph; the message lists the known ones.
    """
    try:
        return GRAPHS[name]
    except KeyError:
        raise InputError(f"unknown graph {name!r}; known graphs: {', '.join(sorted(GRAPHS))}") from None
