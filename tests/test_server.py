"""Every graph served by ``langgraph dev`` (offline, scripted fake), driven with ``langgraph-sdk``.

The server is started from ``langgraph.json`` exactly as a user would start it, without
``--allow-blocking``: a node that blocks the event loop fails its run with ``BlockingError``.
The scripted fake (``notebooks/demo_model.json``) is chosen through ``REASONING_GRAPHS_MODEL``;
nothing leaves the machine (analytics and the version check are switched off).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.servers import free_port, stop, wait_until_up

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "notebooks" / "demo_model.json"
INPUTS: dict[str, dict[str, Any]] = json.loads((ROOT / "notebooks" / "demo_inputs.json").read_text())
STARTUP_TIMEOUT_S = 90.0
RUN_TIMEOUT_S = 60.0

AGENTS = ("architect", "performance")
"""The Studio debate's agents (``agent-<role>``); each has its own node per step."""
EXPECTED: dict[str, tuple[str, str, set[str]]] = {
    "repair": ("passed", "The answer is 150.", {"start", "generate", "verify", "repair", "finish"}),
    "self_refine": ("judge_stop", "Canberra", {"start", "generate", "critique", "refine", "select"}),
    "reflection": (
        "completed",
        "type hints",
        {"start", "gather", "frame", "critique", "synthesize", "finish"},
    ),
    "dialectic": (
        "judge_stop",
        "spike first",
        {"start", "thesis", "antithesis", "synthesis", "judge", "finish"},
    ),
    "tot": ("passed", "(13 - 9) * (10 - 4)", {"start", "propose", "evaluate", "select", "finish"}),
    "debate": (
        "completed",
        "Redis cache",
        {
            "start",
            *(f"{step}.agent-{who}" for step in ("ask", "propose", "critique", "refine") for who in AGENTS),
            "clarify",
            "judge",
        },
    ),
    "adversarial": ("completed", "con: ", {"start", "advocate", "arbitrate", "finish"}),
    "perspectives": ("completed", "conditional: ", {"start", "view", "compare", "synthesize", "finish"}),
    "evaluation": ("completed", "| 8 | 7 | 6 | 8 | 7 | 8 | 7 |", {"start", "evaluate", "finish"}),
    "agent": ("completed", "S-90D51265", {"start", "act", "observe", "finish"}),
}
"""Each served graph's stop reason, a piece of its final answer, and nodes its stream must show."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Start ``langgraph dev`` on a free loopback port; yield its URL and log; stop it at the end."""
    workdir = tmp_path_factory.mktemp("langgraph-dev")  # the server keeps .langgraph_api/ here
    log = workdir / "server.log"
    port = free_port()
    env = os.environ | {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "REASONING_GRAPHS_MODEL": f"fake:{SCRIPT}",
        "LANGSMITH_TRACING": "false",
    }
    env.pop("LANGSMITH_API_KEY", None)
    command = [str(Path(sys.executable).with_name("langgraph")), "dev", "--no-browser", "--no-reload"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--config", str(ROOT / "langgraph.json")]
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            start_new_session=True,  # its own process group, stopped as a whole
        )
    try:
        wait_until_up(
            proc, f"http://127.0.0.1:{port}/ok", log, name="langgraph dev", timeout=STARTUP_TIMEOUT_S
        )
        yield f"http://127.0.0.1:{port}", log
    finally:
        stop(proc, group=True)


@pytest.fixture
def client(server: tuple[str, Path]) -> Iterator[SyncLangGraphClient]:
    with get_sync_client(url=server[0], api_key=None, timeout=RUN_TIMEOUT_S) as sdk:
        yield sdk


def _stream(client: SyncLangGraphClient, thread_id: str, graph: str, **options: Any) -> list[Any]:
    parts = list(client.runs.stream(thread_id, graph, stream_mode="updates", **options))
    errors = [p.data for p in parts if p.event == "error"]
    assert not errors, f"{graph}: the run failed: {errors}"
    return parts


def _nodes(parts: list[Any]) -> set[str]:
    return {node for p in parts if p.event == "updates" for node in p.data}


def test_serves_every_graph_in_langgraph_json(client: SyncLangGraphClient) -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    served = {a["graph_id"] for a in client.assistants.search(limit=100)}
    assert served == set(config["graphs"]) == {*EXPECTED, "repair_approval"}


def test_context_schema_offers_model_roster_and_limits(client: SyncLangGraphClient) -> None:
    assistant = client.assistants.search(graph_id="repair")[0]
    schema = client.assistants.get_schemas(assistant["assistant_id"])["context_schema"]
    assert set(schema["properties"]) == {"model", "roster", "max_calls", "max_tokens"}
    assert schema["properties"]["model"]["examples"][0] == f"fake:{SCRIPT}"  # the server default


