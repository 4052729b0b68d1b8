"""Checkpoint growth: SQLite file bytes against transcript bytes for a 50-round debate.

Run from the repository root: ``python -m benchmarks.checkpoint_growth``.

A debate-like graph keeps its transcript in state: each round, ``AGENTS`` agents speak in
parallel (one ``Send`` each, appending one ``Output`` of about ``CHARS`` characters), then a
``close_round`` node counts the round; ``ROUNDS`` rounds, on the package's SQLite saver
(``open_saver``: WAL, strict serializer). The file is measured after the saver is closed (the
WAL folded in); "transcript bytes" are the final transcript serialized once by the same
serializer (what storing the data once costs). Target: at most 3x, i.e. linear growth.

Two designs of the same transcript channel, same graph otherwise, then the package's own graph:

- ``naive``: ``Annotated[list[Output], operator.add]`` (LangGraph's usual reducer). Every
  checkpoint stores the whole list again, so the file grows quadratically with the rounds.
- ``delta``: ``Annotated[list[Output], DeltaChannel(extend)]`` (LangGraph 1.2's beta delta
  channel). Checkpoints store no value for the channel: each node's writes are kept once (as
  pending writes) and the value is rebuilt by replaying them, with a full snapshot every
  ``snapshot_frequency`` updates (default 100) bounding the replay.

- ``debate``: the package's real ``build_debate_graph`` (whose growing keys are delta channels),
  ``ROUNDS`` rounds, ``AGENTS`` agents answering through scripted fake models with speeches of
  about ``CHARS`` characters, default options otherwise (full history, summaries once the
  transcript passes 5000 characters, judge synthesis). Its first round is proposals and every
  later round a critique and a refinement per agent, so its transcript holds about twice the
  contributions of the synthetic graph's. Its file also holds what the synthetic graph does not
  have: each contribution again as an ``Output``, read records, and the access lists, usage
  ledger, config and LangGraph's version maps of its 14 nodes copied into every checkpoint; so
  its ratio is linear but well above the synthetic one.

The two synthetic designs must yield the same final transcript; ``get_state`` time on the
finished thread is reported too (the delta channel pays for its space with replay on read).
"""

from __future__ import annotations

import operator
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from reasoning_graphs.access import Output
from reasoning_graphs.checkpoints import StrictSerializer, open_saver
from reasoning_graphs.graphs.debate import AgentSpec, DebateConfig, DebateOptions, build_debate_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel

ROUNDS = 50
AGENTS = 2
CHARS = 1500
TARGET = 3.0
LINEAR = 1.2
"""Largest rise of the file/transcript ratio from ``ROUNDS // 2`` to ``ROUNDS`` rounds (2.0 = quadratic)."""
READS = 30
_WORDS = ("the", "proposal", "trades", "latency", "for", "consistency", "because", "a", "cache", "must", "go")


def extend(state: Sequence[Output], writes: Sequence[Sequence[Output]]) -> list[Output]:
    """The delta channel's reducer: append every write's items (batching-invariant)."""
    out = list(state)
    for batch in writes:
        out.extend(batch)
    return out


class _Naive(TypedDict, total=False):
    round: int
    transcript: Annotated[list[Output], operator.add]


class _Delta(TypedDict, total=False):
    round: int
    transcript: Annotated[list[Output], DeltaChannel(extend)]


class _Turn(TypedDict):
    agent: int
    round: int


