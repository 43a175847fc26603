"""Sending a request to the instance that holds what it names.

An MCP session lives in the instance that opened it (its id says which), and
so does a stateless client's call waiting for its input (its ``requestState``
says which). A request for either that reaches another instance is relayed
to the holder by :func:`forward_to_owner`, once: a request forwarded already
and still not held is answered as if nothing of that name existed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from agentws.core.errors import StoreError
from agentws.doors.mcp.transports.door_requests import DoorRequest
from agentws.doors.mcp.transports.forward import (
    FORWARDED_HEADER,
    ForwardError,
    OwnerGoneError,
    SessionForwarder,
)
from agentws.http.asgi import HttpRefusal

__all__ = ["forward_to_owner", "store_unavailable"]

log = logging.getLogger("agentws.mcp")


def store_unavailable(doing: str, exc: StoreError) -> HttpRefusal:
    log.error("cannot %s: %s", doing, exc.message)
    return HttpRefusal(
        503, "store_unavailable", "the store is unavailable; retry shortly", [("Retry-After", "5")]
    )


async def forward_to_owner(
    request: DoorRequest,
    forwarder: SessionForwarder,
    owner_id: str,
    body: Callable[[], Awaitable[bytes]],
    *,
    missing: HttpRefusal,
    gone: HttpRefusal,
) -> None:
    """Relay ``request`` to instance ``owner_id``, with the body ``body()`` reads.

    ``missing`` answers a request forwarded once already; ``gone`` one whose
    owner is no longer running. Either is answered before the body is read:
    a request for a session nobody holds is that, whatever its size.
    """
    if request.header(FORWARDED_HEADER) is not None:
        # Forwarded once already: the owner does not have it either.
        raise missing
    try:
        owner = await forwarder.owner(owner_id)
    except StoreError as exc:
        raise store_unavailable(
            "look up the instance holding an MCP request's state", exc
        ) from None
    if owner is None:
        raise gone
    try:
        await forwarder.forward(
            owner, request.scope, request.receive, request.send, body=await body()
        )
    except OwnerGoneError as exc:
        log.info("MCP request for a gone instance: %s", exc)
        raise gone from None
    except ForwardError as exc:
        log.warning("cannot forward an MCP request: %s", exc)
        raise HttpRefusal(
            502,
            "owner_unreachable",
            f"the instance holding this request's state ({owner_id}) cannot be reached; "
            "retry shortly",
            [("Retry-After", "1")],
        ) from None
