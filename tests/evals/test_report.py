from __future__ import annotations

import shlex

from reasoning_graphs.cli._eval import _config
from reasoning_graphs.evals import EvalConfig, command_line, frontier
from tests.evals.test_cli_eval import parse


def test_the_frontier_keeps_arms_no_other_beats_on_cost_and_quality() -> None:
    points = [(1.0, 0.2), (2.0, 0.2), (2.0, 0.5), (3.0, 0.4), (4.0, 0.7), (1.0, 0.1)]
    assert frontier(points) == [(1.0, 0.2), (2.0, 0.5), (4.0, 0.7)]
    assert frontier([]) == []


def test_the_reproduce_command_rebuilds_the_same_configuration() -> None:
    config = EvalConfig(
        pattern="tot",
        dataset="../shared/data/game24.csv",
        n=20,
        shuffle=True,
        arms=("graph", "single", "self_consistency"),
        roster=("local:smollm2", "fake:x.json"),
        judge_model="local:smollm2",
        samples=4,
        temperature=0.2,
        sample_temperature=0.9,
        max_tokens=64,
        max_calls=30,
        settings={"beam_width": 2, "task": "game24"},
        seed=5,
        concurrency=2,
        out="out dir",
    )
    argv = shlex.split(command_line(config))
    assert argv[:2] == ["reasoning-graphs", "eval"]
    assert _config(parse(*argv[2:])) == config
    plain = EvalConfig(pattern="repair", dataset="d.jsonl")
    assert _config(parse(*shlex.split(command_line(plain))[2:])) == plain
