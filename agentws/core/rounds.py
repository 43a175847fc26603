"""Work a service task does in rounds until it is closed: one loop for the pollers.

A round that fails is logged and the next comes as usual, so a store that
is down for a while (or one bad row) does not end the task: the service
keeps working and says what went wrong.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from agentws.core.errors import StoreError

__all__ = ["poll_until_closed"]


async def poll_until_closed(
    work: Callable[[], Awaitable[object]],
    closed: trio.Event,
    *,
    every_s: float,
    what: str,
    log: logging.Logger,
) -> None:
    """Run ``work`` every ``every_s`` until ``closed`` is set; log a round that fails.

    Args:
        what: what the rounds do, for the log ("webhook alerts").
    """
    while not closed.is_set():
        try:
            await work()
        except StoreError as exc:
            log.warning("%s: cannot use the store (%s); retrying", what, exc.message)
        except Exception:
            log.exception("%s: a round failed; retrying", what)
        with trio.move_on_after(every_s):
            await closed.wait()
