from __future__ import annotations

import asyncio
import csv
import hashlib
import math
import random
import re
from fractions import Fraction
from itertools import combinations
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from reasoning_graphs.errors import InputError
from reasoning_graphs.graphs._tot_game24 import GAME24_PROPOSE_PROMPT, GAME24_VALUE_PROMPT
from reasoning_graphs.graphs._tot_parts import level_calls, read_label
from reasoning_graphs.graphs._tot_tasks import GSM8K_PROPOSE_PROMPT, GSM8K_VALUE_PROMPT
from reasoning_graphs.graphs.tree_of_thoughts import (
    BUILTIN_TASKS,
    SearchPlan,
    ThoughtNode,
    ToTSettings,
    build_tree_of_thoughts_graph,
    render_tree,
)
from reasoning_graphs.models import ModelClient, ModelSettings, RetrySettings, resolve
from reasoning_graphs.testing import ScriptedChatModel, prompt_text
from reasoning_graphs.types import Verdict
from reasoning_graphs.verifiers import from_spec, solve_24
from tests.conftest import DATA, thread

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)

# --- scripted Game of 24 players ----------------------------------------------------------------


def fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def last_numbers(text: str, prefix: str) -> list[Fraction]:
    line = re.findall(rf"^{prefix} (.*)$", text, re.MULTILINE)[-1]
    return [Fraction(x) for x in line.split()]


def valid_steps(values: list[Fraction]) -> list[tuple[str, list[Fraction]]]:
    """Every arithmetically correct step from ``values``, in the paper's format."""
    steps = []
    for i, j in combinations(range(len(values)), 2):
        a, b = values[i], values[j]
        rest = [v for k, v in enumerate(values) if k not in (i, j)]
        hi, lo = max(a, b), min(a, b)
        options = [(a, "+", b, a + b), (a, "*", b, a * b), (hi, "-", lo, hi - lo)]
        options += [(hi, "/", lo, hi / lo)] if lo else []
        for x, op, y, result in options:
            left = sorted([*rest, result])
            steps.append((f"{fmt(x)} {op} {fmt(y)} = {fmt(result)} (left: {' '.join(map(fmt, left))})", left))
    return steps


def solvable(values: list[Fraction]) -> bool:
    return solve_24(values) is not None  # type: ignore[arg-type]  # exact search works on Fractions


def rng_for(text: str, salt: str = "") -> random.Random:
    return random.Random(hashlib.sha256((salt + text).encode()).hexdigest())


def is_value(text: str) -> bool:
    return "Evaluate if the given numbers can reach 24" in text


def oracle_proposal(text: str, breadth: int = 5) -> str:
    """Correct steps found by brute force: up to two that keep the puzzle solvable, the rest dead
    ends, shuffled so that the order gives nothing away (the valuer has to pick)."""
    steps = valid_steps(last_numbers(text, "Input:"))
    rng = rng_for(text)
    good = [s for s, left in steps if solvable(left)][:2]
    bad = [s for s, left in steps if not solvable(left)]
    picked = good + rng.sample(bad, min(len(bad), breadth - len(good)))
    rng.shuffle(picked)
    return "\n".join(picked)


def random_proposal(text: str, breadth: int = 5) -> str:
    steps = [s for s, _ in valid_steps(last_numbers(text, "Input:"))]
    return "\n".join(rng_for(text).sample(steps, min(breadth, len(steps))))


def informed_value(text: str) -> str:
    return "sure" if solvable(last_numbers(text, "Numbers:")) else "impossible"


def noise_value(text: str) -> str:
    return rng_for(text, "noise").choice(["sure", "likely", "impossible"])


def player(proposer: Any = oracle_proposal, valuer: Any = informed_value, **kw: Any) -> Any:
    def respond(messages: list[BaseMessage]) -> str:
        text = prompt_text(messages)
        return valuer(text) if is_value(text) else proposer(text, **kw)

    return respond


