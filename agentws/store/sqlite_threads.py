"""ConnectionThread: a thread that owns one SQLite connection, working for trio tasks.

Work for the connection runs in its thread in the order it was submitted,
each piece right after the one before. For the writer connection this is
what matters: serialising writes with a lock in the event loop instead (and
a worker thread per statement) keeps the connection busy for as long as it
takes the loop to come back to the task that holds the lock, which under
load is milliseconds per transaction, and every other writer, a delivery
being acknowledged included, queues behind it. Here the next transaction
starts as soon as the last one ends. (A thread of its own per connection is
also cheaper than ``trio.to_thread.run_sync`` for each statement.)

A transaction made of several statements, each awaited by its task
(:meth:`ConnectionThread.session`), holds the thread between them: nothing
else runs on the connection until the session ends.

Submitted work is not cancellable once it is queued, like
``trio.to_thread.run_sync``: the task gets its result, and a cancellation
at its next checkpoint.

Small pieces of work that many tasks hand over at once, each wanting the
same treatment (the inserts of a group commit), go through a
:class:`Gathering` instead: the thread takes what has gathered (as much of
it as the gathering's ``size`` says) as one batch the moment it can start
on it, so under load one batch begins as the previous one ends, with no
turn of the event loop in between, and the answers of a whole batch go
back to the loop in one hand-off.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import outcome
import trio

__all__ = ["Answer", "ClosedError", "ConnectionThread", "Gathering", "Session"]

T = TypeVar("T")
R = TypeVar("R")

#: Called in trio's thread with what became of one item of a :class:`Gathering`.
Answer = Callable[[outcome.Outcome[R]], None]

Work = Callable[[sqlite3.Connection], Any]


class _Job:
    __slots__ = ("deliver", "opens", "work")

    def __init__(
        self,
        work: Work,
        deliver: Callable[[outcome.Outcome[Any]], None],
        opens: Session | None = None,
    ) -> None:
        self.work = work
        self.deliver = deliver
        self.opens = opens


def _ignore(_: outcome.Outcome[Any]) -> None:
    pass


class Session:
    """The statements of one transaction, run by the writer thread one by one, in order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[_Job, bool]] = queue.SimpleQueue()
        #: Whether the work that ends the session was handed over.
        self.ended = False

    async def call(self, work: Callable[[sqlite3.Connection], T], *, ends: bool = False) -> T:
        """Run ``work(connection)`` within the session; ``ends`` for its last piece."""
        if self.ended:
            # Nobody would run it: the thread has moved on.
            raise RuntimeError("the transaction has ended")

        def put(job: _Job) -> None:
            self.ended = self.ended or ends
            self._jobs.put((job, ends))

        return await _submit(put, work)

    def end_nowait(self, work: Work) -> None:
        """End the session with ``work``, without waiting for it (a task that cannot wait)."""
        if not self.ended:
            self.ended = True
            self._jobs.put((_Job(work, _ignore), True))

    def take(self) -> tuple[_Job, bool]:
        """The next piece of work, and whether it ends the session (the writer thread's side)."""
        return self._jobs.get()


class ClosedError(Exception):
    """The connection's thread has stopped: no more work can run on it."""


async def _submit(
    put: Callable[[_Job], None],
    work: Callable[[sqlite3.Connection], T],
    *,
    opens: Session | None = None,
) -> T:
    await trio.lowlevel.checkpoint_if_cancelled()
    task = trio.lowlevel.current_task()
    token = trio.lowlevel.current_trio_token()

    def deliver(result: outcome.Outcome[Any]) -> None:
        # The loop cannot end while the task waits, unless it crashed.
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(trio.lowlevel.reschedule, task, result)

    put(_Job(work, deliver, opens))

    def abort(_: Any) -> trio.lowlevel.Abort:
        return trio.lowlevel.Abort.FAILED  # it runs to its end: wait for it

    result: T = await trio.lowlevel.wait_task_rescheduled(abort)
    return result


