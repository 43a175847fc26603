"""The driver seam: what :class:`~agentws.store.sql.SqlStore` needs of a database.

Two drivers implement it, :mod:`~agentws.store.sqlite` and
:mod:`~agentws.store.postgres`. SQL is written once, with PostgreSQL's
``$1`` placeholders; the SQLite driver rewrites them to its ``?1``. Drivers
convert their library's errors to :mod:`agentws.core.errors` — unique violations
to :class:`~agentws.core.errors.ConflictError`, foreign-key violations to
:class:`~agentws.core.errors.NotFoundError`, lost connections to
:class:`~agentws.core.errors.StoreUnavailableError` — so nothing above this seam
sees sqlite3 or asyncpg.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

import outcome
import trio

from agentws.store.tables import Dialect

__all__ = ["Database", "Row", "Transaction", "group_size"]

Row = dict[str, Any]
T = TypeVar("T")

# A group commit answers all its statements at once, so the callers of a big
# group come back together, and their next statements make the next group
# as big: a convoy, in which the commit waits for its callers and they wait
# for the commit, in turn (seen with 32 webhook senders: every commit carried
# nearly all of them, the server and the senders idle by turns). So a group
# takes a part of what waits: a burst is committed and answered in steps,
# and what comes back spreads out. At least _LEAST_GROUP, whose commit's
# fixed cost (the flush) is shared well enough; the groups grow with the
# queue, so a database that falls behind still catches up; at most
# _MOST_GROUP, so one transaction stays short.
_LEAST_GROUP = 8
_GROUP_PART = 4
_MOST_GROUP = 256


def group_size(waiting: int) -> int:
    """How many of ``waiting`` grouped statements the next group commit takes."""
    return min(waiting, max(_LEAST_GROUP, min(_MOST_GROUP, -(-waiting // _GROUP_PART))))


class Transaction(Protocol):
    """Statements run inside one database transaction."""

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        """Run a query and return every row as a dict keyed by column."""
        ...

    async def execute(self, sql: str, *args: Any) -> int:
        """Run a statement and return how many rows it changed."""
        ...


class Database(Protocol):
    """A pool of connections to one database."""

    dialect: Dialect
    #: Whether :meth:`listen` works (PostgreSQL's LISTEN/NOTIFY; SQLite has nothing like it).
    notifies: bool

    def transaction(
        self, *, write: bool = True, durable: bool = True
    ) -> AbstractAsyncContextManager[Transaction]:
        """Open a transaction: committed when the block ends, rolled back if it raises.

        ``write=False`` promises the block only reads, which lets SQLite run it
        without taking the write lock. ``durable=False`` lets the commit return
        before it is flushed to disk (SQLite ``synchronous=NORMAL`` in WAL
        mode, PostgreSQL ``synchronous_commit = off``): it survives the
        process crashing, but a power loss may take it back, together with
        every commit after it, never out of order. The next durable commit
        makes it durable too. Only for writes nobody was promised: a queue's
        own bookkeeping, never an acknowledged delivery.
        """
        ...

    async def execute_batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, durable: bool = True
    ) -> list[int]:
        """Run write statements in one transaction; how many rows each one changed.

        On SQLite the whole transaction is one trip to the database thread, so
        the write lock is held only as long as the statements take, never
        across turns of the event loop (where other writers would queue
        behind it). ``durable`` as for :meth:`transaction`.
        """
        ...

    def execute_grouped_nowait(
        self, sql: str, args: Sequence[Any], answer: Callable[[outcome.Outcome[int]], None]
    ) -> None:
        """Run a write statement durably, in one transaction with those of other callers.

        Group commit: the statement joins those queued while the previous
        group's commit ran, and the next group starts as soon as that commit
        ends, so many callers share one flush. A group takes a part of what
        waits (:func:`group_size`), so that a burst is answered in steps.
        ``answer`` is called in trio's thread, after the commit, with how
        many rows the statement changed, or its error (the driver's
        conversion, see the module docstring). A statement that fails fails
        alone: the others of its group are then committed one by one.
        Statements are committed in the order they were queued. ``answer``
        must not raise.

        Error handling:
            :class:`~agentws.core.errors.StoreUnavailableError` (raised at once,
            nothing queued) once the database is closing.
        """
        ...

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        """Run one query on its own, outside any transaction: the hot path for reads.

        A single statement reads one consistent snapshot, so a read that needs
        nothing more skips ``BEGIN``/``COMMIT`` (and, on SQLite, the writer's lock).
        """
        ...

    async def fetch_shaped(self, shape: Callable[[list[Row]], T], sql: str, *args: Any) -> T:
        """:meth:`fetch`, its rows handed to ``shape`` where they are read; what it returns.

        On SQLite ``shape`` runs in the reader's thread, off the event loop:
        a hot query's answer (a search's hits, their snippets, the tool's
        result) is then made beside the loop's work instead of in its turn,
        as the rows themselves are. On PostgreSQL it runs once the rows are
        fetched. ``shape`` must be a pure function of the rows (it may run
        in any thread); what it raises is raised here unchanged.
        """
        ...

    def data_version(self) -> int | None:
        """A number that changes whenever anyone commits a change; None if unknown.

        Cheap and synchronous, so callers may use it to validate a cache on
        every request. None (PostgreSQL, or SQLite busy) means "assume changed".
        """
        ...

    async def listen(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``on_change(topic)`` for each change notification of this schema.

        Runs on a connection of its own until that connection is lost, then
        raises :class:`~agentws.core.errors.StoreUnavailableError`. Reports started
        once listening.
        """
        ...

    async def ping(self) -> None:
        """Round-trip to the database; raises StoreUnavailableError if it cannot."""
        ...
