"""ConnectionThread: work in submission order, sessions that hold the thread, closing;
the readers' deadline."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from agentws.core.errors import StoreError
from agentws.store.sqlite import open_sqlite
from agentws.store.sqlite_threads import ClosedError, ConnectionThread


@asynccontextmanager
async def connection_thread() -> AsyncIterator[ConnectionThread]:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute("CREATE TABLE log (n INTEGER)")
    thread = ConnectionThread(conn, "test")
    try:
        yield thread
    finally:
        await thread.close()


def logged(conn: sqlite3.Connection) -> list[int]:
    return [n for (n,) in conn.execute("SELECT n FROM log ORDER BY rowid")]


async def test_work_runs_in_its_thread_in_the_order_submitted() -> None:
    async with connection_thread() as thread:

        async def insert(n: int) -> None:
            await thread.call(lambda c: c.execute("INSERT INTO log VALUES (?)", (n,)))

        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(insert, n)
                # The next task starts (and submits) after this one has submitted.
                await trio.testing.wait_all_tasks_blocked()
        assert await thread.call(logged) == list(range(20))
        assert await thread.call(lambda c: threading.current_thread().name) == "test"


async def test_errors_come_back_to_the_caller_and_the_thread_goes_on() -> None:
    async with connection_thread() as thread:
        with pytest.raises(sqlite3.OperationalError):
            await thread.call(lambda c: c.execute("SELECT * FROM missing"))
        assert await thread.call(lambda c: c.execute("SELECT 7").fetchone()[0]) == 7


async def test_a_session_holds_the_thread_until_it_ends() -> None:
    async with connection_thread() as thread:
        session = await thread.session(lambda c: c.execute("BEGIN IMMEDIATE"))
        outside_done = trio.Event()

        async def outside() -> None:
            await thread.call(lambda c: c.execute("INSERT INTO log VALUES (99)"))
            outside_done.set()

        async with trio.open_nursery() as nursery:
            await session.call(lambda c: c.execute("INSERT INTO log VALUES (1)"))
            nursery.start_soon(outside)
            await trio.testing.wait_all_tasks_blocked()  # its work is queued
            assert await session.call(logged) == [1]
            assert not outside_done.is_set()
            await session.call(lambda c: c.execute("COMMIT"), ends=True)
        assert await thread.call(logged) == [1, 99]
        with pytest.raises(RuntimeError, match="ended"):
            await session.call(logged)


async def test_a_session_its_task_abandons_is_ended_for_it() -> None:
    async with connection_thread() as thread:
        session = await thread.session(lambda c: c.execute("BEGIN IMMEDIATE"))
        await session.call(lambda c: c.execute("INSERT INTO log VALUES (1)"))
        session.end_nowait(lambda c: c.execute("ROLLBACK"))
        session.end_nowait(lambda c: c.execute("ROLLBACK"))  # once only
        assert await thread.call(logged) == []
        assert not await thread.call(lambda c: c.in_transaction)


async def test_a_session_whose_beginning_fails_does_not_hold_the_thread() -> None:
    async with connection_thread() as thread:
        with pytest.raises(sqlite3.OperationalError):
            await thread.session(lambda c: c.execute("BEGIN NONSENSE"))
        assert await thread.call(lambda c: 1) == 1


async def test_cancelled_while_its_work_runs_the_caller_still_waits_for_it() -> None:
    async with connection_thread() as thread:
        started, release = threading.Event(), threading.Event()
        results: list[int] = []

        def slow(c: sqlite3.Connection) -> int:
            started.set()
            release.wait(5)
            c.execute("INSERT INTO log VALUES (1)")
            return 1

        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def cancel_once_started() -> None:
                    await trio.to_thread.run_sync(started.wait)
                    scope.cancel()
                    release.set()

                nursery.start_soon(cancel_once_started)
                results.append(await thread.call(slow))
                await trio.lowlevel.checkpoint()  # the cancellation arrives here
                results.append(2)
        assert results == [1]  # the answer came back; the task ran no further
        assert scope.cancelled_caught


async def test_a_cancelled_caller_submits_nothing() -> None:
    async with connection_thread() as thread:
        with trio.CancelScope() as scope:
            scope.cancel()
            await thread.call(lambda c: c.execute("INSERT INTO log VALUES (1)"))
        assert await thread.call(logged) == []


async def test_after_close_work_is_refused_at_once() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    thread = ConnectionThread(conn, "test")
    assert await thread.call(lambda c: 1) == 1
    await thread.close()
    await thread.close()  # twice is harmless
    with pytest.raises(ClosedError):
        await thread.call(lambda c: 1)
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")  # closed with the thread


async def test_closing_gives_up_on_a_session_nobody_ends_when_the_caller_does() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    thread = ConnectionThread(conn, "test")
    session = await thread.session(lambda c: c.execute("BEGIN"))
    with trio.move_on_after(0.2) as waited:
        await thread.close()
    assert waited.cancelled_caught  # the close did not hang its caller
    with pytest.raises(ClosedError):
        await thread.call(lambda c: 1)
    session.end_nowait(lambda c: c.execute("ROLLBACK"))  # now the thread can stop
    await trio.to_thread.run_sync(thread._thread.join)
    conn.close()


async def test_a_read_past_its_deadline_is_stopped_and_the_reader_goes_on(tmp_path: Path) -> None:
    """Nothing can cancel a statement once a reader runs it: a deadline stops it instead."""
    # About ten seconds of counting (should the deadline fail, the test still ends).
    endless = (
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100000000)"
        " SELECT max(x) FROM n"
    )
    async with open_sqlite(f"sqlite:///{tmp_path / 'db'}", read_deadline_s=0.2) as db:
        started = time.monotonic()
        with pytest.raises(StoreError, match=r"a read ran longer than 0\.2 s and was stopped"):
            await db.fetch(endless)
        assert time.monotonic() - started < 5
        # Each reader is free again, and reads that end in time are not stopped.
        for _ in range(8):
            assert await db.fetch("SELECT 1 AS one") == [{"one": 1}]
