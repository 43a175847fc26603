"""Chat services' rate limits: HTTP 429 with ``Retry-After``, waited out or handed back.

A short wait is cheaper within the attempt than a retry of the whole event
(which would run the model again); a long one becomes a retryable
:class:`~agentws.chat.sinks.SinkError` carrying the wait, which the worker
honours when it schedules the retry.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import httpx2
import trio

from agentws.chat.sinks import SinkError

__all__ = ["MAX_WAIT_S", "retry_after_s", "within_rate_limits"]

log = logging.getLogger("agentws.chat")

#: A rate limit this short is waited out within the attempt.
MAX_WAIT_S = 10.0
_MAX_TRIES = 3


def retry_after_s(response: httpx2.Response, default_s: float = 5.0) -> float:
    """Seconds the ``Retry-After`` header asks for (``default_s`` if absent or unreadable)."""
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return default_s


async def within_rate_limits(
    send: Callable[[], Awaitable[httpx2.Response]], *, what: str
) -> httpx2.Response:
    """``send()``'s first answer that is not a 429, waiting as each 429 asks.

    Error handling:
        A retryable SinkError with ``retry_after_s`` when the wait is longer
        than :data:`MAX_WAIT_S` or the limit persists; ``send``'s own errors.
    """
    for attempt in range(1, _MAX_TRIES + 1):
        response = await send()
        if response.status_code != 429:
            return response
        wait = retry_after_s(response)
        if wait > MAX_WAIT_S or attempt == _MAX_TRIES:
            raise SinkError(
                f"{what}: rate limited; retry after {wait:g} s", retryable=True, retry_after_s=wait
            )
        log.info("%s: rate limited; waiting %g s as Retry-After asks", what, wait)
        await trio.sleep(wait)
    raise AssertionError("unreachable")