def fake(responder: Any = None, replies: list[Any] | None = None, name: str = "scripted") -> Any:
    model = ScriptedChatModel(replies=replies or [], responder=responder or player(), model_name=name)
    return model, ModelClient(model, retry=NO_WAIT)


def puzzles(n: int, seed: int = 24) -> list[str]:
    with (DATA / "game24.csv").open(newline="") as handle:
        rows = [row["Puzzles"] for row in csv.DictReader(handle)]
    return random.Random(seed).sample(rows, n)


def steps_so_far(prompt: str) -> list[str]:
    block = prompt.split("Steps so far:\n", 1)[1].split("\nInput:", 1)[0]
    return [] if block == "(none yet)" else block.splitlines()


def propose_prompts(model: ScriptedChatModel) -> list[str]:
    return [p for p in model.prompt_texts if not is_value(p)]


def check_tree(out: dict[str, Any], plan: SearchPlan) -> None:
    tree: dict[str, ThoughtNode] = out["tree"]
    for node in tree.values():
        if node.parent is not None:
            parent = tree[node.parent]
            assert node.depth == parent.depth + 1 and not parent.terminal
            assert node.partial == (f"{parent.partial}\n{node.text}" if parent.partial else node.text)
        assert node.depth <= plan.max_depth
        assert (node.verdict is not None) == (node.terminal and node.score is not None)
    for depth in range(1, plan.max_depth + 1):
        assert sum(n.selected and n.depth == depth for n in tree.values()) <= plan.beam_width
    for node_id in tree:
        assert sum(n.parent == node_id for n in tree.values()) <= plan.breadth


def run(graph: Any, saver: Any, payload: dict[str, Any], tid: str = "t1") -> dict[str, Any]:
    return dict(graph.compile(checkpointer=saver).invoke(payload, thread(tid)))


# --- behaviour ----------------------------------------------------------------------------------


def test_oracle_solves_a_puzzle_and_the_answer_is_rebuilt_in_code(saver: Any) -> None:
    model, client = fake()
    out = run(build_tree_of_thoughts_graph(model=client), saver, {"task": "4 9 10 13"})
    assert out["stop_reason"] == "passed" and out["passed"] is True and out["any_passed"] is True
    assert from_spec("game24:4 9 10 13")(out["final_answer"]).passed
    node = out["tree"][out["answer_node"]]
    assert node.terminal and node.depth == 3 and node.answer == out["final_answer"]
    assert out["usage"].total.calls == model.calls and out["malformed"] == 0
    check_tree(out, SearchPlan())


def test_each_propose_prompt_carries_its_parents_partial_solution(saver: Any) -> None:
    # LangGraph's ToT tutorial never shows the parent to the expand step; here each prompt must.
    model, client = fake(player(random_proposal, informed_value))
    graph = build_tree_of_thoughts_graph(model=client).compile(checkpointer=saver)
    out = graph.invoke({"task": "1 5 5 5"}, thread())
    tree: dict[str, ThoughtNode] = out["tree"]
    expanded = [n for n in tree.values() if any(c.parent == n.id for c in tree.values())]
    prompts = propose_prompts(model)
    assert len(prompts) == len(expanded) and len(expanded) > 2
    for node in expanded:
        steps = node.partial or "(none yet)"
        left = " ".join(str(x) for x in node.data["left"])  # type: ignore[union-attr]
        block = f"Steps so far:\n{steps}\nInput: {left}\n"
        assert sum(block in p for p in prompts) == 1, node.id
    reads = graph.get_state(thread()).values["reads"]
    deep = [r for r in reads if r.node == "proposer" and len(r.labels) == 3]
    assert deep and all(r.labels[1].count(".") == 1 and r.labels[2].startswith(r.labels[1]) for r in deep)


def test_oracle_solves_a_sample_of_real_puzzles() -> None:
    _, client = fake()
    graph = build_tree_of_thoughts_graph(model=client).compile()
    for puzzle in puzzles(10):
        out = graph.invoke({"task": puzzle})
        assert out["passed"] is True and out["stop_reason"] == "passed", puzzle
        assert from_spec(f"game24:{puzzle}")(out["final_answer"]).passed


