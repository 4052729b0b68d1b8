"""Access lists: which prior outputs a role may read.

Graphs keep every stage's output in state under a *label* (``task``, ``draft:0``,
``thesis:2`` ...). A role declares the labels it ``sees`` (``fnmatch`` patterns allowed:
``draft:*``) and receives only those outputs that exist; unknown or not-yet-produced labels are
skipped, not errors. Each read is recorded, so a checkpoint shows who saw what, and the same
policies filter reads of a stored thread (:func:`project_outputs` with ``blind=True`` hides
models and producers, as a judge's view must).

:func:`check_independent` proves at build time that a set of roles cannot read each other's
outputs, directly or through an intermediate role.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from pydantic import Field, JsonValue

from reasoning_graphs.types import Frozen

__all__ = [
    "AccessPolicy",
    "Output",
    "ReadRecord",
    "check_independent",
    "matches",
    "merge_outputs",
    "project_outputs",
    "readable_labels",
]


class Output(Frozen):
    """One stage's output, stored in state under its label."""

    label: str
    """Where the output lives (``draft:0``); access lists name labels."""
    text: str
    """The output as prose, what a reader's prompt shows."""
    role: str = ""
    """The role that produced it (hidden from blind readers)."""
    model: str = ""
    """The model id that produced it (hidden from blind readers)."""
    data: JsonValue = None
    """The structured value, when the stage had a schema."""

    def blinded(self) -> Output:
        """Return a copy without the producing role and model."""
        return self.model_copy(update={"role": "", "model": ""})


class AccessPolicy(Frozen):
    """What one role may read."""

    sees: tuple[str, ...] = ()
    """Label patterns the role may read (``fnmatch`` syntax)."""
    blind: bool = False
    """Hide producers and models of what it reads (judges, arbiters)."""


class ReadRecord(Frozen):
    """What one node read, appended to state when it ran."""

    node: str
    """The node (role) that read."""
    labels: list[str] = Field(default_factory=list)
    """The labels it received, sorted."""


def matches(label: str, patterns: Iterable[str]) -> bool:
    """Return whether ``label`` matches any of the access patterns."""
    return any(fnmatchcase(label, p) for p in patterns)


def project_outputs(outputs: Mapping[str, Output], policy: AccessPolicy) -> dict[str, Output]:
    """Return only the outputs ``policy`` permits, blinded if it says so.

    Labels the policy names that do not exist yet are skipped.
    """
    chosen = {label: out for label, out in outputs.items() if matches(label, policy.sees)}
    if policy.blind:
        chosen = {label: out.blinded() for label, out in chosen.items()}
    return dict(sorted(chosen.items()))


def merge_outputs(left: Mapping[str, Output] | None, right: Mapping[str, Output] | None) -> dict[str, Output]:
    """Reduce output maps (a LangGraph reducer): later writes to a label replace earlier ones."""
    return {**(left or {}), **(right or {})}


def readable_labels(
    role: str,
    policies: Mapping[str, AccessPolicy | Sequence[str]],
    produces: Mapping[str, Sequence[str]],
) -> set[str]:
    """Return every label ``role`` can learn from, directly or through what it reads.

    Args:
        role: the reader.
        policies: role to its policy (or its list of patterns).
        produces: role to the concrete labels it writes.
    """

    def sees(r: str) -> tuple[str, ...]:
        p = policies.get(r, ())
        return p.sees if isinstance(p, AccessPolicy) else tuple(p)

    label_owner = {label: r for r, labels in produces.items() for label in labels}
    reached: set[str] = set()
    frontier = [role]
    visited: set[str] = set()
    while frontier:
        current = frontier.pop()
        if current in visited:
            continue
        visited.add(current)
        for label, owner in label_owner.items():
            if label not in reached and matches(label, sees(current)):
                reached.add(label)
                frontier.append(owner)
    return reached


def check_independent(
    roles: Iterable[str],
    policies: Mapping[str, AccessPolicy | Sequence[str]],
    produces: Mapping[str, Sequence[str]],
) -> None:
    """Prove that no role in ``roles`` can read another's output, even indirectly.

    Raises:
        ValueError: naming the first role that can read another's label, and the label.
    """
    group = list(roles)
    for role in group:
        readable = readable_labels(role, policies, produces)
        for other in group:
            if other == role:
                continue
            leaked = sorted(readable & set(produces.get(other, ())))
            if leaked:
                raise ValueError(
                    f"roles are not independent: {role!r} can read {leaked[0]!r} written by "
                    f"{other!r}; remove it from {role!r}'s access list"
                )
