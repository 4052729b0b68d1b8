"""Generation: one prompt through the seam into a value, a ledger entry and a model id.

:func:`generate` never raises for a model failure: it returns a :class:`Generated` whose
``error`` (or ``budget_exhausted``) says what happened and whose ``usage`` still counts every
call made, so a graph can route to an explicit stop with its partial result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from reasoning_graphs.errors import BudgetExceeded, ModelError
from reasoning_graphs.models import ModelClient, ModelRef, resolve
from reasoning_graphs.nodes._runtime import NodeIO, context_value
from reasoning_graphs.types import Usage, UsageCounts

__all__ = ["Generated", "generate", "model_id_of", "pick_model", "roster_from_context"]

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Generated(Generic[T]):
    """The outcome of one generation step."""

    value: T | str | None
    """The parsed value (or text); None when the call failed."""
    text: str
    """The reply text ('' on failure)."""
    model: str
    """The model id asked."""
    usage: Usage
    """The ledger entry for this step (add it to state)."""
    error: str | None = None
    """Why the call failed for good, if it did."""
    budget_exhausted: bool = False
    """True when the budget refused a call inside this step."""

    @property
    def ok(self) -> bool:
        """Whether a value was produced."""
        return self.error is None and not self.budget_exhausted


async def generate(
    io: NodeIO,
    client: ModelClient,
    prompt: str | Sequence[BaseMessage],
    *,
    node: str,
    schema: type[T] | None = None,
    system: str | None = None,
    max_calls: int | None = None,
) -> Generated[Any]:
    """Ask ``client`` once (with retries and schema repair) and account for it under ``node``."""
    try:
        reply = await io.ask(client, prompt, schema=schema, system=system, max_calls=max_calls)
    except BudgetExceeded as exc:
        spent = exc.usage or UsageCounts()
        return Generated(
            None,
            "",
            client.model_id,
            Usage.of(spent, model=client.model_id, node=node),
            error=str(exc),
            budget_exhausted=True,
        )
    except ModelError as exc:
        spent = exc.usage or UsageCounts(calls=1, failed_calls=1, unknown_usage_calls=1)
        return Generated(
            None, "", client.model_id, Usage.of(spent, model=client.model_id, node=node), error=str(exc)
        )
    return Generated(
        reply.value, reply.text, reply.model, Usage.of(reply.usage, model=reply.model, node=node)
    )


def roster_from_context(default: Sequence[ModelRef]) -> list[ModelRef]:
    """Return the run's roster: the context's ``roster`` or ``model`` if given, else ``default``."""
    roster = context_value("roster")
    if roster:
        return list(roster)
    model = context_value("model")
    if model:
        return [model]
    return list(default)


def pick_model(roster: Sequence[ModelRef], index: int) -> ModelClient:
    """Return the seam client for roster member ``index`` (wrapping around)."""
    if not roster:
        raise ValueError("a roster needs at least one model")
    return resolve(roster[index % len(roster)])


def model_id_of(ref: ModelRef) -> str:
    """Return the id a model reference is recorded under, without building remote clients."""
    if isinstance(ref, str):
        return ref
    return resolve(ref).model_id
