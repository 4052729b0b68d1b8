"""The control arms and the judge as small graphs, so every item runs as a resumable thread.

``start -> sample (one Send per index) -> choose``: a plain call is one sample returned as is;
best-of-N draws N samples and returns the first that passes the verifier (else sample 0), the
same oracle access a verifier-gated pattern has; self-consistency draws N samples and returns
the most common answer (its key read in code; ties go to the earliest), never consulting the
verifier. Samples are verified only when the arm selects by the verifier or when any-of-k is
reported; that check is measurement, recorded per sample, not selection.

``start -> judge``: one blind pairwise comparison in both orders
(:func:`~reasoning_graphs.nodes.compare_pair`).

Each sample's model comes from ``client_for(index)``, so sample *i* always has the same client
(and seed) whatever order the branches finish in.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from reasoning_graphs.budget import add_usage
from reasoning_graphs.errors import InputError
from reasoning_graphs.models import ModelClient
from reasoning_graphs.nodes import NodeIO, choose_verifier, compare_pair, dual_node, generate, run_check
from reasoning_graphs.types import Frozen, PairwiseJudgment, StopReason, Usage

__all__ = [
    "JudgeInput",
    "JudgeOutput",
    "Sample",
    "SamplingInput",
    "SamplingOutput",
    "Selection",
    "VoteKey",
    "build_judge_graph",
    "build_sampling_graph",
]

Selection = Literal["first", "verified", "vote"]
"""How a sampling arm picks its answer: sample 0, the first that passes, or the majority."""

VoteKey = Callable[[str], str | None]
"""Read the comparable answer out of a sample (None: the sample does not vote)."""


class Sample(Frozen):
    """One drawn sample."""

    index: int
    """Position in the arm (it fixes the sample's client and seed)."""
    answer: str | None
    """The reply text (None when the call failed)."""
    model: str = ""
    """The model id that answered."""
    passed: bool | None = None
    """The verifier's verdict on this sample; None when samples are not verified."""
    feedback: str = ""
    """The verifier's feedback (empty when passed or not verified)."""
    error: str | None = None
    """Why the call failed, if it did."""


class SamplingInput(TypedDict, total=False):
    """What a sampling run takes."""

    prompt: str
    """The prompt every sample receives (the same text)."""
    samples: int
    """How many samples to draw."""
    verifier: str
    """The verifier spec samples are checked with (empty: none)."""


class SamplingOutput(TypedDict, total=False):
    """What a sampling run returns."""

    final_answer: str | None
    """The chosen sample's answer."""
    stop_reason: StopReason | None
    """``completed``, or ``error`` when no sample has an answer."""
    usage: Annotated[Usage, add_usage]
    """Calls and tokens of every sample."""
    drawn: Annotated[list[Sample], operator.add]
    """Every sample, in completion order."""
    chosen: int | None
    """The index of the returned sample."""
    votes: dict[str, int]
    """Vote counts by answer key (self-consistency only)."""


class SamplingState(SamplingInput, SamplingOutput, total=False):
    """Internal state of a sampling run."""


class _SampleJob(TypedDict):
    """The payload of one ``sample`` branch (built from the input, never the whole state)."""

    index: int
    """The sample's position (it picks the client)."""
    prompt: str
    """The prompt."""
    verifier: str
    """The verifier spec ('' for none)."""


def _fan_out(state: SamplingState) -> list[Send]:
    count, spec = state.get("samples", 1), state.get("verifier", "")
    return [Send("sample", _SampleJob(index=i, prompt=state["prompt"], verifier=spec)) for i in range(count)]


def _choose(
    drawn: list[Sample], selection: Selection, key: VoteKey | None
) -> tuple[Sample | None, dict[str, int]]:
    answered = sorted((s for s in drawn if s.answer is not None), key=lambda s: s.index)
    if not answered:
        return None, {}
    if selection == "verified":
        return next((s for s in answered if s.passed), answered[0]), {}
    if selection == "vote" and key is not None:
        keyed = [(s, key(s.answer or "")) for s in answered]
        votes = Counter(k for _, k in keyed if k is not None)
        if votes:
            top = max(votes.values())
            # The earliest sample whose answer has the most votes (ties go to the earliest).
            return next(s for s, k in keyed if k is not None and votes[k] == top), dict(votes)
    return answered[0], {}


def build_sampling_graph(
    *,
    client_for: Callable[[int], ModelClient],
    selection: Selection = "first",
    verify: bool = False,
    vote_key: VoteKey | None = None,
) -> StateGraph[SamplingState, Any, SamplingInput, SamplingOutput]:
    """Build a sampling arm's graph (uncompiled).

    Args:
        client_for: the client of sample *i*.
        selection: how the returned sample is picked (see :data:`Selection`).
        verify: check every sample with the input's verifier (needed by ``verified`` selection
            and for any-of-k).
        vote_key: reads the answer a vote counts (``vote`` selection).

    Raises:
        ValueError: ``verified`` without ``verify``, or ``vote`` without a ``vote_key``.
    """
    if selection == "verified" and not verify:
        raise ValueError("selection='verified' needs verify=True")
    if selection == "vote" and vote_key is None:
        raise ValueError("selection='vote' needs a vote_key that reads a sample's answer")

    async def start(state: SamplingState, io: NodeIO) -> dict[str, Any]:
        if not isinstance(state.get("prompt"), str) or not state["prompt"].strip():
            raise InputError("a sampling run needs a non-empty 'prompt'")
        count = state.get("samples", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InputError(f"samples must be a positive integer, got {count!r}")
        if verify:
            choose_verifier(None, state.get("verifier"))
        return {}

    async def sample(job: _SampleJob, io: NodeIO) -> dict[str, Any]:
        client = client_for(job["index"])
        out = await generate(io, client, job["prompt"], node="sample")
        drawn = Sample(index=job["index"], answer=None, model=out.model, error=out.error or "no reply")
        if out.ok:
            drawn = Sample(index=job["index"], answer=str(out.value), model=out.model)
            if verify:
                verdict = await run_check(io, choose_verifier(None, job["verifier"]), drawn.answer or "")
                drawn = drawn.model_copy(update={"passed": verdict.passed, "feedback": verdict.feedback})
        return {"drawn": [drawn], "usage": out.usage}

    async def choose(state: SamplingState, io: NodeIO) -> dict[str, Any]:
        picked, votes = _choose(state.get("drawn") or [], selection, vote_key)
        return {
            "final_answer": picked.answer if picked else None,
            "chosen": picked.index if picked else None,
            "votes": votes,
            "stop_reason": "completed" if picked else "error",
        }

    graph = StateGraph(SamplingState, input_schema=SamplingInput, output_schema=SamplingOutput)
    graph.add_node("start", dual_node(start, name="start"))
    graph.add_node("sample", dual_node(sample, name="sample"))
    graph.add_node("choose", dual_node(choose, name="choose"))
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", _fan_out, ["sample"])
    graph.add_edge("sample", "choose")
    graph.add_edge("choose", END)
    return graph


class JudgeInput(TypedDict, total=False):
    """What a judged comparison takes."""

    task: str
    """The task both answers respond to."""
    first: str
    """The first answer (shown as ``A`` in one order and ``B`` in the other)."""
    second: str
    """The second answer."""


class JudgeOutput(TypedDict, total=False):
    """What a judged comparison returns."""

    judgment: PairwiseJudgment
    """The outcome in terms of ``first``/``second``, with each order's raw pick."""
    usage: Annotated[Usage, add_usage]
    """The judge's calls and tokens."""


class _JudgeState(JudgeInput, JudgeOutput, total=False):
    """Internal state of a judged comparison."""


def build_judge_graph(*, judge: ModelClient) -> StateGraph[_JudgeState, Any, JudgeInput, JudgeOutput]:
    """Build the blind pairwise judge's graph (uncompiled): both orders, disagreement inconclusive."""

    async def compare(state: _JudgeState, io: NodeIO) -> dict[str, Any]:
        judgment, usage = await compare_pair(
            io, judge, task=state["task"], first=state["first"], second=state["second"], node="judge"
        )
        return {"judgment": judgment, "usage": usage}

    graph = StateGraph(_JudgeState, input_schema=JudgeInput, output_schema=JudgeOutput)
    graph.add_node("judge", dual_node(compare, name="judge"))
    graph.add_edge(START, "judge")
    graph.add_edge("judge", END)
    return graph
