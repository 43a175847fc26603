"""MinuteRollup: the service's task that keeps the overview's buckets.

Once a minute (just after it starts, by the wall clock; waiting on trio's
clock), each instance:

1. samples the gauges into the current minute's buckets: every workspace's
   approval queue (depth, oldest waiting age; the same for every instance,
   so whoever writes last wins) and this instance's open MCP sessions per
   transport (its own sample, keyed by its id: reads sum the instances');
2. rolls up the minutes that closed at least :data:`SETTLE_S` ago (so the
   rows stamped in them have been committed): counts them at their source,
   with the refused deliveries logged since the last roll, and writes them
   together with the mark's move (see :meth:`~agentws.store.sql_rollups.RollupStore.roll_up`):
   several instances may try, one succeeds, the others find the mark moved
   and stop. A first roll starts at the oldest row there is to count (at
   most a retention period back), so what the store held before the rollup
   existed is counted too, six hours at a time, with a pause between steps
   that leaves SQLite's one writer to the deliveries;
3. deletes buckets older than ``AGENTWS_ROLLUP_RETENTION_DAYS``.

Nothing is written on the hot paths (deliveries, tool calls): counting at
the source reads indexes once a minute. A round that fails is logged and
the next comes as usual.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Protocol

import attrs
import trio

from agentws.core.errors import StoreError
from agentws.domain.rollups import MINUTE, Bucket, RollupMark
from agentws.domain.rules import utcnow
from agentws.store.sql_rollup_sources import RollupSourceStore
from agentws.store.sql_rollups import RollupStore

__all__ = ["SETTLE_S", "MinuteRollup", "recount"]

log = logging.getLogger("agentws.rollups")

#: A minute is rolled up this long after it ends: rows stamped in it (an audit
#: batch, a run's end, a delivery) are committed within a few seconds.
SETTLE_S = 30.0
# Minutes rolled in one transaction at most (a first roll catches up in steps,
# each holding SQLite's writer briefly).
_CHUNK_M = 6 * 60
# Between two steps of a catch-up, the writer is left free this long.
_CATCH_UP_PAUSE_S = 0.05
# Rounds run this long after a minute starts, so each minute gets its sample.
_OFFSET_S = 1.0


class _Store(RollupSourceStore, RollupStore, Protocol):
    """The areas of the store this module uses."""


@attrs.define(eq=False)
class MinuteRollup:
    """Samples gauges, rolls closed minutes up, forgets old buckets; once a minute."""

    store: _Store
    instance_id: str
    retention_days: int
    #: ``(workspace id, transport)`` of each MCP session this instance holds.
    sessions: Callable[[], Iterable[tuple[str, str]]]
    #: The wall clock the minutes are read from.
    clock: Callable[[], datetime] = utcnow
    every_s: float = 60.0
    _closed: trio.Event = attrs.field(factory=trio.Event, init=False)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run a round every minute until :meth:`close`."""
        task_status.started()
        while not self._closed.is_set():
            try:
                await self.round()
            except StoreError as exc:
                log.warning("rollups: cannot use the store (%s); retrying", exc.message)
            except Exception:
                log.exception("rollups: a round failed; retrying")
            wait = self.every_s - self.clock().timestamp() % self.every_s + _OFFSET_S
            with trio.move_on_after(wait):
                await self._closed.wait()

    def close(self) -> None:
        self._closed.set()

    async def round(self) -> None:
        """Sample, roll up, forget: one minute's work."""
        now = self.clock()
        await self.sample(now)
        await self.roll(now)
        await self.store.forget_rollups(_minute(now) - self.retention_days * 24 * 60)

    async def sample(self, now: datetime) -> None:
        """Write this minute's gauge samples (approvals for all, sessions for this instance)."""
        minute = _minute(now)
        queue = await self.store.approval_buckets(now)
        open_sessions = Counter(self.sessions())
        # Sessions where there are some (a workspace without is 0 in a sampled minute).
        samples = list(queue) + [
            Bucket(
                workspace_id=ws,
                span_m=MINUTE,
                minute=minute,
                series="sessions",
                key=transport,
                value=float(count),
                instance_id=self.instance_id,
            )
            for (ws, transport), count in sorted(open_sessions.items())
        ]
        await self.store.save_samples(samples)

    async def roll(self, now: datetime) -> int:
        """Roll up the minutes settled by ``now``; how many this call rolled."""
        settled = now - timedelta(seconds=SETTLE_S)
        closed = _minute(settled)
        mark = await self.store.rollup_mark()
        if mark is None:
            # From the oldest row there is to count, within the retention period: a
            # new store has nothing behind it, an upgraded one its history.
            start = _minute(now) - self.retention_days * 24 * 60
            oldest = await self.store.oldest_rollup_source()
            start = closed if oldest is None else min(closed, max(start, _minute(oldest)))
            first = RollupMark(minute=start, delivery_id=0)
            await self.store.roll_up([], [], mark=None, to=first)
            mark = await self.store.rollup_mark()
            if mark is None:
                return 0
        rolled = 0
        while mark.minute < closed:
            until = min(closed, mark.minute + _CHUNK_M)
            counted = await self.store.source_buckets(mark.minute, until)
            added, last = await self.store.refusal_buckets(
                after_id=mark.delivery_id, received_before=settled
            )
            to = RollupMark(minute=until, delivery_id=last)
            if not await self.store.roll_up(counted, added, mark=mark, to=to):
                # Another instance rolls these minutes.
                return rolled
            rolled += until - mark.minute
            mark = to
            if mark.minute < closed:
                # Catching up: SQLite has one writer, and deliveries wait for it.
                await trio.sleep(_CATCH_UP_PAUSE_S)
        return rolled


async def recount(store: _Store, *, retention_days: int, now: datetime | None = None) -> int:
    """Count every closed minute of the retention period again from the sources, now.

    For rows written with past times after their minutes were rolled up (an
    import, a test's seeded history): the rollup never looks back at minutes
    behind its mark. Gauge samples are kept (they have no source to count
    from). A service rolling meanwhile finds the mark moved and lets this
    finish. Returns how many minutes were rolled.
    """
    await store.restart_rollups()
    task = MinuteRollup(store, "recount", retention_days, sessions=list)
    return await task.roll(now if now is not None else utcnow())


def _minute(when: datetime) -> int:
    return int(when.timestamp()) // 60
