"""Store latency for the metrics: a :class:`Database` that times what it passes on.

Wraps either driver at the seam, so every read (``fetch``), transaction and
batch is observed in ``agentws_store_seconds`` by kind, whatever store
method issued it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import outcome
import trio

from agentws.core.metrics import STORE_SECONDS, timed_store
from agentws.store.database import Database, Row, Transaction
from agentws.store.tables import Dialect

__all__ = ["TimedDatabase"]

T = TypeVar("T")

# A grouped statement is timed from its queueing to its answer, as a batch is.
_GROUPED = STORE_SECONDS.labels("grouped")


class TimedDatabase:
    """``database``, with each operation's duration observed."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self.dialect: Dialect = database.dialect
        self.notifies = database.notifies

    @asynccontextmanager
    async def transaction(
        self, *, write: bool = True, durable: bool = True
    ) -> AsyncIterator[Transaction]:
        with timed_store("write" if write else "read_transaction"):
            async with self._db.transaction(write=write, durable=durable) as tx:
                yield tx

    async def execute_batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, durable: bool = True
    ) -> list[int]:
        with timed_store("batch"):
            return await self._db.execute_batch(statements, durable=durable)

    def execute_grouped_nowait(
        self, sql: str, args: Sequence[Any], answer: Callable[[outcome.Outcome[int]], None]
    ) -> None:
        started = time.perf_counter()

        def timed(result: outcome.Outcome[int]) -> None:
            _GROUPED.observe(time.perf_counter() - started)
            answer(result)

        self._db.execute_grouped_nowait(sql, args, timed)

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        with timed_store("read"):
            return await self._db.fetch(sql, *args)

    async def fetch_shaped(self, shape: Callable[[list[Row]], T], sql: str, *args: Any) -> T:
        with timed_store("read"):
            return await self._db.fetch_shaped(shape, sql, *args)

    def data_version(self) -> int | None:
        return self._db.data_version()

    async def listen(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self._db.listen(on_change, task_status=task_status)

    async def ping(self) -> None:
        with timed_store("ping"):
            await self._db.ping()
