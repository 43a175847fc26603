"""One revocation timed from outside: when each stream ended, what the server did meanwhile.

:func:`measure_revocation` revokes a token whose sessions' streams the
watchers hold (:mod:`benchlib.session_watch`), then waits until every
stream has ended, and reports how long after the token's ``revoked_at``
each did (the watchers' stamps). Observed (``observe=True``), the server's
CPU is sampled from a second before the revocation to 10 s after it, with
the client's and the observers' own, and its loop lag probed over the same
10 s (:mod:`benchlib.session_observe`): so a reader sees when the server
went idle beside when the last stream ended, and that the client was not
what took the time.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from benchlib.load import MAX_ERROR_SAMPLES, percentile
from benchlib.session_observe import AFTER_S, LEAD_S, start_observers

if TYPE_CHECKING:
    from benchlib.procs import Processes
    from benchlib.session_open import Batch, Keeper, Target

__all__ = ["Revoker", "end_histogram", "measure_revocation", "wall_time"]

#: An async function revoking a token: returns the revocation's wall-clock time
#: (the token's ``revoked_at``) and a dict of whatever else is worth keeping.
Revoker = Callable[[], Awaitable[tuple[float, dict[str, Any]]]]

# The histogram of ends: bins of this many ms after the revocation.
_BIN_MS = 100


def wall_time(iso: str) -> float:
    """``time.time()`` of an ISO 8601 timestamp (``revoked_at``)."""
    return dt.datetime.fromisoformat(iso).timestamp()


def end_histogram(after_s: list[float]) -> list[list[int]]:
    """``[bin start ms, ends in it]`` for each 100 ms bin with an end (ascending ``after_s``)."""
    bins: dict[int, int] = {}
    for after in after_s:
        start = int(after * 1000 // _BIN_MS) * _BIN_MS
        bins[start] = bins.get(start, 0) + 1
    return [[start, count] for start, count in sorted(bins.items())]


async def measure_revocation(
    procs: Processes,
    keeper: Keeper,
    target: Target,
    batches: list[Batch],
    revoke: Revoker,
    *,
    wait_s: float,
    observe: bool,
    name: str,
) -> dict[str, Any]:
    """Revoke with ``revoke``; when every still-open stream of ``batches`` ended after it.

    Args:
        wait_s: how long to wait for the streams to end.
        observe: sample the CPU and probe the loop lag around it.
        name: names the observers' logs.

    Returns:
        What ``revoke`` returned beside ``revoked_at``; ``streams``,
        ``closed``, ``still_open``, ``broken`` (ended without their body's
        end) and a few ``end_errors``; ``close_p50_ms``/``close_max_ms``
        after ``revoked_at``, ``ends_per_100ms``; observed, ``cpu``
        (:func:`benchlib.session_cpu.timeline`) and ``loop_lag``
        (:func:`benchlib.loop_lag.loop_lag`).

    Resource handling:
        The observers are stopped before this returns.
    """
    await keeper.refresh()
    held = [h for b in batches for h in b.held if h.ended_at is None]
    observers = None
    if observe:
        client = [os.getpid(), *keeper.watchers.pids]
        observers = start_observers(procs, name, target.pid, client, target.healthz_url)
    try:
        if observers is not None:
            await trio.sleep(LEAD_S)
        revoked_at, details = await revoke()
        returned_at = time.time()
        if observers is not None:
            origin = revoked_at if math.isfinite(revoked_at) else returned_at
            observers.stop_at(origin + AFTER_S)
        await keeper.wait_ended(held, wait_s)
        waited = [h for h in held if h.ended_at is not None]
        after = sorted(h.ended_at - revoked_at for h in waited)  # type: ignore[operator]
        last_end = max((h.ended_at for h in waited), default=None)  # type: ignore[type-var]
        result: dict[str, Any] = {
            **details,
            "streams": len(held),
            "closed": len(waited),
            "still_open": len(held) - len(waited),
            "broken": sum(1 for h in waited if h.end_error),
            "end_errors": sorted({h.end_error for h in waited if h.end_error})[:MAX_ERROR_SAMPLES],
            "revoke_returned_after_ms": (returned_at - revoked_at) * 1000,
            "close_p50_ms": percentile(after, 0.5) * 1000 if after else math.nan,
            "close_max_ms": after[-1] * 1000 if after else math.nan,
            "ends_per_100ms": end_histogram(after) if math.isfinite(revoked_at) else [],
            "wait_s": wait_s,
            "watchers": len(keeper.watchers.pids),
        }
        if observers is not None and math.isfinite(revoked_at):
            result.update(await observers.figures(revoked_at, last_end))
    finally:
        if observers is not None:
            observers.close()
    return result
