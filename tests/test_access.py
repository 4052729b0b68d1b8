from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoning_graphs.access import AccessPolicy, Output, check_independent, project_outputs, readable_labels

ROLES = ["r0", "r1", "r2", "r3", "r4"]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, AccessPolicy], dict[str, Output], dict[str, list[str]]]:
    produces = {r: [f"{r}:out"] for r in ROLES}
    labels = [label for ls in produces.values() for label in ls] + ["task", "ghost"]
    policies = {
        r: AccessPolicy(
            sees=tuple(draw(st.lists(st.sampled_from(labels), unique=True))), blind=draw(st.booleans())
        )
        for r in ROLES
    }
    finished = draw(st.lists(st.sampled_from(labels[:-1]), unique=True))
    outputs = {
        label: Output(label=label, text=f"CANARY-{label}", role=label.split(":")[0], model=f"MODEL-{label}")
        for label in finished
    }
    return policies, outputs, produces


@given(scenarios())
def test_each_role_gets_exactly_its_permitted_finished_labels(
    case: tuple[dict[str, AccessPolicy], dict[str, Output], dict[str, list[str]]],
) -> None:
    policies, outputs, _ = case
    for _role, policy in policies.items():
        seen = project_outputs(outputs, policy)
        assert set(seen) == {label for label in outputs if label in policy.sees}
        rendered = " ".join(o.model_dump_json() for o in seen.values())
        for label in outputs:
            if label not in policy.sees:
                assert f"CANARY-{label}" not in rendered
        if policy.blind:
            assert "MODEL-" not in rendered


@given(scenarios())
def test_independence_check_agrees_with_transitive_reachability(
    case: tuple[dict[str, AccessPolicy], dict[str, Output], dict[str, list[str]]],
) -> None:
    policies, _, produces = case
    group = ["r0", "r1", "r2"]
    leaks = any(
        set(produces[other]) & readable_labels(role, policies, produces)
        for role in group
        for other in group
        if other != role
    )
    if leaks:
        with pytest.raises(ValueError, match="not independent"):
            check_independent(group, policies, produces)
    else:
        check_independent(group, policies, produces)


def test_indirect_leak_is_found() -> None:
    produces = {"a": ["a:out"], "b": ["b:out"], "summarizer": ["sum"]}
    policies = {"a": ("sum",), "summarizer": ("b:out",), "b": ()}
    with pytest.raises(ValueError, match="'a' can read 'b:out'"):
        check_independent(["a", "b"], policies, produces)


def test_patterns_match_dynamic_labels() -> None:
    outputs = {f"draft:{i}": Output(label=f"draft:{i}", text=str(i)) for i in range(3)}
    assert list(project_outputs(outputs, AccessPolicy(sees=("draft:*",)))) == [
        "draft:0",
        "draft:1",
        "draft:2",
    ]
