"""Debate records, access lists and the mechanical checks (answers, agreement, votes).

Agreement and votes are decided in code. An agent's *answer* is the rest of the line after its
last ``ANSWER:`` (any case, ``Final answer:`` too), else its whole reply; answers are compared
after normalization (lower case, markdown emphasis and quotes removed, whitespace collapsed,
trailing punctuation dropped).
Short answers (every one at most ``short_answer_chars`` long) agree only when equal; longer ones
agree when every pair reaches the ``difflib.SequenceMatcher`` ratio ``threshold``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from itertools import combinations
from typing import Any, Literal

from pydantic import Field

from reasoning_graphs.access import AccessPolicy, check_independent
from reasoning_graphs.graphs._debate_config import AgentSpec, DebateConfig
from reasoning_graphs.types import Frozen, StopReason, Usage

__all__ = [
    "Clarification",
    "Contribution",
    "DebateRecord",
    "Questions",
    "Solution",
    "StepFailure",
    "SummaryRecord",
    "access_lists",
    "agree",
    "answer_of",
    "check_round_one",
    "fence",
    "latest_answers",
    "latest_positions",
    "normalize",
    "tally",
]


class Contribution(Frozen):
    """One agent's reply in one round."""

    round: int
    """The round (1-based)."""
    kind: Literal["proposal", "critique", "refinement"]
    """Round 1 has proposals; each later round a critique then a refinement per agent."""
    agent_id: str
    """The agent's id."""
    role: str
    """The agent's role."""
    model: str
    """The model id that wrote it."""
    text: str
    """The reply, verbatim."""

    @property
    def label(self) -> str:
        """The output label it is stored under (``position:<round>:<id>`` or ``critique:...``)."""
        kind = "critique" if self.kind == "critique" else "position"
        return f"{kind}:{self.round}:{self.agent_id}"


class SummaryRecord(Frozen):
    """A summary of the transcript through one round (label ``summary:<round>``)."""

    through_round: int
    """The last round it covers."""
    text: str
    """The summary (at most ``max_length`` characters)."""
    model: str
    """The model id that wrote it."""
    before_chars: int
    """Transcript characters when it was written."""
    truncated: bool = False
    """True when the reply was longer than ``max_length`` and was cut in code."""


class Clarification(Frozen):
    """One clarifying question and its answer."""

    agent_id: str
    """Who asked."""
    question_id: str
    """``<agent id>:<n>`` (1-based); the key an input answer may use."""
    question: str
    """The question."""
    answer: str
    """The answer from the input, or ``NA`` when it had none."""


class Questions(Frozen):
    """Clarifying questions an agent asks before proposing."""

    questions: list[str] = Field(default_factory=list)
    """Questions whose answers would change the solution; empty when none are needed."""


class Solution(Frozen):
    """The debate's outcome."""

    text: str
    """The final solution (the judge's synthesis, or the winning answer of a vote)."""
    answer: str
    """The short answer: the text after its last ``ANSWER:`` line, else the whole text."""
    method: Literal["judge", "vote", "fallback"]
    """``judge`` synthesized, ``vote`` had a majority, ``fallback``: the run ended early and the
    most common latest answer was taken (ties: the first agent's)."""
    model: str = ""
    """The judge's model id (empty for votes)."""
    votes: dict[str, int] = Field(default_factory=dict)
    """Normalized latest answers and how many agents hold each."""


class StepFailure(Frozen):
    """A model step that failed for good, or that the budget refused."""

    round: int
    """The round it belonged to (0: clarification; rounds + 1: judging)."""
    step: str
    """The role that failed (``proposer:<id>``, ``judge`` ...)."""
    kind: Literal["error", "budget"]
    """A model failure, or budget exhaustion inside the step."""
    message: str
    """What happened."""


class DebateRecord(Frozen):
    """A complete, reloadable record of a debate run (JSON round-trips through pydantic)."""

    task: str
    """The problem."""
    config: DebateConfig
    """The configuration the run used."""
    clarifications: list[Clarification] = Field(default_factory=list)
    """Questions asked and their answers."""
    transcript: list[Contribution] = Field(default_factory=list)
    """Every contribution, by round, kind and agent order."""
    summaries: list[SummaryRecord] = Field(default_factory=list)
    """Transcript summaries written during the run."""
    solution: Solution | None = None
    """The outcome."""
    stop_reason: StopReason | None = None
    """Why the run ended."""
    rounds_completed: int = 0
    """Rounds that finished."""
    failures: list[StepFailure] = Field(default_factory=list)
    """Steps that failed or ran out of budget."""
    usage: Usage = Usage()
    """Calls and tokens."""

    @classmethod
    def from_state(cls, values: Mapping[str, Any]) -> DebateRecord:
        """Build the record from a debate state (``graph.get_state(config).values``)."""
        order = {a.id: i for i, a in enumerate(values["config"].agents)}
        kinds = {"proposal": 0, "critique": 1, "refinement": 2}
        transcript = sorted(
            values.get("transcript") or [], key=lambda c: (c.round, kinds[c.kind], order.get(c.agent_id, 0))
        )
        return cls(
            task=values["task"],
            config=values["config"],
            clarifications=values.get("clarifications") or [],
            transcript=transcript,
            summaries=values.get("summaries") or [],
            solution=values.get("solution"),
            stop_reason=values.get("stop_reason"),
            failures=values.get("failures") or [],
            rounds_completed=values.get("rounds_completed") or 0,
            usage=values.get("usage") or Usage(),
        )


