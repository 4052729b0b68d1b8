from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from reasoning_graphs.checkpoints import (
    StrictSerializer,
    list_threads,
    open_async_saver,
    open_saver,
    resume_config,
    thread_info,
)
from reasoning_graphs.errors import CheckpointError

NOT_SQLITE = {
    "text": b"hello, these are my notes\n",
    "short": b"SQLite",
    "png": b"\x89PNG\r\n\x1a\n" + bytes(200),
    "json": b'{"threads": []}',
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


def _open_sync(path: Path, timeout: float = 5.0) -> None:
    with open_saver(path, timeout=timeout) as saver:
        list_threads(saver)


def _open_async(path: Path, timeout: float = 5.0) -> None:
    async def run() -> None:
        async with open_async_saver(path, timeout=timeout) as saver:
            await saver.aget_tuple({"configurable": {"thread_id": "x"}})

    asyncio.run(run())


OPENERS = {"sync": _open_sync, "async": _open_async}


def test_open_saver_creates_folders_and_configures_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "ck.sqlite"
    with open_saver(path, timeout=2.5) as saver:
        assert isinstance(saver, SqliteSaver)
        assert isinstance(saver.serde, StrictSerializer)
        assert saver.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert saver.conn.execute("PRAGMA busy_timeout").fetchone() == (2500,)
        tables = {r[0] for r in saver.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"checkpoints", "writes"} <= tables
    assert path.read_bytes().startswith(b"SQLite format 3\x00")
    with pytest.raises(sqlite3.ProgrammingError):
        saver.conn.execute("SELECT 1")  # closed on exit


def test_open_saver_in_memory(pipeline: Any) -> None:
    with open_saver(":memory:") as saver:
        graph = pipeline.build().compile(checkpointer=saver)
        graph.invoke({"task": "t"}, {"configurable": {"thread_id": "m"}})
        assert [t.thread_id for t in list_threads(saver)] == ["m"]


@pytest.mark.parametrize("opener", OPENERS)
@pytest.mark.parametrize("content", NOT_SQLITE)
def test_not_sqlite_is_refused_and_untouched(opener: str, content: str, tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(NOT_SQLITE[content])
    before, files = _digest(path), _siblings(path)
    with pytest.raises(CheckpointError, match="is not a SQLite database") as caught:
        OPENERS[opener](path)
    assert str(path) in str(caught.value)
    assert _digest(path) == before
    assert _siblings(path) == files, "no -wal or -shm file was created"


def test_corrupt_body_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    before = _digest(path)
    with pytest.raises(CheckpointError, match="not a usable SQLite database") as caught:
        _open_sync(path)
    assert str(path) in str(caught.value)
    assert _digest(path) == before


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="is a directory"):
        _open_sync(tmp_path)


@contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.mark.parametrize("opener", OPENERS)
@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_locked_database_is_refused_and_untouched(
    opener: str, journal: str, tmp_path: Path, pipeline: Any
) -> None:
    path = tmp_path / "locked.sqlite"
    if journal == "wal":  # a real checkpoint file, written by us
        with open_saver(path) as saver:
            pipeline.build().compile(checkpointer=saver).invoke(
                {"task": "t"}, {"configurable": {"thread_id": "a"}}
            )
    else:  # someone else's database in the default rollback journal
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
            conn.execute("INSERT INTO notes VALUES ('keep me')")
        conn.close()
    before = _digest(path)
    with _exclusive_lock(path):
        started = time.monotonic()
        with pytest.raises(CheckpointError, match="is locked by another connection") as caught:
            OPENERS[opener](path, timeout=0.3)
        waited = time.monotonic() - started
        assert _digest(path) == before
    assert str(path) in str(caught.value)
    assert waited >= 0.25, "the busy timeout was honoured"
    assert _digest(path) == before
    OPENERS[opener](path)  # opens once the lock is gone


def test_async_saver_runs_and_resumes_a_graph(tmp_path: Path, pipeline: Any) -> None:
    path = tmp_path / "async.sqlite"
    config: Any = {"configurable": {"thread_id": "as"}, "metadata": {"graph": "pipe"}}
    pipeline.failures["critique"] = 1

    async def run() -> tuple[Any, Any, Any]:
        async with open_async_saver(path) as saver:
            assert isinstance(saver, AsyncSqliteSaver)
            assert isinstance(saver.serde, StrictSerializer)
            graph = pipeline.build().compile(checkpointer=saver)
            with pytest.raises(RuntimeError, match="critique crashed"):
                await graph.ainvoke({"task": "t"}, config)
            # the sync helpers refuse the async saver on its own loop, and work from a thread
            with pytest.raises(CheckpointError, match="async-only"):
                list_threads(saver)
            crashed = await asyncio.to_thread(thread_info, saver, "as")
            result = await graph.ainvoke(None, await asyncio.to_thread(resume_config, saver, "as"))
            return crashed, result, await asyncio.to_thread(thread_info, saver, "as")

    crashed, result, done = asyncio.run(run())
    assert (crashed.status, crashed.next, crashed.graph) == ("incomplete", ("critique",), "pipe")
    assert result["stop_reason"] == "completed"
    assert pipeline.calls == {"setup": 1, "draft": 1, "critique": 2, "judge": 1, "finish": 1}
    assert (done.status, done.graph) == ("done", "pipe")
    with open_saver(path) as saver:  # a sync reader on the same file sees the same thread
        assert thread_info(saver, "as") == done


def test_public_api_is_sorted_and_complete() -> None:
    import reasoning_graphs.checkpoints as package
    from reasoning_graphs.checkpoints import saver, serde, threads, views

    assert package.__all__ == sorted(package.__all__)
    exported = set(saver.__all__ + serde.__all__ + threads.__all__ + views.__all__) - {"DEFAULT_TIMEOUT"}
    assert set(package.__all__) == exported
    assert all(getattr(package, name) is not None for name in package.__all__)
