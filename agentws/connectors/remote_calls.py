"""The one path a ``tools/call`` takes to a remote MCP server.

Every call of a remote tool goes through :func:`call_remote_tool`, whoever
makes it (a caller of the MCP door, an agent's run, the webhook worker over
the service's links in :mod:`agentws.connectors.links`; the CLI's try of a
prompt over a session of its own, :func:`call_tool_once`) and whichever
revision the session speaks:

- over the handshake revisions the SDK's session sends the call, with its
  own progress token, and sends ``notifications/cancelled`` when the caller
  is cancelled; what the remote asks during the call goes to the session's
  callbacks (:mod:`agentws.connectors.relay`);
- over the stateless revision (2026-07-28) :func:`~agentws.connectors.modern_link.call_over`
  sends it: the first round on the link's own transport when the link has
  a :class:`~agentws.connectors.direct_call.DirectCaller`, ``input_required``
  rounds answered or passed back, a stale ``Mcp-Param`` header recovered.

Either way the caller gets the remote's result after the progress and log
messages sent before it.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession

from agentws.connectors.direct_call import DirectCaller
from agentws.connectors.modern_link import Outcome, call_over, is_modern
from agentws.connectors.relay import CallerChannel, ProgressFn, notifications_before_result
from agentws.connectors.remote_mcp import RemoteError, with_remote
from agentws.connectors.url_guard import Resolver, system_resolver
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import Connector
from agentws.settings.secret_box import SecretBox

__all__ = ["call_remote_tool", "call_tool_once"]


async def call_remote_tool(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    *,
    channel: CallerChannel | None,
    progress: ProgressFn | None,
    direct: DirectCaller | None = None,
) -> Outcome:
    """Call the remote's tool ``name`` over ``session``, for ``channel``'s caller.

    Args:
        channel: the caller's channel (see :mod:`agentws.connectors.relay`);
            None: nobody takes what the remote sends during the call.
        progress: where the remote's progress goes; None: nowhere.
        direct: the link's sender of stateless calls, if it has one.

    Returns:
        The remote's result; over the stateless revision, for a caller whose
        channel has a :class:`~agentws.connectors.relay.RemoteRound`, possibly
        its ``input_required`` answer, made the caller's.

    Error handling:
        :class:`~mcp.shared.exceptions.MCPError` from the remote or when the
        connection is lost; RuntimeError from the SDK's checks of the result.
    """
    if is_modern(session):
        return await call_over(session, name, arguments, channel, progress, direct)
    # The SDK puts its own progress token on the request and
    # sends notifications/cancelled if this task is cancelled.
    result = await session.call_tool(name, arguments, progress_callback=progress)
    await notifications_before_result()
    return result


async def call_tool_once(
    connector: Connector,
    name: str,
    arguments: dict[str, Any],
    *,
    box: SecretBox | None,
    allowlist: Allowlist,
    resolve: Resolver = system_resolver,
) -> types.CallToolResult:
    """Call the remote's tool ``name`` in a session of its own, within the caller's
    deadline (see :func:`~agentws.connectors.remote_mcp.fetch_tools`): for a
    process with no links, such as the CLI's try of a prompt, which runs read
    tools only.

    Error handling:
        As :func:`~agentws.connectors.remote_mcp.fetch_tools`; a JSON-RPC
        error from the remote is a :class:`~agentws.connectors.remote_mcp.RemoteError` too.
    """

    async def call(session: ClientSession, kind: str) -> types.CallToolResult:
        result = await call_remote_tool(session, name, arguments, channel=None, progress=None)
        if not isinstance(result, types.CallToolResult):  # the remote asked for input
            raise RemoteError(f"connector {connector.name!r}: {name} asked for input")
        return result

    return await with_remote(
        connector, box=box, allowlist=allowlist, resolve=resolve, what=f"call {name}", work=call
    )
