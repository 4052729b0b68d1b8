"""The CLI runs every thread sealed, under its lease, and refuses a changed or tampered thread."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.checkpoints import open_saver
from reasoning_graphs.checkpoints.lease import thread_lease
from reasoning_graphs.checkpoints.manifest import stored_manifest
from reasoning_graphs.cli import main
from reasoning_graphs.graphs import RepairSettings, build_repair_graph
from tests.reliability.conftest import db_snapshot

SOLUTION = "(13-9)*(10-4)"
RUN = ["run", "repair", "--task", "make 24", "--verifier", "game24:4 9 10 13", "--approve"]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _script(path: Path, reply: str = SOLUTION) -> str:
    path.write_text(json.dumps({"routes": [{"match": "24", "reply": reply}]}))
    return f"fake:{path}"


def _approve_and_pass(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    """Resume the paused thread ``ap`` with its approval; it must pass."""
    code, out, err = cli(capsys, "resume", "--thread", "ap", "--answer", "yes", "--json", "--db", str(db))
    assert code == 0 and json.loads(out)["passed"] is True, err


@pytest.fixture
def paused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Any]:
    """A repair thread ``ap`` waiting for approval of a passing answer, started by the CLI."""
    db, script = tmp_path / "runs.sqlite", tmp_path / "script.json"
    model = _script(script)
    code, out, err = cli(capsys, *RUN, "--model", model, "--db", str(db), "--thread", "ap", "--json")
    assert code == 0 and json.loads(out)["waiting_for"][0]["kind"] == "approval", err
    return {"db": db, "script": script, "model": model}


def test_a_cli_thread_is_sealed_and_has_a_manifest(paused: dict[str, Any]) -> None:
    db = paused["db"]
    assert (db.parent / "runs.sqlite.key").stat().st_mode & 0o777 == 0o600
    with open_saver(db, integrity=True) as saver:
        assert saver.verify_thread("ap") > 0
        manifest = stored_manifest(saver, "ap")
    assert manifest is not None and manifest.graph == "repair"
    assert manifest.verifier is not None and manifest.verifier.startswith("game24:4 9 10 13")
    assert manifest.models is not None and manifest.models[0].startswith(paused["model"] + "#sha256:")
    assert manifest.access is not None and "generator" in manifest.access


def test_a_changed_model_file_refuses_resume_until_accepted(
    capsys: pytest.CaptureFixture[str], paused: dict[str, Any]
) -> None:
    db = paused["db"]
    _script(paused["script"], reply="something else")  # the scripted model changed on disk
    before = db_snapshot(db)
    code, _, err = cli(capsys, "resume", "--thread", "ap", "--answer", "yes", "--db", str(db))
    assert code == 2 and err.count("\n") == 1, err
    assert "models changed" in err and "--allow-changed models" in err
    assert db_snapshot(db) == before, "a refusal stores nothing"

    argv = ["resume", "--thread", "ap", "--answer", "yes", "--allow-changed", "models", "--json"]
    code, out, err = cli(capsys, *argv, "--db", str(db))
    assert code == 0 and json.loads(out)["passed"] is True, err
    with open_saver(db, integrity=True) as saver:
        manifest = stored_manifest(saver, "ap")
        assert manifest is not None and manifest.models is not None
        assert manifest.models[0].startswith(paused["model"])
        row = saver.conn.execute("SELECT history FROM rg_manifests WHERE thread_id = 'ap'").fetchone()
    assert "models" in json.loads(row[0])[0]["accepted"], "the accepted change is on record"


def test_a_second_runner_on_a_thread_fails_at_once(
    capsys: pytest.CaptureFixture[str], paused: dict[str, Any]
) -> None:
    db = paused["db"]
    before = db_snapshot(db)
    with thread_lease(db, "ap"):  # another runner holds the thread
        code, _, err = cli(capsys, "resume", "--thread", "ap", "--answer", "yes", "--db", str(db))
    assert code == 4 and err.count("\n") == 1 and "busy" in err, err
    assert f"pid {os.getpid()}" in err or str(os.getpid()) in err, "the holder is named"
    assert db_snapshot(db) == before
    _approve_and_pass(capsys, db)


def _tamper(db: Path, thread: str = "ap") -> None:
    """Add a key to the metadata of a thread's newest checkpoint behind the saver's back."""
    conn = sqlite3.connect(db)
    with conn:
        rowid, metadata = conn.execute(
            "SELECT rowid, metadata FROM checkpoints WHERE thread_id = ? ORDER BY rowid DESC LIMIT 1",
            (thread,),
        ).fetchone()
        edited = json.dumps({**json.loads(metadata), "edited_by": "hand"})
        conn.execute("UPDATE checkpoints SET metadata = CAST(? AS BLOB) WHERE rowid = ?", (edited, rowid))
    conn.close()


def test_a_tampered_thread_is_refused_by_every_command(
    capsys: pytest.CaptureFixture[str], paused: dict[str, Any]
) -> None:
    db = paused["db"]
    _tamper(db)
    before = db_snapshot(db)
    for argv in (
        ["resume", "--thread", "ap", "--answer", "yes"],
        ["show", "--thread", "ap"],
        ["history", "--thread", "ap"],
        ["threads"],
    ):
        code, _, err = cli(capsys, *argv, "--db", str(db))
        assert code == 4 and err.count("\n") == 1 and "failed its integrity check" in err, (argv, err)
        assert f"reasoning-graphs seal --db {db} --thread ap" in err, "the message says how to accept it"
    assert db_snapshot(db) == before


def test_threads_lists_the_intact_threads_beside_a_tampered_one(
    capsys: pytest.CaptureFixture[str], paused: dict[str, Any]
) -> None:
    db = paused["db"]
    code, _, err = cli(capsys, *RUN, "--model", paused["model"], "--db", str(db), "--thread", "ok")
    assert code == 0, err
    _tamper(db)
    code, out, err = cli(capsys, "threads", "--db", str(db), "--json")
    assert code == 4 and err.count("\n") == 1 and "'ap' failed its integrity check" in err, err
    listed = {t["thread_id"]: t for t in json.loads(out)}
    assert listed["ok"]["status"] == "interrupted" and listed["ok"]["graph"] == "repair"
    assert listed["ap"]["status"] == "tampered" and listed["ap"]["graph"] is None
    assert "does not match its seal" in listed["ap"]["error"] and listed["ap"]["checkpoints"] > 1


def test_seal_accepts_a_tampered_thread_as_it_is_and_it_resumes(
    capsys: pytest.CaptureFixture[str], paused: dict[str, Any]
) -> None:
    db = paused["db"]
    _tamper(db)
    code, out, err = cli(capsys, "seal", "--thread", "ap", "--db", str(db))
    assert code == 0 and "had: checkpoint" in err and "does not match its seal" in err, err
    assert "sealed thread 'ap' as it is now" in out
    code, out, err = cli(capsys, "seal", "--thread", "ap", "--db", str(db))
    assert code == 0 and "is intact" in out and "nothing changed" in out, err
    _approve_and_pass(capsys, db)


def test_seal_accepts_an_edited_run_manifest(
    capsys: pytest.CaptureFixture[str], paused: dict[str, Any]
) -> None:
    db = paused["db"]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE rg_manifests SET history = '[]', manifest = manifest || ' ' WHERE thread_id = 'ap'"
        )
    conn.close()
    code, _, err = cli(capsys, "resume", "--thread", "ap", "--answer", "yes", "--db", str(db))
    assert code == 4 and "run manifest does not match its seal" in err, err
    code, out, err = cli(capsys, "seal", "--thread", "ap", "--db", str(db))
    assert code == 0 and "run manifest does not match its seal" in err and "sealed thread" in out, err
    _approve_and_pass(capsys, db)


def test_seal_refuses_an_unknown_or_running_thread(
    capsys: pytest.CaptureFixture[str], paused: dict[str, Any]
) -> None:
    db = paused["db"]
    before = db_snapshot(db)
    code, _, err = cli(capsys, "seal", "--thread", "nope", "--db", str(db))
    assert code == 2 and err.count("\n") == 1 and "no thread 'nope'" in err, err
    _tamper(db)
    tampered = db_snapshot(db)
    with thread_lease(db, "ap"):
        code, _, err = cli(capsys, "seal", "--thread", "ap", "--db", str(db))
    assert code == 4 and err.count("\n") == 1 and "busy" in err, err
    assert db_snapshot(db) == tampered != before


def test_a_thread_from_before_sealing_is_adopted_and_needs_its_manifest_accepted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A database written without integrity (an older CLI, or Python): sealed as it is, then guarded."""
    db, model = tmp_path / "old.sqlite", _script(tmp_path / "script.json")
    options = {"model": model, "roster": None, "flags": {"approve": True}}
    config: Any = {
        "configurable": {"thread_id": "old"},
        "metadata": {"graph": "repair", "run_options": json.dumps(options)},
    }
    with open_saver(db) as saver:
        graph = build_repair_graph(model=model, settings=RepairSettings(approve=True))
        graph.compile(checkpointer=saver).invoke({"task": "make 24", "verifier": "game24:4 9 10 13"}, config)
    assert not (tmp_path / "old.sqlite.key").exists()

    code, _, err = cli(capsys, "resume", "--thread", "old", "--answer", "yes", "--db", str(db))
    assert code == 2 and "no run manifest" in err and "--allow-changed manifest" in err, err
    assert (tmp_path / "old.sqlite.key").exists(), "the unsealed database was adopted with a new key"
    argv = ["resume", "--thread", "old", "--answer", "yes", "--allow-changed", "manifest", "--json"]
    code, out, err = cli(capsys, *argv, "--db", str(db))
    assert code == 0 and json.loads(out)["passed"] is True, err
    with open_saver(db, integrity=True) as saver:
        assert saver.verify_thread("old") > 0


def test_a_rejected_input_leaves_no_thread_and_no_manifest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db, model = tmp_path / "runs.sqlite", _script(tmp_path / "script.json")
    code, _, err = cli(capsys, "run", "tot", "--task", "x", "--kind", "game24", "--model", model,
                       "--db", str(db), "--thread", "bad")  # fmt: skip
    assert code == 2, err
    with open_saver(db, integrity=True) as saver:
        assert saver.get_tuple({"configurable": {"thread_id": "bad"}}) is None
        assert stored_manifest(saver, "bad") is None
