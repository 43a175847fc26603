"""A race in Hypercorn's trio connection handler, closed here until upstream closes it.

Hypercorn 0.18's trio ``TCPServer`` ends a connection (``send_eof``) without
taking the lock its sends take. When a client cuts a request body short and
hangs up, Hypercorn's own 400 and the connection's close can meet on one
socket: ``send_all`` raises ``trio.BusyResourceError``, which its handler does
not expect, and the error ends the whole server (pgjones/hypercorn#203). Any
client could stop the service this way, without a token.

:func:`install` makes the worker use a handler that takes that error for what
it means (the connection is closing) and lets the connection end alone.
"""

from __future__ import annotations

import contextlib
from typing import Any

import hypercorn.trio.run
import trio

from agentws import hypercorn_lean

__all__ = ["install"]


class _SturdyTCPServer(hypercorn_lean.LeanTCPServer):
    async def protocol_send(self, event: Any) -> None:
        # The stream is being closed by the other side of the race: nothing to send to.
        with contextlib.suppress(trio.BusyResourceError):
            await super().protocol_send(event)


def install() -> None:
    """Serve connections with the fixed handler (idempotent), lean ones (:mod:`.hypercorn_lean`)."""
    hypercorn_lean.install()
    hypercorn.trio.run.TCPServer = _SturdyTCPServer  # type: ignore[attr-defined]
