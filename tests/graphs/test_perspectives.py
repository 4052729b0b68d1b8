from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.access import AccessPolicy, check_independent
from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs.perspectives import (
    RETRY_PROMPT,
    SYNTHESIS_PROMPT,
    VIEW_PROMPT,
    Agenda,
    PerspectivesSettings,
    View,
    build_matrix,
    build_perspectives_graph,
    compare_row,
    panel_access,
    panel_produces,
    to_csv,
    to_json,
    to_markdown,
    write_report,
)
from reasoning_graphs.models import ModelClient, ModelSettings, RetrySettings, resolve
from reasoning_graphs.testing import ScriptedChatModel
from tests.conftest import ROOT, thread

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)
SNAPSHOT = (
    "The new plan costs 120 EUR per month, twice the current bill. "
    "The migration needs two weeks of downtime planning. Three engineers are available in May."
)
QUOTES = {"cost": "costs 120 EUR per month", "risk": "two weeks of downtime planning"}
ROLES = [
    {"name": "finance", "criteria": "CRIT-FINANCE: total cost over a year"},
    {"name": "security", "criteria": "CRIT-SECURITY: protection of customer data"},
    {"name": "ops", "criteria": "CRIT-OPS: availability and on-call load"},
]
INPUT: dict[str, Any] = {
    "snapshot": SNAPSHOT,
    "topics": ["cost", "risk"],
    "roles": ROLES,
    "question": "Adopt it?",
}


def view(position: str = "support", summary: str = "a summary", **judgments: str) -> str:
    items = [
        {
            "topic": t,
            "judgment": judgments.get(t, "support"),
            "reason": "because",
            "quotes": [] if judgments.get(t) == "unknown" else [q],
        }
        for t, q in QUOTES.items()
    ]
    return json.dumps(
        {"position": position, "summary": summary, "judgments": items, "trade_off": "cost vs time"}
    )


def synthesis(
    rec: str = "proceed",
    resolutions: tuple[str, ...] = (),
    unresolved: tuple[str, ...] = (),
    conditions: tuple[str, ...] = (),
) -> str:
    return json.dumps(
        {
            "recommendation": rec,
            "rationale": "weighed the views",
            "conditions": list(conditions),
            "resolutions": [{"topic": t, "answer": f"settled {t}"} for t in resolutions],
            "unresolved": [{"topic": t, "follow_up": f"measure {t}"} for t in unresolved],
        }
    )


def panel(**replies: list[Any]) -> tuple[dict[str, ScriptedChatModel], list[ModelClient]]:
    """One fake per seat: finance, security, ops, synthesizer."""
    models = {
        name: ScriptedChatModel(replies=replies.get(name, []), model_name=name)
        for name in ("finance", "security", "ops", "synth")
    }
    return models, [ModelClient(m, retry=NO_WAIT) for m in models.values()]


def run(
    roster: list[ModelClient],
    saver: Any,
    payload: dict[str, Any],
    cfg: PerspectivesSettings | None = None,
    tid: str = "t1",
) -> tuple[dict[str, Any], dict[str, Any]]:
    graph = build_perspectives_graph(roster=roster, settings=cfg).compile(checkpointer=saver)
    out = dict(graph.invoke(payload, thread(tid)))
    return out, dict(graph.get_state(thread(tid)).values)


def test_a_full_review_completes_with_a_code_owned_matrix(saver: Any) -> None:
    models, roster = panel(
        finance=[view("oppose", cost="oppose")],
        security=[view()],
        ops=[view()],
        synth=[
            synthesis("conditional", resolutions=("cost", "(overall position)"), conditions=("cap the bill",))
        ],
    )
    out, state = run(roster, saver, INPUT)
    assert out["stop_reason"] == "completed" and out["recommendation"] == "conditional" and not out["caps"]
    assert out["final_answer"] == "conditional: weighed the views"
    cost, risk = out["matrix"].rows
    assert cost.status == "disagreement" and cost.groups == {
        "oppose": ["finance"],
        "support": ["security", "ops"],
    }
    assert risk.status == "consensus" and out["matrix"].overall.status == "disagreement"
    assert [m.calls for m in models.values()] == [1, 1, 1, 1]
    synth_prompt = models["synth"].prompt_texts[0]
    assert "disagreement on 'cost' (oppose: finance; support: security, ops)" in synth_prompt
    assert "| cost | oppose | support | support | disagreement |" in synth_prompt
    assert all(f"CRIT-{r.upper()}" in synth_prompt for r in ("finance", "security", "ops"))
    assert {r.node: r.labels for r in state["reads"]}["finance"] == ["brief", "criteria:finance", "snapshot"]


