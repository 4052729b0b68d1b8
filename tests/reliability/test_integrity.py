"""Tamper detection: every stored row is sealed; a changed thread is refused before it is read."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.checkpoints import history, list_threads, open_saver, thread_info, view_thread
from reasoning_graphs.checkpoints.integrity import KEY_ENV, IntegrityError, IntegritySaver, key_path
from reasoning_graphs.errors import CheckpointError, ConfigurationError
from reasoning_graphs.graphs import build_repair_graph
from reasoning_graphs.testing import ScriptedChatModel
from reasoning_graphs.verifiers import from_spec
from tests.reliability.conftest import GAME24, TASK, client, db_snapshot, repair_routes

Tamper = Callable[[sqlite3.Connection], None]


def _graph(saver: Any, fake: ScriptedChatModel) -> Any:
    return build_repair_graph(verifier=from_spec(GAME24), model=client(fake)).compile(checkpointer=saver)


def _config(thread_id: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "metadata": {"graph": "repair"}}


def _two_threads(db: Path) -> None:
    """Thread t1 stops after its first attempt (interrupted); t2 runs to the end."""
    with open_saver(db, integrity=True) as saver:
        graph = build_repair_graph(
            verifier=from_spec(GAME24), model=client(ScriptedChatModel.routed(repair_routes(2)))
        ).compile(checkpointer=saver, interrupt_before=["repair"])
        graph.invoke({"task": TASK}, _config("t1"))
        graph.invoke({"task": TASK}, _config("t2"))


def _latest(conn: sqlite3.Connection, thread_id: str = "t1") -> str:
    row = conn.execute(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC LIMIT 1",
        (thread_id,),
    ).fetchone()
    return str(row[0])


def _edit_checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE checkpoints SET checkpoint = checkpoint || x'00' "
        "WHERE thread_id = 't1' AND checkpoint_id = ?",
        (_latest(conn),),
    )


def _edit_write(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE writes SET value = CAST('x' AS BLOB) WHERE rowid = "
        "(SELECT min(rowid) FROM writes WHERE thread_id = 't1')"
    )


def _edit_metadata(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE checkpoints SET metadata = CAST(replace(CAST(metadata AS TEXT), 'repair', 'evil') AS BLOB) "
        "WHERE thread_id = 't1'"
    )


def _edit_parent(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = 't1' AND checkpoint_id = ?",
        (_latest(conn),),
    )


def _delete_checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute(
        "DELETE FROM checkpoints WHERE thread_id = 't1' AND checkpoint_id = ?",
        (_latest(conn),),
    )


def _delete_write(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM writes WHERE rowid = (SELECT max(rowid) FROM writes WHERE thread_id = 't1')")


def _delete_row_and_seal(conn: sqlite3.Connection) -> None:
    cid = _latest(conn)
    conn.execute("DELETE FROM checkpoints WHERE thread_id = 't1' AND checkpoint_id = ?", (cid,))
    conn.execute("DELETE FROM rg_seals WHERE thread_id = 't1' AND checkpoint_id = ? AND kind = 'c'", (cid,))
    conn.execute("UPDATE rg_heads SET sealed = sealed - 1 WHERE thread_id = 't1'")


def _insert_checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO checkpoints SELECT thread_id, checkpoint_ns, checkpoint_id || '0', "
        "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
        "WHERE thread_id = 't1' AND checkpoint_id = ?",
        (_latest(conn),),
    )


def _copy_from_thread(conn: sqlite3.Connection, with_seal: bool = False) -> None:
    """Replace t1's latest checkpoint by t2's latest, relabelled as t1's (optionally its seal too)."""
    mine, theirs = _latest(conn, "t1"), _latest(conn, "t2")
    conn.execute(
        "UPDATE checkpoints SET checkpoint = (SELECT checkpoint FROM checkpoints WHERE thread_id = 't2' "
        "AND checkpoint_id = ?) WHERE thread_id = 't1' AND checkpoint_id = ?",
        (theirs, mine),
    )
    if with_seal:
        conn.execute(
            "UPDATE rg_seals SET mac = (SELECT mac FROM rg_seals WHERE thread_id = 't2' AND kind = 'c' "
            "AND checkpoint_id = ?) WHERE thread_id = 't1' AND kind = 'c' AND checkpoint_id = ?",
            (theirs, mine),
        )