@pytest.mark.slow
def test_oracle_solves_100_sampled_puzzles() -> None:
    _, client = fake()
    graph = build_tree_of_thoughts_graph(model=client).compile()
    results = [graph.invoke({"task": p}) for p in puzzles(100)]
    assert all(
        r["passed"] and from_spec(f"game24:{p}")(r["final_answer"]).passed
        for p, r in zip(puzzles(100), results, strict=True)
    )


def test_value_guided_beam_beats_random_choice_at_equal_calls() -> None:
    """Same random proposer, same graph and settings; one arm's values are informative, the other's
    are noise (a random ranking of the same proposals, i.e. random choice). Proposals are a
    function of the prompt, so both arms see the same candidates for the same state."""
    plan = ToTSettings(beam_width=2, breadth=4, value_samples=1)
    arms = {}
    for name, valuer in (("guided", informed_value), ("random", noise_value)):
        _, client = fake(player(random_proposal, valuer, breadth=4))
        graph = build_tree_of_thoughts_graph(model=client, settings=plan).compile()
        arms[name] = [graph.invoke({"task": p}) for p in puzzles(60, seed=7)]
    guided = [r["passed"] for r in arms["guided"]]
    rand = [r["passed"] for r in arms["random"]]
    only_guided = sum(g and not r for g, r in zip(guided, rand, strict=True))
    only_random = sum(r and not g for g, r in zip(guided, rand, strict=True))
    # Exact one-sided sign test on the discordant pairs.
    n = only_guided + only_random
    p_value = sum(math.comb(n, k) for k in range(only_guided, n + 1)) / 2**n
    assert p_value < 0.001, (sum(guided), sum(rand), only_guided, only_random)
    calls = {name: sum(r["usage"].total.calls for r in runs) for name, runs in arms.items()}
    assert abs(calls["guided"] - calls["random"]) <= 0.02 * calls["random"], calls  # equal cost


def test_no_solution_ends_completed_with_the_top_valued_terminal(saver: Any) -> None:
    def dead_end(text: str) -> str:
        values = last_numbers(text, "Input:")
        return "\n".join(s for s, left in valid_steps(values) if not solvable(left))

    model, client = fake(player(dead_end, informed_value))
    out = run(build_tree_of_thoughts_graph(model=client), saver, {"task": "4 9 10 13"})
    assert out["stop_reason"] == "completed" and out["passed"] is False and out["any_passed"] is False
    assert out["final_answer"] is not None and out["tree"][out["answer_node"]].terminal
    assert out["depth"] == 3 and all(n.score == 0.0 for n in out["tree"].values() if n.terminal)
    assert model.calls == out["usage"].total.calls


def test_malformed_proposals_are_dropped_and_counted(saver: Any) -> None:
    reply = "\n".join(
        [
            "Possible next steps:",  # echo
            "1. 4 + 9 = 13 (left: 10 13 13)",  # numbered, fine
            "4 + 9 = 14 (left: 10 13 14)",  # wrong arithmetic
            "4 + 5 = 9 (left: 9 9 10)",  # 5 is not left
            "** 13 - 9 = 4 (left: 4 4 10) **",  # markdown, fine
            "4 + 9 = 13 (left: 10 13 13)",  # duplicate: dropped, not malformed
            "I think we should multiply",  # prose
            "10 / 4 = 2.5 (left: 2.5 9 13)",  # decimal result, fine (stored as 5/2)
            "",
        ]
    )
    model, client = fake(
        player(lambda text: reply if "(none yet)" in text else "", lambda text: "impossible")
    )
    out = run(
        build_tree_of_thoughts_graph(model=client, settings=ToTSettings(max_depth=3, beam_width=1)),
        saver,
        {"task": "4 9 10 13"},
    )
    children = sorted((n for n in out["tree"].values() if n.depth == 1), key=lambda n: n.id)
    assert [c.text for c in children] == [
        "4 + 9 = 13 (left: 10 13 13)",
        "13 - 9 = 4 (left: 4 4 10)",
        "10 / 4 = 5/2 (left: 5/2 9 13)",
    ]
    assert out["malformed"] == 4
    assert out["stop_reason"] == "completed" and out["final_answer"] is None
    assert model.calls == 1 + 3 * 3 + 1  # root proposal, three states valued thrice, one dry expansion


