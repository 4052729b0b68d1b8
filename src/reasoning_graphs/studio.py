"""The graphs ``langgraph.json`` serves: LangGraph Studio, ``langgraph dev`` and the LangGraph server.

This is the one module of the package that reads the environment and compiles graphs when it is
imported; nothing else may, and nothing imports it. Every graph is compiled **without** a
checkpointer: the server brings its own persistence (in memory under ``langgraph dev``,
PostgreSQL in a deployment) and refuses a graph that carries one.

Models are chosen per run, through the graph's context (:class:`StudioContext`: Studio shows it
as the assistant's settings; the SDK passes ``context={...}``). A run without a context uses the
model named by the environment variable ``REASONING_GRAPHS_MODEL`` when the server started, else
the embedded model ``local:smollm2``. ``fake:PATH.json`` there selects a scripted fake, which is how
CI serves every graph offline. Limits go in the input (``max_calls``, ``max_tokens``), and
verifiers as spec strings in the input (``"verifier": "numeric:150"``) where a graph takes one.

The agent's tools are fixed when the module is imported (state holds no callables): the
``load_tools`` spec in ``REASONING_GRAPHS_AGENT_TOOLS`` (``MODULE:NAME[,MODULE:NAME...]``, a
module may be a ``.py`` path), else the repository's ``examples/tools.py:TOOLS``.

Served graphs (names as in ``langgraph.json``): ``repair``, ``repair_approval`` (repair pausing for a
person's approval of a passing answer), ``self_refine``, ``reflection``, ``dialectic``, ``tot``,
``debate`` (pausing for answers to its clarifying questions), ``adversarial``, ``perspectives``,
``evaluation``, ``agent``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field, field_validator

from reasoning_graphs.errors import ConfigurationError
from reasoning_graphs.graphs import (
    DebateConfig,
    ReflectionSettings,
    RepairSettings,
    build_adversarial_graph,
    build_agent_graph,
    build_debate_graph,
    build_dialectic_graph,
    build_evaluation_graph,
    build_perspectives_graph,
    build_reflection_graph,
    build_repair_graph,
    build_self_refine_graph,
    build_tree_of_thoughts_graph,
)
from reasoning_graphs.models import DEFAULT_MODEL, parse_spec
from reasoning_graphs.nodes import load_tools
from reasoning_graphs.nodes.tools import ToolLike

__all__ = [
    "AGENT_TOOLS_ENV",
    "GRAPH_NAMES",
    "MODEL_ENV",
    "StudioContext",
    "adversarial",
    "agent",
    "agent_tools_spec",
    "build_graphs",
    "debate",
    "default_model",
    "dialectic",
    "evaluation",
    "perspectives",
    "reflection",
    "repair",
    "repair_approval",
    "self_refine",
    "studio_builder",
    "tot",
]

MODEL_ENV = "REASONING_GRAPHS_MODEL"
"""The environment variable naming the served graphs' default model (a provider string)."""


def default_model(environ: Mapping[str, str] | None = None) -> str:
    """Return the default model: ``REASONING_GRAPHS_MODEL`` if set, else the embedded model.

    Raises:
        ConfigurationError: the variable is set to something that is not a provider string.
    """
    env = os.environ if environ is None else environ
    spec = env.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
    try:
        parse_spec(spec)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{MODEL_ENV}={spec!r} is not usable: {exc}") from None
    return spec


AGENT_TOOLS_ENV = "REASONING_GRAPHS_AGENT_TOOLS"
"""The environment variable naming the served agent's tools (a ``load_tools`` spec)."""

_EXAMPLE_TOOLS = Path(__file__).resolve().parents[2] / "examples" / "tools.py"


def agent_tools_spec(environ: Mapping[str, str] | None = None) -> str:
    """Return the served agent's tools spec: ``REASONING_GRAPHS_AGENT_TOOLS``, else the examples.

    Raises:
        ConfigurationError: the variable is unset and ``examples/tools.py`` is not beside the package
            (an installed wheel): name the tools to serve.
    """
    env = os.environ if environ is None else environ
    spec = env.get(AGENT_TOOLS_ENV, "").strip()
    if spec:
        return spec
    if _EXAMPLE_TOOLS.is_file():
        return f"{_EXAMPLE_TOOLS}:TOOLS"
    raise ConfigurationError(
        f"the served agent needs tools: set {AGENT_TOOLS_ENV}=MODULE:NAME (a module or .py path and "
        "a tool or list of tools, e.g. my_tools.py:TOOLS)"
    )


_DEFAULT = default_model()
_TOOLS = agent_tools_spec()