def _copy_with_seal(conn: sqlite3.Connection) -> None:
    _copy_from_thread(conn, with_seal=True)


def _forge_head(conn: sqlite3.Connection) -> None:
    _delete_write(conn)
    conn.execute("UPDATE rg_heads SET sealed = sealed - 1 WHERE thread_id = 't1'")


def _strip_seals(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM rg_seals WHERE thread_id = 't1'")
    conn.execute("DELETE FROM rg_heads WHERE thread_id = 't1'")


TAMPERS: dict[str, Tamper] = {
    "edited checkpoint blob": _edit_checkpoint,
    "edited write blob": _edit_write,
    "edited metadata": _edit_metadata,
    "edited parent link": _edit_parent,
    "deleted checkpoint row": _delete_checkpoint,
    "deleted write row": _delete_write,
    "deleted row and its seal": _delete_row_and_seal,
    "inserted checkpoint row": _insert_checkpoint,
    "row copied from another thread": _copy_from_thread,
    "row and seal copied from another thread": _copy_with_seal,
    "forged seal count": _forge_head,
    "seals stripped": _strip_seals,
}


def _tamper(db: Path, change: Tamper) -> None:
    conn = sqlite3.connect(db)  # a plain connection: no key, no sealing triggers
    with conn:
        change(conn)
    conn.close()


@pytest.mark.parametrize("name", list(TAMPERS))
def test_tampering_is_refused_before_anything_is_read_or_run(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "ck.sqlite"
    _two_threads(db)
    _tamper(db, TAMPERS[name])
    before = db_snapshot(db)
    fake = ScriptedChatModel.routed(repair_routes(2))
    with open_saver(db, integrity=True) as saver:
        loads: list[Any] = []
        original = saver.serde.loads_typed
        monkeypatch.setattr(saver.serde, "loads_typed", lambda data: loads.append(data) or original(data))
        graph = _graph(saver, fake)
        with pytest.raises(IntegrityError, match="thread 't1' failed its integrity check") as caught:
            graph.invoke(None, _config("t1"))
        assert loads == [], "nothing is deserialized before the check"
        assert fake.calls == 0, "no node ran"
        for read in (
            lambda: graph.get_state(_config("t1")),
            lambda: history(saver, "t1"),
            lambda: view_thread(saver, "t1", "generator"),
            lambda: thread_info(saver, "t1"),
        ):
            with pytest.raises(IntegrityError):
                read()
        assert loads == []
        listed = {t.thread_id: t for t in list_threads(saver)}  # the overview names it, reads none of it
        if "t1" in listed:
            assert listed["t1"].status == "tampered" and listed["t1"].graph is None
            assert listed["t1"].error is not None and "failed its integrity check" in listed["t1"].error
        assert listed["t2"].status != "tampered" and listed["t2"].graph == "repair"
        assert [b for b in loads if b] != [], "t2 was read"
        assert saver.verify_thread("t2") > 0  # the other thread is intact and readable
    assert caught.value.problems
    assert db_snapshot(db) == before, "a refused thread is left as it was"


def test_intact_threads_verify_and_resume(tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    _two_threads(db)
    fake = ScriptedChatModel.routed(repair_routes(2))
    with open_saver(db, integrity=True) as saver:
        rows = saver.verify_thread("t1")
        out = _graph(saver, fake).invoke(None, _config("t1"))
        assert out["passed"] is True and fake.calls == 1
        assert saver.verify_thread("t1") > rows
        assert {t.thread_id for t in list_threads(saver)} == {"t1", "t2"}
        saver.delete_thread("t2")  # deletions keep the seals in step
        assert saver.verify_thread("t2") == 0
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM rg_seals WHERE thread_id = 't2'").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM rg_heads WHERE thread_id = 't2'").fetchone() == (0,)
    conn.close()


def _plain_thread(db: Path, thread_id: str) -> None:
    with open_saver(db) as plain:  # a saver without integrity writes rows without seals
        graph = build_repair_graph(
            verifier=from_spec(GAME24), model=client(ScriptedChatModel.routed(repair_routes(1)))
        ).compile(checkpointer=plain)
        graph.invoke({"task": TASK}, _config(thread_id))


def test_rows_written_without_the_key_are_refused_until_sealed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    db = tmp_path / "ck.sqlite"
    with open_saver(db, integrity=True):  # the database is sealed from now on
        pass
    _plain_thread(db, "legacy")
    with open_saver(db, integrity=True) as saver:
        with pytest.raises(IntegrityError, match="no seal at all"):
            saver.get_tuple({"configurable": {"thread_id": "legacy"}})
        assert saver.seal_thread("legacy") > 0  # a deliberate adoption
        assert saver.get_tuple({"configurable": {"thread_id": "legacy"}}) is not None
    with open_saver(db) as plain:  # appending with a keyless saver again breaks the seal
        plain.put_writes(
            {"configurable": {"thread_id": "legacy", "checkpoint_ns": "", "checkpoint_id": "x"}},
            [("task", "injected")],
            "task-1",
        )
    with open_saver(db, integrity=True) as saver, pytest.raises(IntegrityError, match="has no seal"):
        saver.verify_thread("legacy")


def test_a_never_sealed_database_is_adopted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    db = tmp_path / "ck.sqlite"
    _plain_thread(db, "old")  # written before integrity was turned on
    with open_saver(db, integrity=True) as saver:  # creates the key: trusts what is there now
        assert saver.verify_thread("old") > 0
    _tamper(db, _strip_all_seals)  # removing every trace of sealing does not buy a new adoption
    with open_saver(db, integrity=True) as saver, pytest.raises(IntegrityError, match="no seal at all"):
        saver.verify_thread("old")


def _strip_all_seals(conn: sqlite3.Connection) -> None:
    for table in ("rg_seals", "rg_heads", "rg_meta"):
        conn.execute(f"DROP TABLE {table}")


def test_key_file_is_created_owner_only_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    db = tmp_path / "ck.sqlite"
    _two_threads(db)
    key = key_path(str(db))
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    content = key.read_text()
    with open_saver(db, integrity=True) as saver:
        assert isinstance(saver, IntegritySaver) and saver.verify_thread("t2") > 0
    assert key.read_text() == content


def test_a_key_others_can_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    db = tmp_path / "ck.sqlite"
    _two_threads(db)
    os.chmod(key_path(str(db)), 0o644)
    with pytest.raises(ConfigurationError, match="chmod 600"), open_saver(db, integrity=True):
        pass


def test_a_sealed_database_refuses_a_missing_or_different_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    db = tmp_path / "ck.sqlite"
    _two_threads(db)
    monkeypatch.setenv(KEY_ENV, "another key of enough length")
    with pytest.raises(CheckpointError, match="sealed with another key"), open_saver(db, integrity=True):
        pass
    monkeypatch.delenv(KEY_ENV)
    key_path(str(db)).unlink()
    with pytest.raises(ConfigurationError, match=r"key .* is missing"), open_saver(db, integrity=True):
        pass
    assert not key_path(str(db)).exists(), "no new key is made for a sealed database"


def test_the_environment_key_is_used_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "a long enough shared secret")
    db = tmp_path / "ck.sqlite"
    _two_threads(db)
    assert not key_path(str(db)).exists()
    with open_saver(db, integrity=True) as saver:
        assert saver.verify_thread("t1") > 0
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(ConfigurationError, match="too short"), open_saver(db, integrity=True):
        pass
