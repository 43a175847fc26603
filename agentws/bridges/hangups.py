"""A client's hang-up, told to the response it ends without a task per response to watch for it.

An ASGI application learns that its client left by reading ``http.disconnect``
from ``receive``; a response that writes a long stream (an SSE stream) has to
read it in a task of its own beside the writer, and cancel the writer when it
comes. With ten thousand streams open that is ten thousand tasks waiting, and
ending them costs a cancellation each (tens of microseconds apiece, with a
nursery's bookkeeping on top).

On an HTTP/1.1 connection a response's ``http.disconnect`` comes only when
the connection itself ends: the connection's read loop sees the end of its
input, or fails. So the connection can tell its response directly. The
Hypercorn bridge (:mod:`agentws.bridges.hypercorn_bridge`) gives each
connection a :class:`HangUp` (:func:`watch_connection`, in the connection's
task, so that every response it spawns sees it through :func:`current`) and
calls :meth:`HangUp.happened` when the connection's read loop ends; a
response registers the cancel scope to cancel then (:meth:`HangUp.cancelling`).

The notice also goes the other way: a response about to end may ask its
connection to wait before closing, should the client hang up meanwhile
(:meth:`HangUp.hold_close`). A mass close of MCP sessions uses it
(:mod:`agentws.doors.mcp.sessions.teardowns`): ten thousand clients that
hang up as soon as they read their stream's end would otherwise have their
connections closed between the batches of streams still to end, each close
costing the event loop about as much as a stream's end, and put off every
later batch by as much.

Where no bridge runs (another server, HTTP/2, a test calling the ASGI app
directly) :func:`current` returns None and the response watches ``receive``
as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

import trio

__all__ = ["HangUp", "current", "watch_connection"]

# HTTP versions whose responses end only with their connection (one response at a
# time; HTTP/2 ends single streams, which the connection does not see).
_ONE_STREAM = frozenset({"1.0", "1.1"})

_CONNECTION: ContextVar[HangUp | None] = ContextVar("agentws_hangup", default=None)


class HangUp:
    """One HTTP/1.1 connection's end, as its responses are told of it."""

    __slots__ = ("_before_close", "_ended", "_scopes")

    def __init__(self) -> None:
        self._scopes: list[trio.CancelScope] = []
        self._ended = False
        self._before_close: Callable[[], Awaitable[None]] | None = None

    @contextlib.contextmanager
    def cancelling(self, scope: trio.CancelScope) -> Iterator[None]:
        """Cancel ``scope`` if the connection ends while in this block (at once if it has)."""
        if self._ended:
            scope.cancel()
        self._scopes.append(scope)
        try:
            yield
        finally:
            # One response at a time on the connection: the list holds one scope or none.
            with contextlib.suppress(ValueError):
                self._scopes.remove(scope)

    def happened(self) -> None:
        """The connection has ended: cancel what its responses registered (idempotent)."""
        self._ended = True
        self._before_close = None
        scopes, self._scopes = self._scopes, []
        for scope in scopes:
            scope.cancel()

    def hold_close(self, wait: Callable[[], Awaitable[None]]) -> None:
        """Have the connection, once its input ends, await ``wait()`` before it closes.

        For a response about to end, whose client may hang up as soon as it
        has read the end (the last such call wins; none, once the connection
        has ended).
        """
        if not self._ended:
            self._before_close = wait

    async def input_ended(self) -> None:
        """The connection's input has ended: return once it may close (the bridge's side).

        At once, unless a response asked it to wait (:meth:`hold_close`).
        """
        wait, self._before_close = self._before_close, None
        if wait is not None:
            await wait()


def watch_connection() -> HangUp:
    """Give the current task's connection a hang-up notice (its responses' tasks inherit it)."""
    hang_up = HangUp()
    _CONNECTION.set(hang_up)
    return hang_up


def current(scope: dict[str, object]) -> HangUp | None:
    """The hang-up notice of the connection serving the ASGI ``scope``, if it has one."""
    if scope.get("http_version") not in _ONE_STREAM:
        return None
    return _CONNECTION.get()
