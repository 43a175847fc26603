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
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType

import trio

__all__ = ["deadline", "time_left_s"]


def deadline(seconds: float, too_slow: Callable[[], Exception]) -> AbstractContextManager[None]:
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
    return _Deadline(seconds, too_slow)


class _Deadline:
    """:func:`deadline`'s block: one cancel scope, as ``trio.fail_after`` makes it.

    A class rather than a generator around ``fail_after`` (itself one): it
    bounds every call relayed to a remote, and the two generators cost half
    as much again as the scope itself.
    """

    __slots__ = ("_scope", "_too_slow")

    def __init__(self, seconds: float, too_slow: Callable[[], Exception]) -> None:
        self._scope = trio.move_on_after(seconds)
        self._too_slow = too_slow

    def __enter__(self) -> None:
        self._scope.__enter__()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        scope = self._scope
        handled = scope.__exit__(kind, error, traceback)
        if scope.cancelled_caught:
            raise self._too_slow() from None
        return handled


def time_left_s() -> float | None:
    """Seconds to the caller's deadline (None: it set none), for an HTTP client's timeouts."""
    effective = trio.current_effective_deadline()
    return None if effective == math.inf else max(effective - trio.current_time(), 0.0)
