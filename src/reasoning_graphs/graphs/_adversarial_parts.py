"""Contracts, mechanical checks and the verdict rule of the adversarial graph.

Private to :mod:`reasoning_graphs.graphs.adversarial`, which re-exports the public names. Every
check here is code: a quotation counts only when it occurs verbatim in the artifact, the claim
limit and the assigned position are compared exactly, and the winner is decided by comparing the
two arbitration orders, never by asking a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reasoning_graphs.types import Frozen, StopReason

__all__ = [
    "SIDES",
    "AdversarialVerdict",
    "ArbiterReply",
    "Arbitration",
    "Case",
    "CaseReply",
    "Claim",
    "ClaimReply",
    "Side",
    "check_case",
    "decide",
    "merge_keyed",
    "quote_problem",
    "settle",
]

Side = Literal["pro", "con"]
"""The two advocates: ``pro`` argues the proposition holds, ``con`` that it does not."""

SIDES: tuple[Side, Side] = ("pro", "con")
"""Both sides, in the order of the first arbitration."""

# --- contracts kept in state -------------------------------------------------------------------


class Claim(Frozen):
    """One claim of a case, with the quotation that grounds it."""

    claim: str
    """The claim, in the advocate's words."""
    quote: str
    """The passage of the artifact it rests on (verbatim when the claim is valid)."""


class Case(Frozen):
    """One advocate's case (or rebuttal) after the checks in code."""

    side: Side
    """The position the advocate was assigned."""
    stage: Literal["case", "rebuttal"] = "case"
    """Opening case or rebuttal."""
    answered: bool = False
    """Whether a reply was parsed at all (False: the model failed or the budget refused)."""
    position: str = ""
    """The position the advocate reported (checked against ``side``)."""
    thesis: str = ""
    """The case in one or two sentences."""
    claims: list[Claim] = Field(default_factory=list)
    """Claims that passed every check: the only ones the arbiter sees."""
    rejected: list[Claim] = Field(default_factory=list)
    """Claims withheld from the arbiter (forged quotation, over the limit, wrong position)."""
    violations: list[str] = Field(default_factory=list)
    """Violations still present in the final reply, after every re-prompt."""
    confidence: float | None = None
    """The advocate's self-reported confidence; recorded here, never shown to the arbiter."""
    model: str = ""
    """The model that argued the case."""
    repairs: int = 0
    """Re-prompts used: schema repairs by the seam plus contract re-prompts, one shared bound."""
    error: str | None = None
    """A model failure for good, if one happened."""
    budget_exhausted: bool = False
    """The budget refused a call (the first, or a re-prompt)."""


class Arbitration(Frozen):
    """One arbitration order: which slot the arbiter chose and what that maps to."""

    order: int
    """1 shows the pro case as ``Case 1``; 2 shows the con case as ``Case 1``."""
    slots: dict[str, Side]
    """Slot label to side, known to code only (the arbiter sees slot labels alone)."""
    choice: Literal["Case 1", "Case 2", "tie", "unparsed"] = "unparsed"
    """The slot the arbiter chose, ``tie``, or ``unparsed`` when it gave no valid reply."""
    side: Literal["pro", "con", "tie", "unparsed"] = "unparsed"
    """The choice mapped back to a side."""
    reason: str = ""
    """The arbiter's reason."""
    model: str = ""
    """The arbiter's model."""
    error: str | None = None
    """Why the call failed, if it did."""
    budget_exhausted: bool = False
    """The budget refused the call."""


class AdversarialVerdict(Frozen):
    """The outcome of the review."""

    winner: Literal["pro", "con", "inconclusive"]
    """A side only when both arbitration orders chose it."""
    reasons: list[str] = Field(default_factory=list)
    """Why, one line per order (or why no arbitration took place)."""
    orders: list[str] = Field(default_factory=list)
    """The side chosen in each order (``pro``, ``con``, ``tie`` or ``unparsed``)."""
    parse_failures: int = 0
    """Arbitration calls that produced no valid reply (never turned into a silent tie)."""


# --- reply schemas (what the models fill in) ----------------------------------------------------


class ClaimReply(BaseModel):
    """One claim and its supporting quotation."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    claim: str
    """The claim, in one or two sentences."""
    quote: str
    """A passage copied character for character from the artifact."""


class CaseReply(BaseModel):
    """An advocate's case or rebuttal."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    position: str
    """The position you were assigned, exactly as given (pro or con)."""
    thesis: str
    """Your case in one or two sentences."""
    claims: list[ClaimReply] = Field(default_factory=list)
    """Your claims, strongest first, each grounded in a quotation."""
    confidence: float | None = None
    """Your confidence in your side, from 0 to 1."""


