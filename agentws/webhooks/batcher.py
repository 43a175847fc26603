"""Group commit: concurrent deliveries stored in one transaction.

A delivery is acknowledged only once its event is durably stored, and a
durable commit (fsync on SQLite, WAL flush on PostgreSQL) costs far more than
the inserts in it. So requests hand their events to one task, which commits
whatever has gathered while the previous commit ran: under load, one commit
carries many events; alone, an event waits for nothing but its own commit.

Each waiting request gets its own answer (accepted, duplicate, conflict,
gone) or the store's error, or, past the deadline it was submitted with,
"no answer in time" (one watch for all of them: a cancel scope per request
would cost more than the rest of its wait). If a batch fails for a reason that may be one
event's (not the store being down), its events are tried one by one, so one
bad event cannot fail the others.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections.abc import Callable
from datetime import datetime, timedelta

import attrs
import trio

from agentws.domain.deliveries import Ingested
from agentws.domain.models import Event
from agentws.domain.rules import utcnow
from agentws.errors import StoreError, StoreUnavailableError
from agentws.store import Store

__all__ = ["DEDUP_WINDOW", "IngestBatcher"]

log = logging.getLogger("agentws.webhooks")

#: How long a delivery id is remembered per webhook.
DEDUP_WINDOW = timedelta(hours=72)
# Events committed together at most.
_MAX_BATCH = 256
#: A commit that carries this many deliveries means they arrive faster than
#: one commit takes: the door is busy (see :meth:`IngestBatcher.busy`).
BUSY_BATCH = 8
# The least step between two events' received_at.
_TICK = timedelta(microseconds=1)


@attrs.define(eq=False)
class _Pending:
    event: Event
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Ingested | None = None
    error: StoreError | None = None


@attrs.define(eq=False)
class IngestBatcher:
    """Stores submitted events in shared transactions; runs in the service's nursery."""

    store: Store
    #: Called after a commit that stored new events (wakes the worker).
    on_stored: Callable[[], None] | None = None
    #: How long the door counts as busy after a commit of BUSY_BATCH or more.
    busy_s: float = 1.0
    _queue: list[_Pending] = attrs.field(factory=list, init=False)
    _arrived: trio.Event = attrs.field(factory=trio.Event, init=False)
    _last_received: datetime | None = attrs.field(default=None, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _busy_until: float = attrs.field(default=float("-inf"), init=False)
    # Requests waiting with a deadline: (deadline, arrival, pending), a heap.
    _waiting: list[tuple[float, int, _Pending]] = attrs.field(factory=list, init=False)
    _arrivals: itertools.count[int] = attrs.field(factory=itertools.count, init=False)
    # The watch's sleep until the earliest deadline (None: not serving).
    _alarm: trio.CancelScope | None = attrs.field(default=None, init=False)

    def busy(self) -> bool:
        """Whether deliveries have been queueing for their commit (within ``busy_s``)."""
        return trio.current_time() < self._busy_until

    async def submit(self, event: Event) -> Ingested:
        """Store ``event`` with the next commit; what became of it.

        It is stamped received (and available) as it is queued: see :meth:`_stamp`.

        Error handling:
            The store's :class:`~agentws.errors.StoreError` if the commit failed.
            Cancelled while waiting (the request's deadline), the event may
            still be stored by the commit under way.
        """
        now = self._stamp()
        return await self._submit(attrs.evolve(event, received_at=now, available_at=now))

    async def deliver(
        self,
        webhook_id: str,
        body: bytes,
        headers: dict[str, str],
        dedup_key: str | None,
        *,
        deadline: float,
    ) -> Ingested:
        """:meth:`submit` the event of a delivery, made here already stamped (the door's way:
        one event made per delivery, not one made and then one stamped).

        Error handling:
            As :meth:`submit`; and :class:`~agentws.errors.StoreUnavailableError`
            ("no answer in time") once ``deadline`` (trio's clock) has passed,
            while the event may still be stored by the commit under way.
        """
        now = self._stamp()
        event = Event(
            webhook_id=webhook_id,
            body=body,
            headers=headers,
            dedup_key=dedup_key,
            received_at=now,
            available_at=now,
        )
        return await self._submit(event, deadline)

    def _stamp(self) -> datetime:
        # Queue order is commit order, and each event is stamped just as it
        # joins the queue: received_at strictly increases, so ordering by it
        # (as the event queue does) keeps senders' order.
        now = utcnow()
        last = self._last_received
        if last is not None and now <= last:
            now = last + _TICK
        self._last_received = now
        return now

    async def _submit(self, event: Event, deadline: float = math.inf) -> Ingested:
        pending = _Pending(event)
        alarm = self._alarm
        if alarm is None:
            # Shutting down (or not started): the delivery is committed on its own.
            with trio.CancelScope(deadline=deadline):
                await self._commit([pending])
            _answer_late(pending)
        else:
            self._queue.append(pending)
            self._arrived.set()
            if deadline < math.inf:
                heapq.heappush(self._waiting, (deadline, next(self._arrivals), pending))
                if deadline < alarm.deadline:
                    alarm.deadline = deadline
        await pending.done.wait()
        if pending.error is not None:
            raise pending.error
        if pending.result is None:  # pragma: no cover - set with done, unless error is
            raise RuntimeError("the batch ended without an answer")
        return pending.result

    def close(self) -> None:
        """Stop once nothing is waiting; later deliveries commit one by one."""
        self._closed = True
        self._arrived.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Commit batches until :meth:`close` has been called and nothing waits."""
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._watch)
                task_status.started()
                await self._commit_batches()
                nursery.cancel_scope.cancel()
        finally:
            self._alarm = None
            _answer_unanswered(self._queue)
            self._queue = []
            self._waiting = []

    async def _watch(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Answer "no answer in time" to requests whose deadline has passed.

        Deadlines come in arrival order, so this wakes about once per
        deadline's length under load, not once per request.
        """
        waiting = self._waiting
        while True:
            _drop_answered(waiting)
            with trio.CancelScope(deadline=waiting[0][0] if waiting else math.inf) as alarm:
                self._alarm = alarm
                task_status.started()
                task_status = trio.TASK_STATUS_IGNORED
                await trio.sleep_forever()
            now = trio.current_time()
            while waiting and waiting[0][0] <= now:
                _answer_late(heapq.heappop(waiting)[2])

    async def _commit_batches(self) -> None:
        while True:
            await self._arrived.wait()
            batch, self._queue = self._queue[:_MAX_BATCH], self._queue[_MAX_BATCH:]
            if not self._queue:
                self._arrived = trio.Event()
                if self._closed:
                    self._arrived.set()
            if len(batch) >= BUSY_BATCH:
                self._busy_until = trio.current_time() + self.busy_s
            if batch:
                try:
                    await self._commit(batch)
                finally:
                    _answer_unanswered(batch)
                    _drop_answered(self._waiting)
            elif self._closed:
                return

    async def _commit(self, batch: list[_Pending]) -> None:
        events = [pending.event for pending in batch]
        since = utcnow() - DEDUP_WINDOW
        try:
            results = await self.store.ingest_events(events, dedup_since=since)
        except StoreUnavailableError as exc:
            for pending in batch:
                pending.error = exc
                pending.done.set()
            return
        except StoreError as exc:
            if len(batch) == 1:
                log.error("could not store a webhook event: %s", exc.message)
                batch[0].error = exc
                batch[0].done.set()
                return
            for pending, event in zip(batch, events, strict=True):
                try:
                    (pending.result,) = await self.store.ingest_events([event], dedup_since=since)
                except StoreError as one:
                    log.error("could not store a webhook event: %s", one.message)
                    pending.error = one
                pending.done.set()
            self._stored()
            return
        for pending, result in zip(batch, results, strict=True):
            pending.result = result
            pending.done.set()
        self._stored()

    def _stored(self) -> None:
        if self.on_stored is not None:
            self.on_stored()


def _drop_answered(waiting: list[tuple[float, int, _Pending]]) -> None:
    """Forget the requests at the head of ``waiting`` that have their answer."""
    while waiting and waiting[0][2].done.is_set():
        heapq.heappop(waiting)


def _answer_late(pending: _Pending) -> None:
    """Answer a request that is past its deadline without an answer: the sender must retry."""
    if not pending.done.is_set():
        pending.error = StoreUnavailableError("no answer in time")
        pending.done.set()


def _answer_unanswered(batch: list[_Pending]) -> None:
    """Answer requests whose commit was cancelled (shutdown): the sender must retry."""
    for pending in batch:
        if not pending.done.is_set():
            pending.error = StoreUnavailableError("the service is shutting down")
            pending.done.set()
