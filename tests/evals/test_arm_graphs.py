from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.evals import build_judge_graph, build_sampling_graph
from reasoning_graphs.testing import ScriptedChatModel
from tests.conftest import thread
from tests.evals.conftest import client


def edges(graph: Any) -> list[str]:
    mermaid = graph.compile().get_graph().draw_mermaid()
    return sorted(line.strip() for line in mermaid.splitlines() if re.search(r"-\.?->", line))


def test_topologies() -> None:
    seam = client(ScriptedChatModel(replies=[]))
    assert edges(build_sampling_graph(client_for=lambda i: seam)) == [
        "__start__ --> start;",
        "choose --> __end__;",
        "sample --> choose;",
        "start -.-> sample;",
    ]
    assert edges(build_judge_graph(judge=seam)) == ["__start__ --> judge;", "judge --> __end__;"]


def test_sample_i_always_asks_client_i_and_the_state_records_every_sample(saver: Any) -> None:
    fakes = [
        ScriptedChatModel(responder=lambda m, i=i: f"The answer is {i}.", model_name=f"m{i}")
        for i in range(3)
    ]
    graph = build_sampling_graph(
        client_for=lambda i: client(fakes[i]), selection="verified", verify=True
    ).compile(checkpointer=saver)
    out = graph.invoke({"prompt": "p", "samples": 3, "verifier": "numeric:2"}, thread())
    assert [f.calls for f in fakes] == [1, 1, 1]
    assert out["final_answer"] == "The answer is 2." and out["chosen"] == 2
    assert sorted((s.index, s.passed, s.model) for s in out["drawn"]) == [
        (0, False, "fake:m0"),
        (1, False, "fake:m1"),
        (2, True, "fake:m2"),
    ]
    assert out["usage"].total.calls == 3 and out["stop_reason"] == "completed"


def test_ainvoke_gives_the_same_vote() -> None:
    replies = ["The answer is 4.", "The answer is 9.", "4", "The answer is 9."]
    fakes = [ScriptedChatModel(responder=lambda m, r=r: r) for r in replies]

    def build() -> Any:
        return build_sampling_graph(
            client_for=lambda i: client(fakes[i]),
            selection="vote",
            vote_key=lambda t: t.split()[-1].strip("."),
        ).compile()

    payload = {"prompt": "p", "samples": 4}
    sync = build().invoke(payload)
    together = asyncio.run(build().ainvoke(payload))
    for out in (sync, together):
        assert out["final_answer"] == "The answer is 4." and out["votes"] == {"4": 2, "9": 2}
        assert out["chosen"] == 0  # a tied vote goes to the earliest sample


def test_failed_samples_do_not_vote_and_all_failing_is_an_error() -> None:
    failing = client(ScriptedChatModel(responder=lambda m: {"raise": "auth"}))
    graph = build_sampling_graph(client_for=lambda i: failing).compile()
    out = graph.invoke({"prompt": "p", "samples": 2})
    assert out["final_answer"] is None and out["stop_reason"] == "error"
    assert all(s.error and "401" in s.error for s in out["drawn"])


def test_bad_input_fails_before_any_call() -> None:
    fake = ScriptedChatModel(replies=[])
    graph = build_sampling_graph(
        client_for=lambda i: client(fake), selection="verified", verify=True
    ).compile()
    with pytest.raises(InputError, match="samples"):
        graph.invoke({"prompt": "p", "samples": 0, "verifier": "numeric:1"})
    with pytest.raises(InputError, match="verifier"):
        graph.invoke({"prompt": "p", "samples": 1, "verifier": "nope:1"})
    with pytest.raises(InputError, match="prompt"):
        graph.invoke({"prompt": " ", "samples": 1})
    assert fake.calls == 0
    with pytest.raises(ValueError, match="verify=True"):
        build_sampling_graph(client_for=lambda i: client(fake), selection="verified")
    with pytest.raises(ValueError, match="vote_key"):
        build_sampling_graph(client_for=lambda i: client(fake), selection="vote")
