"""Keeping the cycle collector's full passes short while many MCP sessions are open.

CPython's full collection walks every tracked object not frozen, and it
comes each time the objects that survived younger collections grow by a
quarter. Each open session is a few thousand such objects (its tasks, its
streams, the SDK's session, the HTTP connection), so with thousands open a
full pass takes whole seconds, and every request waits it out.

Sessions live long and change little, so their objects are frozen
(``gc.freeze()``: moved out of the collector's sight, in constant time) once
enough new ones have opened: :class:`CollectorSteward` looks every
``_CHECK_S`` and freezes when ``_MIN_NEW`` sessions or more have opened
since the last freeze. So a full pass walks only what is newer than
that, however many sessions are open.

An idle stream is not idle to the collector, though: at each keep-alive
it waits anew, and its wait is a dozen new objects (a cancel scope,
coroutines, the scheduler's records) that live until the next one. With
10,000 streams open that is thousands a second, which survive into the
older generations: with nothing else happening, passes of the middle
generation took up to 30 ms, longer the longer since the last freeze. So
while ``_MIN_NEW`` sessions or more are open, the steward also freezes
every ``_FREEZE_EVERY_S``: a pass then walks at most that long's
survivors.

A frozen object is still freed when no reference is left; only a
reference cycle among frozen objects waits (a request's garbage frozen
with the sessions' objects among them). Those are reclaimed once as
many sessions have closed since the last reclaim as are open (and at least
``_MIN_NEW``) and none closed since the last look: the objects are
unfrozen, collected in one full pass, and what is left frozen again. A
session counts as closed here once its last response has ended, not when
it is closed: until then its objects are still in use.

That pass walks every object of the process, those frozen at start among
them: tens of milliseconds with no session open, during which nothing else
runs. A closed session and its connection leave no reference cycle (they
are freed by reference counting as each ends: ``tests/e2e/test_session_teardown.py``),
so the pass is a safety net for cycles nobody foresaw, not the way
sessions are freed: it comes once no session has closed for ``_QUIET_S``
(not in a mass revocation's wake, while its clients reconnect), and at most
every ``_RECLAIM_EVERY_S``; under sessions closing without pause, after
``_RECLAIM_AT_LATEST_S`` anyway. While a revocation's streams end, the
session supervisor holds the collector's automatic passes back
(:mod:`agentws.doors.mcp.sessions.supervisor`).

The youngest generation's pass comes once the objects made, net of those
freed, exceed a threshold: 700 by CPython's default. A request in flight
is thousands of objects (its tasks, the SDK's request context, the
connector's exchange), so under steady traffic that pass came several
times a call and walked every request in flight each time: 5% of the
CPU of a proxied call. :func:`settle_after_start` sets it to
:data:`YOUNG_THRESHOLD`, above what the requests in flight hold, so the
pass comes when objects pile up (something kept, or left in a cycle),
which is what it is for. A session, its connection and a stateless
``tools/call`` leave no cycle (``tests/e2e/test_session_teardown.py``); the
SDK's own handling of other stateless requests still leaves its runner in
one, which waits for that pass.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

import trio

__all__ = ["YOUNG_THRESHOLD", "CollectorSteward", "settle_after_start"]

log = logging.getLogger("agentws.server")

# How often the steward looks at the sessions opened and closed: 10,000
# sessions opening as fast as they can are about 170 between two looks.
_CHECK_S = 0.25
# Fewer new sessions than this are not worth a freeze (nor closed ones a reclaim).
_MIN_NEW = 64
# With _MIN_NEW sessions or more open, what survived this long is frozen anyway.
_FREEZE_EVERY_S = 1.0
# A reclaim waits until no session has closed for this long, comes at most this
# often, and comes after the last anyway once this much time has passed.
_QUIET_S = 10.0
_RECLAIM_EVERY_S = 600.0
_RECLAIM_AT_LATEST_S = 3600.0
# Objects in cycles per closed session above which a reclaim is logged as a warning.
_CYCLES_NOTED = 10

#: Objects made, net of those freed, before the youngest generation's pass
#: (CPython's default: 700). Under 16 proxied calls at a time, the count
#: moved between 4,000 and 8,400 over 16,000 calls without reaching it.
YOUNG_THRESHOLD = 10_000


def settle_after_start() -> None:
    """Freeze what starting made, and set the youngest pass for a server's traffic.

    What starting made (modules, the SDK's schemas, settings) lives as long
    as the process: left to the collector, every full pass would walk it
    again, tens of milliseconds that every request then waits out.
    """
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)


class CollectorSteward:
    """Freezes long-lived objects as sessions open; reclaims closed sessions' cycles.

    Args:
        counts: returns ``(sessions open, sessions opened so far, sessions
            closed so far)`` (the counters only grow).
        clock: seconds, monotonic (tests give their own).
    """

    def __init__(
        self,
        counts: Callable[[], tuple[int, int, int]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._counts = counts
        self._clock = clock
        _, opened, closed = counts()
        self._opened_at_freeze = opened
        self._closed_at_reclaim = closed
        self._closed_at_last_step = closed
        self._reclaimed_at = self._last_close_at = self._frozen_at = clock()

    def step(self) -> None:
        """Freeze or reclaim, if it is time to (see the module's docstring)."""
        open_now, opened, closed = self._counts()
        now = self._clock()
        if closed != self._closed_at_last_step:
            self._closed_at_last_step, self._last_close_at = closed, now
        if self._reclaim_due(open_now, closed, now):
            closed_since = closed - self._closed_at_reclaim
            started = time.perf_counter()
            gc.unfreeze()
            found = gc.collect()
            gc.freeze()
            # Sessions are meant to leave no cycle: many found means one does.
            level = logging.WARNING if found > _CYCLES_NOTED * closed_since else logging.INFO
            log.log(
                level,
                "reclaimed %d objects in reference cycles after %d MCP sessions closed, in %.0f ms",
                found,
                closed_since,
                (time.perf_counter() - started) * 1000,
            )
            self._closed_at_reclaim = closed
            self._opened_at_freeze = opened
            self._reclaimed_at = self._frozen_at = self._clock()
        elif opened - self._opened_at_freeze >= _MIN_NEW or (
            open_now >= _MIN_NEW and now - self._frozen_at >= _FREEZE_EVERY_S
        ):
            gc.freeze()
            self._opened_at_freeze, self._frozen_at = opened, now

    def _reclaim_due(self, open_now: int, closed: int, now: float) -> bool:
        if closed - self._closed_at_reclaim < max(_MIN_NEW, open_now):
            return False
        since = now - self._reclaimed_at
        quiet = now - self._last_close_at >= _QUIET_S
        return since >= _RECLAIM_AT_LATEST_S or (quiet and since >= _RECLAIM_EVERY_S)

    async def serve(self) -> None:
        """Look every ``_CHECK_S`` until cancelled."""
        while True:
            await trio.sleep(_CHECK_S)
            self.step()
