"""Scripted fake chat models for tests, notebooks, demos and Studio.

:class:`ScriptedChatModel` is a real LangChain chat model that answers from a script instead of
a network: a queue of replies, a function of the prompt, or routes keyed by prompt substrings.
It supports structured output (replies are parsed as JSON), tool calls, reported usage, recorded
prompts, latency and scripted failures, so it goes behind the same seam as any provider.

A script file (``fake:PATH.json``) is either a JSON list of replies, or an object
``{"routes": [{"match": "substring", "reply": ...}, ...], "default": ...}``; routes make a
script deterministic across processes (a resumed run sees the same replies). A reply is a
string (the message text), or an object with ``content``, ``tool_calls``
(``[{"name": ..., "args": {...}}]``), ``usage`` (``{"input_tokens": n, "output_tokens": m}``,
or ``null`` for unknown) or ``raise`` (``"transient"``, ``"auth"``, ``"error"``). An object
script may also name ``"log": "PATH"``: every prompt is appended there as a JSON line, so a test
can count calls across processes (for example before and after a crash and resume), and
``"latency": SECONDS``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from reasoning_graphs._files import read_user_json
from reasoning_graphs._structured import structured_runnable
from reasoning_graphs.errors import ConfigurationError
from reasoning_graphs.models import allow_real_models

__all__ = [
    "Reply",
    "ScriptExhausted",
    "ScriptedChatModel",
    "TransientModelError",
    "forbid_real_models",
    "prompt_text",
]

Reply = str | dict[str, Any] | AIMessage | BaseException
"""One scripted reply: text, a reply object (see the module docstring), a message, or an
exception to raise."""

Responder = Callable[[list[BaseMessage]], Reply]
"""A function from the prompt messages to a reply."""

_MAX_SCRIPT_BYTES = 64 * 1024 * 1024


class TransientModelError(ConnectionError):
    """A scripted transient failure (the seam retries it)."""


class _AuthError(Exception):
    """A scripted authentication failure (the seam fails fast)."""

    status_code = 401


class ScriptExhausted(AssertionError):
    """The script ran out of replies: the code under test made more calls than scripted."""


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    """Join the text of every message, as a fake sees its prompt."""
    parts = []
    for message in messages:
        content = message.content
        parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


_ids = itertools.count()


def _to_message(reply: Reply, messages: list[BaseMessage], report_usage: bool, name: str) -> AIMessage:
    if isinstance(reply, BaseException):
        raise reply
    if isinstance(reply, AIMessage):
        return reply.model_copy(update={"id": f"fake-{next(_ids)}"})
    spec: dict[str, Any] = {"content": reply} if isinstance(reply, str) else dict(reply)
    failure = spec.get("raise")
    if failure is not None:
        if failure == "transient":
            raise TransientModelError("scripted transient failure")
        if failure == "auth":
            raise _AuthError("scripted authentication failure (401)")
        raise RuntimeError(f"scripted failure: {failure}")
    content = spec.get("content", "")
    if not isinstance(content, str):
        content = json.dumps(content)
    tool_calls = [
        {
            "name": c["name"],
            "args": c.get("args", {}),
            "id": c.get("id") or f"call-{next(_ids)}",
            "type": "tool_call",
        }
        for c in spec.get("tool_calls", [])
    ]
    usage: Any = spec.get("usage", "auto")
    if usage == "auto":
        usage = None
        if report_usage:
            inp = max(1, len(prompt_text(messages)) // 4)
            out = max(1, len(content) // 4)
            usage = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
    elif usage is not None:
        usage = {**usage, "total_tokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0)}
    return AIMessage(
        content=content,
        tool_calls=tool_calls,
        usage_metadata=usage,
        response_metadata={"model_name": name, "finish_reason": "stop"},
        id=f"fake-{next(_ids)}",
    )


class ScriptedChatModel(BaseChatModel):
    """A chat model that replies from a script.

    Example:
        >>> fake = ScriptedChatModel(replies=["4"])
        >>> fake.invoke("2+2?").content
        '4'

    Args:
        replies: replies in order (a queue).
        responder: a function of the prompt messages; used when the queue is empty or absent.
        model_name: the name reported in metadata and used as the model id (``fake:NAME``).
        report_usage: report token usage (about 4 characters per token); off means unknown.
        latency: seconds each call takes (async calls sleep without blocking the loop).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: list[Any] = Field(default_factory=list)
    responder: Callable[[list[BaseMessage]], Any] | None = None
    model_name: str = "scripted"
    report_usage: bool = True
    latency: float = 0.0
    log_path: str | None = None

    _queue: list[Any] = PrivateAttr(default_factory=list)
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools: list[list[str]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: Any, /) -> None:
        """Copy the replies into the queue the calls consume."""
        self._queue = list(self.replies)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedChatModel:
        """Load a script file (see the module docstring).

        Raises:
            ConfigurationError: the file is missing or not a valid script.
        """
        data = read_user_json(
            path, "fake model script", max_bytes=_MAX_SCRIPT_BYTES, error=ConfigurationError
        )
        name = f"fake:{path}"
        if isinstance(data, list):
            return cls(replies=data, model_name=name)
        if isinstance(data, dict) and isinstance(data.get("routes"), list):
            extra: dict[str, Any] = {"latency": float(data.get("latency") or 0.0)}
            if data.get("log"):
                extra["log_path"] = str(data["log"])
            return cls.routed(data["routes"], default=data.get("default"), model_name=name, **extra)
        raise ConfigurationError(
            f"fake model script {str(path)!r} must be a JSON list of replies or an object with 'routes'"
        )

    @classmethod
    def routed(
        cls,
        routes: Sequence[dict[str, Any]],
        *,
        default: Any = None,
        model_name: str = "scripted",
        **options: Any,
    ) -> ScriptedChatModel:
        """Build a fake that picks the first route whose ``match`` occurs in the prompt.

        A route's ``reply`` may be a list: its items are used in turn, the last one repeating.
        ``options`` are further fields (``latency``, ``log_path``, ``report_usage``).
        """
        counters = [0] * len(routes)
        lock = threading.Lock()

        def respond(messages: list[BaseMessage]) -> Any:
            text = prompt_text(messages)
            for i, route in enumerate(routes):
                if str(route["match"]) in text:
                    reply = route["reply"]
                    if isinstance(reply, list):
                        with lock:
                            reply = reply[min(counters[i], len(reply) - 1)]
                            counters[i] += 1
                    return reply
            if default is None:
                raise ScriptExhausted(f"no route matches the prompt: {text[:300]!r}")
            return default

        return cls(responder=respond, model_name=model_name, **options)

    @property
    def _llm_type(self) -> str:
        return "fake"

    @property
    def model_id(self) -> str:
        """The id the seam records (``fake:NAME``)."""
        return self.model_name if self.model_name.startswith("fake:") else f"fake:{self.model_name}"

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """Every prompt received, in order (a copy)."""
        with self._lock:
            return list(self._prompts)

    @property
    def prompt_texts(self) -> list[str]:
        """Every prompt received, as text."""
        return [prompt_text(p) for p in self.prompts]

    @property
    def tool_names(self) -> list[list[str]]:
        """The names of the tools bound to each call, in order (empty lists for calls without)."""
        with self._lock:
            return [list(names) for names in self._tools]

    @property
    def calls(self) -> int:
        """How many calls were made."""
        with self._lock:
            return len(self._prompts)

    def _next(self, messages: list[BaseMessage], tools: Sequence[Any] = ()) -> AIMessage:
        with self._lock:
            self._prompts.append(list(messages))
            self._tools.append([str(t.get("function", {}).get("name", "")) for t in tools])
            reply = self._queue.pop(0) if self._queue else None
            count = len(self._prompts)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as log:
                    log.write(json.dumps({"prompt": prompt_text(messages)}) + "\n")
        if reply is None:
            if self.responder is None:
                raise ScriptExhausted(
                    f"{self.model_id} ran out of replies at call {count}; "
                    f"prompt was: {prompt_text(messages)[:300]!r}"
                )
            reply = self.responder(messages)
        return _to_message(reply, messages, self.report_usage, self.model_name)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # recorded when the call starts, as a server would log it
        message = self._next(messages, kwargs.get("tools") or ())
        if self.latency:
            time.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._next(messages, kwargs.get("tools") or ())
        if self.latency:
            await asyncio.sleep(self.latency)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def with_structured_output(
        self,
        schema: type[BaseModel] | dict[str, Any],
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, Any]:
        """Parse the scripted reply text as JSON into ``schema``."""
        return structured_runnable(self, schema, include_raw=include_raw)

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept tools (their schemas are checked and their names recorded in ``tool_names``).

        Replies script the tool calls.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, **kwargs)


@contextmanager
def forbid_real_models() -> Iterator[None]:
    """Make building a remote model (``openai:``, ``google:``) raise inside the block."""
    with allow_real_models(False):
        yield
