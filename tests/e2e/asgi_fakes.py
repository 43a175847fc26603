"""What every fake upstream served as a bare ASGI app needs: lifespan, the body, a port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

__all__ = ["lifespan", "read_body", "served_on_loopback"]


@asynccontextmanager
async def served_on_loopback(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` with Hypercorn on a free loopback port; its base URL, until the block ends."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, app, config)
        yield binds[0]
        nursery.cancel_scope.cancel()


async def lifespan(scope: dict[str, Any], receive: Any, send: Any) -> bool:
    """Answer Hypercorn's lifespan protocol if ``scope`` is it; whether it was."""
    if scope["type"] != "lifespan":
        return False
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})
    return True


async def read_body(receive: Any) -> bytes:
    """The request's body, all of it."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body
