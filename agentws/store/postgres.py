"""The PostgreSQL driver: an asyncpg pool run on trio through trio-asyncio.

asyncpg is asyncio-only. :func:`open_postgres` opens a trio-asyncio loop for
the life of the pool and every call goes through that loop explicitly
(``loop.run_aio_coroutine``): the loop is otherwise found through a context
variable that request handlers, started outside this block, do not see.
It also runs the task that commits grouped statements
(:meth:`PostgresDatabase.execute_grouped_nowait`): whatever gathered while
its last commit ran, in one transaction.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import asyncpg
import outcome
import trio
import trio_asyncio

from agentws.core.deadlines import deadline
from agentws.core.errors import (
    ConflictError,
    NoDatabaseError,
    NotFoundError,
    StoreError,
    StoreUnavailableError,
    ValidationError,
    sole_exception,
)
from agentws.core.redaction import redact_url
from agentws.store.database import Row, group_size
from agentws.store.tables import Dialect

__all__ = ["CHANGES_CHANNEL", "LISTENER_NAME", "PostgresDatabase", "open_postgres", "redact_url"]

T = TypeVar("T")

log = logging.getLogger("agentws.store")

# Rollback, release and close must finish, but not hang shutdown.
_CLEANUP_S = 5.0
# Establishing one connection; a database that does not answer by then is down.
_CONNECT_TIMEOUT_S = 10.0
#: The ``application_name`` of the listening connection, followed by its schema.
LISTENER_NAME = "agentws listener"
#: The channel change notifications travel on (see migration 0010).
CHANGES_CHANNEL = "agentws"
# A listening connection is asked for a round trip this often: a connection
# that died without a word (a dropped route, a frozen server) is noticed
# within this plus the connect timeout, not at the next TCP keep-alive.
_LISTEN_CHECK_S = 5.0
_Grouped = tuple[str, Sequence[Any], Callable[[outcome.Outcome[int]], None]]

_UNAVAILABLE = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    # A connection left mid-operation by a lost server or a cancelled call.
    asyncpg.exceptions.InternalClientError,
)


def _convert(exc: BaseException) -> Exception:
    if isinstance(exc, asyncpg.UniqueViolationError):
        return ConflictError(exc.detail or str(exc))
    if isinstance(exc, asyncpg.ForeignKeyViolationError):
        return NotFoundError("the record refers to another that does not exist")
    if isinstance(exc, asyncpg.IntegrityConstraintViolationError):
        return ValidationError(str(exc))
    if isinstance(exc, _UNAVAILABLE):
        return StoreUnavailableError(f"PostgreSQL: {exc}")
    return StoreError(f"PostgreSQL: {exc}")


class _PostgresTransaction:
    def __init__(self, db: PostgresDatabase, conn: asyncpg.Connection) -> None:
        self._db = db
        self._conn = conn

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        rows = await self._db.aio(self._conn.fetch, sql, *args)
        return [dict(r) for r in rows]

    async def execute(self, sql: str, *args: Any) -> int:
        status: str = await self._db.aio(self._conn.execute, sql, *args)
        # "INSERT 0 1", "UPDATE 3", "DELETE 0", "SELECT 1": the count is last.
        last = status.rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else 0


class PostgresDatabase:
    """A :class:`~agentws.store.database.Database` over an asyncpg pool."""

    dialect: Dialect = "postgres"

    notifies = True

    def __init__(self, loop: Any, pool: asyncpg.Pool, url: str) -> None:
        self._loop = loop
        self._pool = pool
        self._url = url
        self._grouped: deque[_Grouped] = deque()
        self._grouped_arrived = trio.Event()
        # None: no task commits grouped statements (not started, or stopped).
        self._grouping: trio.Event | None = None

    async def aio(
        self, method: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any
    ) -> T:
        """Call an asyncpg coroutine method on our loop, converting its errors.

        The method is called here, not by the caller, because asyncpg checks
        a connection's state when the method is called (before awaiting) and
        raises there when the pool has taken the connection back.
        """
        try:
            result: T = await self._loop.run_aio_coroutine(method(*args, **kwargs))
        except (asyncpg.PostgresError, *_UNAVAILABLE) as exc:
            raise _convert(exc) from exc
        return result

    @asynccontextmanager
    async def transaction(
        self, *, write: bool = True, durable: bool = True
    ) -> AsyncIterator[_PostgresTransaction]:
        conn = await self.aio(self._pool.acquire, timeout=_CONNECT_TIMEOUT_S)
        # A connection whose state is unknown (a failed rollback, a cancelled
        # call still in flight) must not go back to the pool for reuse.
        broken = True
        try:
            try:
                tx = conn.transaction(readonly=not write)
            except asyncpg.InterfaceError as exc:
                raise _convert(exc) from exc
            await self.aio(tx.start)
            if write and not durable:
                await self.aio(conn.execute, "SET LOCAL synchronous_commit TO OFF")
            try:
                yield _PostgresTransaction(self, conn)
            except BaseException:
                with trio.move_on_after(_CLEANUP_S, shield=True):
                    with contextlib.suppress(StoreError):
                        await self.aio(tx.rollback)
                        broken = False
                raise
            else:
                await self.aio(tx.commit)
                broken = False
        finally:
            await self._release(conn, broken=broken)

    async def _release(self, conn: asyncpg.Connection, *, broken: bool) -> None:
        """Give ``conn`` back to the pool; a broken one is closed first (the pool replaces it).

        Never raises: the caller's own outcome (or error) is what matters.
        """
        if broken:
            _terminate(conn)
        with trio.move_on_after(_CLEANUP_S, shield=True) as scope:
            try:
                await self._loop.run_aio_coroutine(self._pool.release(conn))
            except Exception as exc:
                log.debug("a PostgreSQL connection could not be released: %r", exc)
                _terminate(conn)
        if scope.cancelled_caught:
            _terminate(conn)

    async def execute_batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, durable: bool = True
    ) -> list[int]:
        async with self.transaction(durable=durable) as tx:
            return [await tx.execute(sql, *args) for sql, args in statements]

    def execute_grouped_nowait(
        self, sql: str, args: Sequence[Any], answer: Callable[[outcome.Outcome[int]], None]
    ) -> None:
        if self._grouping is None or self._grouping.is_set():
            raise StoreUnavailableError("PostgreSQL: the database is closed")
        self._grouped.append((sql, args, answer))
        self._grouped_arrived.set()

    async def commit_groups(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Commit grouped statements, a group at a time, until :meth:`stop_grouping`.

        Statements queued before the stop are committed first; if this task
        is cancelled instead, those not committed are answered with
        :class:`~agentws.core.errors.StoreUnavailableError`.
        """
        stopping = self._grouping = trio.Event()
        task_status.started()
        try:
            while self._grouped or not stopping.is_set():
                await self._grouped_arrived.wait()
                self._grouped_arrived = trio.Event()
                while self._grouped:
                    count = group_size(len(self._grouped))
                    await self._commit_group([self._grouped.popleft() for _ in range(count)])
        finally:
            self._grouping = stopping
            stopping.set()
            closed = StoreUnavailableError("PostgreSQL: the database is closed")
            while self._grouped:
                self._grouped.popleft()[2](outcome.Error(closed))

    def stop_grouping(self) -> None:
        """Let :meth:`commit_groups` return once what was queued is committed."""
        if self._grouping is not None:
            self._grouping.set()
        self._grouped_arrived.set()

    async def _commit_group(self, group: list[_Grouped]) -> None:
        answered = False
        try:
            try:
                counts = await self.execute_batch([(sql, args) for sql, args, _ in group])
            except Exception as exc:  # converted (see _convert), or a failure of its own
                if len(group) == 1 or isinstance(exc, StoreUnavailableError):
                    results: list[outcome.Outcome[int]] = [outcome.Error(exc) for _ in group]
                else:
                    # Maybe one statement's own failure: each on its own, so
                    # that it cannot fail the others.
                    results = [
                        await outcome.acapture(self._commit_one, sql, args)
                        for sql, args, _ in group
                    ]
            else:
                results = [outcome.Value(n) for n in counts]
            answered = True
            for (_, _, answer), result in zip(group, results, strict=True):
                answer(result)
        finally:
            if not answered:  # cancelled: nobody may count on these being stored
                closed = StoreUnavailableError("PostgreSQL: the database is closing")
                for _, _, answer in group:
                    answer(outcome.Error(closed))

    async def _commit_one(self, sql: str, args: Sequence[Any]) -> int:
        (count,) = await self.execute_batch([(sql, args)])
        return count

    def data_version(self) -> int | None:
        return None  # no cheap change counter; caches ask the database every time

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        rows = await self.aio(self._pool.fetch, sql, *args, timeout=_CONNECT_TIMEOUT_S)
        return [dict(r) for r in rows]

    async def fetch_shaped(self, shape: Callable[[list[Row]], T], sql: str, *args: Any) -> T:
        return shape(await self.fetch(sql, *args))

    async def ping(self) -> None:
        async with self.transaction(write=False) as tx:
            await tx.fetch("SELECT 1")

    async def listen(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """LISTEN on a connection of its own (not the pool's), until it is lost.

        asyncpg calls its listeners from the asyncio loop, which trio-asyncio
        runs inside trio, so ``on_change`` may use trio's synchronous API.
        """
        with trio.fail_after(_CONNECT_TIMEOUT_S):
            conn = await self.aio(
                asyncpg.connect,
                self._url,
                timeout=_CONNECT_TIMEOUT_S,
                # So operators (and pg_stat_activity) can tell it from the pool's.
                server_settings={"application_name": LISTENER_NAME},
            )
        lost = trio.Event()
        try:
            conn.add_termination_listener(lambda _conn: lost.set())
            schema = await self.aio(conn.fetchval, "SELECT current_schema()")
            # "agentws listener <schema>": which deployment's listener this is.
            await self.aio(
                conn.execute,
                "SELECT set_config('application_name', $1, false)",
                f"{LISTENER_NAME} {schema}",
            )
            prefix = f"{schema}:"

            def deliver(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
                # Other schemas of the same database share the channel.
                if payload.startswith(prefix):
                    on_change(payload[len(prefix) :])

            await self.aio(conn.add_listener, CHANGES_CHANNEL, deliver)
            task_status.started()
            while not lost.is_set():
                with trio.move_on_after(_LISTEN_CHECK_S):
                    await lost.wait()
                if not lost.is_set():
                    with deadline(_CONNECT_TIMEOUT_S, _listener_silent):
                        await self.aio(conn.fetchval, "SELECT 1")
            raise StoreUnavailableError("PostgreSQL: the listening connection was closed")
        finally:
            if not conn.is_closed():
                with trio.move_on_after(_CLEANUP_S, shield=True) as scope:
                    await self._loop.run_aio_coroutine(conn.close(timeout=_CLEANUP_S))
                if scope.cancelled_caught:
                    conn.terminate()


def _terminate(conn: asyncpg.Connection) -> None:
    # The pool may have taken the connection back already (it does when the
    # server ends it), and then every call on it raises: nothing is left to close.
    with contextlib.suppress(asyncpg.InterfaceError):
        conn.terminate()


def _no_database(url: str, exc: Exception) -> NoDatabaseError:
    """The server answered that the database the URL names does not exist."""
    parts = urlsplit(url)
    name = unquote(parts.path.lstrip("/"))
    server = redact_url(parts._replace(path="", query="", fragment="").geturl())
    if not name:  # named elsewhere (PGDATABASE, a query parameter): the server's words
        return NoDatabaseError(f"PostgreSQL at {server}: {exc}", init_creates=False)
    return NoDatabaseError(
        f"database {name!r} does not exist on the PostgreSQL server at {server}: "
        f"create it first (createdb {name}, or CREATE DATABASE), then run `agentws init`",
        init_creates=False,
    )


@asynccontextmanager
async def open_postgres(url: str, *, pool_size: int) -> AsyncIterator[PostgresDatabase]:
    """Open a connection pool to the PostgreSQL database named by ``url``.

    Query parameters of the URL that asyncpg does not know become server
    settings, so ``?search_path=myschema`` selects a schema.

    Resource handling:
        The pool and its asyncio loop are closed when the block exits.

    Error handling:
        Raises :class:`~agentws.core.errors.StoreUnavailableError` naming the
        (redacted) URL if no connection can be made.
    """
    try:
        async with trio_asyncio.open_loop() as loop:
            try:
                pool = await loop.run_aio_coroutine(
                    asyncpg.create_pool(
                        url, min_size=1, max_size=pool_size, timeout=_CONNECT_TIMEOUT_S
                    )
                )
            except asyncpg.InvalidCatalogNameError as exc:
                raise _no_database(url, exc) from exc
            except (asyncpg.PostgresError, *_UNAVAILABLE) as exc:
                raise StoreUnavailableError(
                    f"cannot connect to PostgreSQL at {redact_url(url)}: {exc}"
                ) from exc
            try:
                db = PostgresDatabase(loop, pool, url)
                async with trio.open_nursery() as nursery:
                    await nursery.start(db.commit_groups)
                    try:
                        yield db
                    finally:
                        db.stop_grouping()
            finally:
                with trio.move_on_after(_CLEANUP_S, shield=True) as scope:
                    await loop.run_aio_coroutine(pool.close())
                if scope.cancelled_caught:
                    pool.terminate()
    except BaseExceptionGroup as group:
        # trio-asyncio runs its loop in a nursery, which wraps whatever
        # leaves this block (ours or the caller's) in exception groups.
        leaf = sole_exception(group)
        if isinstance(leaf, BaseExceptionGroup):
            raise
        raise leaf from leaf.__cause__


def _listener_silent() -> StoreUnavailableError:
    return StoreUnavailableError(
        f"PostgreSQL: no answer on the listening connection in {_CONNECT_TIMEOUT_S:g} s"
    )
