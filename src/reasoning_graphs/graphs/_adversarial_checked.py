"""Checked generation: a reply checked in code and re-prompted with every violation (private)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from reasoning_graphs.graphs._adversarial_prompts import REPROMPT
from reasoning_graphs.models import ModelClient
from reasoning_graphs.nodes import NodeIO, generate
from reasoning_graphs.types import Usage, UsageCounts

__all__ = ["Checked", "generate_checked"]


@dataclass(frozen=True)
class Checked:
    """The outcome of a generation whose reply is checked in code and re-prompted."""

    value: Any
    """The last parsed reply, or None when none was parsed."""
    model: str
    """The model asked."""
    usage: Usage
    """Every call, schema repair and contract re-prompt."""
    violations: list[str]
    """Violations still present in ``value``."""
    repairs: int
    """Re-prompts used (schema and contract together)."""
    error: str | None = None
    """A model failure for good."""
    budget_exhausted: bool = False
    """The budget refused a call."""


def _limited(client: ModelClient, repairs_left: int) -> ModelClient:
    if client.max_schema_repairs <= repairs_left:
        return client
    return ModelClient(
        client.model, model_id=client.model_id, retry=client.retry, max_schema_repairs=max(0, repairs_left)
    )


async def generate_checked(
    io: NodeIO,
    client: ModelClient,
    prompt: str,
    *,
    node: str,
    schema: type[BaseModel],
    check: Callable[[Any], list[str]],
    max_repairs: int,
    max_calls: int | None,
    system: str | None = None,
) -> Checked:
    """Generate, check in code, and re-prompt with every violation until clean or out of repairs.

    Schema repairs (made by the seam) and contract re-prompts (made here) share ``max_repairs``;
    each contract re-prompt is counted in the ledger as a schema repair.
    """
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    usage, repairs = Usage(), 0
    last = Checked(None, client.model_id, usage, [], 0)
    while True:
        left = None if max_calls is None else max_calls - usage.total.calls
        out = await generate(
            io,
            _limited(client, max_repairs - repairs),
            messages,
            node=node,
            schema=schema,
            system=system,
            max_calls=left,
        )
        usage = usage + out.usage
        repairs += out.usage.total.schema_repairs
        if not out.ok:
            return replace(
                last,
                usage=usage,
                repairs=repairs,
                budget_exhausted=out.budget_exhausted,
                error=None if out.budget_exhausted else out.error,
            )
        violations = check(out.value)
        calls_left = left is None or left - out.usage.total.calls > 0
        last = Checked(
            out.value,
            out.model,
            usage,
            violations,
            repairs,
            budget_exhausted=bool(violations) and not calls_left and repairs < max_repairs,
        )
        if not violations or repairs >= max_repairs or not calls_left:
            return last
        repairs += 1
        usage = usage + Usage.of(UsageCounts(schema_repairs=1), model=out.model, node=node)
        errors = "\n".join(f"- {v}" for v in violations)
        messages = [
            *messages,
            AIMessage(out.text or "(empty reply)"),
            HumanMessage(REPROMPT.render(errors=errors)),
        ]
