"""A long debate's checkpoint file grows linearly with its transcript (delta channels).

Measured on this machine (2 agents, ~1500-character speeches, default summarization, strict
SQLite saver): 12.2x the transcript's bytes at 10 rounds and 11.9x at 20 (12.3x at 50); with a
``Send`` per agent it was 17.6x (each packet, an agent's whole view, is stored twice), and with
plain list reducers 85x, 150x and 344x. The constant is well above 1 because every checkpoint
also stores the access lists, usage ledger, config and LangGraph's version maps, and each
contribution is kept twice (transcript entry and ``Output``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from reasoning_graphs.checkpoints import StrictSerializer, open_saver, view_thread
from reasoning_graphs.graphs.debate import AgentSpec, DebateConfig, DebateOptions, build_debate_graph
from reasoning_graphs.models import ModelClient, RetrySettings
from reasoning_graphs.testing import ScriptedChatModel

CHARS = 1500
BOUND = 15.0
"""Largest file/transcript ratio accepted (12.2x and 11.9x measured at 10 and 20 rounds)."""


def _speaker(name: str) -> Callable[[list[BaseMessage]], str]:
    counter = itertools.count(1)

    def respond(messages: list[BaseMessage]) -> str:
        n = next(counter)
        body = f"{name} speech {n}: " + " ".join(f"w{name}{n}x{i}" for i in range(CHARS // 8))
        return body[: CHARS - 30] + f"\nANSWER: option {n % 3}"

    return respond


def _run(tmp: Path, rounds: int) -> tuple[float, dict[str, Any]]:
    agents = (AgentSpec(id="a", role="architect"), AgentSpec(id="b", role="security"))
    cfg = DebateConfig(
        agents=agents, judge=AgentSpec(id="judge", model=2), debate=DebateOptions(rounds=rounds)
    )
    roster = [
        ModelClient(
            ScriptedChatModel(responder=_speaker(n), model_name=n), retry=RetrySettings(initial_delay=0)
        )
        for n in ("a", "b", "judge")
    ]
    path = tmp / f"debate-{rounds}.sqlite"
    config: Any = {"configurable": {"thread_id": "d"}, "recursion_limit": 1000}
    with open_saver(path) as saver:
        app = build_debate_graph(config=cfg, roster=roster).compile(checkpointer=saver)
        app.invoke({"task": "Design a rate limiter", "max_calls": 1000}, config)
        values = dict(app.get_state(config).values)
        shown = view_thread(saver, "d", "judge")
    file_bytes = sum(p.stat().st_size for p in tmp.glob(f"{path.name}*"))
    _, blob = StrictSerializer().dumps_typed(list(values["transcript"]))
    assert values["rounds_completed"] == rounds and len(values["transcript"]) == 4 * rounds - 2
    assert {f"position:{rounds}:a", f"critique:{rounds}:b", "judge"} <= set(values["outputs"])
    assert shown["outputs"], "the judge's view of the stored thread is rebuilt from the delta history"
    return file_bytes / len(blob), values


def test_a_long_debate_grows_linearly(tmp_path: Path) -> None:
    short, _ = _run(tmp_path, 10)
    long, _ = _run(tmp_path, 20)
    assert long <= BOUND, f"file is {long:.1f}x the transcript"
    assert long <= short * 1.15, f"ratio rose from {short:.1f}x to {long:.1f}x: growth is not linear"
