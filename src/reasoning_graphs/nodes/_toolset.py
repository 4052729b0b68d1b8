"""Tool sets: plain tools and access-scoped tool factories, checked at build time; tool loading.

A stage's tools are a :class:`Toolset`. Plain tools are fixed when the graph is built; a
:class:`ToolFactory` is called at each step with only the outputs the stage's access list
projects, so the tools it builds can never read what the stage may not. :func:`load_tools` turns
``MODULE:NAME`` references (or ``path/to/file.py:NAME``) into tools for the command line.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import tool as as_tool

from reasoning_graphs.access import Output
from reasoning_graphs.errors import InputError
from reasoning_graphs.verifiers import Verifier, run_verifier

__all__ = ["ToolFactory", "ToolLike", "Toolset", "load_object", "load_tools", "verifier_tool"]


@dataclass(frozen=True)
class ToolFactory:
    """Tools built for each step from the outputs the stage may read.

    ``build`` is called at every model turn and tool step with the stage's projection, so keep it
    cheap and free of side effects; the tools it returns may have side effects of their own.

    Example:
        >>> factory = ToolFactory(lambda seen: [make_lookup(seen["task"].text)])  # doctest: +SKIP
    """

    build: Callable[[Mapping[str, Output]], Sequence[BaseTool]]
    """Given the stage's projected outputs (label to output), return its tools."""


ToolLike = BaseTool | ToolFactory | Callable[..., Any]
"""A tool as stages accept it: a LangChain tool, a factory, or a documented function."""


class Toolset:
    """A stage's tools, checked when the graph is built and bound per step.

    Args:
        tools: LangChain tools (``@tool`` functions, ``BaseTool``), :class:`ToolFactory` values,
            or plain functions with a docstring (turned into tools).

    Raises:
        ValueError: a value is not a tool, a function has no docstring, or two tools share a name.
    """

    def __init__(self, tools: Sequence[ToolLike]) -> None:
        """Check and sort the tools."""
        self.static: dict[str, BaseTool] = {}
        """Tools known at build time, by name."""
        self.factories: list[ToolFactory] = []
        """Factories called per step with the stage's projected outputs."""
        for item in tools:
            if isinstance(item, ToolFactory):
                self.factories.append(item)
                continue
            tool = item if isinstance(item, BaseTool) else _from_function(item)
            if tool.name in self.static:
                raise ValueError(f"two tools are named {tool.name!r}; give each tool a distinct name")
            self.static[tool.name] = tool

    def __bool__(self) -> bool:
        """Return whether there is any tool."""
        return bool(self.static or self.factories)

    def bind(self, seen: Mapping[str, Output]) -> dict[str, BaseTool]:
        """Return every tool by name, building the factories from ``seen`` (the projection).

        Raises:
            ValueError: a factory returned a non-tool or a name that is already taken.
        """
        tools = dict(self.static)
        for factory in self.factories:
            for tool in factory.build(seen):
                if not isinstance(tool, BaseTool):
                    raise ValueError(f"a ToolFactory returned {tool!r}, which is not a LangChain tool")
                if tool.name in tools:
                    raise ValueError(f"two tools are named {tool.name!r}; give each tool a distinct name")
                tools[tool.name] = tool
        return tools


def _from_function(fn: Any) -> BaseTool:
    if not callable(fn):
        raise ValueError(f"{fn!r} is not a tool; pass a @tool function, a BaseTool or a ToolFactory")
    if not (getattr(fn, "__doc__", None) or "").strip():
        name = getattr(fn, "__name__", repr(fn))
        raise ValueError(f"function {name!r} has no docstring; the model needs one to use it as a tool")
    tool: BaseTool = as_tool(fn)
    return tool


def verifier_tool(
    verifier: Verifier,
    *,
    name: str = "check_answer",
    description: str = "Check a complete candidate answer; returns 'passed' or the exact failure.",
) -> ToolFactory:
    """Return a tool factory whose tool runs ``verifier`` on a candidate, on demand.

    The tool is bound to the stage's ``task`` output (what its access list shows), so a verifier
    that reads the task sees the same text the stage does.
    """

    def build(seen: Mapping[str, Output]) -> list[BaseTool]:
        task = seen["task"].text if "task" in seen else ""

        def check(candidate: str) -> str:
            verdict = run_verifier(verifier, candidate, task)
            return "passed" if verdict.passed else f"failed: {verdict.feedback}"

        return [StructuredTool.from_function(check, name=name, description=description)]

    return ToolFactory(build)


def _module(ref: str) -> ModuleType:
    if ref.endswith(".py") or "/" in ref:
        path = Path(ref).expanduser().resolve()
        if not path.is_file():
            raise InputError(f"tool module file {ref!r} does not exist; pass a .py file or a module name")
        name = f"_reasoning_graphs_tools_{abs(hash(str(path)))}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise InputError(f"cannot load tool module file {ref!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(ref)
    except ImportError as exc:
        raise InputError(
            f"cannot import tool module {ref!r} ({exc}); pass an importable module or a .py path"
        ) from exc


def load_object(ref: str) -> Any:
    """Return the object named by ``MODULE:NAME`` (``MODULE`` may be a ``.py`` path).

    Raises:
        InputError: the reference is malformed, its module cannot be loaded, or has no such name.
    """
    module_ref, sep, name = ref.strip().rpartition(":")
    if not sep or not module_ref or not name:
        raise InputError(f"reference {ref!r} is not MODULE:NAME (e.g. examples/tools.py:add)")
    value = getattr(_module(module_ref), name, None)
    if value is None:
        raise InputError(f"module {module_ref!r} has no {name!r}")
    return value


def load_tools(spec: str) -> list[ToolLike]:
    """Load tools named ``MODULE:NAME[,MODULE:NAME...]`` (``MODULE`` may be a ``.py`` path).

    ``NAME`` may name a tool, a :class:`ToolFactory`, a documented function, or a list of these
    (``examples/tools.py:TOOLS``).

    Raises:
        InputError: a reference is malformed, its module cannot be loaded, or the name is missing
            or is not a tool.
    """
    loaded: list[ToolLike] = []
    for ref in (part.strip() for part in spec.split(",")):
        value = load_object(ref)
        items = list(value) if isinstance(value, list | tuple) else [value]
        for item in items:
            is_function = inspect.isfunction(item) and bool(inspect.getdoc(item))
            if not (isinstance(item, BaseTool | ToolFactory) or is_function):
                raise InputError(
                    f"{ref!r} is {item!r}, not a tool (expected a LangChain tool, a ToolFactory "
                    "or a documented Python function)"
                )
        loaded += items
    return loaded
