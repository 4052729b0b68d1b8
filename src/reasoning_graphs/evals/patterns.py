"""The pattern registry: how the harness builds, feeds and reads each pattern's graph.

A :class:`Pattern` says which dataset formats it fits, how to build its graph from seam clients
and a settings mapping, how an item becomes the graph's input, which prompt the prompt-matched
plain call sends, and whether the graph consults the verifier to pick its answer (then best-of-N
may too). Adding a pattern is one :func:`register_pattern` call::

    register_pattern(Pattern(
        name="self_refine",
        summary="generate, critique, refine",
        formats=frozenset({"gsm8k", "mbpp", "humaneval"}),
        build=lambda models, settings: build_self_refine_graph(model=models[0], ...),
        graph_input=lambda item: {"task": item.prompt, "verifier": item.verifier or ""},
        single_prompt=lambda item: FIRST_PROMPT.render(task=item.prompt),
    ))

Built in: ``repair`` and ``tot`` (verifiable tasks), ``reflection``, ``dialectic`` and
``debate`` (open-ended questions judged blind, or GSM8K checked by code). Graph modules are
imported only when a pattern is used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.graph import StateGraph
from pydantic import ValidationError

from reasoning_graphs.errors import InputError
from reasoning_graphs.evals.datasets import DatasetFormat, EvalItem
from reasoning_graphs.models import ModelClient
from reasoning_graphs.prompting import PromptTemplate

__all__ = [
    "ANSWER_PROMPT",
    "PATTERNS",
    "Pattern",
    "get_pattern",
    "register_pattern",
]

AnyGraph = StateGraph[Any, Any, Any, Any]
Builder = Callable[[Sequence[ModelClient], Mapping[str, Any]], AnyGraph]
"""Build a graph from the run's clients (the roster, or one model) and its settings mapping."""

ANSWER_PROMPT = PromptTemplate("{task}\n\nReply with the complete answer only.")
"""The plain call for patterns whose first prompt adds a role or a step protocol."""

_CODE: frozenset[DatasetFormat] = frozenset({"humaneval", "mbpp"})
_SHORT: frozenset[DatasetFormat] = frozenset({"gsm8k", "game24"})


def _no_any(_: Mapping[str, Any]) -> bool | None:
    return None


@dataclass(frozen=True)
class Pattern:
    """How the harness runs one pattern."""

    name: str
    """The name ``eval --pattern`` takes."""
    summary: str
    """One line for help."""
    formats: frozenset[DatasetFormat]
    """Dataset formats the pattern fits."""
    build: Builder
    """Build the uncompiled graph."""
    graph_input: Callable[[EvalItem], dict[str, Any]]
    """The graph's input for an item."""
    single_prompt: Callable[[EvalItem], str]
    """The prompt of the prompt-matched plain call."""
    prompt_match: Literal["exact", "task"] = "exact"
    """``exact``: the plain call sends the graph's first generation prompt verbatim; ``task``:
    the graph's first prompt has its own protocol, and the plain call gets the same task text."""
    uses_verifier: bool = False
    """Whether the graph consults the verifier to pick its answer (best-of-N may then too)."""
    any_of_k: Callable[[Mapping[str, Any]], bool | None] = field(default=_no_any)
    """Whether any candidate the graph produced passed, from its output (None: not reported)."""


PATTERNS: dict[str, Pattern] = {}
"""Registered patterns by name."""


def register_pattern(pattern: Pattern) -> Pattern:
    """Register (or replace) a pattern; returns it."""
    PATTERNS[pattern.name] = pattern
    return pattern


def get_pattern(name: str) -> Pattern:
    """Return a registered pattern.

    Raises:
        InputError: no pattern has that name.
    """
    try:
        return PATTERNS[name]
    except KeyError:
        raise InputError(f"unknown pattern {name!r}; known patterns: {', '.join(sorted(PATTERNS))}") from None


def _settings(cls: Any, values: Mapping[str, Any]) -> Any:
    try:
        return cls.model_validate(dict(values))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise InputError(f"bad {cls.__name__} settings: {problems}") from None
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"bad {cls.__name__} settings: {first}") from None


def _verifier_input(item: EvalItem) -> dict[str, Any]:
    return {"verifier": item.verifier} if item.verifier else {}


# --- repair ------------------------------------------------------------------------------------


def _build_repair(models: Sequence[ModelClient], settings: Mapping[str, Any]) -> AnyGraph:
    from reasoning_graphs.graphs.repair import RepairSettings, build_repair_graph

    return build_repair_graph(roster=list(models), settings=_settings(RepairSettings, settings))


def _repair_prompt(item: EvalItem) -> str:
    from reasoning_graphs.graphs.repair import GENERATE_PROMPT

    return GENERATE_PROMPT.render(task=item.prompt)


def _history_any(out: Mapping[str, Any]) -> bool | None:
    return any(a.passed for a in out.get("history") or [])


