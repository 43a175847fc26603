"""The delivery log at work: every request to a webhook's URL, written without slowing
the door, and each webhook's log kept to its newest ``AGENTWS_DELIVERY_LOG_KEEP``.

**Accepted deliveries are their events.** An accepted delivery's entry is
the event it became, which keeps the address it came from: the door writes
nothing more for it, and the entry is committed with the event, exists only
if the event does, and costs the door no row of its own (a row per
delivery, written and later trimmed, measured about a tenth of the door's
throughput). Listings (:mod:`agentws.webhooks.delivery_listing`) read
the events and the other rows together.

**Every other answer is a row** (a refusal, a duplicate), queued as it is
answered (:meth:`DeliveryLog.answered`), fire and forget: the door never
waits for it, and nothing the log does can change an answer (a failed
write is dropped, and said in the server log now and then). The rows of one
turn of the event loop go to the store's group commit of deliveries as one
statement (:meth:`~agentws.store.sql_deliveries.DeliveryLogStore.log_deliveries_nowait`), never a
transaction of their own. Refusals are cheap to provoke, so each webhook's
rows are bounded in rate (:data:`REFUSAL_ROWS_PER_MIN`, bursts of
:data:`REFUSAL_ROWS_BURST`): a flood of refused requests cannot make the
store write a row for each. The next row written (a refusal's or a
duplicate's) says how many refusals were left out (``omitted``);
``/metrics`` counts every one of them.

**Trimming.** :meth:`DeliveryLog.serve`, in the service's nursery, trims a
webhook's rows once :func:`trim_every` were committed here (one read and
one deletion, at most a round a second), and sweeps every webhook every
:data:`SWEEP_S` (and at start): rows older than ``AGENTWS_DELIVERY_LOG_DAYS``,
and rows over the bound (those another instance or an earlier process
added). Between trims a webhook may hold a few rows more than the bound,
and a trim keeps the rows the overview's rollup has not counted yet (its
refusals by reason: at most a minute and a half of them, all of them
before its first roll); listings never show more than ``keep`` entries.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Protocol

import attrs
import outcome
import trio

from agentws.core.errors import StoreError
from agentws.domain.deliveries import TokenBucket
from agentws.domain.delivery_log import Delivery, redacted_headers, source_address
from agentws.domain.rules import utcnow
from agentws.settings.config import Settings
from agentws.store.sql_deliveries import ROWS_PER_STATEMENT, DeliveryLogStore
from agentws.store.sql_rollups import RollupStore

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


class _Store(DeliveryLogStore, RollupStore, Protocol):
    """The areas of the store this module uses."""


def trim_every(keep: int) -> int:
    """After how many rows added here a webhook's log is trimmed to ``keep``."""
    return max(1, keep // 10)


@attrs.define(eq=False)
class DeliveryLog:
    """Writes the door's rows of the delivery log, and keeps them bounded (started in the
    service)."""

    store: _Store
    #: Entries kept per webhook (0: no log at all).
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
    # Rows not handed to the store yet (this turn's).
    _rows: list[Delivery] = attrs.field(factory=list, init=False)
    _scope: trio.CancelScope | None = attrs.field(default=None, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _warned_at: float = attrs.field(default=float("-inf"), init=False)

    @classmethod
    def from_settings(cls, store: _Store, settings: Settings) -> DeliveryLog:
        return cls(
            store, keep=settings.delivery_log_keep, max_age_s=settings.delivery_log_days * 86400
        )

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
        """Log a request answered without a new event: a refusal, a duplicate, a capture.

        Never waits and never raises; beyond the rate bound the row is left
        out, and a refusal left out is counted in the next row (whatever its
        status).
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
            if status >= 300:
                # The next row carries the refusals left out (the overview counts
                # them as refused); a duplicate left out is no refusal.
                self._omitted[webhook_id] = self._omitted.get(webhook_id, 0) + 1
            return
        delivery = Delivery(
            webhook_id=webhook_id,
            received_at=utcnow(),
            status=status,
            reason=reason,
            body_bytes=body_bytes,
            headers=redacted_headers(headers),
            source=source_address(client),
            event_id=event_id,
            omitted=self._omitted.pop(webhook_id, 0),
        )
        if not self._rows:
            # Once this turn is over: the rows of the requests answered
            # together go in one statement.
            trio.lowlevel.current_trio_token().run_sync_soon(self._flush)
        self._rows.append(delivery)

    def _flush(self) -> None:
        """Hand this turn's rows to the store's group commit."""
        rows, self._rows = self._rows, []
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[start : start + ROWS_PER_STATEMENT]
            try:
                self.store.log_deliveries_nowait(chunk, functools.partial(self._written, chunk))
            except StoreError as exc:  # closing: the rows are lost, never an answer
                self._warn(exc)

    def _written(self, rows: list[Delivery], result: outcome.Outcome[int]) -> None:
        if isinstance(result, outcome.Error):
            self._warn(result.error)
            return
        for delivery in rows:
            self._count(delivery.webhook_id)

    def _count(self, webhook_id: str) -> None:
        """A row of ``webhook_id`` was committed: trim its rows once enough were."""
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
        """Stop trimming (rows are still written: the door answers until the end)."""
        self._closed = True
        if self._scope is not None:
            self._scope.cancel()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep every webhook's rows bounded, until :meth:`close`.

        Error handling:
            A store error is logged, and the work tried again later.
        """
        with trio.CancelScope() as scope:
            self._scope = scope
            if self._closed:
                scope.cancel()
            task_status.started()
            if self.keep < 1:
                await trio.sleep_forever()
            await self._keep_bounded()

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

    async def _counted_through(self) -> int:
        # Rows the overview's rollup has not counted yet stay (agentws.rollups);
        # before its first roll (no mark) it has counted none.
        mark = await self.store.rollup_mark()
        return 0 if mark is None else mark.delivery_id

    async def _trim(self, webhook_id: str) -> None:
        try:
            await self.store.trim_webhook_deliveries(
                webhook_id, keep=self.keep, counted_through=await self._counted_through()
            )
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
            counted = await self._counted_through()
            for webhook_id in await self.store.webhooks_over_delivery_bound(self.keep):
                await self.store.trim_webhook_deliveries(
                    webhook_id, keep=self.keep, counted_through=counted
                )
        except StoreError as exc:
            log.warning("cannot sweep the webhook delivery log: %s", exc)
            return False
        return True
