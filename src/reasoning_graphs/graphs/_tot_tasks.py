"""Tree-of-thoughts tasks: the protocol a task implements, the tree's node, and ``gsm8k``.

A task turns the user's task text into a root thought, writes the propose and value prompts for
a thought, parses a proposer's reply into steps in code (malformed lines are dropped and
counted), says when a thought is terminal, extracts the answer a verifier checks, and names the
default verifier spec. Tasks are chosen by name (``game24``, ``gsm8k``) so that state holds only
plain data.

- ``game24`` (in :mod:`reasoning_graphs.graphs._tot_game24`): the step format of Yao et al.
  2023, ``4 + 9 = 13 (left: 10 13 13)``.
- ``gsm8k``: free-text reasoning steps, one per line; a step that says "The answer is N" is
  terminal and its number is checked by the input's verifier (``numeric:18``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import Field, JsonValue

from reasoning_graphs.errors import InputError
from reasoning_graphs.prompting import PromptTemplate
from reasoning_graphs.types import Frozen, Verdict

__all__ = [
    "GSM8K_PROPOSE_PROMPT",
    "GSM8K_VALUE_PROMPT",
    "Gsm8kTask",
    "Parsed",
    "Step",
    "ThoughtNode",
    "ThoughtTask",
    "clean_line",
    "list_of",
]


class ThoughtNode(Frozen):
    """One node of the search tree (the root holds the task itself)."""

    id: str
    """Path-shaped id: the root is ``0``, its third child ``0.3``."""
    parent: str | None = None
    """The parent's id (None for the root)."""
    depth: int = Field(default=0, ge=0)
    """Steps from the root."""
    text: str
    """This node's step (the root: the task text)."""
    partial: str = ""
    """The partial solution: every step from the root to here, one per line."""
    data: dict[str, JsonValue] = Field(default_factory=dict)
    """Task-specific state in plain data (for ``game24``: the numbers left and their expressions)."""
    model: str = ""
    """The model that proposed the step."""
    score: float | None = None
    """The value: summed sample values for an open node, the verifier's score for a terminal one."""
    samples: list[str] = Field(default_factory=list)
    """The value label read from each value sample (``sure``, ``likely``, ``impossible``, ``?``)."""
    terminal: bool = False
    """Whether the node is a finished candidate (it is verified, never expanded)."""
    answer: str | None = None
    """The extracted answer of a terminal node."""
    verdict: Verdict | None = None
    """The verifier's verdict on ``answer`` (terminal nodes only)."""
    selected: bool = False
    """Whether the node was kept in the beam."""


@dataclass(frozen=True)
class Step:
    """One well-formed proposal, normalized."""

    text: str
    """The step as it is stored and shown to later prompts."""
    data: dict[str, JsonValue] = field(default_factory=dict)
    """The task-specific state after the step."""


@dataclass(frozen=True)
class Parsed:
    """A proposer's reply, read in code."""

    steps: list[Step]
    """Well-formed, distinct steps in reply order."""
    malformed: int = 0
    """Non-empty lines that were not a well-formed step (dropped)."""


class ThoughtTask(Protocol):
    """What a tree-of-thoughts task provides. Implementations hold no per-run state."""

    @property
    def name(self) -> str:
        """The name the input's ``kind`` selects."""
        ...

    @property
    def min_depth(self) -> int:
        """The fewest steps that can reach a terminal node."""
        ...

    def root(self, task: str) -> ThoughtNode:
        """Return the root node for the task text; raise InputError when the text is unusable."""
        ...

    def propose_prompt(self, task: str, node: ThoughtNode, breadth: int) -> str:
        """Return the prompt asking for up to ``breadth`` next steps from ``node``."""
        ...

    def parse(self, reply: str, node: ThoughtNode) -> Parsed:
        """Read a proposer's reply into well-formed steps from ``node``."""
        ...

    def value_prompt(self, task: str, node: ThoughtNode) -> str:
        """Return the prompt asking how promising ``node`` is (sure / likely / impossible)."""
        ...

    def is_terminal(self, step: Step) -> bool:
        """Return whether a step finishes a candidate."""
        ...

    def answer(self, step: Step) -> str:
        """Return the answer the verifier checks, for a terminal step."""
        ...

    def default_verifier(self, task: str) -> str | None:
        """Return the verifier spec implied by the task text, or None."""
        ...


