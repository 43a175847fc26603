"""Remote tool calls of stateless (2026-07-28) clients: the relay, round by round.

What a remote MCP connector sends while it runs a call reaches a client of
the stateless revision this way (:class:`ModernChannel`):

- progress, when the request carried a ``progressToken``: on the request's
  own response stream (which then becomes SSE), with the client's token;
- log messages only when the request opted in with the
  ``io.modelcontextprotocol/logLevel`` ``_meta`` key, at that level or above
  (the revision's rule: no opt-in, no log messages);
- ``elicitation/create``, ``sampling/createMessage`` and ``roots/list``: the client takes no
  request from the server, so the call is answered ``input_required`` with
  the question, and goes on in a :class:`~agentws.doors.mcp.relay.pending_calls.PendingCalls`
  task until the client retries with the answer (any number of rounds);
- a call that would wait over the process's or its token's limit of such
  calls is refused at once with a tool error saying which and when to
  retry (:func:`over_capacity_result`);
- a question the client did not declare the capability for fails the call
  with ``MissingRequiredClientCapability`` (-32021, HTTP 400) naming it, as
  the revision requires; the remote is told the client cannot answer.

Only calls of remote MCP tools can ask, and only a client that declared
what it can be asked is asked: every other call runs in the request,
beaten while it runs (:mod:`agentws.doors.mcp.relay.beats`).

A remote whose link speaks 2026-07-28 too asks with ``input_required``
itself: its answer is passed through to the client with the remote's own
keys (:mod:`agentws.doors.mcp.relay.passthrough`), the channel's :attr:`ModernChannel.remote_round`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from agentws.core.errors import OverCapacityError
from agentws.domain.tool_results import tool_error
from agentws.doors.mcp.relay.passthrough import Passthrough
from agentws.doors.mcp.relay.pending_calls import (
    KeepAlive,
    PendingCall,
    PendingCalls,
    Step,
    is_pending_state,
)
from agentws.doors.mcp.relay.relay_channel import ChannelParts
from agentws.tools.caller_channel import CallerChannel, RemoteRound

__all__ = ["ModernChannel", "call_modern"]

Context = ServerRequestContext[Any]
# The capability each input request of a remote needs its client to have declared.
_NEEDS = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


def _as(model: type[BaseModel], raw: Any) -> Any:
    """The client's answer as ``model``, or None if it is not one."""
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(by_alias=True, exclude_none=True)
    try:
        return model.model_validate(raw)
    except PydanticValidationError:
        return None


