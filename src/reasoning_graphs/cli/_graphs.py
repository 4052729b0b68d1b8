"""The graphs the CLI can run, and how flags become a graph, its input and its reports."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph import StateGraph

from reasoning_graphs.errors import InputError

__all__ = ["FLAGS", "GRAPHS", "Flag", "GraphEntry", "RunOptions", "get_graph"]

AnyGraph = StateGraph[Any, Any, Any, Any]


@dataclass(frozen=True)
class Flag:
    """A graph-specific ``run`` flag."""

    option: str
    """The command-line option."""
    help: str
    """One line of help."""
    kind: type = int
    """``int``, ``str`` or ``bool`` (a switch)."""


FLAGS: dict[str, Flag] = {
    "max_attempts": Flag("--max-attempts", "repair: most attempts"),
    "tools": Flag("--tools", "agent / repair: tools as MODULE:NAME[,...] (MODULE may be a .py path)", str),
    "max_tool_steps": Flag("--max-tool-steps", "repair: most tool turns per attempt"),
    "approve": Flag("--approve", "repair: pause for a person's approval before accepting a pass", bool),
    "max_steps": Flag("--max-steps", "agent: most model turns"),
    "schema": Flag("--schema", "agent: final answer schema as MODULE:Class", str),
    "beam_width": Flag("--beam", "tot: beam width"),
    "breadth": Flag("--breadth", "tot: proposals per frontier node"),
    "max_depth": Flag("--depth", "tot: most steps"),
    "value_samples": Flag("--samples", "tot: value samples per node"),
    "kind": Flag("--kind", "tot: built-in task (game24 or gsm8k)", str),
    "max_refinements": Flag("--refinements", "self_refine: most refine steps"),
    "policy": Flag("--policy", "self_refine: last, plurality, convergence or checker", str),
    "answer_format": Flag("--answer-format", "self_refine: text or number", str),
    "drafts": Flag("--drafts", "reflection: how many drafts to gather"),
    "no_access_lists": Flag("--no-access-lists", "reflection: every stage sees everything", bool),
    "rounds": Flag("--rounds", "dialectic / debate: most rounds"),
    "config": Flag("--config", "debate: JSON configuration file", str),
    "answers": Flag("--answers", "debate: JSON file answering the agents' clarifying questions", str),
    "max_claims": Flag("--max-claims", "adversarial: most claims per case"),
    "rebuttal": Flag("--rebuttal", "adversarial: add a rebuttal round", bool),
    "max_view_attempts": Flag("--max-view-attempts", "perspectives: tries per view"),
    "out": Flag("--out", "perspectives: folder for report.json, report.md, matrix.csv", str),
}
"""Every graph-specific flag, by the name it has in :attr:`RunOptions.flags`."""


@dataclass(frozen=True)
class RunOptions:
    """What the CLI knows when it builds a graph; stored with the thread for ``resume``."""

    model: str
    """The model spec (``--model``)."""
    roster: list[str] | None = None
    """The roster (``--roster``), if any."""
    flags: dict[str, Any] = field(default_factory=dict)
    """Graph-specific flags that were given."""

    def to_metadata(self) -> dict[str, Any]:
        """Return a JSON-ready form for checkpoint metadata."""
        return {"model": self.model, "roster": self.roster, "flags": self.flags}

    @classmethod
    def from_metadata(cls, data: Mapping[str, Any]) -> RunOptions:
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
    """One line for help."""
    build: Callable[[RunOptions], AnyGraph]
    """Build the uncompiled graph from options."""
    flags: frozenset[str] = frozenset()
    """Graph-specific flags it accepts (keys of :data:`FLAGS`)."""
    needs_task: bool = True
    """Whether the input must contain a ``task``."""
    after: Callable[[Mapping[str, Any], RunOptions], list[str]] | None = None
    """Write reports after a finished run; returns the paths written."""


def _repair(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import RepairSettings, build_repair_graph
    from reasoning_graphs.nodes.tools import load_tools

    values = {k: v for k, v in o.flags.items() if k in {"max_attempts", "max_tool_steps", "approve"}}
    tools = load_tools(o.flags["tools"]) if o.flags.get("tools") else None
    return build_repair_graph(model=o.model, roster=o.roster, tools=tools, settings=RepairSettings(**values))


def _agent(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import AgentSettings, build_agent_graph
    from reasoning_graphs.nodes.tools import load_object, load_tools

    if not o.flags.get("tools"):
        raise InputError("run agent needs --tools MODULE:NAME[,...], e.g. --tools examples/tools.py:TOOLS")
    values: dict[str, Any] = {}
    if "max_steps" in o.flags:
        values["max_steps"] = o.flags["max_steps"]
    if o.flags.get("schema"):
        values["output_schema"] = load_object(o.flags["schema"])
    settings = AgentSettings(**values)
    return build_agent_graph(
        tools=load_tools(o.flags["tools"]), model=o.model, roster=o.roster, settings=settings
    )


def _self_refine(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import SelfRefineSettings, build_self_refine_graph

    values = {k: v for k, v in o.flags.items() if k in {"max_refinements", "policy", "answer_format"}}
    return build_self_refine_graph(model=o.model, roster=o.roster, settings=SelfRefineSettings(**values))


def _reflection(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import ReflectionSettings, build_reflection_graph

    values: dict[str, Any] = {"access_lists": not o.flags.get("no_access_lists", False)}
    if "drafts" in o.flags:
        values["drafts"] = o.flags["drafts"]
    return build_reflection_graph(model=o.model, roster=o.roster, settings=ReflectionSettings(**values))


def _dialectic(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import DialecticSettings, build_dialectic_graph

    values = {"max_rounds": o.flags["rounds"]} if "rounds" in o.flags else {}
    return build_dialectic_graph(model=o.model, roster=o.roster, settings=DialecticSettings(**values))


def _debate(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import DebateConfig, build_debate_graph

    config = DebateConfig.from_file(o.flags["config"]) if o.flags.get("config") else DebateConfig()
    if o.flags.get("rounds") is not None:
        config = config.with_rounds(int(o.flags["rounds"]))
    return build_debate_graph(config=config, model=o.model, roster=o.roster)


def _tot(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import ToTSettings, build_tree_of_thoughts_graph

    names = {"beam_width", "breadth", "max_depth", "value_samples"}
    values: dict[str, Any] = {k: v for k, v in o.flags.items() if k in names}
    if "kind" in o.flags:
        values["task"] = o.flags["kind"]
    return build_tree_of_thoughts_graph(model=o.model, roster=o.roster, settings=ToTSettings(**values))


def _adversarial(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import AdversarialSettings, build_adversarial_graph

    values = {k: v for k, v in o.flags.items() if k in {"max_claims", "rebuttal"}}
    return build_adversarial_graph(model=o.model, roster=o.roster, settings=AdversarialSettings(**values))


def _perspectives(o: RunOptions) -> AnyGraph:
    from reasoning_graphs.graphs import PerspectivesSettings, build_perspectives_graph

    values = {k: v for k, v in o.flags.items() if k in {"max_view_attempts"}}
    return build_perspectives_graph(model=o.model, roster=o.roster, settings=PerspectivesSettings(**values))


def _perspectives_report(values: Mapping[str, Any], o: RunOptions) -> list[str]:
    from reasoning_graphs.graphs import write_perspectives_report

    if not o.flags.get("out") or values.get("matrix") is None:
        return []
    return [str(p) for p in write_perspectives_report(values, o.flags["out"]).values()]


GRAPHS: dict[str, GraphEntry] = {
    "repair": GraphEntry(
        "repair",
        "generate, verify, repair against every failure until it passes",
        _repair,
        frozenset({"max_attempts", "tools", "max_tool_steps", "approve"}),
    ),
    "agent": GraphEntry(
        "agent",
        "a bounded act-observe loop: the model calls tools, every tool step is checkpointed",
        _agent,
        frozenset({"tools", "max_steps", "schema"}),
    ),
    "self_refine": GraphEntry(
        "self_refine",
        "generate, critique, refine; select by last, plurality, convergence or a checker",
        _self_refine,
        frozenset({"max_refinements", "policy", "answer_format"}),
    ),
    "reflection": GraphEntry(
        "reflection",
        "gather drafts across a roster, frame, critique, synthesize (access lists on)",
        _reflection,
        frozenset({"drafts", "no_access_lists"}),
    ),
    "dialectic": GraphEntry(
        "dialectic",
        "thesis, antithesis, synthesis, judged each round until the judge stops it",
        _dialectic,
        frozenset({"rounds"}),
    ),
    "tot": GraphEntry(
        "tot",
        "tree of thoughts: propose, value, keep a beam; verifier-gated answer",
        _tot,
        frozenset({"beam_width", "breadth", "max_depth", "value_samples", "kind"}),
    ),
    "debate": GraphEntry(
        "debate",
        "role agents propose independently, critique and refine over rounds; a judge synthesizes",
        _debate,
        frozenset({"config", "rounds", "answers"}),
    ),
    "adversarial": GraphEntry(
        "adversarial",
        "pro and con advocates with checked quotations, blind arbitration in both orders",
        _adversarial,
        frozenset({"max_claims", "rebuttal"}),
    ),
    "perspectives": GraphEntry(
        "perspectives",
        "independent role views, a comparison matrix computed in code, a synthesis, reports",
        _perspectives,
        frozenset({"max_view_attempts", "out"}),
        needs_task=False,
        after=_perspectives_report,
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
