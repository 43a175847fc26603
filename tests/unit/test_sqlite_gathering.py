"""Gathering: items handed over one by one, run by the connection's thread in batches."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import outcome
import pytest
import trio
import trio.testing

from agentws.store.sqlite_threads import ClosedError, ConnectionThread, Gathering


@asynccontextmanager
async def connection_thread() -> AsyncIterator[ConnectionThread]:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    thread = ConnectionThread(conn, "test")
    try:
        yield thread
    finally:
        await thread.close()


class Answers:
    """The answers of ``expected`` items, with the thread each arrived in."""

    def __init__(self, expected: int) -> None:
        self.got: dict[int, outcome.Outcome[int]] = {}
        self.threads: set[str] = set()
        self._expected = expected
        self.all_in = trio.Event()

    def answer(self, n: int) -> Callable[[outcome.Outcome[int]], None]:
        def record(result: outcome.Outcome[int]) -> None:
            self.got[n] = result
            self.threads.add(threading.current_thread().name)
            if len(self.got) == self._expected:
                self.all_in.set()

        return record

    async def wait(self) -> None:
        with trio.fail_after(5):
            await self.all_in.wait()


async def held(thread: ConnectionThread) -> Callable[[], None]:
    """Keep ``thread`` busy until the function returned is called (nothing else runs)."""
    session = await thread.session(lambda c: None)
    return lambda: session.end_nowait(lambda c: None)


Run = Callable[[sqlite3.Connection, list[int]], list[outcome.Value[int]]]


def every(waiting: int) -> int:
    return waiting


def recording(log: list[str]) -> Run:
    def run(conn: sqlite3.Connection, items: list[int]) -> list[outcome.Value[int]]:
        log.append("batch " + ",".join(map(str, items)))
        return [outcome.Value(n * 10) for n in items]

    return run


async def test_items_gathered_while_the_thread_works_run_as_one_batch_in_order() -> None:
    log: list[str] = []
    async with connection_thread() as thread:
        gathering: Gathering[int, int] = thread.gathering(recording(log), size=every)
        release = await held(thread)
        answers = Answers(5)
        for n in range(5):
            gathering.put_nowait(n, answers.answer(n))
        release()
        await answers.wait()
        assert log == ["batch 0,1,2,3,4"]
        assert {n: a.unwrap() for n, a in answers.got.items()} == {n: n * 10 for n in range(5)}
        # Answered in trio's thread, not the connection's.
        assert answers.threads == {threading.current_thread().name}


async def test_an_idle_thread_starts_once_the_turn_in_which_items_arrived_is_over() -> None:
    log: list[str] = []
    async with connection_thread() as thread:
        gathering: Gathering[int, int] = thread.gathering(recording(log), size=every)
        answers = Answers(5)
        for n in range(5):  # one turn of the loop, as requests read together
            gathering.put_nowait(n, answers.answer(n))
            # Time enough for the thread to start on what it has, were it told at once.
            time.sleep(0.002)  # noqa: ASYNC251
        await answers.wait()
        assert log == ["batch 0,1,2,3,4"]


async def test_a_batch_takes_at_most_its_share_and_other_work_runs_between_batches() -> None:
    log: list[str] = []
    async with connection_thread() as thread:
        gathering: Gathering[int, int] = thread.gathering(recording(log), size=lambda waiting: 2)
        release = await held(thread)
        answers = Answers(5)
        for n in range(5):
            gathering.put_nowait(n, answers.answer(n))
        await trio.testing.wait_all_tasks_blocked()  # the batch is queued for the thread
        async with trio.open_nursery() as nursery:
            nursery.start_soon(thread.call, lambda c: log.append("other work"))
            await trio.testing.wait_all_tasks_blocked()  # its work is queued
            release()
        await answers.wait()
        assert log == ["batch 0,1", "other work", "batch 2,3", "batch 4"]


async def test_each_item_has_its_own_outcome_and_a_failed_run_fails_its_batch() -> None:
    def run(conn: sqlite3.Connection, items: list[int]) -> list[outcome.Outcome[int]]:
        if 99 in items:
            raise sqlite3.OperationalError("broken")
        return [outcome.Error(ValueError(n)) if n % 2 else outcome.Value(n) for n in items]

    async with connection_thread() as thread:
        gathering: Gathering[int, int] = thread.gathering(run, size=every)
        release = await held(thread)
        answers = Answers(3)
        for n in range(3):
            gathering.put_nowait(n, answers.answer(n))
        release()
        await answers.wait()
        assert answers.got[0].unwrap() == 0
        with pytest.raises(ValueError, match="1"):
            answers.got[1].unwrap()
        assert answers.got[2].unwrap() == 2

        release = await held(thread)
        answers = Answers(2)
        gathering.put_nowait(99, answers.answer(0))
        gathering.put_nowait(4, answers.answer(1))
        release()
        await answers.wait()
        for result in answers.got.values():
            with pytest.raises(sqlite3.OperationalError, match="broken"):
                result.unwrap()
        # The thread goes on.
        assert await thread.call(lambda c: c.execute("SELECT 7").fetchone()[0]) == 7


async def test_closing_runs_every_item_gathered_before_it_then_refuses_more() -> None:
    log: list[str] = []
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    thread = ConnectionThread(conn, "test")
    gathering: Gathering[int, int] = thread.gathering(recording(log), size=lambda waiting: 1)
    release = await held(thread)
    answers = Answers(3)
    for n in range(3):
        gathering.put_nowait(n, answers.answer(n))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(thread.close)
        await trio.testing.wait_all_tasks_blocked()  # the close is queued behind the batch
        with pytest.raises(ClosedError):
            gathering.put_nowait(3, answers.answer(3))
        release()
    await answers.wait()
    # One batch before the end of the queue; the rest as the thread closes.
    assert log == ["batch 0", "batch 1", "batch 2"]
    assert sorted(answers.got) == [0, 1, 2]
