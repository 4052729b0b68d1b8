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

This module holds the seam (``ModelClient``, ``ModelReply``, ``resolve``); spec parsing and the
provider builders live in ``_providers``, the retry policy in ``_seam_retry`` and small message
helpers in ``_seam_messages``, all importable from here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from reasoning_graphs._providers import (
    DEFAULT_MODEL,
    PROVIDERS,
    ModelSettings,
    ModelSpec,
    allow_real_models,
    build_chat_model,
    model_status,
    parse_spec,
)
from reasoning_graphs._providers import Provider as Provider
from reasoning_graphs._seam_messages import _as_messages, _default_id, _message_text, _short, _usage_of
from reasoning_graphs._seam_retry import _IO, RetrySettings, _async_io, _sync_io
from reasoning_graphs._seam_retry import is_transient as is_transient
from reasoning_graphs.errors import BudgetExceeded, ModelError, SchemaError
from reasoning_graphs.types import UsageCounts

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
