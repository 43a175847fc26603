"""Keep-alive beats of the calls that run in their requests, from one task of the process.

A stateless (2026-07-28) caller's response shows it is alive while its call
runs (:class:`~agentws.doors.mcp.relay.pending_calls.KeepAlive`: a beat each
interval). A pending call beats from its own wait; a call that runs in its
request (a native connector's, or a remote's whose client can be asked
nothing) cannot beat while it works, and a task beside every call, to beat
for the few that run longer than an interval, costs each call a task, a
nursery and a cancel scope. Here one task of the process beats for all of
them: a call registers while it runs (:meth:`Beats.beating`), and only a
call that is still running when its beat is due gets a task, for that beat.

The task sleeps until the first beat is due. A call that ended leaves
the queue when it comes first in it (as calls of one interval end in about
the order they began, the queue holds about as many calls as are running).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs
import trio

__all__ = ["Beats"]

log = logging.getLogger("agentws.mcp")

T = TypeVar("T")


@attrs.define(eq=False)
class _Running:
    """One call that beats while it runs."""

    every: float
    beat: Callable[[], Awaitable[None]]
    ended: bool = False
    beating: bool = False

    async def beat_once(self) -> None:
        # A client slow to take a beat holds up only its own call's next one.
        self.beating = True
        try:
            await self.beat()
        except Exception:
            # The client's connection went (its call is cancelled with it): the
            # other calls' beats go on.
            log.debug("a keep-alive beat could not be sent", exc_info=True)
        finally:
            self.beating = False


@attrs.define(eq=False)
class Beats:
    """Beats for calls running in their requests; :meth:`serve` runs in the service's nursery."""

    #: ``(due, order, call)``, the first due first.
    _queue: list[tuple[float, int, _Running]] = attrs.field(factory=list, init=False)
    _order: itertools.count[int] = attrs.field(factory=itertools.count, init=False)
    #: The task's sleep until the first beat is due (None while it beats).
    _sleep: trio.CancelScope | None = attrs.field(default=None, init=False)
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)

    def __len__(self) -> int:
        """Calls in the queue (running, or ended and not yet dropped)."""
        return len(self._queue)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Beat for the registered calls as each is due, until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await self._beat_forever(nursery)
            finally:
                self._nursery = None

    async def _beat_forever(self, nursery: trio.Nursery) -> None:
        queue = self._queue
        while True:
            self._drop_ended()
            with trio.CancelScope(deadline=queue[0][0] if queue else math.inf) as self._sleep:
                await trio.sleep_forever()
            self._sleep = None
            now = trio.current_time()
            while queue and queue[0][0] <= now:
                due, _, running = heapq.heappop(queue)
                if running.ended:
                    continue
                if not running.beating:
                    nursery.start_soon(running.beat_once)
                heapq.heappush(queue, (due + running.every, next(self._order), running))

    def _drop_ended(self) -> None:
        queue = self._queue
        while queue and queue[0][2].ended:
            heapq.heappop(queue)

    async def beating(
        self, work: Awaitable[T], every: float, beat: Callable[[], Awaitable[None]]
    ) -> T:
        """``work``'s outcome; ``beat()`` each ``every`` seconds it runs, none after it ended.

        Without :meth:`serve` running (a shutdown), ``work`` runs unbeaten.
        """
        if self._nursery is None or not every < math.inf:
            return await work
        self._drop_ended()
        running = _Running(every, beat)
        due = trio.current_time() + every
        heapq.heappush(self._queue, (due, next(self._order), running))
        sleep = self._sleep
        if sleep is not None and due < sleep.deadline:
            sleep.deadline = due
        try:
            return await work
        finally:
            running.ended = True