@attrs.define(eq=False)
class ModernChannel(ChannelParts):
    """One stateless client's call, as a remote's way back to it (a ``CallerChannel``)."""

    ctx: Context
    call: PendingCall | None = None
    #: For a remote tool: the round passed through, should the remote's link speak 2026-07-28.
    passthrough: Passthrough | None = None
    #: Capabilities a question needed that the client did not declare.
    missing: list[str] = attrs.field(factory=list)

    def step(self, ctx: Context) -> None:
        """A new round of the call: notifications go to this request from now on."""
        self.ctx = ctx

    @property
    def remote_round(self) -> RemoteRound | None:
        if self.passthrough is None:
            return None
        capabilities = self.ctx.session.client_capabilities
        return RemoteRound(
            input_responses=self.passthrough.input_responses,
            request_state=self.passthrough.remote_state,
            capabilities=(
                capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
                if capabilities is not None
                else {}
            ),
            pass_back=self._pass_back,
            refused=self._refused,
        )

    def _refused(self, data: Any) -> None:
        required = data.get("requiredCapabilities") if isinstance(data, dict) else None
        names = [str(name) for name in required] if isinstance(required, dict) else []
        self.missing.extend(names or ["(unnamed by the remote)"])

    def _pass_back(self, result: types.InputRequiredResult) -> types.InputRequiredResult:
        # The remote was told what the client declared; one that asks for more
        # anyway fails the call as a question of ours would (check()).
        if self.passthrough is None:
            raise AssertionError("only a passed-through round is passed back")
        for request in (result.input_requests or {}).values():
            needed = _NEEDS.get(request.method)
            if needed is not None and not self._declared(needed):
                self.missing.append(needed)
        return self.passthrough.pass_back(result)

    @property
    def asks_back(self) -> bool:
        # Every part is offered (a question beyond what was declared is the
        # client's error); what counts is what the client declared.
        return any(self._declared(name) for name in ("elicitation", "sampling", "roots"))

    def _declared(self, name: str) -> bool:
        capabilities = self.ctx.session.client_capabilities
        return capabilities is not None and getattr(capabilities, name, None) is not None

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        meta = self.ctx.params.get("_meta") if isinstance(self.ctx.params, dict) else None
        if params.level not in allowed_log_levels(self.ctx.protocol_version, meta):
            return
        await self.ctx.session.send_notification(
            types.LoggingMessageNotification(params=params),
            related_request_id=self.ctx.request_id,
        )

    async def _elicit(
        self, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        answer = await self._ask("elicitation", types.ElicitRequest(params=params))
        if isinstance(answer, types.ErrorData):
            return answer
        result = _as(types.ElicitResult, answer)
        return result if result is not None else self._unreadable("elicitation")

    async def _sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        answer = await self._ask("sampling", types.CreateMessageRequest(params=params))
        if isinstance(answer, types.ErrorData):
            return answer
        model = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        result = _as(model, answer)
        return result if result is not None else self._unreadable("sampling")

    async def _roots(self) -> types.ListRootsResult | types.ErrorData:
        answer = await self._ask("roots", types.ListRootsRequest())
        if isinstance(answer, types.ErrorData):
            return answer
        result = _as(types.ListRootsResult, answer)
        return result if result is not None else self._unreadable("roots")

    async def _ask(self, capability: str, request: types.InputRequest) -> Any:
        if not self._declared(capability) or self.call is None:
            self.missing.append(capability)
            return types.ErrorData(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"the calling client did not declare the {capability} capability",
            )
        return await self.call.ask(request)

    @staticmethod
    def _unreadable(what: str) -> types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_PARAMS,
            message=f"the calling client's answer to the {what} request is not one",
        )

    def check(self) -> None:
        """Fail the call if a question needed a capability the client did not declare."""
        if self.missing:
            raise MCPError(
                types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"this call needs the client capabilities {', '.join(sorted(set(self.missing)))}, "
                "which the request did not declare in its _meta",
                {"requiredCapabilities": {name: {} for name in sorted(set(self.missing))}},
            )


async def call_modern(
    ctx: Context,
    params: types.CallToolRequestParams,
    pending: PendingCalls,
    remote: bool,
    run: Callable[[CallerChannel], Awaitable[Step]],
    passthrough: Passthrough | None = None,
) -> Step:
    """A stateless client's ``tools/call``: run it, or its next round.

    ``run(channel)`` makes the call through the gate; ``remote`` says whether
    the tool may ask questions (a remote MCP tool), so must run as a pending
    call; ``passthrough``, this round as passed to a remote that asks itself.
    """
    token_id = ctx.lifespan_context.caller.token_id
    # How the caller's response shows it is alive while the call runs, if it must.
    keepalive: KeepAlive | None = getattr(ctx.lifespan_context, "keepalive", None)
    if is_pending_state(params.request_state):
        return await pending.resume(
            str(params.request_state),
            token_id,
            dict(params.input_responses or {}),
            on_step=lambda channel: channel.step(ctx),
            keepalive=keepalive,
        )
    channel = ModernChannel(ctx, passthrough=passthrough)
    if not remote or not channel.asks_back:
        # Nothing will be asked of the client (a native tool; a client that
        # declared nothing it could be asked, whose call fails if the remote
        # asks): the call runs in the request, as its own step.
        work = _checked(channel, run)
        if keepalive is None:
            return await work
        return await pending.beats.beating(work, keepalive.every, keepalive.beat)

    async def in_call(call: PendingCall) -> Step:
        channel.call = call
        return await _checked(channel, run)

    try:
        return await pending.start(token_id, in_call, channel, keepalive)
    except OverCapacityError as exc:
        return over_capacity_result(params.name, exc)


def over_capacity_result(tool: str, exc: OverCapacityError) -> types.CallToolResult:
    """A call refused at a limit that frees up: a tool error saying so, and when to retry."""
    return tool_error(
        f"{tool} did not run: {exc.message}.",
        {"status": "over_capacity", "retry_after_s": exc.retry_after_s, "reason": exc.message},
    )


async def _checked(channel: ModernChannel, run: Callable[[CallerChannel], Awaitable[Step]]) -> Step:
    result = await run(channel)
    channel.check()
    return result
