"""Provider strings to chat models, and the one seam every node calls.

A provider string picks a model: ``openai:MODEL`` (any OpenAI-compatible server through
``OPENAI_BASE_URL`` or ``base_url``), ``google:MODEL`` (Gemini), ``local:NAME_OR_PATH.gguf``
(embedded llama.cpp, default ``local:smollm2``) and ``fake:PATH.json`` (a scripted fake, see
:mod:`reasoning_graphs.testing`). Specs are validated before any call.

:class:`ModelClient` is the seam: text or messages and an optional pydantic schema (or tools) in;
the parsed value (or the message with its tool calls), usage and model id out. It retries
transient errors with bounded backoff, fails fast on authentication and invalid-request errors,
re-prompts schema violations with the validation error attached, and counts every call (unknown
usage is counted as unknown, never as zero).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, overload

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from reasoning_graphs.errors import BudgetExceeded, ConfigurationError, ModelError, SchemaError
from reasoning_graphs.types import Frozen, UsageCounts

__all__ = [
    "DEFAULT_MODEL",
    "PROVIDERS",
    "ModelClient",
    "ModelRef",
    "ModelReply",
    "ModelSettings",
    "ModelSpec",
    "RetrySettings",
    "allow_real_models",
    "build_chat_model",
    "model_status",
    "parse_spec",
    "resolve",
]

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


class RetrySettings(Frozen):
    """Bounded exponential backoff for transient provider errors."""

    max_attempts: int = Field(default=3, ge=1)
    """Tries per call, the first included."""
    initial_delay: float = Field(default=0.5, ge=0.0)
    """Seconds before the first retry."""
    max_delay: float = Field(default=8.0, ge=0.0)
    """Longest wait between tries."""
    jitter: bool = True
    """Randomize waits (up to +50%) so parallel branches do not retry in lockstep."""

    def delay(self, retry: int) -> float:
        """Return the wait before retry number ``retry`` (1-based)."""
        base: float = min(self.max_delay, self.initial_delay * 2.0 ** (retry - 1))
        return base * (1 + random.random() / 2) if self.jitter else base


_TRANSIENT_NAMES = frozenset(
    {
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailable",
        "ServiceUnavailableError",
        "DeadlineExceeded",
        "ResourceExhausted",
        "TimeoutException",
        "ConnectError",
        "ReadTimeout",
        "RemoteProtocolError",
        "TransientModelError",
    }
)


def is_transient(exc: BaseException) -> bool:
    """Return whether an exception is worth retrying (timeouts, rate limits, 5xx, dropped links).

    Authentication, permission and invalid-request errors are not, nor is anything unknown: a
    blind retry of a bug only costs money.
    """
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in (408, 409, 429) or status >= 500)


T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class ModelReply(Generic[T]):
    """What one seam call returns."""

    value: T | str
    """The parsed schema instance, or the reply text when no schema was asked for."""
    text: str
    """The raw text of the final reply."""
    model: str
    """The model id (provider string) that answered."""
    usage: UsageCounts
    """Every call this request made, retries and schema repairs included."""
    message: AIMessage | None = field(default=None, repr=False)
    """The final raw message (tool calls, metadata)."""


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)


def _usage_of(message: BaseMessage | None) -> UsageCounts:
    meta = getattr(message, "usage_metadata", None) if message is not None else None
    if not meta:
        return UsageCounts(calls=1, unknown_usage_calls=1)
    return UsageCounts(
        calls=1,
        input_tokens=int(meta.get("input_tokens", 0)),
        output_tokens=int(meta.get("output_tokens", 0)),
    )


def _as_messages(prompt: str | Sequence[BaseMessage], system: str | None) -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        messages.insert(0, SystemMessage(system))
    return messages


_REPAIR = (
    "Your previous reply did not match the required JSON schema.\n"
    "Previous reply:\n{reply}\n\nProblems:\n{errors}\n\n"
    "Reply again with only one JSON object that matches the schema."
)


class ModelClient:
    """The seam between nodes and chat models.

    Args:
        model: any LangChain chat model.
        model_id: the id recorded in history and ledgers (defaults to the model's name).
        retry: backoff policy for transient errors.
        max_schema_repairs: re-prompts allowed per call when a reply breaks its schema.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        model_id: str | None = None,
        retry: RetrySettings | None = None,
        max_schema_repairs: int = 2,
    ) -> None:
        """Wrap ``model``."""
        self.model = model
        self.model_id = model_id or _default_id(model)
        self.retry = retry or RetrySettings()
        self.max_schema_repairs = max_schema_repairs

    def __repr__(self) -> str:
        """Show the model id."""
        return f"ModelClient({self.model_id!r})"

    @overload
    async def acall(
        self,
        prompt: str | Sequence[BaseMessage],
        *,
        schema: type[T],
        system: str | None = ...,
        max_calls: int | None = ...,
        tools: None = ...,
        tool_choice: None = ...,
    ) -> ModelReply[T]: ...
    @overload
    async def acall(
        self,
        prompt: str | Sequence[BaseMessage],
        *,
        schema: None = ...,
        system: str | None = ...,
        max_calls: int | None = ...,
        tools: Sequence[Any] | None = ...,
        tool_choice: str | dict[str, Any] | None = ...,
    ) -> ModelReply[Any]: ...
    @overload
    async def acall(
        self,
        prompt: str | Sequence[BaseMessage],
        *,
        schema: type[T] | None = ...,
        system: str | None = ...,
        max_calls: int | None = ...,
        tools: Sequence[Any] | None = ...,
        tool_choice: str | dict[str, Any] | None = ...,
    ) -> ModelReply[Any]: ...
    async def acall(
        self,
        prompt: str | Sequence[BaseMessage],
        *,
        schema: type[T] | None = None,
        system: str | None = None,
        max_calls: int | None = None,
        tools: Sequence[Any] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ModelReply[Any]:
        """Ask the model, asynchronously.

        Args:
            prompt: the user prompt, or a full message list.
            schema: a pydantic model class to parse the reply into (with schema repair).
            system: an optional system message put first.
            max_calls: most calls this request may make (retries and repairs included); the
                budget allowance a router computed for this step.
            tools: LangChain tools (or anything ``bind_tools`` accepts) the model may call in
                this turn. The reply's ``message`` then carries the tool calls and ``value`` is
                its text; the caller runs the tools (see ``reasoning_graphs.nodes.tools``).
            tool_choice: passed to ``bind_tools`` when given (``"auto"``, a tool name ...).

        Raises:
            ValueError: both ``schema`` and ``tools`` were given (ask for the schema in a
                separate call after the tool turns).
            ModelError: a non-retryable error, or retries ran out (``.usage`` says what was spent).
            SchemaError: every repair still broke the schema.
            BudgetExceeded: ``max_calls`` ran out before a valid reply.
        """
        runnable = self._runnable(schema, tools, tool_choice)
        return await self._run(_as_messages(prompt, system), runnable, schema, max_calls, _async_io)

    def call(
        self,
        prompt: str | Sequence[BaseMessage],
        *,
        schema: type[T] | None = None,
        system: str | None = None,
        max_calls: int | None = None,
        tools: Sequence[Any] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ModelReply[Any]:
        """Ask the model synchronously (same contract as :meth:`acall`)."""
        runnable = self._runnable(schema, tools, tool_choice)
        # The sync path never suspends, so the coroutine runs to completion in one step, with
        # no event loop: safe inside notebooks and LangGraph's worker threads alike.
        coro = self._run(_as_messages(prompt, system), runnable, schema, max_calls, _sync_io)
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        coro.close()
        raise RuntimeError("the synchronous model path suspended; this is a bug")

    def _runnable(
        self,
        schema: type[T] | None,
        tools: Sequence[Any] | None,
        tool_choice: str | dict[str, Any] | None,
    ) -> Any:
        if tools:
            if schema is not None:
                raise ValueError(
                    "schema and tools cannot be combined in one call; run the tool turns, then ask "
                    "for the schema in a final call without tools"
                )
            options: dict[str, Any] = {} if tool_choice is None else {"tool_choice": tool_choice}
            return self.model.bind_tools(list(tools), **options)
        if schema is None:
            return self.model
        return self.model.with_structured_output(schema, include_raw=True)

    async def _run(
        self,
        messages: list[BaseMessage],
        runnable: Any,
        schema: type[T] | None,
        max_calls: int | None,
        io: _IO,
    ) -> ModelReply[Any]:
        spent = UsageCounts()
        for repair in range(self.max_schema_repairs + 1):
            out, spent = await self._invoke_with_retry(runnable, messages, spent, max_calls, io)
            if schema is None:
                message = out if isinstance(out, AIMessage) else AIMessage(_message_text(out))
                return ModelReply(
                    _message_text(message), _message_text(message), self.model_id, spent, message
                )
            raw = out.get("raw")
            text = _message_text(raw) if raw is not None else ""
            if raw is not None and not text and getattr(raw, "tool_calls", None):
                text = json.dumps(raw.tool_calls[0].get("args", {}))
            parsed, error = out.get("parsed"), out.get("parsing_error")
            if parsed is not None and error is None:
                value = parsed if isinstance(parsed, schema) else schema.model_validate(parsed)
                return ModelReply(value, text, self.model_id, spent, raw)
            if repair == self.max_schema_repairs:
                raise SchemaError(
                    f"{self.model_id} broke the {schema.__name__} schema "
                    f"{self.max_schema_repairs + 1} times; last error: {_short(error)}",
                    usage=spent,
                )
            spent = spent + UsageCounts(schema_repairs=1)
            messages = [
                *messages,
                AIMessage(text or "(empty reply)"),
                HumanMessage(_REPAIR.format(reply=text[:2000] or "(empty)", errors=_short(error, 1500))),
            ]
        raise AssertionError("unreachable")  # pragma: no cover

    async def _invoke_with_retry(
        self,
        runnable: Any,
        messages: list[BaseMessage],
        spent: UsageCounts,
        max_calls: int | None,
        io: _IO,
    ) -> tuple[Any, UsageCounts]:
        for attempt in range(1, self.retry.max_attempts + 1):
            if max_calls is not None and spent.calls >= max_calls:
                raise BudgetExceeded(
                    f"budget allows {max_calls} call(s) for this step and they are spent", usage=spent
                )
            try:
                out = await io.invoke(runnable, messages)
            except Exception as exc:
                spent = spent + UsageCounts(calls=1, failed_calls=1, unknown_usage_calls=1)
                if not is_transient(exc):
                    raise ModelError(
                        f"{self.model_id} failed: {type(exc).__name__}: {_short(exc)}", usage=spent
                    ) from exc
                if attempt == self.retry.max_attempts:
                    raise ModelError(
                        f"{self.model_id} failed {attempt} times; last: {type(exc).__name__}: {_short(exc)}",
                        usage=spent,
                    ) from exc
                await io.sleep(self.retry.delay(attempt))
                continue
            raw = out.get("raw") if isinstance(out, dict) else out
            return out, spent + _usage_of(raw)
        raise AssertionError("unreachable")  # pragma: no cover


def _short(exc: object, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _default_id(model: BaseChatModel) -> str:
    for attr in ("model_id", "model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value if ":" in value else f"{model._llm_type}:{value}"
    return model._llm_type


@dataclass(frozen=True)
class _IO:
    invoke: Callable[[Any, list[BaseMessage]], Any]
    sleep: Callable[[float], Any]


async def _ainvoke(runnable: Any, messages: list[BaseMessage]) -> Any:
    return await runnable.ainvoke(messages)


async def _sinvoke(runnable: Any, messages: list[BaseMessage]) -> Any:
    return runnable.invoke(messages)


async def _tsleep(seconds: float) -> None:
    time.sleep(seconds)


_async_io = _IO(_ainvoke, asyncio.sleep)
_sync_io = _IO(_sinvoke, _tsleep)

ModelRef = str | BaseChatModel | ModelClient
"""A model as graphs accept it: a provider string, a LangChain chat model, or a seam client."""

_CACHE: dict[tuple[str, ModelSettings | None], ModelClient] = {}
_CACHE_LOCK = threading.Lock()


def resolve(ref: ModelRef, settings: ModelSettings | None = None) -> ModelClient:
    """Return the seam client for a model reference.

    Provider strings are built once per process (and settings) and cached, so a scripted fake
    keeps its place in its script and the embedded model is loaded once.
    """
    if isinstance(ref, ModelClient):
        return ref
    if isinstance(ref, BaseChatModel):
        return ModelClient(ref)
    key = (ref, settings)
    with _CACHE_LOCK:
        client = _CACHE.get(key)
        if client is None:
            spec = parse_spec(ref)
            client = ModelClient(build_chat_model(ref, settings), model_id=str(spec))
            _CACHE[key] = client
        return client


Provider = Literal["openai", "google", "local", "fake"]