def test_views_are_independent_proof_and_canaries(saver: Any) -> None:
    names = ["finance", "security", "ops"]
    check_independent(names, panel_access(names), panel_produces(names, 2))
    leaky = {**panel_access(names), "ops": AccessPolicy(sees=("snapshot", "view:*"))}
    with pytest.raises(ValueError, match=r"not independent: 'ops' can read '(view|draft):finance"):
        check_independent(names, leaky, panel_produces(names, 2))
    # ops fails first and is retried after the other views exist in state: it still sees none of them.
    models, roster = panel(
        finance=[view(summary="CANARY-FIN")],
        security=[view(summary="CANARY-SEC")],
        ops=[view(position="maybe"), view()],
        synth=[synthesis()],
    )
    out, _ = run(roster, saver, INPUT)
    assert out["stop_reason"] == "completed" and models["ops"].calls == 2
    for role in ("finance", "security", "ops"):
        for prompt in models[role].prompt_texts:
            assert "CANARY-" not in prompt and f"CRIT-{role.upper()}" in prompt
            assert sum(f"CRIT-{r.upper()}" in prompt for r in ("finance", "security", "ops")) == 1
    assert "CANARY-FIN" in models["synth"].prompt_texts[0] and "CANARY-SEC" in models["synth"].prompt_texts[0]


def test_every_view_violation_is_caught_and_retried_at_once(saver: Any) -> None:
    bad = json.loads(view(position="maybe", cost="strongly support"))
    bad["judgments"] = [bad["judgments"][0] | {"quotes": ["costs 999 EUR per month"]}]  # forged; risk omitted
    models, roster = panel(
        finance=[view()], security=[json.dumps(bad), view()], ops=[view()], synth=[synthesis()]
    )
    out, _ = run(roster, saver, INPUT)
    retry = models["security"].prompt_texts[1]
    assert "position 'maybe' is not one of ['support', 'oppose', 'conditional', 'unknown']" in retry
    assert "topic 'cost': judgment 'strongly support' is not one of" in retry
    assert "the quotation 'costs 999 EUR per month' does not occur verbatim in the snapshot" in retry
    assert "topic 'risk' is not covered" in retry and "costs 999 EUR" in retry.split("Previous reply:")[1]
    assert out["stop_reason"] == "completed" and out["views"]["security"].attempt == 2
    failed = [a for a in out["attempts"] if not a.ok]
    assert len(failed) == 1 and failed[0].role == "security" and len(failed[0].errors) == 4


def test_a_partial_failure_retries_only_the_failed_role(saver: Any) -> None:
    models, roster = panel(
        finance=[view()], security=[{"raise": "auth"}, view()], ops=[view()], synth=[synthesis()]
    )
    out, _ = run(roster, saver, INPUT)
    assert {n: m.calls for n, m in models.items()} == {"finance": 1, "security": 2, "ops": 1, "synth": 1}
    assert [(a.role, a.attempt, a.failure) for a in out["attempts"] if a.role == "security"] == [
        ("security", 1, "error"),
        ("security", 2, ""),
    ]
    assert out["usage"].by_node["view:security"].calls == 2 and out["missing"] == []


def test_every_view_failing_needs_a_human(saver: Any) -> None:
    models, roster = panel(finance=[view("maybe")] * 3, security=[{"raise": "auth"}] * 3, ops=["nope"] * 9)
    out, _ = run(roster, saver, INPUT, PerspectivesSettings(max_view_attempts=2))
    assert (
        out["stop_reason"] == "needs_human" and out["final_answer"] is None and out["recommendation"] is None
    )
    assert models["finance"].calls == 2 and models["security"].calls == 2 and models["synth"].calls == 0
    assert out["matrix"].available == [] and {r.status for r in out["matrix"].rows} == {"no_views"}
    assert "## Missing views" in to_markdown(out)


def test_missing_views_cap_the_recommendation_at_defer(saver: Any) -> None:
    models, roster = panel(
        finance=[view()], security=[view("maybe")] * 2, ops=[view()], synth=[synthesis("proceed")]
    )
    out, _ = run(roster, saver, INPUT)
    assert out["stop_reason"] == "completed" and out["missing"] == ["security"]
    assert out["recommendation"] == "defer" and out["caps"] == ["views missing from security: at most defer"]
    assert {r.status for r in out["matrix"].rows} == {"agreement_among_available"}
    assert "Views missing (these roles failed): security." in models["synth"].prompt_texts[0]