register_pattern(
    Pattern(
        name="repair",
        summary="generate, verify, repair against every failure (verifier-gated)",
        formats=_CODE | _SHORT,
        build=_build_repair,
        graph_input=lambda item: {"task": item.prompt, **_verifier_input(item)},
        single_prompt=_repair_prompt,
        uses_verifier=True,
        any_of_k=_history_any,
    )
)

# --- tree of thoughts ----------------------------------------------------------------------------


def _build_tot(models: Sequence[ModelClient], settings: Mapping[str, Any]) -> AnyGraph:
    from reasoning_graphs.graphs.tree_of_thoughts import ToTSettings, build_tree_of_thoughts_graph

    return build_tree_of_thoughts_graph(roster=list(models), settings=_settings(ToTSettings, settings))


def _tot_input(item: EvalItem) -> dict[str, Any]:
    kind = "game24" if (item.verifier or "").startswith("game24:") else "gsm8k"
    return {"task": item.raw, "kind": kind, **_verifier_input(item)}


register_pattern(
    Pattern(
        name="tot",
        summary="tree of thoughts: propose, value, keep a beam (verifier-gated answer)",
        formats=_SHORT,
        build=_build_tot,
        graph_input=_tot_input,
        single_prompt=lambda item: item.prompt,
        prompt_match="task",
        uses_verifier=True,
        any_of_k=lambda out: bool(out.get("any_passed")),
    )
)

# --- open-ended patterns -------------------------------------------------------------------------


def _build_reflection(models: Sequence[ModelClient], settings: Mapping[str, Any]) -> AnyGraph:
    from reasoning_graphs.graphs.reflection import ReflectionSettings, build_reflection_graph

    cfg = _settings(ReflectionSettings, settings)
    if len(models) == 1:  # one model drafts the default number of times (a roster drafts once each)
        return build_reflection_graph(model=models[0], settings=cfg)
    return build_reflection_graph(roster=list(models), settings=cfg)


def _reflection_prompt(item: EvalItem) -> str:
    from reasoning_graphs.graphs.reflection import DRAFT_PROMPT

    return DRAFT_PROMPT.render(task=item.prompt)


def _build_dialectic(models: Sequence[ModelClient], settings: Mapping[str, Any]) -> AnyGraph:
    from reasoning_graphs.graphs.dialectic import DialecticSettings, build_dialectic_graph

    return build_dialectic_graph(roster=list(models), settings=_settings(DialecticSettings, settings))


def _dialectic_prompt(item: EvalItem) -> str:
    from reasoning_graphs.graphs.dialectic import THESIS_PROMPT

    return THESIS_PROMPT.render(task=item.prompt)


def _build_debate(models: Sequence[ModelClient], settings: Mapping[str, Any]) -> AnyGraph:
    from reasoning_graphs.graphs.debate import DebateConfig, build_debate_graph

    return build_debate_graph(roster=list(models), config=_settings(DebateConfig, settings))


_OPEN: frozenset[DatasetFormat] = frozenset({"questions", "gsm8k"})

register_pattern(
    Pattern(
        name="reflection",
        summary="independent drafts, frame, critique, synthesis",
        formats=_OPEN,
        build=_build_reflection,
        graph_input=lambda item: {"task": item.prompt},
        single_prompt=_reflection_prompt,
    )
)
register_pattern(
    Pattern(
        name="dialectic",
        summary="thesis, antithesis, synthesis, judged rounds",
        formats=_OPEN,
        build=_build_dialectic,
        graph_input=lambda item: {"task": item.prompt},
        single_prompt=_dialectic_prompt,
    )
)
register_pattern(
    Pattern(
        name="debate",
        summary="agents propose, critique and refine; a judge synthesizes",
        formats=_OPEN,
        build=_build_debate,
        graph_input=lambda item: {"task": item.prompt},
        single_prompt=lambda item: ANSWER_PROMPT.render(task=item.prompt),
        prompt_match="task",
    )
)

# --- self-refine ---------------------------------------------------------------------------------


def _build_self_refine(models: Sequence[ModelClient], settings: Mapping[str, Any]) -> AnyGraph:
    from reasoning_graphs.graphs.self_refine import SelfRefineSettings, build_self_refine_graph

    return build_self_refine_graph(roster=list(models), settings=_settings(SelfRefineSettings, settings))


def _self_refine_prompt(item: EvalItem) -> str:
    from reasoning_graphs.graphs.self_refine import GENERATE_PROMPT

    return GENERATE_PROMPT.render(task=item.prompt)


register_pattern(
    Pattern(
        name="self_refine",
        summary="generate, critique, refine; select without an oracle",
        formats=_CODE | _OPEN,
        build=_build_self_refine,
        graph_input=lambda item: {"task": item.prompt},
        single_prompt=_self_refine_prompt,
    )
)
