"""The way back to the caller of a request relayed to a remote connector, by the caller's era.

``resources/read`` of a remote's resource and ``prompts/get`` of a remote's
prompt (:mod:`agentws.connectors.remote_content`) may make the remote ask
the caller something first:

- a client with a session is asked as during a tool call: the remote's
  requests reach it as requests (:class:`~agentws.doors.mcp.relay.relay_channel.McpRelayChannel`);
- a client of 2026-07-28 gets the remote's ``input_required`` answer, its
  questions under the remote's own keys, with a ``requestState`` sealed for
  this token, remote, resource or prompt and arguments
  (:mod:`agentws.doors.mcp.relay.passthrough`); its retry goes back to the remote. That
  takes a link of 2026-07-28 too: a remote on a handshake link that asks
  such a client something is told it cannot, and the client gets
  ``MissingRequiredClientCapability`` if it had not declared what was asked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentws.connectors.remote_mcp import RemoteError
from agentws.core.redaction import upstream_excerpt
from agentws.domain.models import Connector
from agentws.doors.mcp.relay.modern_calls import ModernChannel
from agentws.doors.mcp.relay.passthrough import CallBinding, Passthrough, StateSeal
from agentws.doors.mcp.relay.relay_channel import McpRelayChannel
from agentws.tools.caller_channel import CallerChannel

__all__ = ["relayed", "remote_failure"]

R = TypeVar("R")
Context = ServerRequestContext[Any]


def _hash(arguments: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(arguments, sort_keys=True).encode()).hexdigest()


async def relayed(
    ctx: Context,
    seal: StateSeal,
    connector: Connector,
    what: str,
    params: types.InputResponseRequestParams,
    arguments: Mapping[str, Any],
    send: Callable[[CallerChannel], Awaitable[R]],
) -> R:
    """``send(channel)`` with the channel the caller's era takes the remote's questions on.

    ``what`` names the request (``prompts/get review``); with ``arguments``
    and the connector it is what a passed-through state is bound to.

    Error handling:
        MCPError, as :func:`remote_failure` makes it of ``send``'s error;
        ``INVALID_PARAMS`` for a ``requestState`` of ours that does not
        hold; ``MissingRequiredClientCapability`` as above.
    """
    try:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await send(McpRelayChannel(ctx))
        caller = ctx.lifespan_context.caller
        binding = CallBinding(caller.token_id, connector.id, what, _hash(arguments))
        channel = ModernChannel(ctx, passthrough=Passthrough.of(seal, binding, params))
        result = await send(channel)
        channel.check()
        return result
    except (RemoteError, MCPError) as exc:
        raise remote_failure(exc) from None


def remote_failure(exc: RemoteError | MCPError) -> MCPError:
    """A remote connector's failure as the MCP error a client shows.

    One that could not be reached is an internal error naming it; a JSON-RPC
    error of the remote's keeps its code and data, its message cut short.
    """
    if isinstance(exc, RemoteError):
        return MCPError(types.INTERNAL_ERROR, exc.message)
    return MCPError(exc.error.code, upstream_excerpt(exc.error.message), exc.error.data)
