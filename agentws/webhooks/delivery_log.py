"""The delivery log at work: a row for every request to a webhook's URL, written without
slowing the door, and each webhook's log kept to its newest ``AGENTWS_DELIVERY_LOG_KEEP``.

**Writing.** The door never waits for the log, and nothing the log does can
change an answer. Rows go to the store's group commit of deliveries
(:meth:`~agentws.store.Store.log_deliveries_nowait`), never a transaction of
their own, and the rows queued together go in one statement (a task of
:meth:`DeliveryLog.serve` hands them over once the tasks ready to run have
run): a row per delivery would double the statements a group commit holds,
and so halve the deliveries each commit stores (a group takes a share of
the statements waiting, see :func:`~agentws.store.database.group_size`).

- an accepted delivery's row is queued right after its event, by the
  batcher (:meth:`DeliveryLog.accepting`), so it rides in the commit that
  stores the event (or the next one, should the writer start that commit
  before the rows are handed over) and is written only if the event is;
- any other answer (a refusal, a duplicate) queues its row as it is
  answered (:meth:`DeliveryLog.answered`), fire and forget: a failed write
  is dropped (and said in the server log, now and then).

Refusals are cheap to provoke, so each webhook's refusal rows are bounded
in rate (:data:`REFUSAL_ROWS_PER_MIN`, bursts of :data:`REFUSAL_ROWS_BURST`):
a flood of refused requests cannot make the store write a row for each. The
next row written says how many were left out (``omitted``); ``/metrics``
counts every one of them.

**Trimming.** :meth:`DeliveryLog.serve`, in the service's nursery, trims a
webhook's log once :func:`trim_every` rows were committed to it here (one
read and one deletion, never one per request, at most a round a second),
and sweeps every webhook every :data:`SWEEP_S` (and at start): rows older
than ``AGENTWS_DELIVERY_LOG_DAYS``, and logs over the bound (those another
instance or an earlier process added). Between trims a log may hold a few
rows more than the bound; listings never show more than ``keep``
(:mod:`agentws.webhooks.delivery_listing`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import attrs
import outcome
import trio

from agentws.config import Settings
from agentws.domain.deliveries import TokenBucket
from agentws.domain.delivery_log import ACCEPTED, Delivery, redacted_headers
from agentws.domain.models import Event
from agentws.domain.rules import utcnow
from agentws.errors import StoreError
from agentws.store import Store
from agentws.store.sql_deliveries import ROWS_PER_STATEMENT

__all__ = [
    "REFUSAL_ROWS_BURST",
    "REFUSAL_ROWS_PER_MIN",
    "SWEEP_S",
    "DeliveryLog",
    "trim_every",
]

log = logging.getLogger("agentws.webhooks")

#: Refusal (and duplicate) rows a webhook's log takes a minute at most...
REFUSAL_ROWS_PER_MIN = 600
#: ...after a burst of this many.
REFUSAL_ROWS_BURST = 100
#: Every webhook's log is swept this often (age, bound), and at start.
SWEEP_S = 600.0
# Between two rounds of trimming: under load, one round a second at most.
_TRIM_PAUSE_S = 1.0
# A sweep that failed is tried again this much sooner than the next one.
_SWEEP_RETRY_S = 60.0
# A failed write is said in the server log at most this often.
_WARN_EVERY_S = 60.0
# Webhooks whose refusal rows are bounded in memory; more start afresh.
_MAX_BUCKETS = 10_000


def trim_every(keep: int) -> int:
    """After how many rows added here a webhook's log is trimmed to ``keep``."""
    return max(1, keep // 10)


def _source(client: Any) -> str | None:
    """The peer's address of an ASGI ``scope["client"]`` (host, port), if the server gave one."""
    if isinstance(client, (list, tuple)) and client:
        return str(client[0])
    return None


@attrs.define(eq=False)
class DeliveryLog:
    """Writes the delivery log for the door, and keeps it bounded (started in the service)."""

    store: Store
    #: Rows kept per webhook (0: no log at all).
    keep: int = 500
    #: Rows older than this are deleted (0: never, by age).
    max_age_s: float = 30 * 86400.0
    # Rows committed here per webhook since its last trim.
    _added: dict[str, int] = attrs.field(factory=dict, init=False)
    # Webhooks due for a trim, and the event that wakes the trimmer.
    _due: set[str] = attrs.field(factory=set, init=False)
    _wake: trio.Event = attrs.field(factory=trio.Event, init=False)
    _buckets: dict[str, TokenBucket] = attrs.field(factory=dict, init=False)
    _omitted: dict[str, int] = attrs.field(factory=dict, init=False)
    # Rows not handed over yet: of accepted deliveries (after their events), and the others.
    _after_events: list[Delivery] = attrs.field(factory=list, init=False)
    _rows: list[Delivery] = attrs.field(factory=list, init=False)
    _flush_due: bool = attrs.field(default=False, init=False)
    # Set when rows wait for the flusher (while it runs: see serve).
    _rows_ready: trio.Event = attrs.field(factory=trio.Event, init=False)
    _flushing: bool = attrs.field(default=False, init=False)
    _scope: trio.CancelScope | None = attrs.field(default=None, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _warned_at: float = attrs.field(default=float("-inf"), init=False)

    @classmethod
    def from_settings(cls, store: Store, settings: Settings) -> DeliveryLog:
        return cls(
            store, keep=settings.delivery_log_keep, max_age_s=settings.delivery_log_days * 86400
        )

    def accepting(
        self, webhook_id: str, headers: Mapping[str, str], body_bytes: int, client: Any
    ) -> Callable[[Event], None] | None:
        """What the batcher calls as it queues a delivery's event: its row, after the event.

        The row names the event and is written only if the commit stores
        it; a delivery not stored (a duplicate, a conflict) is logged with
        its answer by :meth:`answered`. None when there is no log.
        """
        if self.keep < 1:
            return None

        def queued(event: Event) -> None:
            try:
                delivery = Delivery(
                    webhook_id=webhook_id,
                    received_at=event.received_at,
                    status=202,
                    reason=ACCEPTED,
                    body_bytes=body_bytes,
                    headers=redacted_headers(headers),
                    source=_source(client),
                    event_id=event.id,
                )
                self._write(delivery, after_event=True)
            except Exception as exc:  # the log never changes an answer
                self._warn(exc)

        return queued

    def answered(
        self,
        webhook_id: str,
        status: int,
        reason: str,
        *,
        headers: Mapping[str, str],
        body_bytes: int,
        client: Any,
        event_id: str | None = None,
    ) -> None:
        """Log a request answered without its event being stored: a refusal, a duplicate.

        Never waits and never raises; beyond the rate bound the row is left
        out and counted in the next one.
        """
        if self.keep < 1:
            return
        bucket = self._buckets.get(webhook_id)
        if bucket is None:
            if len(self._buckets) >= _MAX_BUCKETS:
                self._buckets.clear()
            bucket = TokenBucket(REFUSAL_ROWS_PER_MIN, REFUSAL_ROWS_BURST)
            self._buckets[webhook_id] = bucket
        if bucket.take(trio.current_time()) is not None:
            self._omitted[webhook_id] = self._omitted.get(webhook_id, 0) + 1
            return
        delivery = Delivery(
            webhook_id=webhook_id,
            received_at=utcnow(),
            status=status,
            reason=reason,
            body_bytes=body_bytes,
            headers=redacted_headers(headers),
            source=_source(client),
            event_id=event_id,
            omitted=self._omitted.pop(webhook_id, 0),
        )
        self._write(delivery)

    def _write(self, delivery: Delivery, *, after_event: bool = False) -> None:
        """Queue ``delivery`` for the next statement of rows."""
        (self._after_events if after_event else self._rows).append(delivery)
        if self._flushing:
            # The flusher runs once the tasks ready now have run: the rows of
            # the deliveries answered (or queued) together go in one statement,
            # after their events.
            if not self._rows_ready.is_set():
                self._rows_ready.set()
        elif not self._flush_due:
            # No flusher (not served, or closed): once this turn is over.
            self._flush_due = True
            trio.lowlevel.current_trio_token().run_sync_soon(self._flush)

    def _flush(self) -> None:
        """Hand the rows queued to the store's group commit, a statement per kind."""
        self._flush_due = False
        if not self._after_events and not self._rows:
            return
        for rows, after_event in ((self._after_events, True), (self._rows, False)):
            if not rows:
                continue
            if after_event:
                self._after_events = []
            else:
                self._rows = []
            for start in range(0, len(rows), ROWS_PER_STATEMENT):
                chunk = rows[start : start + ROWS_PER_STATEMENT]
                try:
                    self.store.log_deliveries_nowait(
                        chunk, functools.partial(self._written, chunk), after_event=after_event
                    )
                except StoreError as exc:  # closing: the rows are lost, never an answer
                    self._warn(exc)

    def _written(self, rows: list[Delivery], result: outcome.Outcome[int]) -> None:
        if isinstance(result, outcome.Error):
            self._warn(result.error)
            return
        for delivery in rows:
            self._count(delivery.webhook_id)

    def _count(self, webhook_id: str) -> None:
        """A row of ``webhook_id`` was committed: trim its log once enough were.

        (Rows of accepted deliveries whose event was not stored are counted
        too: their trim comes a little early, and finds less to do.)
        """
        added = self._added.get(webhook_id, 0) + 1
        if added < trim_every(self.keep):
            self._added[webhook_id] = added
            return
        self._added[webhook_id] = 0
        self._due.add(webhook_id)
        if not self._wake.is_set():
            self._wake.set()

    def _warn(self, error: BaseException) -> None:
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning("a row of the webhook delivery log was not written: %s", error)

    def close(self) -> None:
        """Stop trimming (the rows queued are still written by the store)."""
        self._closed = True
        if self._scope is not None:
            self._scope.cancel()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep every webhook's log bounded, until :meth:`close`.

        Error handling:
            A store error is logged, and the work tried again later.
        """
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            if self._closed:
                nursery.cancel_scope.cancel()
            await nursery.start(self._flush_rows)
            task_status.started()
            if self.keep < 1:
                await trio.sleep_forever()
            await self._keep_bounded()

    async def _flush_rows(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hand the rows queued to the store whenever there are some, until cancelled.

        A trio event, not ``run_sync_soon``: no wake-up of the event loop
        through its socket for each turn that logs a row.
        """
        self._flushing = True
        task_status.started()
        try:
            while True:
                await self._rows_ready.wait()
                self._rows_ready = trio.Event()
                self._flush()
        finally:
            self._flushing = False
            self._flush()  # what is left (never waits)

    async def _keep_bounded(self) -> None:
        """Trim each log once enough rows were committed to it; sweep every SWEEP_S."""
        sweep_at = trio.current_time()
        while True:
            if trio.current_time() >= sweep_at:
                swept = await self._sweep()
                sweep_at = trio.current_time() + (SWEEP_S if swept else _SWEEP_RETRY_S)
            with trio.move_on_at(sweep_at):
                await self._wake.wait()
            if self._due:
                self._wake = trio.Event()
                due, self._due = self._due, set()
                for webhook_id in sorted(due):
                    await self._trim(webhook_id)
                await trio.sleep(_TRIM_PAUSE_S)

    async def _trim(self, webhook_id: str) -> None:
        try:
            await self.store.trim_webhook_deliveries(webhook_id, keep=self.keep)
        except StoreError as exc:
            log.warning("cannot trim the delivery log of webhook %s: %s", webhook_id, exc)
            self._due.add(webhook_id)  # with the next round

    async def _sweep(self) -> bool:
        """Delete rows past their age and trim every log over the bound; whether it worked."""
        try:
            if self.max_age_s > 0:
                await self.store.expire_webhook_deliveries(
                    utcnow() - timedelta(seconds=self.max_age_s)
                )
            for webhook_id in await self.store.webhooks_over_delivery_bound(self.keep):
                await self.store.trim_webhook_deliveries(webhook_id, keep=self.keep)
        except StoreError as exc:
            log.warning("cannot sweep the webhook delivery log: %s", exc)
            return False
        return True
