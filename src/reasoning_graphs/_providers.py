"""Provider strings: parsing, per-provider model builders, and the real-model switch.

``allow_real_models`` forbids building remote models inside tests.

Heavy provider packages (``langchain_openai``, ``langchain_google_genai``, ``llama_cpp`` through
:mod:`reasoning_graphs.local`) are imported only when a model of that provider is built.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from reasoning_graphs.errors import ConfigurationError
from reasoning_graphs.types import Frozen

DEFAULT_MODEL = "local:smollm2"
"""The embedded model used when no model is named."""

PROVIDERS: dict[str, str] = {
    "openai": "openai:MODEL (needs OPENAI_API_KEY; OPENAI_BASE_URL for compatible servers)",
    "google": "google:MODEL (needs GOOGLE_API_KEY)",
    "local": "local:smollm2 or local:/path/to/model.gguf (embedded llama.cpp; extra 'local')",
    "fake": "fake:PATH.json (scripted replies, for tests and demos)",
}
"""Known providers and the form of their specs."""

_REAL_MODELS_ALLOWED = True


@contextmanager
def allow_real_models(allowed: bool) -> Iterator[None]:
    """Allow or forbid building remote models (``openai:``, ``google:``) inside the block.

    Test suites call ``allow_real_models(False)`` so that a test which would reach a real
    provider fails loudly instead of spending money or waiting on the network.
    """
    global _REAL_MODELS_ALLOWED
    previous, _REAL_MODELS_ALLOWED = _REAL_MODELS_ALLOWED, allowed
    try:
        yield
    finally:
        _REAL_MODELS_ALLOWED = previous


@dataclass(frozen=True)
class ModelSpec:
    """A parsed provider string."""

    provider: str
    """One of :data:`PROVIDERS`."""
    name: str
    """The model name, path or file after the colon."""

    def __str__(self) -> str:
        """Return the spec string."""
        return f"{self.provider}:{self.name}"


def parse_spec(spec: str) -> ModelSpec:
    """Parse ``provider:name`` and check the provider is known.

    Raises:
        ConfigurationError: the string is malformed or names an unknown provider.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigurationError(
            f"model spec {spec!r} is not of the form PROVIDER:MODEL; known providers: "
            f"{', '.join(PROVIDERS)} (e.g. {DEFAULT_MODEL!r})"
        )
    provider, _, name = spec.partition(":")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ConfigurationError(
            f"unknown model provider {provider!r} in {spec!r}; known providers: {', '.join(PROVIDERS)}"
        )
    if not name.strip():
        raise ConfigurationError(f"model spec {spec!r} names no model after {provider + ':'!r}")
    return ModelSpec(provider, name.strip())


class ModelSettings(Frozen):
    """Sampling settings applied when a provider string is turned into a model."""

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature; None keeps the provider's default (0 for the embedded model)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most output tokens per call; None keeps the provider's default."""
    seed: int | None = None
    """Sampling seed where the provider supports one."""
    base_url: str | None = None
    """OpenAI-compatible server URL (overrides ``OPENAI_BASE_URL``)."""
    timeout: float | None = Field(default=120.0, gt=0)
    """Seconds before a remote call times out (a transient error, retried)."""


def _require_env(var: str, provider: str) -> str:
    value = os.environ.get(var, "")
    if not value:
        raise ConfigurationError(
            f"provider {provider!r} needs the environment variable {var}; set it (export {var}=...)"
        )
    return value


def _check_real_allowed(spec: str) -> None:
    if not _REAL_MODELS_ALLOWED:
        raise ConfigurationError(
            f"real model {spec!r} requested while real models are forbidden (inside tests use "
            "reasoning_graphs.testing.ScriptedChatModel or wrap in allow_real_models(True))"
        )


def _openai(parsed: ModelSpec, s: ModelSettings) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    base_url = s.base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = os.environ.get("OPENAI_API_KEY", "")
    if not key and base_url is None:
        key = _require_env("OPENAI_API_KEY", "openai")
    _check_real_allowed(str(parsed))
    kwargs: dict[str, Any] = {"model": parsed.name, "api_key": key or "not-needed"}
    if base_url:
        kwargs |= {"base_url": base_url, "stream_usage": True}
        if s.max_tokens is not None:
            # Compatible servers (llama.cpp's among them) ignore max_completion_tokens.
            kwargs["extra_body"] = {"max_tokens": s.max_tokens}
    options = {"temperature": s.temperature, "max_tokens": s.max_tokens, "seed": s.seed}
    kwargs |= {k: v for k, v in options.items() if v is not None}
    # Retries are the seam's job: one policy, counted in the ledger.
    return ChatOpenAI(**kwargs, timeout=s.timeout, max_retries=0)


def _google(parsed: ModelSpec, s: ModelSettings) -> BaseChatModel:
    from langchain_google_genai import ChatGoogleGenerativeAI

    key = os.environ.get("GOOGLE_API_KEY") or _require_env("GEMINI_API_KEY", "google")
    _check_real_allowed(str(parsed))
    kwargs: dict[str, Any] = {"model": parsed.name, "google_api_key": key, "max_retries": 0}
    options = {"temperature": s.temperature, "max_output_tokens": s.max_tokens}
    kwargs |= {k: v for k, v in options.items() if v is not None}
    return ChatGoogleGenerativeAI(**kwargs, timeout=s.timeout)


def _local(parsed: ModelSpec, s: ModelSettings) -> BaseChatModel:
    from reasoning_graphs.local import LocalChatModel, resolve_local_path

    path = resolve_local_path(parsed.name)
    kwargs: dict[str, Any] = {"model_path": str(path), "model_name": str(parsed)}
    options = {"temperature": s.temperature, "max_tokens": s.max_tokens, "seed": s.seed}
    kwargs |= {k: v for k, v in options.items() if v is not None}
    return LocalChatModel(**kwargs)


def _fake(parsed: ModelSpec, s: ModelSettings) -> BaseChatModel:
    from reasoning_graphs.testing import ScriptedChatModel

    return ScriptedChatModel.from_file(parsed.name)


_BUILDERS: dict[str, Callable[[ModelSpec, ModelSettings], BaseChatModel]] = {
    "openai": _openai,
    "google": _google,
    "local": _local,
    "fake": _fake,
}


def build_chat_model(spec: str, settings: ModelSettings | None = None) -> BaseChatModel:
    """Turn a provider string into a LangChain chat model, validating it before any call.

    Raises:
        ConfigurationError: malformed spec, unknown provider, missing credentials or extra.
    """
    parsed = parse_spec(spec)
    return _BUILDERS[parsed.provider](parsed, settings or ModelSettings())


def model_status(spec: str) -> str | None:
    """Return None when ``spec`` can be built here, else the reason it cannot."""
    try:
        build_chat_model(spec)
    except ConfigurationError as exc:
        return str(exc)
    return None


Provider = Literal["openai", "google", "local", "fake"]
