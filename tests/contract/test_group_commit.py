"""Group commit at the driver seam (``execute_grouped_nowait``), the same on SQLite and PostgreSQL.

Statements queued together are committed together and each answered with
its own count, in the order queued; one that fails fails alone; whatever
was queued before the database closes is committed and answered.
"""

from __future__ import annotations

from collections.abc import Callable

import outcome
import pytest
import trio

from agentws.core.errors import ConflictError, StoreUnavailableError
from agentws.store import SqlStore, open_store
from agentws.store.database import Database

_TABLE = "CREATE TABLE grouped (n INTEGER PRIMARY KEY)"
_INSERT = "INSERT INTO grouped (n) VALUES ($1)"


class Answers:
    """What each of ``expected`` grouped statements was answered, in the order answered."""

    def __init__(self, expected: int) -> None:
        self.order: list[int] = []
        self.got: dict[int, outcome.Outcome[int]] = {}
        self._expected = expected
        self._all_in = trio.Event()

    def answer(self, n: int) -> Callable[[outcome.Outcome[int]], None]:
        def record(result: outcome.Outcome[int]) -> None:
            self.order.append(n)
            self.got[n] = result
            if len(self.got) == self._expected:
                self._all_in.set()

        return record

    async def wait(self) -> None:
        with trio.fail_after(10):
            await self._all_in.wait()


async def stored(db: Database) -> list[int]:
    return [int(row["n"]) for row in await db.fetch("SELECT n FROM grouped ORDER BY n")]


async def test_statements_queued_together_are_committed_and_answered_in_order(
    store: SqlStore,
) -> None:
    db = store.database
    await db.execute_batch([(_TABLE, ())])
    answers = Answers(21)
    # All in one turn of the loop: one group (or a few) for the driver to commit.
    for n in range(20):
        db.execute_grouped_nowait(_INSERT, (n,), answers.answer(n))
    db.execute_grouped_nowait("DELETE FROM grouped WHERE n < 0", (), answers.answer(20))
    await answers.wait()
    assert answers.order == list(range(21))
    assert [answers.got[n].unwrap() for n in range(21)] == [1] * 20 + [0]
    assert await stored(db) == list(range(20))


async def test_a_statement_that_fails_fails_alone(store: SqlStore) -> None:
    db = store.database
    await db.execute_batch([(_TABLE, ())])
    answers = Answers(4)
    for n, value in enumerate([1, 2, 2, 3]):
        db.execute_grouped_nowait(_INSERT, (value,), answers.answer(n))
    await answers.wait()
    assert answers.got[0].unwrap() == answers.got[1].unwrap() == answers.got[3].unwrap() == 1
    with pytest.raises(ConflictError):
        answers.got[2].unwrap()
    assert await stored(db) == [1, 2, 3]


async def test_what_was_queued_before_closing_is_committed(database_url: str) -> None:
    answers = Answers(10)
    async with open_store(database_url, pool_size=2) as store:
        db = store.database
        await db.execute_batch([(_TABLE, ())])
        for n in range(10):
            db.execute_grouped_nowait(_INSERT, (n,), answers.answer(n))
    await answers.wait()
    assert [answers.got[n].unwrap() for n in range(10)] == [1] * 10
    with pytest.raises(StoreUnavailableError):
        db.execute_grouped_nowait(_INSERT, (10,), answers.answer(10))
    async with open_store(database_url, pool_size=2) as store:
        assert await stored(store.database) == list(range(10))
