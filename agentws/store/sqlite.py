"""The SQLite driver: WAL-mode connections, driven from trio through threads.

sqlite3 blocks, so no statement runs on the event loop: the event loop never
waits on disk. One writer connection serves the process, in a thread of its
own that runs one transaction after another
(:class:`~agentws.store.sqlite_threads.ConnectionThread`): SQLite admits one
writer at a time anyway. Grouped statements (:meth:`SqliteDatabase.execute_grouped_nowait`)
gather for that thread, which commits all that gathered in one transaction
as soon as it is free (group commit). Single reads run on a few read-only
connections, each in a thread of its own too, and a search in a read
process (:mod:`agentws.store.sqlite_read_processes`) where there are
some. Other processes (the CLI while the server runs) wait for the write
lock up to ``busy_timeout``.

A statement a thread has started cannot be cancelled from trio, so a read
has a deadline of its own (``read_deadline_s``): SQLite's progress handler
stops it past that, and the reader is free for the next read.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import outcome
import trio

from agentws.core.errors import (
    ConflictError,
    NotFoundError,
    StoreError,
    StoreUnavailableError,
    ValidationError,
)
from agentws.store.database import Row, group_size
from agentws.store.sqlite_read_processes import ReadProcesses
from agentws.store.sqlite_threads import Answer, ClosedError, ConnectionThread, Session
from agentws.store.tables import Dialect

__all__ = ["SqliteDatabase", "open_sqlite", "sqlite_path"]

T = TypeVar("T")

# How long a statement waits for another process's write lock before failing.
_BUSY_TIMEOUT_MS = 5000
# Rollback after a failure or cancellation must finish, but not hang shutdown.
_CLEANUP_S = 5.0
# Read-only connections for single reads; WAL lets them read beside the writer.
_READERS = 4
# Readers map the database file into memory, up to this size. Any commit (the
# audit log's batches, twice a second under load) makes every reader drop its
# page cache at its next read; mapped pages are then used where they lie in
# the OS's cache instead of each being copied in again by a read() call. The
# cost: a file shrunk behind SQLite's back (copied over or truncated by hand
# while the service runs) ends the process (SIGBUS) where a read would have
# failed. SQLite's own writers shrink it safely, and agentws never does (no
# VACUUM).
_READER_MMAP_BYTES = 256 * 1024 * 1024
# A read still running after this long is stopped (StoreError): a search over large
# documents once held a reader for minutes, and the readers are few.
_READ_DEADLINE_S = 30.0
# SQLite checks the deadline every this many virtual machine steps (milliseconds of work).
# The check takes the GIL, which the event loop may hold for a switch interval: rare
# checks keep that wait off short reads and small for long ones.
_PROGRESS_STEPS = 1_000_000
# How long a data version read is reused. Another process's commit is seen
# this much later at most; this process's own commits are seen at once.
_DATA_VERSION_REUSE_S = 0.005
_PLACEHOLDER = re.compile(r"\$(\d+)")


def sqlite_path(url: str) -> str:
    """The file path (or ``:memory:``) named by a ``sqlite:///PATH`` URL."""
    path = unquote(urlsplit(url).path)
    return path[1:] if path.startswith("/") else path


@functools.lru_cache(maxsize=512)
def _to_sqlite(sql: str) -> str:
    return _PLACEHOLDER.sub(r"?\1", sql)


def _convert(exc: sqlite3.Error) -> StoreError | ConflictError | NotFoundError | ValidationError:
    text = str(exc)
    if isinstance(exc, sqlite3.IntegrityError):
        if text.startswith("UNIQUE"):
            return ConflictError(text)
        if text.startswith("FOREIGN KEY"):
            return NotFoundError("the record refers to another that does not exist")
        return ValidationError(text)
    if isinstance(exc, sqlite3.OperationalError) and (
        "locked" in text or "unable to open" in text or "disk I/O" in text
    ):
        return StoreUnavailableError(f"SQLite: {text}")
    return StoreError(f"SQLite: {text}")


