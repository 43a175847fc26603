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
that, however many sessions are open. A frozen
object is still freed when no reference is left; only a reference cycle
among frozen objects waits. Those of closed sessions are reclaimed once as
many sessions have closed since the last reclaim as are open (and at least
``_MIN_NEW``) and none closed since the last look: the objects are
unfrozen, collected in one full pass, and what is left frozen again. A
mass revocation pays that pass once, after its streams have ended, when
few sessions are left to walk; while they end, the session supervisor holds
the collector's automatic passes back (:mod:`agentws.doors.mcp.sessions.supervisor`). A
session counts as closed here once its last response has ended, not when
it is closed: until then its objects are still in use.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

import trio

__all__ = ["CollectorSteward"]

log = logging.getLogger("agentws.server")

# How often the steward looks at the sessions opened and closed.
_CHECK_S = 1.0
# Fewer new sessions than this are not worth a freeze (nor closed ones a reclaim).
_MIN_NEW = 64


class CollectorSteward:
    """Freezes long-lived objects as sessions open; reclaims closed sessions' cycles.

    Args:
        counts: returns ``(sessions open, sessions opened so far, sessions
            closed so far)`` (the counters only grow).
    """

    def __init__(self, counts: Callable[[], tuple[int, int, int]]) -> None:
        self._counts = counts
        _, opened, closed = counts()
        self._opened_at_freeze = opened
        self._closed_at_reclaim = closed
        self._closed_at_last_step = closed

    def step(self) -> None:
        """Freeze or reclaim, if it is time to (see the module's docstring)."""
        open_now, opened, closed = self._counts()
        closed_since = closed - self._closed_at_reclaim
        # Not while sessions are still closing (a revocation's fan-out): the
        # full pass would hold up the streams that are ending.
        settled = closed == self._closed_at_last_step
        self._closed_at_last_step = closed
        if settled and closed_since >= max(_MIN_NEW, open_now):
            started = time.perf_counter()
            gc.unfreeze()
            found = gc.collect()
            gc.freeze()
            log.info(
                "reclaimed %d objects of %d closed MCP sessions in %.0f ms",
                found,
                closed_since,
                (time.perf_counter() - started) * 1000,
            )
            self._closed_at_reclaim = closed
            self._opened_at_freeze = opened
        elif opened - self._opened_at_freeze >= _MIN_NEW:
            gc.freeze()
            self._opened_at_freeze = opened

    async def serve(self) -> None:
        """Look every ``_CHECK_S`` until cancelled."""
        while True:
            await trio.sleep(_CHECK_S)
            self.step()