def test_a_hard_gate_caps_the_recommendation(saver: Any) -> None:
    gates = [{"role": "security", "judgment": "Oppose", "cap": "conditional"}]
    _, roster = panel(
        finance=[view()],
        security=[view("oppose")],
        ops=[view()],
        synth=[synthesis("proceed", resolutions=("(overall position)",))],
    )
    out, _ = run(roster, saver, {**INPUT, "gates": gates})
    assert out["recommendation"] == "conditional" and out["gates"][0].judgment == "oppose"
    assert out["caps"] == ["gate: security judged 'oppose' overall: at most conditional"]


def test_the_synthesis_must_answer_every_disagreement(saver: Any) -> None:
    models, roster = panel(
        finance=[view(cost="oppose")],
        security=[view()],
        ops=[view()],
        synth=[synthesis("proceed"), synthesis("proceed", unresolved=("cost",))],
    )
    out, _ = run(roster, saver, INPUT)
    assert (
        "the disagreement on 'cost' (oppose: finance; support: security, ops) is not answered"
        in (models["synth"].prompt_texts[1])
    )
    assert out["stop_reason"] == "completed" and out["synthesis"].unresolved[0].follow_up == "measure cost"
    models, roster = panel(
        finance=[view(cost="oppose")], security=[view()], ops=[view()], synth=[synthesis("proceed")] * 2
    )
    out, _ = run(roster, saver, INPUT, tid="never")
    assert out["stop_reason"] == "max_attempts" and out["recommendation"] == "defer"
    assert out["synthesis"].violations and "did not pass its checks" in out["caps"][0]


def test_shared_unknowns_are_flagged_and_need_a_follow_up(saver: Any) -> None:
    models, roster = panel(
        finance=[view(risk="unknown")],
        security=[view(risk="unknown")],
        ops=[view()],
        synth=[synthesis(resolutions=("risk",)), synthesis(unresolved=("risk",))],
    )
    out, _ = run(roster, saver, INPUT)
    risk = out["matrix"].rows[1]
    assert (
        risk.shared_unknown
        and risk.unknown_roles == ["finance", "security"]
        and risk.status == "disagreement"
    )
    retry = models["synth"].prompt_texts[1].split("Your previous reply broke these rules")[1]
    assert "'risk' is unknown to finance, security: list it in unresolved" in retry
    assert out["stop_reason"] == "completed"


_judgment = st.sampled_from(["support", "oppose", "unknown"])


@settings(max_examples=150, deadline=None)
@given(judgments=st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _judgment))
def test_matrix_rules(judgments: dict[str, str]) -> None:
    roles = ["a", "b", "c", "d"]
    row = compare_row("t", judgments, roles, "unknown")
    assert sorted(r for rs in row.groups.values() for r in rs) == sorted(judgments)  # every group kept
    assert row.missing == [r for r in roles if r not in judgments]
    distinct = set(judgments.values())
    expected = (
        "no_views"
        if not judgments
        else "disagreement"
        if len(distinct) > 1
        else "agreement_among_available"
        if row.missing
        else "consensus"
    )
    assert row.status == expected
    assert row.shared_unknown == (list(judgments.values()).count("unknown") >= 2)
    for judgment, group in row.groups.items():
        assert group == [r for r in roles if judgments.get(r) == judgment]  # panel order


def test_matrix_from_views_covers_topics_and_positions() -> None:
    agenda = Agenda(question="q", topics=["cost", "risk"], judgments=["support", "oppose"], unknown=None)
    views = {
        "a": View.model_validate(
            {
                "role": "a",
                "position": "support",
                "summary": "s",
                "trade_off": "t",
                "judgments": [
                    {"topic": "cost", "judgment": "oppose", "reason": "r"},
                    {"topic": "risk", "judgment": "support", "reason": "r"},
                ],
            }
        )
    }
    matrix = build_matrix(agenda, ["a", "b"], views)
    assert matrix.missing == ["b"] and [r.judgments for r in matrix.rows] == [
        {"a": "oppose"},
        {"a": "support"},
    ]
    assert matrix.overall.judgments == {"a": "support"} and matrix.disagreements == []


