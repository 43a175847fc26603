"""The MCP door's caller channel for session eras (2024-11-05 … 2025-11-25).

What a remote MCP connector sends while it runs a caller's ``tools/call``
reaches that caller within the same request:

- progress, when the client's request carried a ``progressToken``: sent
  with the client's token (the remote saw agentws's own);
- log messages, at or above the level the client set (``logging/setLevel``);
- ``elicitation/create``, ``sampling/createMessage`` and ``roots/list``, as requests on
  the client's session related to its call, when the client declared the
  capability (elicitation from 2025-06-18 on); the client's answer, or its
  error, goes back to the remote.

Modern-era (2026-07-28) clients take no server-initiated requests: their
channel (:class:`~agentws.doors.mcp.relay.modern_calls.ModernChannel`) asks in rounds
instead. Both channels are :class:`ChannelParts`, which says which parts
each offers.
"""

from __future__ import annotations

import abc
from typing import Any, TypeVar

import attrs
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from agentws.doors.mcp.sessions.log_levels import wanted
from agentws.doors.mcp.sessions.session import McpSession
from agentws.tools.caller_channel import ElicitFn, LogFn, ProgressFn, RootsFn, SampleFn

__all__ = ["ChannelParts", "McpRelayChannel", "send_progress"]

R = TypeVar("R", bound=types.Result)

# Elicitation came with this revision; older clients cannot be asked.
_ELICITATION_SINCE = "2025-06-18"


async def send_progress(
    ctx: ServerRequestContext[Any], progress: float, total: float | None, message: str | None
) -> None:
    """A remote's progress, to the client under the token its request carried (if any)."""
    token = progress_token_from_params(ctx.params)
    if token is None:
        return
    notification = types.ProgressNotification(
        params=types.ProgressNotificationParams(
            progress_token=token, progress=progress, total=total, message=message
        )
    )
    await ctx.session.send_notification(notification, related_request_id=ctx.request_id)


class ChannelParts(abc.ABC):
    """What the MCP door's caller channels share: the parts they offer, and progress.

    A part (``progress``, ``log``, ``elicitation``, ``sampling``, ``roots``)
    is offered when :meth:`_offers` says so; a subclass, an attrs class with
    a ``ctx``, carries it out in ``_log``, ``_elicit``, ``_sample`` and
    ``_roots``. Progress goes to the client under its request's token
    (:func:`send_progress`) on every era.
    """

    __slots__ = ()

    ctx: ServerRequestContext[Any]

    def _offers(self, part: str) -> bool:
        """Whether the channel offers ``part``; every part, unless a subclass says otherwise."""
        return True

    @property
    def progress(self) -> ProgressFn | None:
        return self._progress if self._offers("progress") else None

    @property
    def log(self) -> LogFn | None:
        return self._log if self._offers("log") else None

    @property
    def elicit(self) -> ElicitFn | None:
        return self._elicit if self._offers("elicitation") else None

    @property
    def sample(self) -> SampleFn | None:
        return self._sample if self._offers("sampling") else None

    @property
    def roots(self) -> RootsFn | None:
        return self._roots if self._offers("roots") else None

    @property
    def asks_back(self) -> bool:
        return any(self._offers(part) for part in ("elicitation", "sampling", "roots"))

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        await send_progress(self.ctx, progress, total, message)

    @abc.abstractmethod
    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Carried out by the subclass."""

    @abc.abstractmethod
    async def _elicit(
        self, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """Carried out by the subclass."""

    @abc.abstractmethod
    async def _sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        """Carried out by the subclass."""

    @abc.abstractmethod
    async def _roots(self) -> types.ListRootsResult | types.ErrorData:
        """Carried out by the subclass."""


@attrs.frozen
class McpRelayChannel(ChannelParts):
    """One ``tools/call`` request's way back to its client."""

    ctx: ServerRequestContext[McpSession]

    def _offers(self, part: str) -> bool:
        if part == "progress":
            return progress_token_from_params(self.ctx.params) is not None
        if part == "log":
            return True
        if part == "elicitation":
            return self._declared(part, since=_ELICITATION_SINCE)
        return self._declared(part)

    def _declared(self, capability: str, *, since: str = HANDSHAKE_PROTOCOL_VERSIONS[0]) -> bool:
        """Whether the client, on revision ``since`` or a later one, declared ``capability``."""
        capabilities = self.ctx.session.client_capabilities
        declared = capabilities is not None and getattr(capabilities, capability) is not None
        return declared and self._era_at_least(since)

    def _era_at_least(self, version: str) -> bool:
        """Whether the session speaks ``version`` or a later handshake revision."""
        known = list(HANDSHAKE_PROTOCOL_VERSIONS)
        spoken = self.ctx.protocol_version
        return spoken in known and version in known and known.index(spoken) >= known.index(version)

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        if not wanted(params.level, self.ctx.lifespan_context.log_level):
            return
        await self.ctx.session.send_notification(
            types.LoggingMessageNotification(params=params), related_request_id=self.ctx.request_id
        )

    async def _elicit(
        self, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self._ask(types.ElicitRequest(params=params), types.ElicitResult)

    async def _sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        if params.tools:
            return await self._ask(
                types.CreateMessageRequest(params=params), types.CreateMessageResultWithTools
            )
        return await self._ask(types.CreateMessageRequest(params=params), types.CreateMessageResult)

    async def _roots(self) -> types.ListRootsResult | types.ErrorData:
        return await self._ask(types.ListRootsRequest(), types.ListRootsResult)

    async def _ask(self, request: types.ServerRequest, result_type: type[R]) -> R | types.ErrorData:
        try:
            return await self.ctx.session.send_request(
                request,
                result_type,
                metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id),
            )
        except MCPError as exc:
            # The client's refusal is the remote's answer.
            return exc.error
