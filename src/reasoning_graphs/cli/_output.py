"""Printing for the CLI: one-line errors, progress lines on stderr, results on stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["dumps", "err", "out", "progress_line", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Turn state values (pydantic models, tuples, dicts) into JSON-ready data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def dumps(value: Any) -> str:
    """Serialize to indented JSON."""
    return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)


def out(text: str) -> None:
    """Print a result line on stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def err(text: str) -> None:
    """Print a message line on stderr."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _short(text: str, limit: int = 100) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def progress_line(node: str, update: Mapping[str, Any] | None) -> str:
    """Summarize one node's state update in one line (which node, attempt, verdict)."""
    parts = [f"[{node}]"]
    update = update or {}
    history = update.get("history")
    if isinstance(history, list) and history:
        last = history[-1]
        n = update.get("attempts", "?")
        verdict = (
            "passed"
            if getattr(last, "passed", False)
            else f"failed: {_short(getattr(last, 'feedback', ''), 80)}"
        )
        parts.append(f"attempt {n} by {getattr(last, 'model', '?')} {verdict}")
    if update.get("candidate"):
        parts.append(
            f"candidate from {update.get('candidate_model', '?')} ({len(str(update['candidate']))} chars)"
        )
    usage = update.get("usage")
    if usage is not None and getattr(usage, "total", None) is not None and usage.total.calls:
        parts.append(f"calls +{usage.total.calls}")
    outputs = update.get("outputs")
    if isinstance(outputs, Mapping) and outputs and not history:
        parts.append("wrote " + ", ".join(sorted(outputs)))
    if update.get("error"):
        parts.append(f"error: {_short(update['error'], 120)}")
    if update.get("stop_reason"):
        parts.append(f"stop: {update['stop_reason']}")
    return " ".join(parts)