class _SqliteTransaction:
    def __init__(self, session: Session) -> None:
        self._session = session

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return await _converted(self._session.call(lambda conn: _fetch_rows(conn, sql, args)))

    async def execute(self, sql: str, *args: Any) -> int:
        return await _converted(
            self._session.call(lambda conn: conn.execute(_to_sqlite(sql), args).rowcount)
        )


def _fetch_rows(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[Row]:
    cursor = conn.execute(_to_sqlite(sql), args)
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _as_read(rows: list[Row]) -> list[Row]:
    return rows


def read_rows(
    conn: sqlite3.Connection, sql: str, args: tuple[Any, ...], deadline_s: float
) -> list[Row]:
    """:func:`_fetch_rows`, stopped with a StoreError once ``deadline_s`` has passed."""
    deadline = time.monotonic() + deadline_s
    conn.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
    try:
        return _fetch_rows(conn, sql, args)
    except sqlite3.OperationalError as exc:
        if str(exc) != "interrupted" or time.monotonic() <= deadline:
            raise
        raise StoreError(
            f"SQLite: a read ran longer than {deadline_s:g} s and was stopped"
        ) from None
    finally:
        conn.set_progress_handler(None, 0)


async def _converted(work: Awaitable[T]) -> T:
    try:
        return await work
    except sqlite3.Error as exc:
        raise _convert(exc) from exc
    except ClosedError as exc:
        raise StoreUnavailableError(f"SQLite: {exc}") from None


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


_Statement = tuple[str, Sequence[Any]]


class SqliteDatabase:
    """A :class:`~agentws.store.database.Database` over one SQLite file.

    Writes run on the one writer connection, in its own thread
    (:class:`~agentws.store.sqlite_threads.ConnectionThread`), one transaction
    after another; single reads (:meth:`fetch`) run on a few read-only
    connections beside it, which WAL lets read while the writer writes.
    """

    dialect: Dialect = "sqlite"
    notifies = False

    def __init__(
        self,
        writer: ConnectionThread,
        readers: list[ConnectionThread],
        version_conn: sqlite3.Connection | None = None,
        *,
        read_deadline_s: float = _READ_DEADLINE_S,
        processes: ReadProcesses | None = None,
    ) -> None:
        self._writer = writer
        self._processes = processes
        self._read_deadline_s = read_deadline_s
        self._version_conn = version_conn
        self._version = 0
        self._version_until = 0.0
        # The writer connection's synchronous setting; only the writer thread touches it.
        self._synchronous = "FULL"
        self._grouped = writer.gathering(self._commit_grouped, size=group_size)
        self._idle_send, self._idle = trio.open_memory_channel[ConnectionThread](len(readers))
        for reader in readers:
            self._idle_send.send_nowait(reader)
        self._has_readers = bool(readers)

    def _set_synchronous(self, conn: sqlite3.Connection, durable: bool) -> None:
        # In WAL mode, FULL syncs the log at every commit and NORMAL only at
        # checkpoints. The setting is the connection's, so it is set per
        # transaction, and only when it changes (in the writer thread).
        synchronous = "FULL" if durable else "NORMAL"
        if synchronous != self._synchronous:
            conn.execute(f"PRAGMA synchronous={synchronous}")
            self._synchronous = synchronous

    def data_version(self) -> int | None:
        # PRAGMA data_version reads the WAL index in shared memory, no disk:
        # a few microseconds, so it runs right here. The connection has no
        # busy timeout, so in the rare moment it would wait it says "unknown".
        # But the sqlite3 module lets go of the GIL for it, and while worker
        # threads run queries, getting it back can take a switch interval
        # (5 ms): a value read is reused for _DATA_VERSION_REUSE_S, and
        # forgotten at once when this process commits.
        if self._version_conn is None:
            return None
        now = time.monotonic()
        if now < self._version_until:
            return self._version
        try:
            row = self._version_conn.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            return None
        self._version, self._version_until = int(row[0]), now + _DATA_VERSION_REUSE_S
        return self._version

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return await self._read_in_thread(_as_read, sql, args)

    async def fetch_shaped(self, shape: Callable[[list[Row]], T], sql: str, *args: Any) -> T:
        if self._processes is not None:
            read, value = await _converted(
                self._processes.read(shape, sql, args, self._read_deadline_s)
            )
            if read:
                result: T = value
                return result
        return await self._read_in_thread(shape, sql, args)

    async def _read_in_thread(
        self, shape: Callable[[list[Row]], T], sql: str, args: tuple[Any, ...]
    ) -> T:
        if not self._has_readers:  # an in-memory database exists on one connection only
            return await _converted(self._writer.call(lambda c: shape(_fetch_rows(c, sql, args))))
        try:
            # An idle reader is taken at once: the work handed to it is the
            # checkpoint, and this way a read costs one trip through the
            # scheduler, not two.
            reader = self._idle.receive_nowait()
        except trio.WouldBlock:
            reader = await self._idle.receive()
        deadline_s = self._read_deadline_s
        try:
            return await _converted(
                reader.call(lambda c: shape(read_rows(c, sql, args, deadline_s)))
            )
        finally:
            self._idle_send.send_nowait(reader)

    @asynccontextmanager
    async def transaction(
        self, *, write: bool = True, durable: bool = True
    ) -> AsyncIterator[_SqliteTransaction]:
        def begin(c: sqlite3.Connection) -> None:
            self._set_synchronous(c, durable or not write)
            # IMMEDIATE takes the write lock up front, so two writers queue
            # instead of one failing when it upgrades a read lock.
            c.execute("BEGIN IMMEDIATE" if write else "BEGIN")

        def commit(c: sqlite3.Connection) -> None:
            try:
                c.execute("COMMIT")
            except BaseException:
                _rollback(c)
                raise

        session = await _converted(self._writer.session(begin))
        try:
            yield _SqliteTransaction(session)
        except BaseException:
            with trio.move_on_after(_CLEANUP_S, shield=True):
                await _converted(session.call(_rollback, ends=True))
            raise
        else:
            await _converted(session.call(commit, ends=True))
            self._version_until = 0.0  # our own commit is seen at once
        finally:
            # A session left open would hold the writer thread: if the task
            # was cancelled before it could end the session, end it here.
            session.end_nowait(_rollback)

    def _write(
        self, c: sqlite3.Connection, statements: Sequence[_Statement], durable: bool
    ) -> list[int]:
        """Run ``statements`` in one transaction (the writer thread's side)."""
        self._set_synchronous(c, durable)
        c.execute("BEGIN IMMEDIATE")
        try:
            counts = [c.execute(_to_sqlite(sql), tuple(a)).rowcount for sql, a in statements]
            c.execute("COMMIT")
        except BaseException:
            _rollback(c)
            raise
        return counts

    async def execute_batch(
        self, statements: Sequence[_Statement], *, durable: bool = True
    ) -> list[int]:
        # One piece of work for the writer thread, which runs to its end even
        # if this task is cancelled meanwhile: the transaction is never left open.
        counts = await _converted(self._writer.call(lambda c: self._write(c, statements, durable)))
        self._version_until = 0.0
        return counts

    def execute_grouped_nowait(self, sql: str, args: Sequence[Any], answer: Answer[int]) -> None:
        try:
            self._grouped.put_nowait((sql, args), answer)
        except ClosedError as exc:
            raise StoreUnavailableError(f"SQLite: {exc}") from None

    def _commit_grouped(
        self, c: sqlite3.Connection, statements: list[_Statement]
    ) -> list[outcome.Outcome[int]]:
        """One durable transaction for every statement gathered (the writer thread's side)."""
        try:
            counts = self._write(c, statements, True)
        except sqlite3.Error as exc:
            if len(statements) == 1 or isinstance(_convert(exc), StoreUnavailableError):
                return [outcome.Error(_convert(exc)) for _ in statements]
            # Maybe one statement's own failure: each on its own, so that it
            # cannot fail the others.
            return [self._commit_one(c, statement) for statement in statements]
        self._version_until = 0.0  # our own commit is seen at once
        return [outcome.Value(n) for n in counts]

    def _commit_one(self, c: sqlite3.Connection, statement: _Statement) -> outcome.Outcome[int]:
        try:
            (count,) = self._write(c, [statement], True)
        except sqlite3.Error as exc:
            return outcome.Error(_convert(exc))
        self._version_until = 0.0
        return outcome.Value(count)

    async def ping(self) -> None:
        await _converted(self._writer.call(lambda c: c.execute("SELECT 1").fetchall()))

    async def listen(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        raise StoreError("SQLite announces no changes: poll it")


def _enable_wal(conn: sqlite3.Connection) -> None:
    # Switching a new file to WAL needs an exclusive lock, and SQLite reports
    # "database is locked" at once rather than waiting out the busy timeout,
    # so two processes creating the same database retry here.
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)  # a worker thread, not the event loop
        else:
            return


def _create_private(path: str) -> None:
    """Create the empty database file (a valid SQLite database), readable by its owner only.

    SQLite would create it with the umask's mode (usually world-readable);
    the write-ahead log and shared-memory files it makes beside it later take
    the database file's mode, so they are private too. An existing file
    keeps the mode it has.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another process made it first
    os.close(fd)


def _connect(path: str) -> sqlite3.Connection:
    if path != ":memory:":
        parent = Path(path).parent
        if not parent.is_dir():
            raise StoreUnavailableError(
                f"cannot open SQLite database {path!r}: directory {str(parent)!r} does not exist"
            )
        try:
            _create_private(path)
        except OSError as exc:
            raise StoreUnavailableError(f"cannot create SQLite database {path!r}: {exc}") from exc
    # isolation_level=None: we issue BEGIN/COMMIT ourselves.
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=_BUSY_TIMEOUT_MS / 1000
    )
    try:
        _enable_wal(conn)
        # FULL: a commit is on disk before we acknowledge what it stored.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def connect_reader(path: str, busy_timeout_ms: int = _BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
    )
    conn.execute("PRAGMA query_only=ON")
    conn.execute(f"PRAGMA mmap_size={_READER_MMAP_BYTES}")
    return conn


@asynccontextmanager
async def open_sqlite(
    url: str, *, read_deadline_s: float = _READ_DEADLINE_S, read_processes: int = 0
) -> AsyncIterator[SqliteDatabase]:
    """Open the SQLite database named by ``url``, creating the file if absent.

    A single read still running after ``read_deadline_s`` is stopped
    (:class:`~agentws.core.errors.StoreError`). With ``read_processes``, that
    many processes run the reads whose shape pickles (a search), off this
    process's interpreter lock (:mod:`agentws.store.sqlite_read_processes`);
    they start with the first such read.

    Resource handling:
        The connection is closed when the block exits.

    Error handling:
        Raises :class:`~agentws.core.errors.StoreUnavailableError` if the file
        cannot be opened (missing directory, permissions, not a database).
    """
    path = sqlite_path(url)
    try:
        conn = await trio.to_thread.run_sync(_connect, path)
    except sqlite3.Error as exc:
        raise StoreUnavailableError(f"cannot open SQLite database {path!r}: {exc}") from exc
    threads = [ConnectionThread(conn, "agentws sqlite writer")]
    version_conn: sqlite3.Connection | None = None
    processes: ReadProcesses | None = None
    try:
        if path != ":memory:":
            for n in range(_READERS):
                reader = await trio.to_thread.run_sync(connect_reader, path)
                threads.append(ConnectionThread(reader, f"agentws sqlite reader {n}"))
            version_conn = await trio.to_thread.run_sync(connect_reader, path, 0)
            if read_processes:
                where = str(await trio.Path(path).absolute())
                processes = ReadProcesses(where, read_processes)
        yield SqliteDatabase(
            threads[0],
            threads[1:],
            version_conn,
            read_deadline_s=read_deadline_s,
            processes=processes,
        )
    finally:
        with trio.move_on_after(_CLEANUP_S, shield=True):
            if processes is not None:
                await processes.aclose()
            for thread in threads:
                await thread.close()
            if version_conn is not None:
                await trio.to_thread.run_sync(version_conn.close)