_ANSWER = re.compile(r"\banswer[ \t*_]*:[ \t*_]*(\S.*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)


def answer_of(text: str) -> str:
    """Return the rest of the line after the last ``ANSWER:``, else the whole text, stripped."""
    found = _ANSWER.findall(text)
    return str(found[-1]).strip() if found else text.strip()


def normalize(text: str) -> str:
    """Normalize an answer for comparison (see the module docstring)."""
    out = re.sub("[*_`\"'\u201c\u201d\u2018\u2019]", "", text.strip().lower())
    return " ".join(out.split()).rstrip(".!;:, ")


def agree(answers: Sequence[str], *, short_chars: int, threshold: float) -> bool:
    """Return whether every answer agrees with every other (see the module docstring)."""
    norm = [normalize(a) for a in answers]
    if len(norm) < 2 or not all(norm):
        return False
    if all(len(n) <= short_chars for n in norm):
        return len(set(norm)) == 1
    return all(SequenceMatcher(None, a, b).ratio() >= threshold for a, b in combinations(norm, 2))


def tally(answers: Sequence[str]) -> tuple[dict[str, int], int | None, int | None]:
    """Count normalized answers.

    Returns:
        The counts; the index of the first answer holding the most votes when no other answer
        ties it (None on a tie or without answers); the index of the first answer among the
        most common ones, ties included (None without answers).
    """
    norm = [normalize(a) for a in answers]
    counts: dict[str, int] = {}
    for n in norm:
        counts[n] = counts.get(n, 0) + 1
    if not counts:
        return counts, None, None
    top = max(counts.values())
    leaders = [n for n, c in counts.items() if c == top]
    first = min(norm.index(n) for n in leaders)
    return counts, (first if len(leaders) == 1 else None), first


def latest_positions(transcript: Sequence[Contribution], agents: Sequence[AgentSpec]) -> list[Contribution]:
    """Return each agent's latest proposal or refinement, in agent order (agents without one skipped)."""
    best: dict[str, Contribution] = {}
    for c in transcript:
        if c.kind != "critique" and (c.agent_id not in best or c.round > best[c.agent_id].round):
            best[c.agent_id] = c
    return [best[a.id] for a in agents if a.id in best]


def latest_answers(transcript: Sequence[Contribution], agents: Sequence[AgentSpec]) -> list[str]:
    """Return the answers (see :func:`answer_of`) of :func:`latest_positions`."""
    return [answer_of(c.text) for c in latest_positions(transcript, agents)]


def fence(header: str, text: str) -> str:
    """Wrap an agent's text as quoted data; its own ``<<<`` cannot close the fence."""
    return f"<<< {header} >>>\n{text.replace('<<<', '< < <').strip()}\n<<< end of {header} >>>"


def access_lists(agent_ids: Sequence[str]) -> dict[str, AccessPolicy]:
    """Return the default access policy of every debate role (see ``graphs.debate``)."""
    history = ("position:*", "critique:*", "summary:*")
    policies: dict[str, AccessPolicy] = {}
    for x in agent_ids:
        policies[f"asker:{x}"] = AccessPolicy(sees=("task",))
        policies[f"clarifier:{x}"] = AccessPolicy(sees=(f"questions:{x}",))
        policies[f"proposer:{x}"] = AccessPolicy(sees=("task", f"clarify:{x}"))
        policies[f"critic:{x}"] = AccessPolicy(sees=("task", f"clarify:{x}", *history))
        policies[f"refiner:{x}"] = AccessPolicy(sees=("task", f"clarify:{x}", *history))
    policies["summarizer"] = AccessPolicy(sees=("task", *history), blind=True)
    policies["judge"] = AccessPolicy(sees=("task", "clarify:*", *history), blind=True)
    return policies


def check_round_one(agent_ids: Sequence[str], policies: Mapping[str, AccessPolicy], rounds: int) -> None:
    """Prove that no agent's first round (questions and proposal) can read another agent's.

    Each agent's round-1 reader combines its ``asker`` and ``proposer`` policies; every other
    role is followed as an intermediary with the labels it writes in any round.

    Raises:
        ValueError: an agent can read another's round-1 label, directly or indirectly.
    """
    readers: dict[str, AccessPolicy] = {
        role: p for role, p in policies.items() if not role.startswith(("asker:", "proposer:"))
    }
    produces: dict[str, list[str]] = {
        "user": ["task"],
        "summarizer": [f"summary:{r}" for r in range(1, rounds + 1)],
        "judge": ["judge"],
    }
    for x in agent_ids:
        sees = policies[f"asker:{x}"].sees + policies[f"proposer:{x}"].sees
        readers[f"agent:{x}"] = AccessPolicy(sees=sees)
        produces[f"agent:{x}"] = [f"questions:{x}", f"position:1:{x}"]
        produces[f"clarifier:{x}"] = [f"clarify:{x}"]
        produces[f"critic:{x}"] = [f"critique:{r}:{x}" for r in range(2, rounds + 1)]
        produces[f"refiner:{x}"] = [f"position:{r}:{x}" for r in range(2, rounds + 1)]
    check_independent([f"agent:{x}" for x in agent_ids], readers, produces)
