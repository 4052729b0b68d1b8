from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import BaseCheckpointSaver

from reasoning_graphs.access import AccessPolicy, Output, ReadRecord
from reasoning_graphs.checkpoints import history, roles, view, view_thread
from reasoning_graphs.errors import InputError
from reasoning_graphs.types import Attempt, Usage, UsageCounts

Saver = BaseCheckpointSaver[Any]

# Canary tokens: fixed width and closed by "Z", so no token is a substring of another.
LABEL, TEXT, DATA, PRODUCER, MODEL, READER = (
    "LBL{:02d}Z",
    "TXT{:02d}Z",
    "DAT{:02d}Z",
    "PRD{:02d}Z",
    "MDL{:02d}Z",
    "ROL{:02d}Z",
)


@st.composite
def states(draw: st.DrawFn) -> dict[str, Any]:
    """A state with random outputs, roles, access lists, reads, and canaries everywhere."""
    n_out = draw(st.integers(1, 8))
    labels = [LABEL.format(i) for i in range(n_out)]
    outputs = {
        labels[i]: Output(
            label=labels[i],
            text=f"answer {TEXT.format(i)}",
            role=PRODUCER.format(i),
            model=MODEL.format(i),
            data=draw(st.sampled_from([None, {"secret": DATA.format(i)}, [DATA.format(i), 1]])),
        )
        for i in range(n_out)
    }
    pattern = st.one_of(
        st.sampled_from(labels),
        st.sampled_from(labels).map(lambda lbl: lbl[:4] + "*"),  # LBL0* style prefixes
        st.just("LBL*"),
        st.just("unknown:label"),
    )
    n_roles = draw(st.integers(1, 4))
    readers = [READER.format(j) for j in range(n_roles)]
    access = {
        r: AccessPolicy(sees=tuple(draw(st.lists(pattern, max_size=4))), blind=draw(st.booleans()))
        for r in readers
    }
    reads = [
        ReadRecord(node=draw(st.sampled_from(readers)), labels=sorted(draw(st.sets(st.sampled_from(labels)))))
        for _ in range(draw(st.integers(0, 5)))
    ]
    leaked = draw(st.sampled_from(labels))
    leaked_index = labels.index(leaked)
    counts = UsageCounts(calls=1)
    usage = sum(
        (Usage.of(counts, model=MODEL.format(i), node=PRODUCER.format(i)) for i in range(n_out)),
        start=Usage(),
    )
    return {
        "outputs": outputs,
        "access": access,
        "reads": reads,
        "usage": usage,
        "final_answer": outputs[leaked].text,
        "stop_reason": draw(
            st.sampled_from([None, "passed", "budget", f"free text {TEXT.format(leaked_index)}"])
        ),
        "history": [
            Attempt(answer=o.text, passed=False, feedback=DATA.format(0), model=o.model)
            for o in outputs.values()
        ],
        "task": f"task mentions {TEXT.format(0)} and {MODEL.format(0)}",
    }


@settings(max_examples=300, deadline=None)
@given(states())
def test_views_never_leak(values: dict[str, Any]) -> None:
    assert roles(values) == sorted(values["access"])
    for role, policy in values["access"].items():
        dumped = json.dumps(view(values, role))
        for i, label in enumerate(values["outputs"]):
            visible = any(fnmatchcase(label, p) for p in policy.sees)
            canaries = [label, TEXT.format(i), DATA.format(i)]
            if visible:
                assert TEXT.format(i) in dumped
                assert (PRODUCER.format(i) in dumped) is not policy.blind
                assert (MODEL.format(i) in dumped) is not policy.blind
            else:
                assert not [c for c in canaries if c in dumped], (role, label, dumped)
            if policy.blind:
                assert PRODUCER.format(i) not in dumped and MODEL.format(i) not in dumped
        for other in values["access"]:
            assert other == role or other not in dumped


