"""A race between Quart-Trio and Hypercorn that kept connections open, closed here.

Quart-Trio reads a request's body in a task beside the handler, and cancels
both as soon as either ends. Hypercorn takes the last message of a response
as the end of the request: it puts ``http.disconnect`` in that reader's
queue and then, when the request was not read to its end (a 408 body read
timeout, a 401 given before the body was read), closes the connection, or
else restarts the connection's keep-alive timer. The reader sees the
disconnect at once, and the cancel it then sends lands inside that last
send, between those steps: the close never happened (the connection stayed
open for as long as the client went on sending), nor did the timer restart
(an idle keep-alive connection stayed open for as long as the client liked).

:class:`ClosingQuart` wraps Quart's ASGI app so that the last message of a
response is sent shielded from that cancel. The send is bounded as any send
is: Hypercorn itself writes to the socket shielded, and the kernel drops a
peer that takes nothing (see ``agentws.server``).
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from agentws.http.asgi import ASGIApp, Receive, Scope, Send

__all__ = ["ClosingQuart"]


@attrs.frozen
class ClosingQuart:
    """Quart's ASGI app, with the last message of each HTTP response sent shielded."""

    app: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_last_shielded(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                with trio.CancelScope(shield=True):
                    await send(message)
            else:
                await send(message)

        await self.app(scope, receive, send_last_shielded)
