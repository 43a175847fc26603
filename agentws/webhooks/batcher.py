"""Group commit of deliveries: each request waits for the durable commit of its event.

A delivery is acknowledged only once its event is durably stored, and a
durable commit (fsync on SQLite, WAL flush on PostgreSQL) costs far more
than the inserts in it. So events go to the store's group commit
(:meth:`~agentws.store.sql_ingest.IngestStore.ingest_nowait`): the events queued while one
commit runs are stored together by the next, which starts as soon as that
one ends (on SQLite in the writer thread itself, with no turn of the event
loop in between), a quarter of them at a time when more than 8 wait (see
:func:`~agentws.store.database.group_size`). Under load, one commit carries
many events; alone, an event waits for nothing but its own commit.

The batcher stamps each event as it is queued, keeps the requests' store
deadline (one watch for all of them: a cancel scope per request would cost
more than the rest of its wait), wakes the worker when events are stored,
and says whether deliveries are queueing. Each waiting request gets its own
answer (accepted, duplicate, conflict, gone) or the store's error, or, past
its deadline, "no answer in time" (its event may still be stored by the
commit under way: the sender's retry is then a duplicate).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from collections.abc import Callable
from datetime import datetime, timedelta

import attrs
import outcome
import trio

from agentws.core.errors import StoreError, StoreUnavailableError
from agentws.domain.deliveries import Ingested, IngestOutcome
from agentws.domain.models import Event
from agentws.domain.rules import utcnow
from agentws.store.sql_ingest import IngestStore

__all__ = ["BUSY_BATCH", "DEDUP_WINDOW", "IngestBatcher"]

#: How long a delivery id is remembered per webhook.
DEDUP_WINDOW = timedelta(hours=72)
#: This many deliveries waiting for their commit at once means they arrive
#: faster than one commit takes: the door is busy (see :meth:`IngestBatcher.busy`).
BUSY_BATCH = 8
# The least step between two events' received_at.
_TICK = timedelta(microseconds=1)
_LATE = "no answer in time"


@attrs.define(eq=False)
class _Pending:
    event: Event
    done: trio.Event = attrs.field(factory=trio.Event)
    #: The store's answer: whether the event was inserted, or its error.
    inserted: outcome.Outcome[bool] | None = None
    #: Set instead when the request is answered before the store (its deadline).
    error: StoreError | None = None


@attrs.define(eq=False)
class IngestBatcher:
    """Hands deliveries' events to the store's group commit; runs in the service's nursery."""

    store: IngestStore
    #: Called when a commit stored new events (wakes the worker).
    on_stored: Callable[[], None] | None = None
    #: How long the door counts as busy after BUSY_BATCH deliveries waited at once.
    busy_s: float = 1.0
    _last_received: datetime | None = attrs.field(default=None, init=False)
    _busy_until: float = attrs.field(default=float("-inf"), init=False)
    # Deliveries handed to the store and not yet answered by it.
    _queued: int = attrs.field(default=0, init=False)
    _closed: trio.Event = attrs.field(factory=trio.Event, init=False)
    # Set when nothing is queued (what a closing serve() waits for).
    _idle: trio.Event = attrs.field(factory=trio.Event, init=False)
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
            The store's :class:`~agentws.core.errors.StoreError` if the commit failed.
            Cancelled while waiting, the event may still be stored by the
            commit under way.
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
        url_generation: int | None = None,
        secret_generation: int | None = None,
        source: str | None = None,
    ) -> Ingested:
        """:meth:`submit` the event of a delivery, made here already stamped (the door's way:
        one event made per delivery, not one made and then one stamped).

        ``source``: the address the delivery came from, kept with its event.

        Error handling:
            As :meth:`submit`; and :class:`~agentws.core.errors.StoreUnavailableError`
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
            url_generation=url_generation,
            secret_generation=secret_generation,
            source=source,
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
        self.store.ingest_nowait(event, functools.partial(self._answer, pending))
        self._queued += 1
        if self._queued >= BUSY_BATCH:
            self._busy_until = trio.current_time() + self.busy_s
        if deadline < math.inf:
            alarm = self._alarm
            if alarm is None:
                # Not serving (shutting down, or not started): a scope of its own.
                with trio.move_on_at(deadline):
                    await pending.done.wait()
                _answer_late(pending)
            else:
                heapq.heappush(self._waiting, (deadline, next(self._arrivals), pending))
                if deadline < alarm.deadline:
                    alarm.deadline = deadline
        await pending.done.wait()
        _drop_answered(self._waiting)
        if pending.error is not None:
            raise pending.error
        if pending.inserted is None:  # pragma: no cover - set with done, unless error is
            raise RuntimeError("the commit ended without an answer")
        if pending.inserted.unwrap():
            return Ingested(IngestOutcome.ACCEPTED, event.id)
        # Not stored (a key taken, a webhook gone): rare, and worth a scope of its own.
        with trio.move_on_at(deadline):
            return await self.store.not_ingested(event, dedup_since=utcnow() - DEDUP_WINDOW)
        raise StoreUnavailableError(_LATE)

    def _answer(self, pending: _Pending, inserted: outcome.Outcome[bool]) -> None:
        """The store's answer for ``pending`` (in trio's thread, right after its commit)."""
        self._queued -= 1
        if not self._queued:
            self._idle.set()
        if pending.done.is_set():  # answered already: past its deadline
            return
        pending.inserted = inserted
        pending.done.set()
        if self.on_stored is not None and isinstance(inserted, outcome.Value) and inserted.value:
            self.on_stored()

    def close(self) -> None:
        """Stop once no delivery waits for its commit; later ones keep a deadline of their own."""
        self._closed.set()
        self._idle.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the requests' deadlines until :meth:`close` and no delivery is waiting."""
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._watch)
                task_status.started()
                await self._closed.wait()
                while self._queued:
                    self._idle = trio.Event()
                    await self._idle.wait()
                nursery.cancel_scope.cancel()
        finally:
            # Still waiting (cancelled): the store answers each after its commit.
            self._alarm = None
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


def _drop_answered(waiting: list[tuple[float, int, _Pending]]) -> None:
    """Forget the requests at the head of ``waiting`` that have their answer."""
    while waiting and waiting[0][2].done.is_set():
        heapq.heappop(waiting)


def _answer_late(pending: _Pending) -> None:
    """Answer a request that is past its deadline without an answer: the sender must retry."""
    if not pending.done.is_set():
        pending.error = StoreUnavailableError(_LATE)
        pending.done.set()