class StudioContext(BaseModel):
    """Per-run choices of the served graphs (Studio: the assistant's settings; SDK: ``context=``).

    Not a :class:`~reasoning_graphs.types.Frozen` state value: it never enters a checkpoint, and
    the checkpoint serializer never imports this module.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    model: str | None = Field(default=None, examples=[_DEFAULT, "openai:gpt-4o-mini"])
    """The model for this run, as a provider string (``local:smollm2``, ``openai:gpt-4o-mini``,
    ``google:gemini-2.5-flash``, ``fake:/path/script.json``); empty: the server's default."""
    roster: list[str] = Field(default_factory=list)
    """Several provider strings, for graphs that rotate or fan out across models (reflection's
    drafts, dialectic's roles, debate agents ...); it takes precedence over ``model``."""
    max_calls: int | None = Field(default=None, ge=1)
    """The run's call budget, when the input sets none."""
    max_tokens: int | None = Field(default=None, ge=1)
    """The run's token budget, when the input sets none."""

    @field_validator("model")
    @classmethod
    def _check_model(cls, value: str | None) -> str | None:
        return None if value is None else _checked(value)

    @field_validator("roster")
    @classmethod
    def _check_roster(cls, value: list[str]) -> list[str]:
        return [_checked(spec) for spec in value]


def _checked(spec: str) -> str:
    try:
        parse_spec(spec)
    except ConfigurationError as exc:
        raise ValueError(str(exc)) from None  # pydantic reports it against the field
    return spec


AnyGraph = StateGraph[Any, Any, Any, Any]
Builder = Callable[[str, Sequence[ToolLike]], AnyGraph]


def _debate(model: str, tools: Sequence[ToolLike]) -> AnyGraph:
    # Clarifying questions on: without "answers" in the input the run pauses for a person's answers.
    config = DebateConfig.model_validate(
        {"debate": {"clarifications": True, "clarifications_max_per_agent": 2}}
    )
    return build_debate_graph(config=config, model=model)


_BUILDERS: dict[str, Builder] = {
    "repair": lambda m, _: build_repair_graph(model=m),
    "repair_approval": lambda m, _: build_repair_graph(model=m, settings=RepairSettings(approve=True)),
    "self_refine": lambda m, _: build_self_refine_graph(model=m),
    # Three drafts rotating over the run's roster; the later stages use the context's model, else
    # the roster's first member (a fixed factory model would override a roster-only context).
    "reflection": lambda m, _: build_reflection_graph(roster=[m], settings=ReflectionSettings(drafts=3)),
    "dialectic": lambda m, _: build_dialectic_graph(model=m),
    "tot": lambda m, _: build_tree_of_thoughts_graph(model=m),
    "debate": _debate,
    "adversarial": lambda m, _: build_adversarial_graph(model=m),
    "perspectives": lambda m, _: build_perspectives_graph(model=m),
    "evaluation": lambda m, _: build_evaluation_graph(model=m),
    "agent": lambda m, tools: build_agent_graph(tools=tools, model=m),
}

GRAPH_NAMES: tuple[str, ...] = tuple(_BUILDERS)
"""Every served graph, by its name in ``langgraph.json``."""


def studio_builder(name: str, model: str, *, tools: str | None = None) -> AnyGraph:
    """Return the uncompiled graph ``name`` as served, with the run context declared.

    Args:
        name: a served graph (see :data:`GRAPH_NAMES`).
        model: the default model (a provider string).
        tools: the agent's tools as a ``load_tools`` spec (default: :func:`agent_tools_spec`).

    Raises:
        KeyError: an unknown graph name (the message lists the known ones).
    """
    if name not in _BUILDERS:
        raise KeyError(f"unknown graph {name!r}; served graphs: {', '.join(GRAPH_NAMES)}")
    loaded = load_tools(tools or _TOOLS) if name == "agent" else []
    builder = _BUILDERS[name](model, loaded)
    builder.context_schema = StudioContext
    return builder


def build_graphs(
    model: str, *, tools: str | None = None
) -> dict[str, CompiledStateGraph[Any, Any, Any, Any]]:
    """Compile every served graph with ``model`` as its default, without a checkpointer."""
    return {name: studio_builder(name, model, tools=tools).compile(name=name) for name in GRAPH_NAMES}


_GRAPHS = build_graphs(_DEFAULT)

repair = _GRAPHS["repair"]
"""Generate, verify, repair (input: ``task``, ``verifier`` spec)."""
repair_approval = _GRAPHS["repair_approval"]
"""Repair that pauses for a person's approval of a passing answer (resume: ``{"approved": ...}``)."""
self_refine = _GRAPHS["self_refine"]
"""Generate, critique, refine, select (input: ``task``, optional ``verifier``)."""
reflection = _GRAPHS["reflection"]
"""Drafts across the roster, frame, critique, synthesis (input: ``task``)."""
dialectic = _GRAPHS["dialectic"]
"""Thesis, antithesis, synthesis, judge (input: ``task``)."""
tot = _GRAPHS["tot"]
"""Tree of thoughts (input: ``task``, e.g. ``"4 9 10 13"``, optional ``kind``, ``verifier``)."""
debate = _GRAPHS["debate"]
"""Multi-agent debate with clarifying questions (input: ``task``, optional ``answers``)."""
adversarial = _GRAPHS["adversarial"]
"""Pro and con advocates, blind arbitration (input: ``task``, optional ``artifact``)."""
perspectives = _GRAPHS["perspectives"]
"""Independent role views, matrix, synthesis (input: ``snapshot``, ``topics``, ``roles`` ...)."""
evaluation = _GRAPHS["evaluation"]
"""Rubric scoring of a finished run (input: ``task``, ``final_solution``)."""
agent = _GRAPHS["agent"]
"""A bounded act-observe loop with the served tools (input: ``task``, optional ``context``)."""
