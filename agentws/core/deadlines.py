"""Deadlines: a wait bounded where it happens, failing with our own error.

The caller owns timeouts (our async functions take no ``timeout=``): it
wraps the call in :func:`deadline`, which is ``trio.fail_after`` whose
:class:`trio.TooSlowError` becomes the error the caller names, one that
says what did not answer (an upstream, a remote, a chat). Code that hands
the deadline on to a client with timeouts of its own (``httpx2``) reads it
with :func:`time_left_s`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import trio

__all__ = ["deadline", "time_left_s"]


@contextmanager
def deadline(seconds: float, too_slow: Callable[[], Exception]) -> Iterator[None]:
    """The block must end within ``seconds``, or fails with ``too_slow()``.

    Args:
        seconds: how long the block may take, from entering it.
        too_slow: makes the error raised when ``seconds`` pass; called only
            then, so building its message costs nothing on time.

    Error handling:
        ``too_slow()``, raised ``from None`` (the TooSlowError says nothing
        more), when the block was cancelled by this deadline. A deadline of
        an enclosing scope cancels through untouched.
    """
    try:
        with trio.fail_after(seconds):
            yield
    except trio.TooSlowError:
        raise too_slow() from None


def time_left_s() -> float | None:
    """Seconds to the caller's deadline (None: it set none), for an HTTP client's timeouts."""
    effective = trio.current_effective_deadline()
    return None if effective == math.inf else max(effective - trio.current_time(), 0.0)