def test_view_whitelist_and_blind_shape() -> None:
    values = {
        "outputs": {
            "draft": Output(label="draft", text="d", role="writer", model="gpt", data={"x": 1}),
            "secret": Output(label="secret", text="s", role="spy", model="m2"),
        },
        "access": {
            "judge": AccessPolicy(sees=("draft",), blind=True),
            "critic": AccessPolicy(sees=("draft", "secret")),
        },
        "reads": [
            ReadRecord(node="judge", labels=["draft", "secret"]),
            ReadRecord(node="critic", labels=["secret"]),
        ],
        "usage": Usage.of(UsageCounts(calls=1), model="gpt", node="draft"),
        "final_answer": "s",
        "stop_reason": "passed",
        "anything_else": "never shown",
    }
    assert view(values, "judge") == {
        "role": "judge",
        "policy": {"sees": ["draft"], "blind": True},
        "outputs": {"draft": {"label": "draft", "text": "d", "data": {"x": 1}}},
        "reads": [{"node": "judge", "labels": ["draft"]}],
        "stop_reason": "passed",
    }
    critic = view(values, "critic")
    assert critic["outputs"]["secret"] == {
        "label": "secret",
        "text": "s",
        "role": "spy",
        "model": "m2",
        "data": None,
    }
    assert critic["reads"] == [{"node": "critic", "labels": ["secret"]}]
    assert view({**values, "stop_reason": "the secret is s"}, "critic")["stop_reason"] is None


def test_unknown_role_lists_the_roles() -> None:
    values = {"access": {"judge": AccessPolicy(), "critic": AccessPolicy()}, "outputs": {}}
    with pytest.raises(
        InputError, match=r"unknown role 'writer'; this thread's roles are: 'critic', 'judge'"
    ):
        view(values, "writer")
    with pytest.raises(InputError, match=r"roles are: none \(the state has no access lists\)"):
        view({"outputs": {}}, "judge")
    assert roles({}) == []


def test_view_thread_latest_and_earlier(saver: Saver, pipeline: Any, pipeline_access: dict[str, Any]) -> None:
    graph = pipeline.build().compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "v"}, "metadata": {"graph": "pipe"}}
    graph.invoke({"task": "the task"}, config)
    assert roles(graph.get_state(config).values) == sorted(pipeline_access)

    latest = view_thread(saver, "v", "judge")
    assert latest["checkpoint_id"] == history(saver, "v")[0].checkpoint_id
    assert sorted(latest["outputs"]) == ["critique", "draft"]
    assert "model-" not in json.dumps(latest) and "writer" not in json.dumps(latest)
    assert latest["reads"] == [{"node": "judge", "labels": ["critique", "draft"]}]

    after_draft = next(c for c in history(saver, "v") if c.writers == ("draft",))
    earlier = view_thread(saver, "v", "critic", checkpoint_id=after_draft.checkpoint_id)
    assert earlier["checkpoint_id"] == after_draft.checkpoint_id
    assert sorted(earlier["outputs"]) == ["draft", "task"]
    assert earlier["outputs"]["draft"]["model"] == "model-writer"
    assert earlier["stop_reason"] is None

    with pytest.raises(InputError, match="unknown role 'nobody'"):
        view_thread(saver, "v", "nobody")
    with pytest.raises(InputError, match=r"thread 'v' has no checkpoint 'nope'"):
        view_thread(saver, "v", "judge", checkpoint_id="nope")


def test_blind_views_show_neutral_slots_instead_of_sides() -> None:
    from reasoning_graphs.access import AccessPolicy, Output
    from reasoning_graphs.checkpoints import view

    outputs = {
        "task": Output(label="task", text="Is the patch safe?"),
        "case:pro": Output(label="case:pro", text="PRO-CASE", role="pro", model="m1"),
        "case:con": Output(label="case:con", text="CON-CASE", role="con", model="m2"),
    }
    values = {"outputs": outputs, "access": {"arbiter": AccessPolicy(sees=("task", "case:*"), blind=True)}}
    shown = view(values, "arbiter")
    assert set(shown["outputs"]) == {"task", "case:slot-1", "case:slot-2"}
    dumped = json.dumps(shown)
    assert "pro" not in dumped.replace("PRO-CASE", "") and "con" not in dumped.replace("CON-CASE", "")
    assert "m1" not in dumped and "m2" not in dumped