def test_reports_in_json_markdown_and_csv(saver: Any, tmp_path: Path) -> None:
    _, roster = panel(
        finance=[view(cost="oppose")],
        security=[view()],
        ops=[view()],
        synth=[synthesis("proceed", resolutions=("cost",), unresolved=("(overall position)",))],
    )
    out, _ = run(roster, saver, INPUT)
    loaded = json.loads(to_json(out))
    assert loaded["stop_reason"] == "completed" and loaded["matrix"]["rows"][0]["status"] == "disagreement"
    assert to_markdown(loaded) == to_markdown(out)
    markdown = to_markdown(out)
    assert "**Recommendation:** proceed" in markdown and "**cost**: settled cost" in markdown
    assert "“costs 120 EUR per month”" in markdown
    rows = list(csv.reader(io.StringIO(to_csv(out))))
    assert rows[0] == ["topic", "finance", "security", "ops", "status", "shared_unknown", "unknown_roles"]
    assert rows[1] == ["cost", "oppose", "support", "support", "disagreement", "false", ""]
    assert rows[-1][0] == "(overall position)"
    paths = write_report(out, tmp_path / "report")
    assert {p.name for p in paths.values()} == {"report.json", "report.md", "matrix.csv"}
    assert all(p.read_text(encoding="utf-8") for p in paths.values())
    with pytest.raises(ValueError, match="no 'matrix'"):
        to_csv({"stop_reason": "completed"})


def test_resume_after_a_crash_does_not_repeat_the_views(saver: Any) -> None:
    crashed: list[bool] = []

    def synth(messages: list[BaseMessage]) -> str:
        if not crashed:
            crashed.append(True)
            raise KeyboardInterrupt
        return synthesis()

    models, roster = panel(finance=[view()], security=[view()], ops=[view()])
    models["synth"].responder = synth
    graph = build_perspectives_graph(roster=roster).compile(checkpointer=saver)
    with pytest.raises(KeyboardInterrupt):
        graph.invoke(INPUT, thread())
    out = graph.invoke(None, thread())
    assert out["stop_reason"] == "completed"
    assert {n: m.calls for n, m in models.items()} == {"finance": 1, "security": 1, "ops": 1, "synth": 2}


def test_budget_reserves_the_whole_batch(saver: Any) -> None:
    models, roster = panel(finance=[view()], security=[view()], ops=[view()], synth=[synthesis()])
    out, _ = run(roster, saver, {**INPUT, "max_calls": 2}, tid="two")
    assert out["stop_reason"] == "budget" and sum(m.calls for m in models.values()) == 0
    models, roster = panel(finance=[view()], security=[view()], ops=[view()], synth=[synthesis()])
    out, _ = run(roster, saver, {**INPUT, "max_calls": 3}, tid="three")
    assert out["stop_reason"] == "budget" and models["synth"].calls == 0 and len(out["views"]) == 3
    assert out["recommendation"] is None and out["matrix"].overall.status == "consensus"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"snapshot": ""}, "'snapshot'"),
        ({"topics": ["cost", "Cost"]}, "repeats"),
        ({"roles": [{"name": "a*", "criteria": "c"}]}, "role name 'a\\*'"),
        ({"roles": [{"name": "synthesizer", "criteria": "c"}]}, "not be 'synthesizer'"),
        ({"roles": [{"name": "a", "criteria": " "}]}, "criteria must be disclosed"),
        ({"judgments": ["yes"]}, "at least 2"),
        ({"gates": [{"role": "nobody", "judgment": "oppose", "cap": "defer"}]}, "must name a role"),
    ],
)
def test_input_is_checked_before_any_call(saver: Any, change: dict[str, Any], message: str) -> None:
    models, roster = panel()
    graph = build_perspectives_graph(roster=roster).compile(checkpointer=saver)
    with pytest.raises(InputError, match=message):
        graph.invoke({**INPUT, **change}, thread())
    assert sum(m.calls for m in models.values()) == 0


def test_the_example_snapshot_is_valid_input() -> None:
    example = json.loads((ROOT / "examples" / "snapshot.json").read_text(encoding="utf-8"))
    quotes = {
        "cost": "1,850 EUR per month",
        "reliability": "two outages in the last 12 months",
        "security": "provider-managed keys by default",
        "migration risk": "3 weeks of work for one engineer",
    }
    reply = json.dumps(
        {
            "position": "oppose",
            "summary": "s",
            "trade_off": "t",
            "judgments": [
                {"topic": t, "judgment": "conditional", "reason": "r", "quotes": [q]}
                for t, q in quotes.items()
            ],
        }
    )
    fake = ScriptedChatModel(replies=[reply] * 3 + [synthesis("proceed")])
    graph = build_perspectives_graph(model=ModelClient(fake, retry=NO_WAIT)).compile()
    out = graph.invoke(example)
    assert out["stop_reason"] == "completed" and out["recommendation"] == "conditional"  # security gate
    assert len(out["gates"]) == 2 and out["matrix"].roles == ["finance", "security", "operations"]