def _speech(agent: int, rnd: int, chars: int) -> str:
    words = [f"{_WORDS[(agent * 7 + rnd * 3 + i) % len(_WORDS)]}{i % 10}" for i in range(chars // 6 + 1)]
    return " ".join(words)[:chars]


def debate_graph(state: type[Any], rounds: int, agents: int, chars: int) -> StateGraph[Any, Any, Any, Any]:
    """Build the debate-shaped graph over the given state schema."""

    def fan_out(s: dict[str, Any]) -> list[Send]:
        return [Send("speak", _Turn(agent=a, round=s.get("round", 0) + 1)) for a in range(agents)]

    def speak(turn: _Turn) -> dict[str, Any]:
        label = f"position:{turn['agent']}:{turn['round']}"
        text = _speech(turn["agent"], turn["round"], chars)
        return {"transcript": [Output(label=label, text=text, role=f"agent-{turn['agent']}", model="fake:m")]}

    def close_round(s: dict[str, Any]) -> dict[str, Any]:
        return {"round": s.get("round", 0) + 1}

    def again(s: dict[str, Any]) -> list[Send] | Literal["__end__"]:
        return fan_out(s) if s["round"] < rounds else "__end__"

    graph = StateGraph(state)
    graph.add_node("speak", speak)
    graph.add_node("close_round", close_round)
    graph.add_conditional_edges(START, fan_out, ["speak"])
    graph.add_edge("speak", "close_round")
    graph.add_conditional_edges("close_round", again, ["speak", END])
    return graph


def _file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _scripted(name: str, chars: int) -> ModelClient:
    """A scripted model whose n-th reply is a fresh speech of about ``chars`` characters."""
    turns = iter(range(1, 1_000_000))

    def respond(messages: object) -> str:
        n = next(turns)
        return _speech(sum(map(ord, name)), n, chars - 20) + f"\nANSWER: option {n % 3}"

    return ModelClient(
        ScriptedChatModel(responder=respond, model_name=name), retry=RetrySettings(initial_delay=0)
    )


def real_debate(
    rounds: int, agents: int, chars: int
) -> tuple[StateGraph[Any, Any, Any, Any], dict[str, Any]]:
    """Return the package's debate graph on scripted models, and its input."""
    roles = ("architect", "performance", "security", "simplicity", "testing")
    specs = tuple(AgentSpec(id=f"agent-{a}", role=roles[a % len(roles)]) for a in range(agents))
    cfg = DebateConfig(
        agents=specs, judge=AgentSpec(id="judge", model=agents), debate=DebateOptions(rounds=rounds)
    )
    roster = [_scripted(spec.id, chars) for spec in (*specs, cfg.judge)]
    return build_debate_graph(config=cfg, roster=roster), {
        "task": "Design a rate limiter",
        "max_calls": 100_000,
    }


def measure(design: str, rounds: int = ROUNDS, agents: int = AGENTS, chars: int = CHARS) -> dict[str, Any]:
    """Run one design to the end; return file bytes, transcript bytes and read time."""
    if design == "debate":
        graph, payload = real_debate(rounds, agents, chars)
    else:
        graph, payload = (
            debate_graph(_Naive if design == "naive" else _Delta, rounds, agents, chars),
            {"round": 0},
        )
    config: RunnableConfig = {"configurable": {"thread_id": design}, "recursion_limit": 10 * rounds + 10}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{design}.sqlite"
        with open_saver(path) as saver:
            app = graph.compile(checkpointer=saver)
            app.invoke(payload, config)
            checkpoints = len(list(saver.list(config)))
            reads = []
            for _ in range(READS):
                start = time.perf_counter()
                values = app.get_state(config).values
                reads.append(time.perf_counter() - start)
            transcript = list(values["transcript"])
        file_bytes = _file_bytes(path)
    _, blob = StrictSerializer().dumps_typed(transcript)
    return {
        "file_bytes": file_bytes,
        "transcript_bytes": len(blob),
        "text_bytes": sum(len(o.text.encode()) for o in transcript),
        "contributions": len(transcript),
        "checkpoints": checkpoints,
        "get_state_ms": 1000 * statistics.median(reads),
        "transcript": transcript,
    }


def run() -> list[dict[str, Any]]:
    """Measure the two designs and the real debate in one run; one row each (same rounds, agents, sizes).

    Besides the ratio, ``marginal_ratio`` is the growth from ``ROUNDS // 2`` to ``ROUNDS`` rounds:
    file bytes added over transcript bytes added (constant when growth is linear; it keeps
    rising when growth is quadratic).
    """
    results = {design: measure(design) for design in ("naive", "delta", "debate")}
    if results["naive"]["transcript"] != results["delta"]["transcript"]:
        raise RuntimeError("the delta channel rebuilt a different transcript than the list reducer")
    rows = []
    designs = (
        ("naive", "list + operator.add"),
        ("delta", "DeltaChannel"),
        ("debate", "build_debate_graph (delta channels)"),
    )
    for design, how in designs:
        r, half = results[design], measure(design, ROUNDS // 2)
        marginal = (r["file_bytes"] - half["file_bytes"]) / (r["transcript_bytes"] - half["transcript_bytes"])
        rows.append(
            {
                "name": f"checkpoint_growth: {ROUNDS}-round debate, {how}: file vs transcript bytes",
                "ratio": r["file_bytes"] / r["transcript_bytes"],
                "target": TARGET,
                "better": "lower",
                "marginal_ratio": marginal,
                **{k: v for k, v in r.items() if k != "transcript"},
            }
        )
        if design == "debate":
            rows.append(
                {
                    "name": f"checkpoint_growth: {how}, file/transcript ratio at {ROUNDS} "
                    f"vs {ROUNDS // 2} rounds (1.0 = linear)",
                    "ratio": (r["file_bytes"] / r["transcript_bytes"])
                    / (half["file_bytes"] / half["transcript_bytes"]),
                    "target": LINEAR,
                    "better": "lower",
                }
            )
    return rows


def main() -> None:
    """Print one line per design, and how the ratios grow with the rounds."""
    for row in run():
        verdict = "ok" if row["ratio"] <= row["target"] else "ABOVE TARGET"
        if "file_bytes" not in row:
            print(f"{row['name']}: {row['ratio']:.2f} (target <= {row['target']:g}) {verdict}")
            continue
        print(
            f"{row['name']}: {row['file_bytes']:,} vs {row['transcript_bytes']:,} bytes, "
            f"ratio {row['ratio']:.2f} (target <= {row['target']:g}) {verdict}; "
            f"{row['checkpoints']} checkpoints, "
            f"get_state {row['get_state_ms']:.2f} ms; growth from {ROUNDS // 2} to {ROUNDS} rounds "
            f"{row['marginal_ratio']:.2f}x the transcript's"
        )
    for rounds in (10, 25, 50, 100):
        naive, delta, real = (measure(design, rounds) for design in ("naive", "delta", "debate"))
        print(
            f"  {rounds:>3} rounds: naive {naive['file_bytes'] / naive['transcript_bytes']:.2f}x, "
            f"delta {delta['file_bytes'] / delta['transcript_bytes']:.2f}x, "
            f"debate {real['file_bytes'] / real['transcript_bytes']:.2f}x"
        )


if __name__ == "__main__":
    main()
