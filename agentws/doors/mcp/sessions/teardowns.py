"""Holding the teardown of a mass close's ended responses until every stream has ended.

A token revoked with thousands of sessions open has their streams ended a
batch at a time (:mod:`agentws.doors.mcp.sessions.supervisor`). Each ended
response then unwinds: its handler returns through the door's layers, and
Hypercorn ends the connection's cycle and, once the client hangs up, closes
the connection. That teardown costs the event loop more than ending the
stream did, and run between batches it put off every later batch's ends by
as much: with 10,000 streams the last one ended 5.9-6.4 s after the
revocation, and 3.4-4.3 s once the teardowns waited (``scripts/bench
sessions``, the same machine).

So the handler of a stream that a mass close ended waits, after its stream
has ended, at its batch's :class:`TeardownHold`, and so does its connection
if the client hangs up meanwhile (the stream asks it to:
:meth:`agentws.bridges.hangups.HangUp.hold_close`); once the last stream has
ended, the supervisor lets the holds go one at a time (a quarter of a
batch's sessions each), each once its handlers and connections have gone
on. Every client hears of the close first, and the loop never takes on
more than a hold's teardowns at once. With the connections' closes held
too, the last of 10,000 streams ended 2.8-3.6 s after the revocation,
against 4.3-4.7 s (the same bench).
"""

from __future__ import annotations

import attrs
import trio

__all__ = ["TeardownHold"]

# Turns of the loop given to one batch's unwinding before the next batch's
# handlers go on: past its hold a handler returns through the door's layers,
# then Hypercorn ends its task and closes its connection, each step a turn.
_UNWIND_TURNS = 3


@attrs.define(eq=False)
class TeardownHold:
    """Where the handlers of one batch's ended responses wait before unwinding.

    Resource handling:
        Whoever makes a hold lets it go (:meth:`let_go`, or :meth:`open` when
        it stops early): nothing else wakes the handlers waiting at it.
    """

    _opened: trio.Event = attrs.field(factory=trio.Event, init=False)
    #: Set when the last handler waiting has gone on, once the hold is open.
    _passed: trio.Event = attrs.field(factory=trio.Event, init=False)
    _waiting: int = attrs.field(default=0, init=False)

    async def wait(self) -> None:
        """Return once the hold is let go (at its next checkpoint if it has been)."""
        self._waiting += 1
        try:
            await self._opened.wait()
        finally:
            self._waiting -= 1
            if not self._waiting and self._opened.is_set():
                self._passed.set()

    def open(self) -> None:
        """Let every handler waiting here go on, without waiting for them."""
        self._opened.set()

    async def let_go(self, wait_s: float) -> None:
        """Let the handlers go on; return once each has (or after ``wait_s``) and unwound.

        A handler's unwinding takes a few turns of the loop past the hold (its
        door's layers, then Hypercorn's end of its task and connection); this
        returns after as many, so that the next batch's handlers do not unwind
        in the same turns as this one's.
        """
        self._opened.set()
        if self._waiting:
            with trio.move_on_after(wait_s):
                await self._passed.wait()
        for _ in range(_UNWIND_TURNS):
            await trio.lowlevel.checkpoint()