def test_topology_snapshot() -> None:
    drawing = build_perspectives_graph().compile().get_graph().draw_mermaid()
    edges = sorted(line.strip() for line in drawing.splitlines() if "-->" in line or "-.->" in line)
    assert edges == [
        "__start__ --> start;",
        "compare -.-> finish;",
        "compare -.-> synthesize;",
        "compare -.-> view;",
        "finish --> __end__;",
        "start -.-> finish;",
        "start -.-> view;",
        "synthesize -.-> finish;",
        "synthesize -.-> synthesize;",
        "view --> compare;",
    ]


def test_async_invoke_matches_sync_invoke() -> None:
    outs = []
    for mode in ("sync", "async"):
        _, roster = panel(
            finance=[view(cost="oppose")],
            security=[{"raise": "auth"}, view()],
            ops=[view()],
            synth=[synthesis(unresolved=("cost",))],
        )
        graph = build_perspectives_graph(roster=roster).compile(checkpointer=InMemorySaver())
        call = graph.ainvoke(INPUT, thread()) if mode == "async" else None
        outs.append(asyncio.run(call) if call is not None else graph.invoke(INPUT, thread()))
    sync, async_ = outs
    for key in ("final_answer", "stop_reason", "matrix", "views", "synthesis", "recommendation", "missing"):
        assert async_[key] == sync[key]
    assert sorted(a.model_dump_json() for a in async_["attempts"]) == sorted(
        a.model_dump_json() for a in sync["attempts"]
    )
    assert async_["usage"].total.calls == sync["usage"].total.calls == 5


def test_every_prompt_renders() -> None:
    base = VIEW_PROMPT.render(
        role="r",
        criteria="c",
        question="q",
        snapshot="s",
        topics="- t",
        judgments="a, b",
        quote_rule="quotes.",
    )
    assert "SNAPSHOT" in base and "Previous reply" in RETRY_PROMPT.render(
        base=base, errors="- e", previous="p"
    )
    rendered = SYNTHESIS_PROMPT.render(
        question="q",
        snapshot="s",
        criteria="c",
        views="v",
        matrix="m",
        missing="",
        duties="- d",
        recommendations="a, b",
    )
    assert "computed by code" in rendered


@settings(max_examples=30, deadline=None)
@given(max_calls=st.integers(1, 9), failures=st.lists(st.booleans(), min_size=3, max_size=3))
def test_budget_is_never_exceeded(max_calls: int, failures: list[bool]) -> None:
    replies = {
        name: ([view("maybe")] if bad else []) + [view()] * 3
        for name, bad in zip(("finance", "security", "ops"), failures, strict=True)
    }
    models, roster = panel(**replies, synth=[synthesis("proceed")] * 3)
    out = build_perspectives_graph(roster=roster).compile().invoke({**INPUT, "max_calls": max_calls})
    assert out["usage"].total.calls <= max_calls
    assert sum(m.calls for m in models.values()) == out["usage"].total.calls
    assert out["stop_reason"] in ("completed", "budget")


@pytest.mark.local_model
def test_a_real_review_on_the_embedded_model(tmp_path: Path) -> None:
    client = resolve("local:smollm2", ModelSettings(max_tokens=160))
    payload = {**INPUT, "roles": ROLES[:2], "topics": ["cost"], "max_calls": 6}
    cfg = PerspectivesSettings(max_view_attempts=1, max_synthesis_attempts=1)
    graph = build_perspectives_graph(model=client, settings=cfg).compile(checkpointer=InMemorySaver())
    out = graph.invoke(payload, thread())
    assert out["stop_reason"] in ("completed", "needs_human", "budget", "error", "max_attempts")
    assert out["usage"].total.calls <= 6 and sorted(out["missing"] + list(out["views"])) == [
        "finance",
        "security",
    ]
    for item in out["views"].values():  # whatever the model wrote, only verbatim quotations survive
        assert all(q in SNAPSHOT for j in item.judgments for q in j.quotes)
    if out["stop_reason"] == "needs_human":
        assert out["views"] == {} and out["final_answer"] is None
    assert all(p.exists() for p in write_report(out, tmp_path).values())
