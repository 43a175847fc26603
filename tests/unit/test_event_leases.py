"""When :class:`~agentws.webhooks.worker.EventWorker` claims, on the autojump clock.

The dispatcher claims with a lease that outlasts the run's deadline by a
margin, and looks for work again when the next retry or lease expiry is
due, and at least every ``_POLL_S``; while the door is busy it starts one
run at a time, at most four a second. Which leases have expired is the
store's business (wall clock: see tests/contract/test_event_queue.py);
when the dispatcher asks is trio's, which jumps here. The store is an
in-memory stand-in: a query run in a thread would let the autojump clock
run ahead while it works.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from agentws.agent.runner import RunLog
from agentws.domain.models import ChatMessage, Event, Webhook
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


@attrs.define(eq=False)
class _Backlog:
    """A queue that always has runnable events, each run taking ``run_s``."""

    run_s: float = 0.0
    #: (trio time it started, runs under way when it did) of each run.
    starts: list[tuple[float, int]] = attrs.field(factory=list)
    running: int = 0
    _ids: itertools.count[int] = attrs.field(factory=itertools.count)

    async def claim_events(
        self, *, owner: str, now: datetime, lease_expires_at: datetime, limit: int
    ) -> list[Event]:
        await trio.lowlevel.checkpoint()
        return [
            Event(id=f"evt_{next(self._ids)}", webhook_id="wh_1", body=b"{}") for _ in range(limit)
        ]

    async def webhooks_by_id(self, ids: set[str]) -> dict[str, Webhook]:
        await trio.lowlevel.checkpoint()
        return {}

    async def next_event_due(self, now: datetime) -> datetime | None:
        await trio.lowlevel.checkpoint()
        return None

    async def finish_event(self, event_id: str, **ending: Any) -> bool:
        await trio.lowlevel.checkpoint()
        return True

    async def process(self, event: Event, webhook: Webhook | None, log: RunLog) -> ChatMessage:
        self.starts.append((trio.current_time(), self.running))
        self.running += 1
        try:
            await trio.sleep(self.run_s)
            return ChatMessage(workspace_id="ws_1", channel="local:ops", text="done")
        finally:
            self.running -= 1


@asynccontextmanager
async def _running(backlog: _Backlog, door_busy: Callable[[], bool]) -> AsyncIterator[EventWorker]:
    settings = Settings(run_timeout_s=RUN_TIMEOUT_S, worker_concurrency=16)
    pool = EventWorker(
        backlog,  # type: ignore[arg-type]
        settings,
        processor=backlog,  # type: ignore[arg-type]
        door_busy=door_busy,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(pool.serve)
        yield pool
        pool.close()


def _gaps(starts: list[tuple[float, int]]) -> list[float]:
    return [later - earlier for (earlier, _), (later, _) in itertools.pairwise(starts)]


async def test_while_the_door_is_busy_runs_start_one_at_a_time_at_most_four_a_second(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Deliveries first: however fast the model answers, runs take a small,
    # bounded part of the process while deliveries queue for their commit.
    backlog = _Backlog(run_s=0.0)
    busy = True
    async with _running(backlog, lambda: busy) as pool:
        await trio.sleep(10)
        busy_starts = list(backlog.starts)
        busy = False  # the burst is over: the runs catch up, every slot at once
        pool.notify()
        await trio.sleep(1)
    assert all(running == 0 for _, running in busy_starts)
    gaps = _gaps(busy_starts)
    assert gaps
    assert min(gaps) >= 0.25 - 1e-9
    assert 20 <= len(busy_starts) <= 41
    assert len(backlog.starts) - len(busy_starts) > 10 * len(busy_starts)


async def test_while_the_door_is_busy_a_run_slower_than_the_pace_is_not_held_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    backlog = _Backlog(run_s=1.0)
    async with _running(backlog, lambda: True):
        await trio.sleep(10.5)
    assert all(running == 0 for _, running in backlog.starts)
    # The next run is claimed as the last one ends (after the wake-ups gather).
    gaps = _gaps(backlog.starts)
    assert len(gaps) >= 9
    assert gaps == pytest.approx([1.0 + worker._BUSY_GATHER_S] * len(gaps))
