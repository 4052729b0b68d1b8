"""Fixtures for the verifier tests: the shared data directory and fast sandbox limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoning_graphs.verifiers import SandboxLimits, sandbox_isolation

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
"""``../shared/data`` relative to the repository root, where the evaluation data lives."""

FAST = SandboxLimits(wall_seconds=3.0, cpu_seconds=1)
"""Tight limits so adversarial candidates are cut off quickly."""


@pytest.fixture(scope="session")
def data_dir() -> Path:
    assert (DATA / "humaneval.jsonl").is_file(), f"evaluation data missing at {DATA}"
    return DATA


@pytest.fixture(scope="session")
def full_isolation() -> bool:
    """Whether this machine gives the sandbox every guarantee (tests branch on it explicitly)."""
    return sandbox_isolation().complete
