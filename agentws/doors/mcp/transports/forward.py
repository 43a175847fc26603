"""Forwarding a request for an MCP session to the instance that owns it.

Sessions live in the process that opened them, and their ids say which
(``<instance>.<random>``). A load balancer that routes by session id (see
``deploy/nginx-agentws.conf``) sends every request to the owner; one that
does not may send a session's request anywhere. The instance that receives
it then makes one internal HTTP hop to the owner, found in the instance
registry, and relays the answer, SSE streams included, as it arrives.

The hop is an ordinary request to the owner's MCP door, so the owner checks
the bearer token and the session as for any request: forwarding grants
nothing. It carries ``Agentws-Forwarded-By``, and a forwarded request is
never forwarded again. An owner that is not in the registry any more, or
refuses the connection, is gone: the answer is 404, and MCP clients then
initialize a new session.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import httpx2
import trio

from agentws.common.instances import InstanceDirectory
from agentws.connectors.url_guard import shared_ssl_context
from agentws.domain.models import Instance
from agentws.http.asgi import Receive, Send

__all__ = [
    "FORWARDED_HEADER",
    "ForwardError",
    "OwnerGoneError",
    "SessionForwarder",
    "cancel_on_disconnect",
    "owner_of",
]

log = logging.getLogger("agentws.mcp")

#: Set on a forwarded request, to the forwarding instance's id.
FORWARDED_HEADER = b"agentws-forwarded-by"


# Headers that belong to one connection, not to the request or response
# (RFC 9110 §7.6.1), plus what the hop sets itself.
_REQUEST_SKIP = frozenset(
    {
        b"host",
        b"origin",  # checked by the first instance; the hop is not a browser's
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
        FORWARDED_HEADER,
    }
)
_RESPONSE_SKIP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"trailer", b"transfer-encoding"}
)
# An owner that does not accept the connection this fast is treated as unreachable.
_CONNECT_S = 2.0
# Sending the (bounded) request body to the owner.
_WRITE_S = 10.0
# Closing the hop when the client leaves or the answer ends.
_CLOSE_S = 2.0


class ForwardError(Exception):
    """The owner could not be asked, or broke off before answering."""


class OwnerGoneError(ForwardError):
    """Nothing accepts connections at the owner's address: it is gone."""


def owner_of(session_id: str) -> str | None:
    """The instance id a session id starts with, or None for an id of another shape."""
    owner, dot, rest = session_id.partition(".")
    return owner if dot and owner and rest else None


async def cancel_on_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` when the client disconnects (after its body has been read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def open_hop_client() -> httpx2.AsyncClient:
    """The client for hops to other instances; its owner closes it with ``async with``.

    No read deadline: a forwarded SSE stream lasts as long as its session,
    and the owner's keep-alive comments show it is alive. Proxy variables
    of the environment are ignored: instances talk to each other directly.
    """
    return httpx2.AsyncClient(
        # The process's one TLS context: loading the CA bundle again would cost
        # the loop milliseconds at every start.
        verify=shared_ssl_context(),
        timeout=httpx2.Timeout(connect=_CONNECT_S, read=None, write=_WRITE_S, pool=_CONNECT_S),
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=32),
        trust_env=False,
        follow_redirects=False,
    )


@attrs.define(eq=False)
class SessionForwarder:
    """Relays one request at a time to the owner of its session.

    Args:
        registry: where the instances are.
        client: the hop client (see :func:`open_hop_client`).
        stall_s: a client that takes nothing of the relayed answer for this
            long is cut off, as on the owner itself.
    """

    registry: InstanceDirectory
    client: httpx2.AsyncClient
    stall_s: float

    @property
    def instance_id(self) -> str:
        return self.registry.instance_id

    async def owner(self, instance_id: str) -> Instance | None:
        """The live instance ``instance_id``, or None if it is gone (StoreError as any read)."""
        return await self.registry.live(instance_id)

    async def forward(
        self,
        owner: Instance,
        scope: dict[str, Any],
        receive: Receive,
        send: Send,
        *,
        body: bytes,
    ) -> None:
        """Send the request to ``owner`` and relay its answer to ``send``.

        Resource handling:
            The hop is closed when the answer ends, when the client leaves
            (which the owner then sees as its client leaving), or when the
            client stops reading for ``stall_s``.

        Error handling:
            :class:`OwnerGoneError` if the owner refuses the connection,
            :class:`ForwardError` if it cannot be reached otherwise; both
            before anything was sent to the client. A hop that breaks off
            mid-answer ends the relayed answer there (logged).
        """
        target = owner.internal_url + scope.get("root_path", "") + scope["path"]
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        headers = [(k, v) for k, v in scope["headers"] if k not in _REQUEST_SKIP]
        headers.append((FORWARDED_HEADER, self.instance_id.encode()))
        request = self.client.build_request(
            scope["method"], target, headers=headers, content=body or None
        )
        try:
            response = await self.client.send(request, stream=True)
        except httpx2.ConnectError as exc:
            self.registry.forget(owner.id)
            raise OwnerGoneError(f"{owner.id} refused the connection: {exc}") from exc
        except httpx2.TransportError as exc:
            raise ForwardError(f"{owner.id} did not answer: {exc!r}") from exc
        try:
            await self._relay(response, receive, send, owner)
        finally:
            with trio.move_on_after(_CLOSE_S, shield=True):
                await response.aclose()

    async def _relay(
        self, response: httpx2.Response, receive: Receive, send: Send, owner: Instance
    ) -> None:
        headers = [
            (k.lower(), v) for k, v in response.headers.raw if k.lower() not in _RESPONSE_SKIP
        ]
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers}
        )
        completed = False
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_disconnect, receive, nursery.cancel_scope)
            try:
                async for chunk in response.aiter_raw():
                    with trio.move_on_after(self.stall_s) as stalled:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    if stalled.cancelled_caught:
                        log.warning(
                            "a forwarded client read nothing for %g s; closing its hop to %s",
                            self.stall_s,
                            owner.id,
                        )
                        break
                else:
                    completed = True
            except httpx2.TransportError as exc:
                log.warning("the hop to %s broke off: %r", owner.id, exc)
                completed = True
            nursery.cancel_scope.cancel()
        if completed:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