_BULLET = re.compile(r"^\s*(?:[-*•>]+\s*|\d+[.)]\s+|step\s*\d+\s*[:.)-]\s*)", re.IGNORECASE)


def clean_line(line: str) -> str:
    """Strip markdown, bullets and step numbers from a reply line."""
    return _BULLET.sub("", line.replace("**", "").replace("`", "")).strip()


def list_of(data: dict[str, JsonValue], key: str) -> list[JsonValue]:
    """Return ``data[key]`` when it is a list, else an empty list."""
    value = data.get(key)
    return value if isinstance(value, list) else []


# --- GSM8K-style reasoning ---------------------------------------------------------------------

GSM8K_PROPOSE_PROMPT = PromptTemplate(
    "Solve the problem one step at a time.\n\nProblem:\n{task}\n\nSteps so far:\n{steps}\n\n"
    "Write up to {breadth} different possible next steps, one per line. Each step is one short "
    "sentence with its calculation. When a step reaches the final answer, write it as "
    '"The answer is N."\nPossible next steps:\n'
)
"""Ask for next reasoning steps; the parent's partial solution is part of the prompt."""

GSM8K_VALUE_PROMPT = PromptTemplate(
    "Problem:\n{task}\n\nPartial solution:\n{steps}\n\n"
    "Are these steps correct and on the way to the right answer? Answer on the last line with one "
    "word: sure, likely or impossible.\n"
)
"""Ask whether a partial solution is on track."""

_ANSWER = re.compile(r"answer\s+is\s*:?\s*\$?\s*(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)", re.IGNORECASE)
_MAX_STEP_CHARS = 400


@dataclass(frozen=True)
class Gsm8kTask:
    """Step-by-step arithmetic word problems; terminal when a step states the answer."""

    name: str = "gsm8k"
    """The task's name."""
    min_depth: int = 1
    """A single step may state the answer."""

    def root(self, task: str) -> ThoughtNode:
        """Use the question text as the root."""
        if not task.strip():
            raise InputError("gsm8k needs the question text as 'task'")
        return ThoughtNode(id="0", text=task.strip())

    def propose_prompt(self, task: str, node: ThoughtNode, breadth: int) -> str:
        """Show the problem and the steps so far."""
        return GSM8K_PROPOSE_PROMPT.render(
            task=task.strip(), steps=node.partial or "(none yet)", breadth=breadth
        )

    def parse(self, reply: str, node: ThoughtNode) -> Parsed:
        """Keep each line that holds a word or number and is not a heading, a repeat or too long."""
        before = set(node.partial.splitlines())
        steps: list[Step] = []
        malformed = 0
        for raw in reply.splitlines():
            line = clean_line(raw)
            if not line:
                continue
            if len(line) > _MAX_STEP_CHARS or line.endswith(":") or not any(c.isalnum() for c in line):
                malformed += 1
                continue
            if line in before or any(s.text == line for s in steps):
                continue
            found = _ANSWER.search(line)
            steps.append(Step(line, {"answer": found.group(1).replace(",", "")} if found else {}))
        return Parsed(steps, malformed)

    def value_prompt(self, task: str, node: ThoughtNode) -> str:
        """Show the problem and the partial solution."""
        return GSM8K_VALUE_PROMPT.render(task=task.strip(), steps=node.partial)

    def is_terminal(self, step: Step) -> bool:
        """The step states the answer."""
        return "answer" in step.data

    def answer(self, step: Step) -> str:
        """The number after "the answer is"."""
        return str(step.data.get("answer", ""))

    def default_verifier(self, task: str) -> str | None:
        """None: pass ``verifier`` (e.g. ``numeric:18``) in the input."""
        return None
