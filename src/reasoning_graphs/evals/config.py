"""An evaluation's configuration: everything needed to run it again, stored in its receipt."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue

from reasoning_graphs.models import DEFAULT_MODEL, ModelSettings
from reasoning_graphs.types import Frozen

__all__ = ["ARMS", "Arm", "EvalConfig"]

Arm = Literal["graph", "single", "best_of_n", "self_consistency"]
"""An arm of an evaluation.

- ``graph``: the pattern's graph.
- ``single``: one plain call with the prompt-matched prompt.
- ``best_of_n``: N samples, the first that passes the verifier returned (only for patterns
  whose graph also consults the verifier).
- ``self_consistency``: N samples, the majority answer returned (short answers only).
"""

ARMS: tuple[Arm, ...] = ("graph", "single", "best_of_n", "self_consistency")
"""Every arm, in report order."""

_RESULT_FIELDS = (
    "pattern",
    "model",
    "roster",
    "judge_model",
    "temperature",
    "sample_temperature",
    "max_tokens",
    "max_calls",
    "settings",
    "seed",
)
"""The fields that change what an item's thread computes (they name its thread)."""


class EvalConfig(Frozen):
    """The configuration of one evaluation run."""

    pattern: str
    """The registered pattern (``repair``, ``tot`` ...)."""
    dataset: str
    """The dataset file (its format is detected)."""
    n: int | None = Field(default=None, ge=1)
    """Items to run (None: all)."""
    shuffle: bool = False
    """Pick items in a seeded random order instead of file order."""
    arms: tuple[Arm, ...] | None = None
    """Arms to run; None: every arm that applies to the pattern and dataset."""
    model: str = DEFAULT_MODEL
    """The model spec of every arm (when no roster is given)."""
    roster: tuple[str, ...] | None = None
    """Model specs the graph rotates or fans out over; sample *i* uses member *i* mod length."""
    judge_model: str | None = None
    """The blind judge's model for open-ended items (default: ``model``, or the roster's first)."""
    samples: int | None = Field(default=None, ge=1)
    """N of the sampling arms; None: the graph arm's mean calls per item, rounded (matched cost)."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Temperature of the graph and the plain call (None: the provider's default)."""
    sample_temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    """Temperature of best-of-N and self-consistency samples (sample *i* has seed ``seed + i``)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most output tokens per call (None: the provider's default)."""
    max_calls: int | None = Field(default=None, ge=1)
    """Call budget of each graph run (None: the pattern's default)."""
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    """The pattern's settings (validated by its settings class)."""
    seed: int = 0
    """Seed of the models, the item shuffle and the bootstrap."""
    concurrency: int = Field(default=1, ge=1, le=64)
    """Items run at once."""
    out: str | None = None
    """Output folder (None: ``.reasoning_graphs/evals/<pattern>-<dataset>-<fingerprint>``)."""
    bootstrap_resamples: int = Field(default=2000, ge=100)
    """Bootstrap resamples for the paired intervals."""

    @property
    def members(self) -> list[str]:
        """The model specs of the graph: the roster, else the one model."""
        return list(self.roster) if self.roster else [self.model]

    @property
    def judge(self) -> str:
        """The judge's model spec."""
        return self.judge_model or self.members[0]

    def model_settings(self) -> ModelSettings:
        """Settings of the graph's, the plain call's and the judge's clients."""
        return ModelSettings(temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed)

    def sample_settings(self, index: int) -> ModelSettings:
        """Settings of sample ``index`` of a sampling arm (its own seed)."""
        return ModelSettings(
            temperature=self.sample_temperature, max_tokens=self.max_tokens, seed=self.seed + index
        )

    def fingerprint(self, dataset_sha256: str) -> str:
        """Return a short digest of what determines each item's result (names its threads).

        The number of items, the arms, the output folder and the concurrency are left out, so a
        larger ``n`` reuses the items already finished.
        """
        payload = {name: getattr(self, name) for name in _RESULT_FIELDS}
        payload["dataset_sha256"] = dataset_sha256
        text = json.dumps(payload, sort_keys=True, default=list)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def out_dir(self, dataset_sha256: str) -> Path:
        """Return the output folder."""
        if self.out:
            return Path(self.out)
        stem = Path(self.dataset).stem
        return (
            Path(".reasoning_graphs") / "evals" / f"{self.pattern}-{stem}-{self.fingerprint(dataset_sha256)}"
        )