class ArbiterReply(BaseModel):
    """The arbiter's choice between two neutral slots."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    winner: Literal["Case 1", "Case 2", "tie"]
    """The better supported case, or tie."""
    reason: str = ""
    """One or two sentences on why."""


# --- checks ---------------------------------------------------------------------------------------


def quote_problem(quote: str, evidence: str, min_chars: int, where: str) -> str | None:
    """Return why ``quote`` does not ground a claim in ``evidence``, or None when it does."""
    text = quote.strip()
    if not text:
        return "the quotation is empty"
    if len(text) < min_chars:
        return f"the quotation {text!r} is shorter than {min_chars} characters"
    if text not in evidence:
        shown = text if len(text) <= 120 else text[:117] + "..."
        return f"the quotation {shown!r} does not occur verbatim in the {where}; copy an exact passage"
    return None


def check_case(
    reply: CaseReply, *, side: Side, artifact: str, max_claims: int, min_quote_chars: int
) -> tuple[list[Claim], list[Claim], list[str]]:
    """Check a case in code; return (valid claims, rejected claims, every violation)."""
    violations: list[str] = []
    wrong_side = reply.position.strip().lower() != side
    if wrong_side:
        violations.append(f"position: you reported {reply.position!r}; your assigned position is {side!r}")
    if not reply.claims:
        violations.append("claims: give at least one claim grounded in a quotation")
    if len(reply.claims) > max_claims:
        violations.append(
            f"claims: {len(reply.claims)} given, at most {max_claims} allowed; "
            f"keep your strongest {max_claims}"
        )
    valid: list[Claim] = []
    rejected: list[Claim] = []
    for number, item in enumerate(reply.claims, 1):
        claim = Claim(claim=item.claim.strip(), quote=item.quote.strip())
        problem = quote_problem(item.quote, artifact, min_quote_chars, "artifact")
        if number > max_claims:
            rejected.append(claim)
        elif problem is not None:
            violations.append(f"claim {number}: {problem}")
            rejected.append(claim)
        elif not claim.claim:
            violations.append(f"claim {number}: the claim text is empty")
            rejected.append(claim)
        else:
            valid.append(claim)
    if wrong_side:
        return [], valid + rejected, violations
    return valid, rejected, violations


def merge_keyed(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge results keyed by side from parallel branches (a LangGraph reducer)."""
    return {**(left or {}), **(right or {})}


# --- verdict ----------------------------------------------------------------------------------------


def decide(arbitration: Sequence[Arbitration]) -> tuple[AdversarialVerdict, StopReason, str | None]:
    """Decide from both orders: a side wins only when both chose it; else ``inconclusive``."""
    ordered = sorted(arbitration, key=lambda a: a.order)
    picks = [a.side for a in ordered]
    failures = picks.count("unparsed")
    reasons = [
        f"order {a.order} (Case 1 = {a.slots.get('Case 1', '?')}): "
        + (
            f"chose {a.choice} ({a.side}): {a.reason}"
            if a.side != "unparsed"
            else f"no valid reply: {a.error}"
        )
        for a in ordered
    ]
    if failures:
        budget = any(a.budget_exhausted for a in ordered)
        error = next((a.error for a in ordered if a.error), None)
        return (
            AdversarialVerdict(winner="inconclusive", reasons=reasons, orders=picks, parse_failures=failures),
            "budget" if budget else "error",
            error,
        )
    if picks[0] == picks[1] and picks[0] in SIDES:
        winner: Literal["pro", "con"] = "pro" if picks[0] == "pro" else "con"
        return AdversarialVerdict(winner=winner, reasons=reasons, orders=picks), "completed", None
    why = "both orders judged a tie" if picks == ["tie", "tie"] else "the two orders disagree"
    return (
        AdversarialVerdict(winner="inconclusive", reasons=[why, *reasons], orders=picks),
        "inconclusive",
        None,
    )


def _stopped(
    reason: StopReason, why: str, error: str | None = None
) -> tuple[AdversarialVerdict, StopReason, str | None]:
    return AdversarialVerdict(winner="inconclusive", reasons=[why]), reason, error


def settle(
    *,
    artifact: str | None,
    producer_error: str | None,
    cases: Mapping[str, Case],
    rebuttals: Mapping[str, Case] | None,
    arbitration: Sequence[Arbitration],
) -> tuple[AdversarialVerdict, StopReason, str | None]:
    """Return the verdict, stop reason and error of a run from what it produced.

    Args:
        artifact: the artifact, or None when none was produced.
        producer_error: why producing the artifact failed, if it did.
        cases: opening cases by side.
        rebuttals: rebuttals by side, or None when the graph has no rebuttal round.
        arbitration: the arbitration records (both orders when arbitration ran).
    """
    if len(arbitration) == 2:
        return decide(arbitration)
    if not artifact:
        if producer_error:
            return _stopped("error", f"no artifact: {producer_error}", producer_error)
        return _stopped("budget", "the budget ran out before the artifact was produced")
    for stage in (cases, rebuttals or {}):
        for case in stage.values():
            if not case.answered:
                if case.error:
                    return _stopped("error", f"the {case.side} {case.stage} failed: {case.error}", case.error)
                return _stopped("budget", f"the budget ran out during the {case.side} {case.stage}")
    if len(cases) < 2:
        return _stopped("budget", "the budget could not fit both advocates")
    if not any(case.claims for case in cases.values()):
        return _stopped("inconclusive", "neither case has a claim grounded in a verbatim quotation")
    if rebuttals is not None and len(rebuttals) < 2:
        return _stopped("budget", "the budget could not fit both rebuttals")
    return _stopped("budget", "the budget could not fit both arbitration orders")
