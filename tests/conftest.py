"""Suite-wide fixtures: no real remote models; a saver fixture over memory and SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.testing import forbid_real_models

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with forbid_real_models():
        yield


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Every behaviour runs against the in-memory and the SQLite checkpointer."""
    if request.param == "memory":
        yield InMemorySaver()
        return
    from reasoning_graphs.checkpoints import open_saver

    with open_saver(tmp_path / "checkpoints.sqlite") as sqlite_saver:
        yield sqlite_saver


def thread(thread_id: str = "t1") -> dict[str, Any]:
    """A run config for ``thread_id``."""
    return {"configurable": {"thread_id": thread_id}}
