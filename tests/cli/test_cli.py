from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.cli import main

ROOT = Path(__file__).resolve().parents[2]


def script(tmp_path: Path, routes: list[dict[str, Any]], **extra: Any) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"routes": routes, **extra}))
    return f"fake:{path}"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "runs.sqlite")


def test_ask_prints_one_json_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model = script(tmp_path, [{"match": "prime", "reply": "7"}])
    code, out, _ = cli(capsys, "ask", "Name a prime number.", "--model", model, "--json")
    data = json.loads(out)
    assert code == 0 and data["answer"] == "7" and data["usage"]["calls"] == 1
    assert data["usage"]["output_tokens"] > 0


@pytest.mark.parametrize(
    ("model", "needle"),
    [
        ("nope:x", "openai, google, local, fake"),
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("gpt4", "PROVIDER:MODEL"),
    ],
)
def test_bad_model_exits_4_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, model: str, needle: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, _out, err = cli(capsys, "ask", "hi", "--model", model)
    assert code == 4 and needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_models_lists_every_provider(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "models", "--json")
    rows = {r["provider"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {"openai", "google", "local", "fake"}
    assert rows["fake"]["usable"] is True


def test_verify_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "verify", "--verifier", "game24:4 9 10 13", "--candidate", "(13-9)*(10-4)")[0] == 0
    code, out, _ = cli(
        capsys, "verify", "--verifier", "game24:4 9 10 13", "--candidate", "4+9+10+13", "--json"
    )
    assert code == 1 and json.loads(out)["passed"] is False
    code, _, err = cli(capsys, "verify", "--verifier", "nope:1", "--candidate", "x")
    assert code == 2 and "game24" in err


def test_run_then_threads_history_show_and_views(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    model = script(
        tmp_path,
        [
            {"match": "Earlier answers failed", "reply": "(13-9)*(10-4)"},
            {"match": "make 24", "reply": "4+9+10+13"},
        ],
    )
    code, out, err = cli(
        capsys,
        "run",
        "repair",
        "--task",
        "Use 4 9 10 13 to make 24",
        "--verifier",
        "game24:4 9 10 13",
        "--model",
        model,
        "--db",
        db,
        "--thread",
        "t1",
        "--json",
    )
    result = json.loads(out)
    assert code == 0, err
    assert result["thread_id"] == "t1" and result["graph"] == "repair" and result["passed"] is True
    assert result["stop_reason"] == "passed" and result["usage"]["total"]["calls"] == 2
    assert "[verify] attempt 1" in err and "[verify] attempt 2" in err

    code, out, _ = cli(capsys, "threads", "--db", db, "--json")
    threads = json.loads(out)
    assert code == 0 and threads[0]["thread_id"] == "t1" and threads[0]["graph"] == "repair"
    assert threads[0]["status"] == "done" and threads[0]["stop_reason"] == "passed"

    code, out, _ = cli(capsys, "history", "--thread", "t1", "--db", db, "--json")
    assert code == 0 and len(json.loads(out)) >= 6

    code, out, _ = cli(capsys, "show", "--thread", "t1", "--db", db)
    assert code == 0 and "attempt 2" in out and "(13-9)*(10-4)" in out

    code, out, _ = cli(capsys, "show", "--thread", "t1", "--db", db, "--as", "generator", "--json")
    view = json.loads(out)
    assert code == 0 and set(view["outputs"]) == {"task"} and "4+9+10+13" not in out

    code, _, err = cli(capsys, "show", "--thread", "t1", "--db", db, "--as", "nobody")
    assert code == 2 and "generator" in err and "repairer" in err


def test_failed_run_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str) -> None:
    model = script(tmp_path, [{"match": "24", "reply": ["1+1", "2+2", "3+3"]}])
    code, out, _ = cli(
        capsys,
        "run",
        "repair",
        "--task",
        "make 24",
        "--verifier",
        "game24:4 9 10 13",
        "--model",
        model,
        "--db",
        db,
        "--json",
    )
    assert code == 1 and json.loads(out)["stop_reason"] == "max_attempts"


def test_dataset_verifier_supplies_the_task(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    model = script(
        tmp_path,
        [
            {
                "match": "similar_elements",
                "reply": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))",
            }
        ],
    )
    code, out, err = cli(
        capsys, "run", "repair", "--verifier", "mbpp:2", "--model", model, "--db", db, "--json"
    )
    assert code == 0, err
    assert json.loads(out)["passed"] is True


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nope", "--task", "x"], "known graphs: "),
        (["run", "repair"], "missing task"),
        (["run", "repair", "--task", "x", "--verifier", "bogus:1"], "known"),
        (["run", "repair", "--task", "x", "--input", "/nonexistent.json"], "does not exist"),
        (["resume", "--thread", "missing"], "no checkpoint database at"),
        (["show", "--thread", "missing"], "no checkpoint database at"),
        (["history", "--thread", "missing"], "no checkpoint database at"),
        (["threads"], "no checkpoint database at"),
    ],
)
def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], db: str, args: list[str], needle: str) -> None:
    code, _, err = cli(capsys, *args, "--db", db)
    assert code == 2 and needle in err and "Traceback" not in err


