from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.evals import EvalConfig, run_eval
from reasoning_graphs.testing import ScriptedChatModel, prompt_text
from tests.evals.conftest import QUESTIONS, question_of, right_after, shared


class Interrupted:
    """A responder that raises KeyboardInterrupt (as Ctrl-C would) on its first call about one question."""

    def __init__(self, question: str) -> None:
        self.question, self.fired = question, False
        self.inner = right_after({QUESTIONS[1][0]: 1})

    def __call__(self, messages: Any) -> str:
        if not self.fired and question_of(prompt_text(messages)) == self.question:
            self.fired = True
            raise KeyboardInterrupt
        return self.inner(messages)


def test_an_interrupted_eval_resumes_without_rerunning_finished_items(
    gsm8k_file: Path, tmp_path: Path
) -> None:
    cfg = EvalConfig(
        pattern="repair", dataset=str(gsm8k_file), arms=("graph", "single"), out=str(tmp_path / "o")
    )
    first = ScriptedChatModel(responder=Interrupted(QUESTIONS[2][0]))
    with pytest.raises(KeyboardInterrupt):
        run_eval(cfg, models=shared(first), stream=None)
    seen_first = Counter(question_of(p) for p in first.prompt_texts)
    assert seen_first == {QUESTIONS[0][0]: 1, QUESTIONS[1][0]: 2, QUESTIONS[2][0]: 1}
    assert not (tmp_path / "o" / "receipt.json").exists()

    second = ScriptedChatModel(responder=right_after({QUESTIONS[1][0]: 1}))
    result = run_eval(cfg, models=shared(second), stream=None)
    # Items 1 and 2 finished before the interrupt: their graph threads are not run again.
    graph_prompts = [p for p in second.prompt_texts if question_of(p) in (QUESTIONS[0][0], QUESTIONS[1][0])]
    assert len(graph_prompts) == 2  # only their single-call arm, which had not started yet
    assert second.calls == 1 + 1 + 4  # item 3 (its interrupted node again) and item 4, then 4 single calls
    graph = {r.item: r for r in result.records if r.arm == "graph"}
    assert [graph[f"gsm8k/{i}"].resumed for i in range(4)] == [False, False, True, False]
    assert all(r.passed for r in graph.values())

    third = ScriptedChatModel(responder=right_after({}))
    again = run_eval(cfg, models=shared(third), stream=None)
    assert third.calls == 0  # everything was finished: nothing runs twice
    assert [r.comparable() for r in again.records] == [r.comparable() for r in result.records]