class ConnectionThread:
    """Owns ``connection``: runs submitted work on it, one piece at a time, in order."""

    def __init__(self, connection: sqlite3.Connection, name: str) -> None:
        self._connection = connection
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._gatherings: list[Gathering[Any, Any]] = []
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    async def call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` in the thread, after the work submitted before it.

        Error handling:
            :class:`ClosedError` once :meth:`close` has been called.
        """
        return await _submit(self._put, work)

    def _put(self, job: _Job) -> None:
        # Called in the event loop's thread, as close() is: nothing is queued
        # after the thread's last job, where it would wait for ever.
        self._check_open()
        self._jobs.put(job)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the database is closed")

    def gathering(
        self,
        run: Callable[[sqlite3.Connection, list[T]], Sequence[outcome.Outcome[R]]],
        *,
        size: Callable[[int], int],
    ) -> Gathering[T, R]:
        """A :class:`Gathering` of items that ``run`` does in batches, ``size(waiting)`` at a time.

        ``run(connection, items)`` returns one outcome per item, in order;
        should it raise instead, every item of the batch gets its error.
        """
        gathering = Gathering(self, run, size)
        self._gatherings.append(gathering)
        return gathering

    async def session(self, begin: Work) -> Session:
        """Run ``begin`` and keep the thread for the session it opens.

        The caller must end the session (:meth:`Session.call` with
        ``ends=True``, or :meth:`Session.end_nowait`): until then nothing
        else runs here. If ``begin`` raises, there is no session to end.
        """
        session = Session()
        await _submit(self._put, begin, opens=session)
        return session

    async def close(self) -> None:
        """Run what was submitted, then stop the thread and close the connection."""
        if self._closed:
            return
        self._closed = True
        self._jobs.put(None)
        # Abandoned if the caller gives up waiting (a session never ended):
        # the thread is a daemon, and the connection stays with it.
        await trio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)
        await trio.to_thread.run_sync(self._connection.close)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                # Closing: what was gathered before is done too (its batch
                # may have been queued behind this end).
                for gathering in self._gatherings:
                    gathering.run_all(self._connection)
                return
            if self._run(job) and job.opens is not None:
                self._serve_session(job.opens)

    def _serve_session(self, session: Session) -> None:
        while True:
            job, ends = session.take()
            self._run(job)
            if ends:
                return

    def _run(self, job: _Job) -> bool:
        result = outcome.capture(job.work, self._connection)
        job.deliver(result)
        return isinstance(result, outcome.Value)


class Gathering(Generic[T, R]):
    """Items handed over one by one from trio, which the connection's thread runs in batches.

    :meth:`put_nowait` queues an item and, unless a batch is already due,
    queues one batch's work for the thread once the current turn of the
    event loop is over (the items other tasks hand over in the same turn
    join it). When the thread comes to it, it takes the first
    ``size(waiting)`` of the items gathered by then and runs them together.
    What is left, and what arrives meanwhile, makes the next batch, which
    the thread queues itself as this one ends, at the back of its work:
    other work submitted in between runs first, and is never starved by a
    steady stream of items. Each item's answer is called in trio's thread;
    the answers of a batch arrive together, after the batch.
    """

    def __init__(
        self,
        thread: ConnectionThread,
        run: Callable[[sqlite3.Connection, list[T]], Sequence[outcome.Outcome[R]]],
        size: Callable[[int], int],
    ) -> None:
        self._thread = thread
        self._run = run
        self._size = size
        # Appended in trio's thread, taken in the connection's; the lock
        # also keeps "a batch is due" true exactly while one is queued.
        self._items: deque[tuple[T, Answer[R]]] = deque()
        self._lock = threading.Lock()
        self._due = False
        self._token: trio.lowlevel.TrioToken | None = None
        self._job = _Job(self._run_batch, _ignore)

    def put_nowait(self, item: T, answer: Answer[R]) -> None:
        """Queue ``item``; ``answer(outcome)`` is called in trio's thread once its batch has run.

        Error handling:
            :class:`ClosedError` once the thread is closing (nothing is queued).
        """
        self._thread._check_open()
        token = self._token = trio.lowlevel.current_trio_token()
        with self._lock:
            self._items.append((item, answer))
            if self._due:
                return
            self._due = True
        # The thread is idle: it starts once this turn of the loop is over,
        # so that the items other tasks hand over in the same turn (a burst
        # of requests read together) go in the same batch.
        token.run_sync_soon(self._thread._jobs.put, self._job)

    def run_all(self, connection: sqlite3.Connection) -> None:
        """Run every item left, batch after batch (the thread's side, as it closes)."""
        while self._items:
            self._run_batch(connection)

    def _run_batch(self, connection: sqlite3.Connection) -> None:
        with self._lock:
            waiting = len(self._items)
            count = min(waiting, max(1, self._size(waiting))) if waiting else 0
            batch = [self._items.popleft() for _ in range(count)]
        if batch:
            try:
                results = self._run(connection, [item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"{len(results)} answers for {len(batch)} items")
            except Exception as exc:
                results = [outcome.Error(exc) for _ in batch]
            token = self._token
            if token is not None:
                # The loop cannot end while a task waits for an answer, unless it crashed.
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(_answer_all, batch, results)
        with self._lock:
            if self._items:
                self._thread._jobs.put(self._job)
            else:
                self._due = False


def _answer_all(
    batch: list[tuple[Any, Answer[Any]]], results: Sequence[outcome.Outcome[Any]]
) -> None:
    for (_, answer), result in zip(batch, results, strict=True):
        answer(result)