def test_unknown_thread_in_an_existing_database_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    model = script(tmp_path, [{"match": "24", "reply": "(13-9)*(10-4)"}])
    cli(
        capsys,
        "run",
        "repair",
        "--task",
        "make 24",
        "--verifier",
        "game24:4 9 10 13",
        "--model",
        model,
        "--db",
        db,
    )
    for command in ("resume", "show", "history"):
        code, _, err = cli(capsys, command, "--thread", "missing", "--db", db)
        assert code == 2 and "no thread 'missing'" in err, command


def test_read_commands_never_create_a_database(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "nested" / "runs.sqlite"
    assert cli(capsys, "threads", "--db", str(target))[0] == 2
    assert not target.parent.exists()


def test_a_fifo_or_deeply_nested_input_is_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, _, err = cli(capsys, "run", "repair", "--input", str(fifo), "--db", db)
    assert code == 2 and "not a regular file" in err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = cli(capsys, "run", "repair", "--input", str(deep), "--db", db)
    assert code == 2 and "nested too deeply" in err


def test_invalid_input_json_names_the_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    bad = tmp_path / "in.json"
    bad.write_text("{not json")
    code, _, err = cli(capsys, "run", "repair", "--input", str(bad), "--db", db)
    assert code == 2 and "not valid JSON" in err
    bad.write_text(json.dumps({"task": "x", "max_calls": -1}))
    code, _, err = cli(capsys, "run", "repair", "--input", str(bad), "--db", db)
    assert code == 2 and "'max_calls'" in err
    bad.write_bytes(b"\xff\xfe{}")
    code, _, err = cli(capsys, "run", "repair", "--input", str(bad), "--db", db)
    assert code == 2 and "UTF-8" in err


@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_bad_max_calls_exits_2(value: str, db: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "reasoning_graphs.cli",
            "run",
            "repair",
            "--task",
            "x",
            "--max-calls",
            value,
            "--db",
            db,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "positive integer" in proc.stderr and "Traceback" not in proc.stderr


def test_not_sqlite_database_is_left_untouched(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("precious notes, not a database\n" * 10)
    before = _sha(path)
    code, _, err = cli(capsys, "threads", "--db", str(path))
    assert code == 4 and "notes.txt" in err and _sha(path) == before
    assert "precious" not in err  # the file's content is never echoed


def test_locked_database_is_reported_and_untouched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    model = script(tmp_path, [{"match": "24", "reply": "(13-9)*(10-4)"}])
    assert (
        cli(
            capsys,
            "run",
            "repair",
            "--task",
            "make 24",
            "--verifier",
            "game24:4 9 10 13",
            "--model",
            model,
            "--db",
            db,
        )[0]
        == 0
    )
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        before = _sha(Path(db))
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "reasoning_graphs.cli",
                "run",
                "repair",
                "--task",
                "make 24",
                "--verifier",
                "game24:4 9 10 13",
                "--model",
                model,
                "--db",
                db,
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert proc.returncode in (2, 4) and "lock" in proc.stderr.lower() and "Traceback" not in proc.stderr
        assert _sha(Path(db)) == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_existing_thread_id_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str) -> None:
    model = script(tmp_path, [{"match": "24", "reply": "(13-9)*(10-4)"}])
    args = [
        "run",
        "repair",
        "--task",
        "make 24",
        "--verifier",
        "game24:4 9 10 13",
        "--model",
        model,
        "--db",
        db,
        "--thread",
        "same",
    ]
    assert cli(capsys, *args)[0] == 0
    code, _, err = cli(capsys, *args)
    assert code == 2 and "already exists" in err


def test_debate_then_evaluate(capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str) -> None:
    model = script(
        tmp_path,
        [
            {
                "match": "Score the response",
                "reply": json.dumps({"security": 11, "overall": "7/10", "rationale": "ok"}),
            }
        ],
        default="Use a token bucket. ANSWER: token bucket",
    )
    code, out, err = cli(capsys, "run", "debate", "--task", "Design a rate limiter", "--rounds", "2",
                         "--model", model, "--db", db, "--thread", "d1", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["stop_reason"] in ("completed", "converged")
    report = tmp_path / "eval.json"
    code, _, err = cli(
        capsys, "evaluate", "--thread", "d1", "--model", model, "--db", db, "--output", str(report)
    )
    data = json.loads(report.read_text())
    assert code == 0, err
    assert data["averages"]["security"] == 10 and data["averages"]["overall"] == 7


def test_evaluate_needs_a_final_solution(capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str) -> None:
    model = script(tmp_path, [{"match": "24", "reply": {"raise": "auth"}}])
    cli(capsys, "run", "repair", "--task", "make 24", "--verifier", "game24:4 9 10 13", "--model", model,
        "--db", db, "--thread", "r1")  # fmt: skip
    code, _, err = cli(capsys, "evaluate", "--thread", "r1", "--model", model, "--db", db)
    assert code == 2 and "final solution" in err


@pytest.mark.parametrize(
    ("graph", "extra"),
    [
        ("self_refine", ["--refinements", "1"]),
        ("reflection", ["--drafts", "2"]),
        ("dialectic", ["--rounds", "1"]),
    ],
)
def test_more_graphs_run_from_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str, graph: str, extra: list[str]
) -> None:
    critique = json.dumps({"problems": [], "suggestions": [], "acceptable": True})
    routes = [
        {"match": "Find concrete problems", "reply": critique},
        {"match": "List the concrete problems", "reply": critique},
        {
            "match": "Frame the answers",
            "reply": json.dumps({"claims": ["c"], "agreements": [], "disagreements": []}),
        },
        {
            "match": "Judge the answer below",
            "reply": json.dumps({"rationale": "ok", "score": 8, "decision": "stop"}),
        },
    ]
    model = script(tmp_path, routes, default="Recursion is a function calling itself on a smaller input.")
    code, out, err = cli(capsys, "run", graph, "--task", "Explain recursion briefly.", "--model", model,
                         "--db", db, "--json", *extra)  # fmt: skip
    result = json.loads(out)
    assert code == 0 and result["graph"] == graph and result["final_answer"], err
    assert result["usage"]["total"]["calls"] >= 2


def test_debate_pauses_for_clarifications_and_resumes_with_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    config = tmp_path / "debate.json"
    config.write_text(json.dumps({
        "agents": [{"id": "a1", "role": "architect"}, {"id": "a2", "role": "security"}],
        "debate": {"rounds": 1, "clarifications": True},
    }))  # fmt: skip
    model = script(
        tmp_path,
        [{"match": "clarifying questions", "reply": json.dumps({"questions": ["How many users?"]})}],
        default="Use a token bucket. ANSWER: token bucket",
    )
    args = ["--model", model, "--db", db]
    code, out, _ = cli(capsys, "run", "debate", "--task", "Design a rate limiter", "--config", str(config),
                       "--thread", "q1", "--json", *args)  # fmt: skip
    paused = json.loads(out)
    assert code == 0 and paused["pending"] == ["clarify"]
    assert [q["id"] for q in paused["waiting_for"][0]["questions"]] == ["a1:1", "a2:1"]

    code, _, err = cli(capsys, "resume", "--thread", "q1", "--db", db)
    assert code == 2 and "--answer" in err

    answer = ["--answer", "a1:1=About 10k"]
    code, out, err = cli(capsys, "resume", "--thread", "q1", *answer, "--json", "--db", db)
    done = json.loads(out)
    assert code == 0, err
    answers = {c["question_id"]: c["answer"] for c in done["clarifications"]}
    assert answers == {"a1:1": "About 10k", "a2:1": "NA"}


def test_agent_runs_with_a_tool_module_and_show_lists_tool_calls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    from examples.tools import secret_for

    model = script(
        tmp_path,
        [{"match": secret_for("launch"), "reply": f"The secret is {secret_for('launch')}."}],
        default={"tool_calls": [{"name": "lookup_secret", "args": {"name": "launch"}}]},
    )
    code, out, err = cli(capsys, "run", "agent", "--task", "What is the secret for 'launch'?", "--tools",
                         str(ROOT / "examples" / "tools.py") + ":TOOLS", "--model", model, "--db", db,
                         "--thread", "ag", "--json")  # fmt: skip
    result = json.loads(out)
    assert code == 0, err
    assert secret_for("launch") in result["final_answer"] and result["stop_reason"] == "completed"
    code, out, _ = cli(capsys, "show", "--thread", "ag", "--db", db)
    assert code == 0 and "lookup_secret(name='launch') -> " + secret_for("launch") in out


def test_agent_without_tools_is_bad_input(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, _, err = cli(capsys, "run", "agent", "--task", "x", "--db", db)
    assert code == 2 and "--tools" in err


def test_repair_approval_from_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str) -> None:
    model = script(tmp_path, [{"match": "24", "reply": "(13-9)*(10-4)"}])
    code, out, _ = cli(capsys, "run", "repair", "--task", "make 24", "--verifier", "game24:4 9 10 13",
                       "--approve", "--model", model, "--db", db, "--thread", "ap", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["waiting_for"][0]["kind"] == "approval"
    code, _, err = cli(capsys, "resume", "--thread", "ap", "--answer", "maybe", "--db", db)
    assert code == 2 and "yes" in err
    code, out, err = cli(capsys, "resume", "--thread", "ap", "--answer", "yes", "--json", "--db", db)
    assert code == 0 and json.loads(out)["passed"] is True, err