def test_budget_refuses_a_level_that_does_not_fit_as_a_whole(saver: Any) -> None:
    level_one = level_calls(SearchPlan(), 1, 0)
    model, client = fake(player(random_proposal, informed_value))
    out = run(
        build_tree_of_thoughts_graph(model=client), saver, {"task": "1 5 5 5", "max_calls": level_one + 5}
    )
    assert out["stop_reason"] == "budget" and out["depth"] == 1
    assert model.calls == out["usage"].total.calls <= level_one  # level 2 never started
    assert out["passed"] is False and out["final_answer"] is None


def test_budget_stop_returns_the_best_finished_candidate(saver: Any) -> None:
    def respond(messages: list[BaseMessage]) -> str:
        return (
            "likely"
            if "Partial solution:" in prompt_text(messages)
            else "The answer is 17.\nMultiply 3 by 6."
        )

    model, client = fake(respond)
    out = run(
        build_tree_of_thoughts_graph(model=client, settings=ToTSettings(task="gsm8k")),
        saver,
        {"task": "3 bags of 6 apples: how many apples?", "verifier": "numeric:18", "max_calls": 16},
    )
    # Level 1 planned 1 + 5 * 3 calls and used 1 + 3; level 2 would need 16 again: it never starts.
    assert out["stop_reason"] == "budget" and model.calls == out["usage"].total.calls == 4
    assert out["final_answer"] == "17" and out["passed"] is False and out["any_passed"] is False
    assert out["tree"][out["answer_node"]].verdict.feedback == "Expected 18, got 17."


def test_model_failure_ends_with_error_and_keeps_the_tree(saver: Any) -> None:
    model, client = fake(replies=[{"raise": "auth"}])
    out = run(build_tree_of_thoughts_graph(model=client), saver, {"task": "4 9 10 13"})
    assert out["stop_reason"] == "error" and out["final_answer"] is None and model.calls == 1
    assert out["usage"].total.failed_calls == 1 and list(out["tree"]) == ["0"]


def test_gsm8k_task_steps_to_a_verified_answer(saver: Any) -> None:
    question = "Ann has 3 bags with 6 apples each. How many apples does she have?"

    def respond(messages: list[BaseMessage]) -> str:
        text = prompt_text(messages)
        if "Partial solution:" in text:
            return "Looks fine.\nsure" if "3 * 6" in text else "impossible"
        if "The answer is" in text.split("Steps so far:")[1].split("Write up to")[0]:
            raise AssertionError("a terminal node was expanded")
        if "3 * 6 = 18" in text:
            return "So the answer is 17.\nThe answer is 18."
        return "Step 1: 3 * 6 = 18 apples.\n- She has 3 + 6 = 9 apples.\n:::"

    model, client = fake(respond)
    graph = build_tree_of_thoughts_graph(model=client, settings=ToTSettings(beam_width=1))
    out = run(graph, saver, {"task": question, "kind": "gsm8k", "verifier": "numeric:18"})
    assert out["stop_reason"] == "passed" and out["final_answer"] == "18" and out["malformed"] == 1
    terminals = sorted((n for n in out["tree"].values() if n.terminal), key=lambda n: n.id)
    assert [(n.answer, n.verdict.passed) for n in terminals] == [("17", False), ("18", True)]  # type: ignore[union-attr]
    assert all(question in p for p in model.prompt_texts)
    assert any("Steps so far:\n3 * 6 = 18 apples.\n" in p for p in propose_prompts(model))


