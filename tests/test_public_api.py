"""The curated public API: ``__all__`` is sorted, complete and importable; import is side-effect free."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

import reasoning_graphs

MODULES = [
    "reasoning_graphs",
    "reasoning_graphs.graphs",
    "reasoning_graphs.verifiers",
    "reasoning_graphs.checkpoints",
    "reasoning_graphs.nodes",
    "reasoning_graphs.types",
    "reasoning_graphs.models",
    "reasoning_graphs.testing",
    "reasoning_graphs.access",
    "reasoning_graphs.budget",
    "reasoning_graphs.errors",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_every_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported))  # order itself is enforced by ruff's RUF022
    for symbol in exported:
        assert hasattr(module, symbol), f"{name}.{symbol} is in __all__ but missing"


def test_package_exports_every_graph_builder() -> None:
    from reasoning_graphs import graphs

    builders = {n for n in graphs.__all__ if n.startswith("build_")}
    assert builders <= set(reasoning_graphs.__all__)


def test_import_builds_no_model() -> None:
    code = (
        "import sys\n"
        "import reasoning_graphs, reasoning_graphs.graphs, reasoning_graphs.cli\n"
        "assert 'llama_cpp' not in sys.modules, 'llama_cpp imported at import time'\n"
        "print('ok')\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-should-not-matter"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
