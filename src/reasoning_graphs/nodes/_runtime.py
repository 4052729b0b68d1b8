"""Run one node body on both LangGraph paths.

A node body is written once as ``async def body(state, io)``. On ``ainvoke``/``astream`` it runs
with :data:`ASYNC_IO` (real awaits: model calls and verifiers never block the event loop). On
``invoke``/``stream`` it runs with :data:`SYNC_IO`, whose awaitables finish without suspending,
so the coroutine is driven to completion in one step with no event loop at all (safe in
notebooks, in LangGraph's worker threads, and for clients bound to one loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.runtime import get_runtime
from pydantic import BaseModel

from reasoning_graphs.models import ModelClient, ModelReply
from reasoning_graphs.types import Verdict
from reasoning_graphs.verifiers import Verifier, arun_verifier, run_verifier

__all__ = ["ASYNC_IO", "SYNC_IO", "NodeIO", "context_value", "drive", "dual_node"]

T = TypeVar("T")
S = TypeVar("S")
M = TypeVar("M", bound=BaseModel)


class NodeIO:
    """The awaitable operations a node body may use (async flavour)."""

    is_async = True

    async def ask(
        self,
        client: ModelClient,
        prompt: str | Sequence[BaseMessage],
        *,
        schema: type[M] | None = None,
        system: str | None = None,
        max_calls: int | None = None,
        tools: Sequence[BaseTool] | None = None,
        tool_choice: str | None = None,
    ) -> ModelReply[Any]:
        """Call a model through the seam (with ``tools`` bound for this turn, if given)."""
        return await client.acall(
            prompt, schema=schema, system=system, max_calls=max_calls, tools=tools, tool_choice=tool_choice
        )

    async def verify(self, verifier: Verifier, candidate: str, task: str = "") -> Verdict:
        """Run a verifier (sync verifiers go to a worker thread)."""
        return await arun_verifier(verifier, candidate, task)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking function off the event loop."""
        return await asyncio.to_thread(fn, *args)

    async def invoke_tool(self, tool: BaseTool, call: ToolCall) -> BaseMessage:
        """Run one tool call: async tools are awaited, sync tools run off the event loop.

        Returns the tool's ``ToolMessage``; whatever the tool raises propagates.
        """
        if _is_async_only(tool):
            return _as_message(await tool.ainvoke(call), call)
        return _as_message(await self.run(tool.invoke, call), call)

    async def gather(self, *aws: Awaitable[T]) -> list[T]:
        """Await several operations concurrently."""
        return list(await asyncio.gather(*aws))


class _SyncIO(NodeIO):
    is_async = False

    async def ask(
        self,
        client: ModelClient,
        prompt: str | Sequence[BaseMessage],
        *,
        schema: type[M] | None = None,
        system: str | None = None,
        max_calls: int | None = None,
        tools: Sequence[BaseTool] | None = None,
        tool_choice: str | None = None,
    ) -> ModelReply[Any]:
        return client.call(
            prompt, schema=schema, system=system, max_calls=max_calls, tools=tools, tool_choice=tool_choice
        )

    async def verify(self, verifier: Verifier, candidate: str, task: str = "") -> Verdict:
        return run_verifier(verifier, candidate, task)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return fn(*args)

    async def invoke_tool(self, tool: BaseTool, call: ToolCall) -> BaseMessage:
        if _is_async_only(tool):
            # No loop may run on this path: give the coroutine a private loop in a worker thread.
            with ThreadPoolExecutor(max_workers=1) as pool:
                return _as_message(pool.submit(asyncio.run, tool.ainvoke(call)).result(), call)
        return _as_message(tool.invoke(call), call)

    async def gather(self, *aws: Awaitable[T]) -> list[T]:
        results: list[T] = []
        try:
            for aw in aws:
                results.append(await aw)
        finally:
            # If one raised, close the rest so no coroutine is left never-awaited.
            for aw in aws[len(results) + 1 :]:
                if isinstance(aw, Coroutine):
                    aw.close()
        return results


def _is_async_only(tool: BaseTool) -> bool:
    """Return whether a tool can only run as a coroutine (``@tool`` on an ``async def``)."""
    if isinstance(tool, StructuredTool):
        return tool.func is None and tool.coroutine is not None
    return type(tool)._run is BaseTool._run and type(tool)._arun is not BaseTool._arun


def _as_message(result: Any, call: ToolCall) -> BaseMessage:
    if isinstance(result, BaseMessage):
        return result
    content = result if isinstance(result, str) else str(result)
    return ToolMessage(content=content, name=call["name"], tool_call_id=call.get("id") or "")


ASYNC_IO: NodeIO = NodeIO()
"""Operations for the async path."""
SYNC_IO: NodeIO = _SyncIO()
"""Operations for the sync path (they complete without suspending)."""


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends to completion, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a node body suspended on the synchronous path; use the io helpers only")


def dual_node(body: Callable[[S, NodeIO], Coroutine[Any, Any, T]], *, name: str) -> RunnableLambda[S, T]:
    """Wrap a node body so the node runs under both ``invoke`` and ``ainvoke``."""

    def sync(state: S) -> T:
        return drive(body(state, SYNC_IO))

    async def async_(state: S) -> T:
        return await body(state, ASYNC_IO)

    return RunnableLambda(sync, afunc=async_, name=name)


def context_value(key: str) -> Any:
    """Return ``key`` from the run's context (``invoke(..., context={...})``), or None.

    Studio passes per-run choices (model, roster, limits) this way. Outside a run, or when the
    caller gave no context, the answer is None.
    """
    try:
        context = get_runtime().context
    except RuntimeError:
        return None
    if context is None:
        return None
    if isinstance(context, dict):
        return context.get(key)
    return getattr(context, key, None)