def test_the_last_levels_open_nodes_are_not_valued(saver: Any) -> None:
    def respond(messages: list[BaseMessage]) -> str:
        text = prompt_text(messages)
        if "Partial solution:" in text:
            return "likely"
        return "Add the numbers.\nMultiply the numbers."

    model, client = fake(respond)
    graph = build_tree_of_thoughts_graph(model=client, settings=ToTSettings(max_depth=2, value_samples=2))
    out = run(graph, saver, {"task": "What is 2 + 2?", "kind": "gsm8k", "verifier": "numeric:4"})
    assert out["stop_reason"] == "completed" and out["final_answer"] is None
    values = [p for p in model.prompt_texts if "Partial solution:" in p]
    assert len(values) == 2 * 2  # two depth-1 states, two samples each; depth 2 is never valued
    assert all(n.score is None for n in out["tree"].values() if n.depth == 2)
    assert model.calls == out["usage"].total.calls == 1 + 4 + 2


def test_input_is_validated_before_any_call(saver: Any) -> None:
    model, client = fake()
    graph = build_tree_of_thoughts_graph(model=client).compile(checkpointer=saver)
    bad = [
        ({"task": "4 9 10"}, "four whole numbers"),
        ({"task": "4 9 10 13", "kind": "chess"}, "unknown task kind 'chess'"),
        ({"task": "How many?", "kind": "gsm8k"}, "needs a verifier"),
        ({"task": "4 9 10 13", "beam_width": 0}, "bad search setting"),
        ({"task": "4 9 10 13", "max_depth": 2}, "needs max_depth >= 3"),
        ({"task": "4 9 10 13", "verifier": "nope:1"}, "nope"),
    ]
    for i, (payload, message) in enumerate(bad):
        with pytest.raises(InputError, match=message):
            graph.invoke(payload, thread(f"bad{i}"))
    assert model.calls == 0


def test_bad_wiring_is_rejected_at_build_time() -> None:
    with pytest.raises(ValueError, match="roster is empty"):
        build_tree_of_thoughts_graph(roster=[])
    with pytest.raises(ValueError, match="unknown task 'chess'"):
        build_tree_of_thoughts_graph(settings=ToTSettings(task="chess"))


def test_verifier_spec_and_factory_verifier_override_the_task_default(saver: Any) -> None:
    def never(candidate: str) -> Verdict:
        return Verdict(passed=False, feedback="never")

    _, client = fake()
    out = run(
        build_tree_of_thoughts_graph(model=client, verifier=never), saver, {"task": "4 9 10 13"}, tid="a"
    )
    assert out["stop_reason"] == "completed" and out["passed"] is False
    _, client = fake()
    out = run(
        build_tree_of_thoughts_graph(model=client, verifier=never),
        saver,
        {"task": "4 9 10 13", "verifier": "game24:4 9 10 13"},
        tid="b",
    )
    assert out["passed"] is True


def test_roster_members_expand_frontier_nodes_in_turn(saver: Any) -> None:
    _, a = fake(player(random_proposal, informed_value), name="a")
    _, b = fake(player(random_proposal, informed_value), name="b")
    out = run(build_tree_of_thoughts_graph(roster=[a, b]), saver, {"task": "1 5 5 5"})
    assert {n.model for n in out["tree"].values() if n.depth == 2} == {"fake:a", "fake:b"}
    assert set(out["usage"].by_node) == {"proposer", "valuer"}


def test_async_invoke_matches_sync_invoke() -> None:
    outs = []
    for mode in ("sync", "async"):
        _, client = fake(player(random_proposal, informed_value))
        graph = build_tree_of_thoughts_graph(model=client).compile(checkpointer=InMemorySaver())
        payload = {"task": "3 3 8 8"}
        outs.append(
            graph.invoke(payload, thread())
            if mode == "sync"
            else asyncio.run(graph.ainvoke(payload, thread()))
        )
    sync, async_ = outs
    assert sync["tree"] == async_["tree"]
    for key in ("final_answer", "passed", "stop_reason", "malformed"):
        assert sync[key] == async_[key]
    assert sync["usage"].total.calls == async_["usage"].total.calls


class Crash(BaseException):
    """Not an Exception: the seam does not turn it into a model error, so the run stops."""


