"""Suite-wide fixtures: no real remote models, loopback-only sockets (see pyproject)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reasoning_graphs.testing import forbid_real_models


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with forbid_real_models():
        yield
