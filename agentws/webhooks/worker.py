"""EventWorker: the pool that runs queued events, in the service's nursery.

A dispatcher claims runnable events (see
:meth:`~agentws.store.sql_events.EventStore.claim_events`: leases, fairness, per-webhook
concurrency) as long as the pool has free slots (``AGENTWS_WORKER_CONCURRENCY``),
and starts each run in the pool's nursery. It wakes when an event is stored
by this process, when a run ends, when the next retry or lease expiry is
due, and at least every half second (for events stored by other processes).

Each run has its own cancel scope with the run deadline
(``AGENTWS_RUN_TIMEOUT_S``), and a lease that outlasts it by a margin, so
the lease of a run that is still going never expires. Then:

- posted: the event is ``done`` with the message id, and the attempt is
  recorded, in one transaction after the post (a crash in between re-runs
  into the idempotent post);
- failed, retryable (model or chat busy, store down, deadline passed): queued
  again after a full-jitter backoff, up to 4 attempts in all, then ``failed``;
- failed, terminal (webhook deleted, channel unusable, model refused): ``failed``
  at once;
- cancelled by shutdown: queued again at once, the attempt given back.

A process killed mid-run leaves its lease, which expires; then the event
runs again here or in another process. (Its attempt leaves no record but
the event's attempt count: attempts are recorded when they end, with the
outcome, in the transaction that ends them, which keeps a run to two
commits of its own: the post and the outcome.)
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

import attrs
import trio

from agentws.agent.runner import RunLog
from agentws.core.backoff import Backoff
from agentws.core.errors import StoreError
from agentws.core.logs import add_log_context
from agentws.core.metrics import MODEL_TOKENS, RUN_SECONDS
from agentws.domain.models import Event, EventAttempt, EventStatus, Webhook
from agentws.domain.rules import utcnow
from agentws.settings.config import Settings
from agentws.store.sql_events import EventStore
from agentws.store.sql_records import RecordStore
from agentws.webhooks.processing import EventProcessor, RunFailure

__all__ = ["MAX_ATTEMPTS", "EventWorker"]

log = logging.getLogger("agentws.webhooks")

#: Attempts at one event at most.
MAX_ATTEMPTS = 4
# A lease outlasts the run's deadline by this much: time to record the outcome.
_LEASE_MARGIN_S = 5.0
# The dispatcher looks for work at least this often.
_POLL_S = 0.5
# How long the dispatcher lets wake-ups gather before it claims; longer
# while the door is busy, where a round of claim queries for a single run
# would cost more than the run.
_GATHER_S = 0.002
_BUSY_GATHER_S = 0.05
# While the door is busy, a run starts at most this often (one at a time,
# see _BUSY_DOOR_SLOTS). A run costs the process milliseconds of CPU however
# fast the model answers (its client, the claim, the post and the outcome,
# whose durable commits come between the deliveries'): back to back with a
# model that answers at once, runs took about a tenth of the server's CPU
# per accepted delivery (scripts/bench webhooks: 0.71 ms an event, 0.59 at
# this pace). A run that takes longer than this is not held back by it.
_BUSY_RUN_EVERY_S = 0.25
# After a store error, the dispatcher waits this long before claiming again.
_STORE_PAUSE_S = 1.0
# Recording an outcome when the run was cancelled must finish, but not hang shutdown.
_CLEANUP_S = 5.0
# Backoff never exceeds this.
_MAX_BACKOFF_S = 300.0
# While deliveries queue for their commit, runs take this many slots at most:
# a run costs the loop milliseconds (the model's client, the post, two
# commits), which the deliveries waiting for their answer would wait out.
_BUSY_DOOR_SLOTS = 1


class _Store(RecordStore, EventStore, Protocol):
    """The areas of the store this module uses."""


@attrs.define(eq=False)
class EventWorker:
    """Claims events and runs them, a bounded number at a time."""

    store: _Store
    settings: Settings
    processor: EventProcessor
    #: Whether deliveries are queueing at the door: then runs take a back seat.
    door_busy: Callable[[], bool] = attrs.field(default=lambda: False, kw_only=True)
    _wake: trio.Event = attrs.field(factory=trio.Event, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _limiter: trio.CapacityLimiter = attrs.field(init=False)
    # While the door is busy, no run starts before this (trio's clock).
    _paced_until: float = attrs.field(default=-math.inf, init=False)

    def __attrs_post_init__(self) -> None:
        self._limiter = trio.CapacityLimiter(self.settings.worker_concurrency)

    @property
    def running(self) -> int:
        """Runs under way in this process."""
        return int(self._limiter.borrowed_tokens)

    def notify(self) -> None:
        """Look for work now (an event was stored, a run ended)."""
        self._wake.set()

    def close(self) -> None:
        """Claim nothing more; runs under way go on until done or cancelled."""
        self._closed = True
        self._wake.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Dispatch until :meth:`close`, then wait for the runs under way."""
        async with trio.open_nursery() as runs:
            task_status.started()
            while not self._closed:
                self._wake = trio.Event()
                free = self._free_slots()
                claimed: list[Event] = []
                webhooks: dict[str, Webhook] | None = None
                try:
                    claimed = await self._claim(free)
                    # Read once for the lot, rather than by each run.
                    webhooks = await self.store.webhooks_by_id({e.webhook_id for e in claimed})
                    pause = await self._pause(free, claimed)
                except StoreError as exc:
                    log.warning("cannot claim webhook events: %s", exc.message)
                    pause = _STORE_PAUSE_S
                for event in claimed:
                    borrower = object()
                    self._limiter.acquire_on_behalf_of_nowait(borrower)
                    runs.start_soon(self._run, event, webhooks, borrower, name=f"event {event.id}")
                if claimed and self.door_busy():
                    self._paced_until = trio.current_time() + _BUSY_RUN_EVERY_S
                if pause > 0:
                    with trio.move_on_after(pause):
                        await self._wake.wait()
                    # Runs ending together are claimed for together: one
                    # round of queries for the lot, not one per run.
                    if self.door_busy():
                        gathered = trio.current_time() + _BUSY_GATHER_S
                        await trio.sleep_until(max(gathered, self._paced_until))
                    else:
                        await trio.sleep(_GATHER_S)

    def _free_slots(self) -> int:
        slots = int(self._limiter.total_tokens)
        if self.door_busy():
            # Acknowledging deliveries comes first: a sender that waits too
            # long gives up and sends again. The runs catch up afterwards.
            slots = min(slots, _BUSY_DOOR_SLOTS)
        return max(0, slots - int(self._limiter.borrowed_tokens))

    async def _claim(self, free: int) -> list[Event]:
        if free < 1:
            return []
        now = utcnow()
        lease = timedelta(seconds=self.settings.run_timeout_s + _LEASE_MARGIN_S)
        return await self.store.claim_events(
            owner=self.settings.instance_id, now=now, lease_expires_at=now + lease, limit=free
        )

    async def _pause(self, free: int, claimed: list[Event]) -> float:
        if free > 0 and len(claimed) == free:
            return 0.0  # there may be more
        pause = _POLL_S
        if len(claimed) < free:
            now = utcnow()
            due = await self.store.next_event_due(now)
            if due is not None:
                pause = min(pause, max(0.0, (due - now).total_seconds()))
        return pause

    async def _run(
        self, event: Event, webhooks: dict[str, Webhook] | None, borrower: object
    ) -> None:
        add_log_context(webhook=event.webhook_id, event=event.id)
        try:
            await self._attempt(event, webhooks)
        finally:
            self._limiter.release_on_behalf_of(borrower)
            self._wake.set()

    async def _attempt(self, event: Event, webhooks: dict[str, Webhook] | None) -> None:
        """One attempt at ``event``; ``webhooks`` as read with the claim (None: not read)."""
        owner = self.settings.instance_id
        started = utcnow()
        run_log = RunLog()
        try:
            if event.attempts > MAX_ATTEMPTS:
                # Earlier attempts never finished (their process died each time).
                raise RunFailure(
                    f"gave up after {MAX_ATTEMPTS} attempts that did not finish", retryable=False
                )
            if webhooks is None:
                webhook = await self.store.find(Webhook, id=event.webhook_id)
            else:
                webhook = webhooks.get(event.webhook_id)
            with trio.move_on_after(self.settings.run_timeout_s) as scope:
                message = await self.processor.process(event, webhook, run_log)
            if scope.cancelled_caught:
                raise RunFailure(
                    f"the run took longer than {self.settings.run_timeout_s:g} s", retryable=True
                )
        except trio.Cancelled:
            with (
                trio.CancelScope(shield=True),
                trio.move_on_after(_CLEANUP_S),
                contextlib.suppress(StoreError),  # then the lease expires instead
            ):
                now = utcnow()
                await self.store.finish_event(
                    event.id,
                    owner=owner,
                    status=EventStatus.QUEUED,
                    now=now,
                    available_at=now,
                    give_back_attempt=True,
                    attempt=self._attempt_record(
                        event, started, run_log, "interrupted", "the service shut down"
                    ),
                )
            raise
        except RunFailure as failure:
            await self._failed(
                event,
                started,
                run_log,
                failure.message,
                failure.retryable,
                not_before_s=failure.retry_after_s or 0.0,
            )
        except StoreError as exc:
            await self._failed(event, started, run_log, f"store: {exc.message}", True)
        except Exception as exc:
            log.exception("event %s: the run failed", event.id)
            await self._failed(event, started, run_log, f"internal error: {exc!r}", True)
        else:
            try:
                finished = await self.store.finish_event(
                    event.id,
                    owner=owner,
                    status=EventStatus.DONE,
                    now=utcnow(),
                    message_id=message.id,
                    attempt=self._attempt_record(event, started, run_log, "done", None),
                )
            except StoreError as exc:
                # The lease expires and the event runs again, into the message
                # already posted: nothing is lost, nothing is posted twice.
                log.error("event %s: posted, but cannot record it: %s", event.id, exc.message)
                return
            if not finished:
                log.warning(
                    "event %s: posted, but its lease had passed to another run"
                    " (or the webhook was deleted)",
                    event.id,
                )
            else:
                log.info(
                    "event %s done: message %s in %s (attempt %d)",
                    event.id,
                    message.id,
                    message.channel,
                    event.attempts,
                )

    async def _failed(
        self,
        event: Event,
        started: datetime,
        run_log: RunLog,
        error: str,
        retryable: bool,
        *,
        not_before_s: float = 0.0,
    ) -> None:
        retry = retryable and event.attempts < MAX_ATTEMPTS
        outcome = "retry" if retry else "failed"
        attempt = self._attempt_record(event, started, run_log, outcome, error)
        now = utcnow()
        try:
            if retry:
                # The jitter, but never sooner than the API asked (a rate limit's retry-after).
                backoff = Backoff(self.settings.retry_base_s, _MAX_BACKOFF_S, jitter=True)
                delay = max(backoff.delay_s(event.attempts), not_before_s)
                log.info(
                    "event %s: attempt %d failed (%s); retry in %.1f s",
                    event.id,
                    event.attempts,
                    error,
                    delay,
                )
                await self.store.finish_event(
                    event.id,
                    owner=self.settings.instance_id,
                    status=EventStatus.QUEUED,
                    now=now,
                    error=error,
                    available_at=now + timedelta(seconds=delay),
                    attempt=attempt,
                )
            else:
                log.warning("event %s failed: %s", event.id, error)
                await self.store.finish_event(
                    event.id,
                    owner=self.settings.instance_id,
                    status=EventStatus.FAILED,
                    now=now,
                    error=error,
                    attempt=attempt,
                )
        except StoreError as exc:
            # The lease expires and the event runs again: nothing is lost.
            log.error("event %s: cannot record the outcome: %s", event.id, exc.message)

    def _attempt_record(
        self,
        event: Event,
        started: datetime,
        run_log: RunLog,
        outcome: str,
        error: str | None,
    ) -> EventAttempt:
        finished = utcnow()
        RUN_SECONDS.labels(outcome).observe((finished - started).total_seconds())
        for kind, count in run_log.usage.items():
            MODEL_TOKENS.labels(kind.removesuffix("_tokens")).inc(count)
        return EventAttempt(
            event_id=event.id,
            number=event.attempts,
            instance_id=self.settings.instance_id,
            outcome=outcome,
            error=error,
            transcript=run_log.transcript(),
            tool_calls={"calls": run_log.tool_calls},
            usage=run_log.usage,
            started_at=started,
            finished_at=finished,
        )
