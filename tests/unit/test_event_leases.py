"""When :class:`~agentws.webhooks.worker.EventWorker` claims, on the autojump clock.

The dispatcher claims with a lease that outlasts the run's deadline by a
margin, and looks for work again when the next retry or lease expiry is
due, and at least every ``_POLL_S``. Which leases have expired is the
store's business (wall clock: see tests/contract/test_event_queue.py);
when the dispatcher asks is trio's, which jumps here. The store is an
in-memory stand-in: a query run in a thread would let the autojump clock
run ahead while it works.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

import attrs
import pytest
import trio
import trio.testing

from agentws.domain.models import Event, Webhook
from agentws.settings.config import Settings
from agentws.webhooks import worker
from agentws.webhooks.worker import EventWorker

RUN_TIMEOUT_S = 120.0


@attrs.define(eq=False)
class _IdleQueue:
    """A queue with nothing runnable; something is due ``due_in_s`` from any ``now``."""

    due_in_s: float | None = None
    #: (trio time, lease length in seconds) of each claim.
    claims: list[tuple[float, float]] = attrs.field(factory=list)

    async def claim_events(
        self, *, owner: str, now: datetime, lease_expires_at: datetime, limit: int
    ) -> list[Event]:
        await trio.lowlevel.checkpoint()
        self.claims.append((trio.current_time(), (lease_expires_at - now).total_seconds()))
        return []

    async def webhooks_by_id(self, ids: set[str]) -> dict[str, Webhook]:
        await trio.lowlevel.checkpoint()
        return {}

    async def next_event_due(self, now: datetime) -> datetime | None:
        await trio.lowlevel.checkpoint()
        return None if self.due_in_s is None else now + timedelta(seconds=self.due_in_s)


@asynccontextmanager
async def _dispatching(store: _IdleQueue) -> AsyncIterator[EventWorker]:
    settings = Settings(run_timeout_s=RUN_TIMEOUT_S)
    pool = EventWorker(store, settings, processor=None)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.serve)
        yield pool
        pool.close()


def _intervals(store: _IdleQueue) -> list[float]:
    times = [at for at, _ in store.claims]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


async def test_a_lease_outlasts_the_run_deadline_by_the_margin(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = _IdleQueue()
    async with _dispatching(store):
        await trio.sleep(worker._POLL_S / 2)
    ((_, lease_s),) = store.claims
    assert lease_s == pytest.approx(RUN_TIMEOUT_S + worker._LEASE_MARGIN_S)


async def test_the_dispatcher_claims_again_when_a_lease_runs_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = _IdleQueue(due_in_s=worker._POLL_S / 5)
    async with _dispatching(store):
        await trio.sleep(worker._POLL_S * 2)
    intervals = _intervals(store)
    assert len(intervals) >= 8
    assert intervals == pytest.approx([worker._POLL_S / 5 + worker._GATHER_S] * len(intervals))


async def test_with_nothing_due_the_dispatcher_still_looks_every_poll_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = _IdleQueue()
    async with _dispatching(store):
        await trio.sleep(worker._POLL_S * 10)
    intervals = _intervals(store)
    assert len(intervals) >= 9
    assert intervals == pytest.approx([worker._POLL_S + worker._GATHER_S] * len(intervals))
