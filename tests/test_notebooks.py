"""Every notebook executes, offline, from the repository root on this environment's own kernel.

The ``python3`` kernel spec is ipykernel's own, found inside the virtual environment; jupyter_client
starts it with ``sys.executable``, so the kernel runs the package installed here.

The structure checks run by default: notebooks are stored without outputs (nbformat 4), each
pattern has one, and each shows its graph's drawing and the switch to a real model.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PATTERNS = [
    "repair",
    "self_refine",
    "reflection",
    "dialectic",
    "tree_of_thoughts",
    "debate",
    "adversarial",
    "perspectives",
    "evaluation",
    "agent",
]
"""One notebook per pattern."""
OTHERS = ["checkpoints", "evaluation_harness"]
"""Notebooks that are not about one pattern."""
CELL_TIMEOUT_S = 60
BUDGET_S = 30.0
"""Most seconds a notebook may take (kernel start included); they take 6-11 s on 2 cores, aim under 15."""


def _paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def test_every_pattern_has_a_notebook() -> None:
    assert sorted(p.stem for p in _paths()) == sorted(PATTERNS + OTHERS)


@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.stem)
def test_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs"


@pytest.mark.parametrize("name", PATTERNS)
def test_pattern_notebook_shape(name: str) -> None:
    sources = [c.source for c in nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells]
    code = "\n".join(sources)
    assert "draw_mermaid()" in code
    assert "USE_REAL_MODEL = False" in code and 'resolve("local:smollm2")' in code
    assert "graph.stream(" in code and "graph.get_state(config)" in code
    assert "ScriptedChatModel" in code


@pytest.mark.notebook
@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.stem)
def test_notebook_executes(path: Path) -> None:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT)}},  # run from the repository root
    )
    started = time.monotonic()
    client.execute()
    elapsed = time.monotonic() - started
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors
    assert elapsed < BUDGET_S, f"{path.name} took {elapsed:.1f} s (budget {BUDGET_S} s)"