@pytest.mark.parametrize("graph", sorted(EXPECTED))
def test_graph_runs_on_the_server(client: SyncLangGraphClient, server: tuple[str, Path], graph: str) -> None:
    thread = client.threads.create()
    parts = _stream(client, thread["thread_id"], graph, input=INPUTS[graph])
    stop_reason, answer, nodes = EXPECTED[graph]
    assert nodes <= _nodes(parts), f"{graph}: streamed nodes {sorted(_nodes(parts))}"
    state = client.threads.get_state(thread["thread_id"])
    values = state["values"]
    assert state["next"] == []
    assert values["stop_reason"] == stop_reason
    assert answer in values["final_answer"]
    assert values["usage"]["total"]["calls"] > 0
    assert set(values["usage"]["by_model"]) <= {f"fake:{SCRIPT}"}
    assert "BlockingError" not in server[1].read_text()


def test_context_chooses_the_model_per_run(client: SyncLangGraphClient, tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"routes": [{"match": "How far does it go", "reply": "150 km."}]}))
    thread = client.threads.create()
    _stream(client, thread["thread_id"], "repair", input=INPUTS["repair"], context={"model": f"fake:{other}"})
    values = client.threads.get_state(thread["thread_id"])["values"]
    assert values["stop_reason"] == "passed"
    assert values["attempts"] == 1
    assert set(values["usage"]["by_model"]) == {f"fake:{other}"}


def test_debate_pauses_for_clarifications_and_resumes(client: SyncLangGraphClient) -> None:
    """Without ``answers`` the debate asks a person (``interrupt()``); ``Command(resume=...)`` answers."""
    thread_id = client.threads.create()["thread_id"]
    _stream(client, thread_id, "debate", input={"task": INPUTS["debate"]["task"]})
    paused = client.threads.get_state(thread_id)
    assert paused["next"] == ["clarify"]
    (pending,) = paused["interrupts"]
    questions = {q["id"]: q["question"] for q in pending["value"]["questions"]}
    assert questions == {
        "agent-architect:1": "How long must a short link stay valid?",
        "agent-performance:1": "What share of requests are redirects rather than new links?",
    }
    parts = _stream(client, thread_id, "debate", command={"resume": {"agent-architect:1": "Five years."}})
    assert not {n for n in _nodes(parts) if n.startswith("ask.")}  # the questions are not asked again
    done = client.threads.get_state(thread_id)["values"]
    assert done["stop_reason"] == "completed"
    assert [c["answer"] for c in done["clarifications"]] == ["Five years.", "NA"]


def test_repair_approval_rejects_then_accepts(client: SyncLangGraphClient) -> None:
    thread_id = client.threads.create()["thread_id"]
    _stream(client, thread_id, "repair_approval", input=INPUTS["repair"])
    (first,) = client.threads.get_state(thread_id)["interrupts"]
    assert first["value"]["kind"] == "approval" and first["value"]["attempt"] == 2
    _stream(
        client, thread_id, "repair_approval", command={"resume": {"approved": False, "feedback": "Say km."}}
    )
    (second,) = client.threads.get_state(thread_id)["interrupts"]
    assert second["value"]["attempt"] == 3
    _stream(client, thread_id, "repair_approval", command={"resume": {"approved": True}})
    done = client.threads.get_state(thread_id)["values"]
    assert done["stop_reason"] == "passed" and done["attempts"] == 3
    assert [(r["attempt"], r["approved"], r["feedback"]) for r in done["reviews"]] == [
        (2, False, "Say km."),
        (3, True, ""),
    ]
    assert done["outputs"]["attempt:2"]["data"]["feedback"] == "A reviewer rejected this answer: Say km."


def test_interrupted_run_resumes(client: SyncLangGraphClient) -> None:
    """Pause before the verifier, let a person edit the candidate, then continue the same run."""
    thread_id = client.threads.create()["thread_id"]
    _stream(client, thread_id, "repair", input=INPUTS["repair"], interrupt_before=["verify"])
    paused = client.threads.get_state(thread_id)
    assert paused["next"] == ["verify"]
    assert paused["values"]["candidate"] == "It goes 120 km."
    assert "final_answer" not in paused["values"]

    client.threads.update_state(
        thread_id, {"candidate": "2.5 hours at 60 km per hour: 150 km."}, as_node="generate"
    )
    parts = _stream(client, thread_id, "repair", input=None)
    assert "generate" not in _nodes(parts)  # resumed where it paused: no new first attempt
    done = client.threads.get_state(thread_id)["values"]
    assert done["stop_reason"] == "passed"
    assert done["final_answer"] == "2.5 hours at 60 km per hour: 150 km."
    assert done["usage"]["total"]["calls"] == 1
    history = client.threads.get_history(thread_id, limit=50)
    assert any(h["next"] == ["verify"] for h in history)


def test_interrupted_run_continues_without_edits(client: SyncLangGraphClient) -> None:
    thread_id = client.threads.create()["thread_id"]
    _stream(client, thread_id, "repair", input=INPUTS["repair"], interrupt_before=["verify"])
    assert client.threads.get_state(thread_id)["next"] == ["verify"]
    _stream(client, thread_id, "repair", input=None)
    done = client.threads.get_state(thread_id)["values"]
    assert done["stop_reason"] == "passed"
    assert [h["passed"] for h in done["history"]] == [False, True]
    assert done["usage"]["total"]["calls"] == 2