def test_resume_after_a_crash_does_not_rerun_finished_levels(saver: Any) -> None:
    crashed: list[str] = []
    inner = player(random_proposal, informed_value)

    def respond(messages: list[BaseMessage]) -> str:
        text = prompt_text(messages)
        if is_value(text) and len(last_numbers(text, "Numbers:")) == 2 and not crashed:
            crashed.append(text)
            raise Crash
        return inner(messages)

    model, client = fake(respond)
    graph = build_tree_of_thoughts_graph(model=client).compile(checkpointer=saver)
    with pytest.raises(Crash):
        graph.invoke({"task": "1 5 5 5"}, thread())
    assert graph.get_state(thread()).next == ("evaluate",)
    before = model.prompt_texts
    out = graph.invoke(None, thread())
    after = model.prompt_texts[len(before) :]
    assert out["stop_reason"] in ("passed", "completed") and out["depth"] >= 2
    proposals = [p for p in before if not is_value(p)]  # levels 1 and 2 finished before the crash
    level_one_values = [p for p in before if is_value(p) and len(last_numbers(p, "Numbers:")) == 3]
    assert len(proposals) > 1 and level_one_values
    assert not any(p in after for p in proposals + level_one_values)
    assert crashed[0] in after  # the interrupted node runs again


def test_fork_before_the_first_selection_with_a_wider_beam(saver: Any) -> None:
    model, client = fake(player(random_proposal, informed_value, breadth=8))
    cfg = ToTSettings(breadth=8, beam_width=2, value_samples=1)
    graph = build_tree_of_thoughts_graph(model=client, settings=cfg).compile(checkpointer=saver)
    original = graph.invoke({"task": "2 3 5 12"}, thread())
    original_head = graph.get_state(thread()).config
    assert sum(n.selected and n.depth == 1 for n in original["tree"].values()) == 2
    snapshot = next(
        s for s in graph.get_state_history(thread()) if s.next == ("select",) and s.values["depth"] == 0
    )
    wider = snapshot.values["plan"].model_copy(update={"beam_width": 5})
    fork = graph.update_state(snapshot.config, {"plan": wider}, as_node="evaluate")
    calls_before = model.calls
    forked = graph.invoke(None, fork)
    new_prompts = model.prompt_texts[calls_before:]
    beam = [n for n in forked["tree"].values() if n.selected and n.depth == 1]
    assert len(beam) == 5
    assert not any("(none yet)" in p for p in new_prompts)  # level 1 was not asked again
    level_two = [p for p in new_prompts if not is_value(p) and len(steps_so_far(p)) == 1]
    assert len(level_two) == 5
    assert graph.get_state(original_head).values["tree"] == original["tree"]  # the original is untouched
    check_tree(dict(forked), wider)


def test_topology_snapshot() -> None:
    _, client = fake()
    drawing = build_tree_of_thoughts_graph(model=client).compile().get_graph().draw_mermaid()
    edges = sorted(line.strip() for line in drawing.splitlines() if "-->" in line or "-.->" in line)
    assert edges == [
        "__start__ --> start;",
        "evaluate --> select;",
        "finish --> __end__;",
        "propose --> evaluate;",
        "select -.-> finish;",
        "select -.-> propose;",
        "start -.-> finish;",
        "start -.-> propose;",
    ]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    beam=st.integers(1, 4),
    breadth=st.integers(1, 5),
    depth=st.integers(3, 4),
    samples=st.integers(1, 3),
    max_calls=st.integers(1, 60),
    flaky=st.lists(st.booleans(), max_size=8),
    seed=st.integers(0, 50),
)
def test_beam_depth_and_budget_always_hold(
    beam: int, breadth: int, depth: int, samples: int, max_calls: int, flaky: list[bool], seed: int
) -> None:
    puzzle = puzzles(1, seed=seed)[0]
    replies: list[Any] = [{"raise": "transient"} for f in flaky if f]
    model, client = fake(player(random_proposal, noise_value, breadth=breadth + 1), replies=replies)
    cfg = ToTSettings(beam_width=beam, breadth=breadth, max_depth=depth, value_samples=samples)
    out = (
        build_tree_of_thoughts_graph(model=client, settings=cfg)
        .compile()
        .invoke({"task": puzzle, "max_calls": max_calls})
    )
    assert out["usage"].total.calls <= max_calls
    assert model.calls == out["usage"].total.calls
    # Three transient failures in a row exhaust one call's retries: a failure for good.
    assert out["stop_reason"] in ("passed", "completed", "budget") or (
        out["stop_reason"] == "error" and sum(flaky) >= 3
    )
    check_tree(
        dict(out), SearchPlan(beam_width=beam, breadth=breadth, max_depth=depth, value_samples=samples)
    )


