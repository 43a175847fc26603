"""What every fake upstream served as a bare ASGI app needs: lifespan, and the whole body."""

from __future__ import annotations

from typing import Any

__all__ = ["lifespan", "read_body"]


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
