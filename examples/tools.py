"""Example tools for tool-using stages (the ``agent`` graph, ``repair --tools``).

Each tool is a LangChain ``@tool`` function: its name, docstring and typed arguments are what the
model sees. Pass them to the command line as ``FILE:NAME`` (or ``FILE:TOOLS`` for all of them)::

    reasoning-graphs run agent --task "What is the secret for 'launch'?" \
        --tools examples/tools.py:lookup_secret,examples/tools.py:add

or from Python::

    from reasoning_graphs.graphs.agent import build_agent_graph
    from reasoning_graphs.nodes import load_tools

    graph = build_agent_graph(tools=load_tools("examples/tools.py:TOOLS"))

- ``lookup_secret`` is a hidden oracle: it returns a value that appears in no prompt and that no
  model can guess (a keyed hash of the name), so an answer holding it proves the tool was used.
- ``add`` adds two numbers exactly.
- ``run_tests`` runs Python code against test code in the package's sandbox (no network, CPU,
  memory and time limits) and reports the first failure: a repair stage can test a candidate on
  demand before submitting it.

Tools may raise: the stage returns the error text to the model as the observation and the run
goes on. Keep tools free of side effects, or idempotent: inside a single node (``repair``) a crash
re-runs the whole step; the ``agent`` graph re-runs only a tool step that was in flight.
"""

from __future__ import annotations

import hashlib

from langchain_core.tools import tool

from reasoning_graphs.verifiers import run_python_tests, sandbox_verdict

__all__ = ["TOOLS", "add", "lookup_secret", "run_tests", "secret_for"]

_SALT = "reasoning-graphs example oracle"


def secret_for(name: str) -> str:
    """Return the secret value ``lookup_secret`` gives for ``name`` (for checking answers)."""
    digest = hashlib.sha256(f"{_SALT}:{name.strip().lower()}".encode()).hexdigest()
    return f"S-{digest[:8].upper()}"


@tool
def lookup_secret(name: str) -> str:
    """Look up the secret value stored under a name. Only this tool knows secret values."""
    if not name.strip():
        raise ValueError("name must not be empty")
    return secret_for(name)


@tool
def add(a: float, b: float) -> float:
    """Add two numbers and return the exact sum."""
    return a + b


@tool
def run_tests(code: str, tests: str) -> str:
    """Run Python code, then test code (asserts) against it, in a sandbox; report the outcome."""
    verdict = sandbox_verdict(run_python_tests(code, tests))
    return "passed" if verdict.passed else f"failed: {verdict.feedback}"


TOOLS = [lookup_secret, add, run_tests]
"""Every example tool (``examples/tools.py:TOOLS``)."""