# --- prompts, values and rendering ----------------------------------------------------------------


def test_every_prompt_renders_and_values_are_read_from_the_last_line() -> None:
    node = BUILTIN_TASKS["game24"].root("13 4 10 9")
    assert node.text == "4 9 10 13"
    assert "Input: 4 9 10 13" in BUILTIN_TASKS["game24"].propose_prompt("4 9 10 13", node, 5)
    assert BUILTIN_TASKS["game24"].value_prompt("4 9 10 13", node).endswith("Numbers: 4 9 10 13\n")
    assert GAME24_PROPOSE_PROMPT.variables == {"puzzle", "steps", "left", "breadth"}
    assert GAME24_VALUE_PROMPT.variables == {"left"}
    assert GSM8K_PROPOSE_PROMPT.variables == {"task", "steps", "breadth"}
    assert GSM8K_VALUE_PROMPT.variables == {"task", "steps"}
    assert read_label("10 + 14 = 24\nSure") == "sure"
    assert read_label("it is likely, not sure\nimpossible.") == "impossible"
    assert read_label("maybe sure\n\n(no label here)") == "sure"
    assert read_label("no idea") is None


def test_render_tree_shows_structure_values_and_verdicts() -> None:
    _, client = fake()
    out = (
        build_tree_of_thoughts_graph(model=client, settings=ToTSettings(beam_width=1))
        .compile()
        .invoke({"task": "4 9 10 13"})
    )
    text = render_tree(out["tree"])
    lines = text.splitlines()
    assert lines[0] == "[0] 4 9 10 13"
    assert all(line.startswith("  ") for line in lines[1:])
    passed = next(line for line in lines if "PASSED" in line)
    assert passed.startswith("      [0.") and f"=> {out['final_answer']} (PASSED)" in passed
    assert "value 60 (sure sure sure)  *beam" in text
    as_json = {k: v.model_dump(mode="json") for k, v in out["tree"].items()}
    assert render_tree(as_json) == text
    assert render_tree({}) == "(empty tree)"


# --- the embedded model -------------------------------------------------------------------------


@pytest.mark.local_model
def test_a_real_run_on_the_embedded_model_stays_in_budget_with_a_consistent_tree() -> None:
    client = resolve("local:smollm2", ModelSettings(max_tokens=64))
    cfg = ToTSettings(breadth=3, beam_width=2, value_samples=1)
    graph = build_tree_of_thoughts_graph(model=client, settings=cfg).compile(checkpointer=InMemorySaver())
    out = graph.invoke({"task": "4 9 10 13", "max_calls": 14}, thread())
    assert out["stop_reason"] in ("passed", "completed", "budget")
    assert out["usage"].total.calls <= 14 and out["usage"].total.failed_calls == 0
    check_tree(dict(out), SearchPlan(breadth=3, beam_width=2, value_samples=1))
    step = re.compile(r"^\S+ [-+*/] \S+ = \S+ \(left: [^)]*\)$")
    assert all(step.match(n.text) for n in out["tree"].values() if n.depth > 0)
    assert all(n.verdict is not None for n in out["tree"].values() if n.terminal)
    if out["final_answer"] is not None:
        assert out["tree"][out["answer_node"]].answer == out["final_answer"]
