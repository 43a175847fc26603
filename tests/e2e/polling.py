"""Waiting in end-to-end tests for state that lives elsewhere (a server, a store, a browser).

Where there is no event to wait on, a test polls, with a deadline:
:func:`wait_for` for a check made in this process, :func:`wait_until` for
one that has to be awaited (a query, a request, a call on the browser's
thread). A timeout fails the test naming what was awaited and the last
value seen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

__all__ = ["wait_for", "wait_until"]

T = TypeVar("T")

#: How long a test waits by default.
WAIT_S = 5.0
# Between tries: short, so that a test ends as soon as the state is there.
_INTERVAL_S = 0.01


async def wait_for(
    predicate: Callable[[], object],
    *,
    what: str,
    timeout_s: float = WAIT_S,
    interval_s: float = _INTERVAL_S,
) -> None:
    """Call ``predicate()`` until it returns something true; fail after ``timeout_s``."""
    last: object = None

    async def check() -> object:
        nonlocal last
        last = predicate()
        return last

    await wait_until(check, what=what, timeout_s=timeout_s, interval_s=interval_s)


async def wait_until(
    probe: Callable[[], Awaitable[T]],
    done: Callable[[T], object] = bool,
    *,
    what: str,
    timeout_s: float = WAIT_S,
    interval_s: float = _INTERVAL_S,
    still_worth_it: Callable[[str], None] | None = None,
) -> T:
    """Await ``probe()`` until ``done(result)`` is true; that result.

    Args:
        still_worth_it: called with ``what`` between tries; it raises to give
            up at once (say, the server being waited on has exited).

    Error handling:
        :class:`AssertionError` after ``timeout_s``, naming ``what`` and the
        last result.
    """
    result: Any = None
    with trio.move_on_after(timeout_s):
        result = await probe()
        while not done(result):
            if still_worth_it is not None:
                still_worth_it(what)
            await trio.sleep(interval_s)
            result = await probe()
        return result  # type: ignore[no-any-return]
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; last: {result!r}")
