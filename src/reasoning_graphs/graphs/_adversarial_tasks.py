"""Send payloads of the adversarial graph: each carries one role's projected reads (private)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from langgraph.types import Send
from typing_extensions import TypedDict

from reasoning_graphs.access import Output, ReadRecord
from reasoning_graphs.graphs._adversarial_parts import SIDES, Side
from reasoning_graphs.graphs._common import read_as
from reasoning_graphs.types import Usage

if TYPE_CHECKING:
    from reasoning_graphs.graphs.adversarial import AdversarialState

__all__ = ["SEATS", "ArbitrateTask", "ArgueTask", "arbitrate_sends", "argue_sends", "text_of"]

SEATS: dict[str, int] = {"producer": 0, "pro": 1, "con": 2, "arbiter": 3}
"""Roster index of each role (wrapping around); rebuttals use their advocate's seat."""


class ArgueTask(TypedDict):
    """The payload of one advocate (``Send``): its projected reads, never the whole state."""

    side: Side
    """The assigned position."""
    role: str
    """The reading role (``pro``, ``con_rebuttal`` ...)."""
    seen: dict[str, Output]
    """The outputs its access policy permits."""
    record: ReadRecord
    """The record of that read."""
    max_calls: int | None
    """Its share of the remaining calls."""


class ArbitrateTask(TypedDict):
    """The payload of one arbitration order: texts in slot order, no side or model names."""

    order: int
    """1 or 2."""
    sides: list[Side]
    """Side in each slot (code only; never rendered)."""
    task: str
    """The task text."""
    proposition: str
    """The proposition."""
    artifact: str
    """The artifact."""
    cases: list[str]
    """Rendered cases, in slot order."""
    rebuttals: list[str]
    """Rendered rebuttals, in slot order (empty strings when none)."""
    record: ReadRecord
    """The record of the arbiter's read."""
    max_calls: int | None
    """Its share of the remaining calls."""


def text_of(seen: dict[str, Output], label: str) -> str:
    """Return the text of output ``label``, or '' when the reader cannot see it."""
    out = seen.get(label)
    return out.text if out is not None else ""


def argue_sends(state: AdversarialState, stage: Literal["case", "rebuttal"]) -> list[Send]:
    """Return one ``Send`` per side, each carrying only what that side's policy lets it read."""
    allowance = state["budget"].allowance(state.get("usage") or Usage(), len(SIDES))
    sends = []
    for side in SIDES:
        role = side if stage == "case" else f"{side}_rebuttal"
        seen, record = read_as(state, role)
        payload = ArgueTask(side=side, role=role, seen=seen, record=record, max_calls=allowance)
        sends.append(Send("advocate" if stage == "case" else "rebut", payload))
    return sends


def arbitrate_sends(state: AdversarialState) -> list[Send]:
    """Return one ``Send`` per arbitration order, the cases in swapped slots."""
    seen, record = read_as(state, "arbiter")
    allowance = state["budget"].allowance(state.get("usage") or Usage(), 2)
    orders: list[tuple[int, list[Side]]] = [(1, ["pro", "con"]), (2, ["con", "pro"])]
    return [
        Send(
            "arbitrate",
            ArbitrateTask(
                order=order,
                sides=sides,
                task=text_of(seen, "task"),
                proposition=text_of(seen, "proposition"),
                artifact=text_of(seen, "artifact"),
                cases=[text_of(seen, f"case:{s}") for s in sides],
                rebuttals=[text_of(seen, f"rebuttal:{s}") for s in sides],
                record=record,
                max_calls=allowance,
            ),
        )
        for order, sides in orders
    ]
