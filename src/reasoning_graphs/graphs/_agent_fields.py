"""Validation shared by the agent specs of configuration files (debate agents, evaluators)."""

from __future__ import annotations

import re
from typing import Any

from reasoning_graphs.errors import ConfigurationError
from reasoning_graphs.models import parse_spec

__all__ = ["check_agent_id", "check_model_ref", "join_provider"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def join_provider(data: Any) -> Any:
    """Turn ``{"provider": "openai", "model": "gpt-4o"}`` into ``{"model": "openai:gpt-4o"}``.

    Raises:
        ValueError: the provider is not a name, the model is missing, or the two contradict.
    """
    if not isinstance(data, dict) or "provider" not in data:
        return data
    data = dict(data)
    provider, model = data.pop("provider"), data.get("model")
    if not isinstance(provider, str) or not provider:
        raise ValueError(f"provider must be a provider name such as 'openai', got {provider!r}")
    if not isinstance(model, str) or not model:
        raise ValueError(f'provider {provider!r} is given without a model name; add "model"')
    if ":" not in model:
        data["model"] = f"{provider}:{model}"
    elif not model.startswith(f"{provider}:"):
        raise ValueError(f"provider {provider!r} contradicts model {model!r}; give one of them")
    return data


def check_agent_id(value: str) -> str:
    """Return ``value`` if it is a valid agent id, else raise ``ValueError``."""
    if not _ID.fullmatch(value):
        raise ValueError(f"id {value!r} must be 1-64 letters, digits, '_', '.' or '-' (no leading '_.-')")
    return value


def check_model_ref(value: str | int | None) -> str | int | None:
    """Return a provider string, a roster index (>= 0) or None, checked; else raise ``ValueError``."""
    if isinstance(value, int) and value < 0:
        raise ValueError(f"a roster index must be >= 0, got {value!r}")
    if isinstance(value, str):
        try:
            parse_spec(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
    return value
