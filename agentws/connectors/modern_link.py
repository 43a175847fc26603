"""What a link does differently when it speaks the stateless revision (2026-07-28).

A link agrees with its remote on the newest revision both speak
(:func:`~agentws.connectors.remote_mcp.negotiate`). Over 2026-07-28 there is
no session, no server-to-client request and no GET stream, so:

- a tool call that needs the caller's input is answered ``input_required``
  (the remote's questions, under its own keys, and its ``requestState``).
  For a caller of that revision whose channel takes such rounds
  (:class:`~agentws.connectors.relay.RoundChannel`), :func:`call_over` passes
  the answer back as it is, and the caller's retry on to the remote; the
  request then declares the caller's client capabilities, not the link's
  (:class:`DeclaringStream`), so the remote asks only what the caller can
  answer. For any other caller the SDK's own driver puts each question to
  the link's callbacks (:mod:`agentws.connectors.relay`), as a request
  during the call would be, and retries until the remote has a result;
- a call the remote refuses with ``HEADER_MISMATCH`` (the tool changed since
  the link listed it, so its ``Mcp-Param`` headers are stale) is sent again
  once, after listing the tools again;
- progress and log messages come on the call's own response stream, to the
  same callbacks; log messages only for requests that opt in, which every
  call with a channel that takes them does (the channel filters);
- the remote's ``notifications/tools/list_changed`` come on a
  ``subscriptions/listen`` stream the link keeps open (:func:`keep_listening`);
  the session's message handler hears them as it does over a handshake;
- ``ping`` is gone: an idle link asks ``server/discover`` instead (:func:`check_alive`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, cast

import attrs
import mcp_types as types
import trio
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.subscriptions import SubscriptionLost, listen
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CLIENT_CAPABILITIES_META_KEY, HEADER_MISMATCH, LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentws.bridges.mcp_sdk_bridge import run_input_required_driver
from agentws.connectors.direct_call import DirectCaller
from agentws.connectors.relay import (
    CallerChannel,
    ProgressFn,
    notifications_before_result,
    remote_round_of,
)
from agentws.connectors.remote_mcp import list_all_tools
from agentws.core.backoff import Backoff

__all__ = [
    "DeclaringStream",
    "call_over",
    "check_alive",
    "in_rounds",
    "is_modern",
    "keep_listening",
]

log = logging.getLogger("agentws.connectors")

Outcome = types.CallToolResult | types.InputRequiredResult
R = TypeVar("R")
#: The requests a passed-through round declares its caller's capabilities on.
_ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})

#: The capabilities the request being sent by this task declares, when not the link's.
_DECLARED: ContextVar[dict[str, Any] | None] = ContextVar("agentws_declared", default=None)
# Back-off between listen streams of a remote that keeps ending them.
_RELISTEN = Backoff(first_s=1.0, cap_s=60.0)


def is_modern(session: ClientSession) -> bool:
    """Whether the link's session speaks a stateless revision."""
    return session.protocol_version in MODERN_PROTOCOL_VERSIONS


@attrs.define(eq=False)
class DeclaringStream:
    """The write stream of a link's session: a ``tools/call`` may declare its caller's capabilities.

    The SDK stamps every request of a stateless session with the capabilities
    the session declared (the link's: everything, since whether a question
    can be answered is the caller's to say). A call passed through for a
    caller of that revision declares the caller's instead: the remote then
    asks only what the caller can answer, as the revision expects.
    """

    inner: Any

    async def send(self, item: SessionMessage) -> None:
        declared = _DECLARED.get()
        message = item.message
        if (
            declared is not None
            and isinstance(message, types.JSONRPCRequest)
            and message.method in _ROUND_METHODS
        ):
            params = dict(message.params or {})
            params["_meta"] = {
                **(params.get("_meta") or {}),
                CLIENT_CAPABILITIES_META_KEY: declared,
            }
            item = SessionMessage(message.model_copy(update={"params": params}), item.metadata)
        await self.inner.send(item)

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> DeclaringStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextmanager
def _declaring(capabilities: dict[str, Any]) -> Iterator[None]:
    token = _DECLARED.set(capabilities)
    try:
        yield
    finally:
        _DECLARED.reset(token)


async def call_over(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    channel: CallerChannel | None,
    progress: ProgressFn | None,
    direct: DirectCaller | None = None,
) -> Outcome:
    """Call ``name`` over a stateless link, for ``channel``'s caller.

    ``direct``: the link's :class:`~agentws.connectors.direct_call.DirectCaller`,
    which sends a call's first round itself, a passed-through caller's too
    (rounds that carry answers go through the session).

    Returns:
        The remote's result; for a caller whose channel has a
        :class:`~agentws.connectors.relay.RemoteRound`, possibly its
        ``input_required`` answer, made the caller's by the round.

    Error handling:
        :class:`~mcp.shared.exceptions.MCPError` from the remote, or when a
        callback refused a question; RuntimeError from the SDK's checks of
        the result (too many rounds among them).
    """
    meta: types.RequestParamsMeta | None = None
    if channel is not None and channel.log is not None:
        # The channel filters at its caller's level. (The SDK's TypedDict has
        # room for this key, which mypy cannot see.)
        meta = cast(types.RequestParamsMeta, {LOG_LEVEL_META_KEY: "debug"})

    async def send_once(responses: types.InputResponses | None, state: str | None) -> Any:
        if direct is not None and responses is None and state is None:
            return await direct.call_tool(
                name,
                arguments,
                meta=cast(dict[str, Any] | None, meta),
                progress=progress,
                on_log=channel.log if channel is not None else None,
                declared=_DECLARED.get(),
            )
        result = await session.call_tool(
            name,
            arguments,
            progress_callback=progress,
            input_responses=responses,
            request_state=state,
            meta=meta,
            allow_input_required=True,
        )
        await notifications_before_result()
        return result

    async def send(responses: types.InputResponses | None, state: str | None) -> Outcome:
        try:
            result = await send_once(responses, state)
        except MCPError as exc:
            if exc.error.code != HEADER_MISMATCH:
                raise
            # The Mcp-Param headers come from the tool as last listed: the
            # remote changed it since. List again (the revision's recovery), once.
            await list_all_tools(session)
            result = await send_once(responses, state)
        if not isinstance(result, types.CallToolResult | types.InputRequiredResult):
            raise RuntimeError(f"a result of a kind agentws does not know: {type(result).__name__}")
        return result

    return await in_rounds(session, send, channel)


async def in_rounds(
    session: ClientSession,
    send: Callable[
        [types.InputResponses | None, str | None], Awaitable[R | types.InputRequiredResult]
    ],
    channel: CallerChannel | None,
) -> R | types.InputRequiredResult:
    """One request over a stateless link whose remote may answer ``input_required``.

    ``send(input_responses, request_state)`` sends it once. For a caller whose
    channel takes the rounds itself (a :class:`RoundChannel` with a round),
    this round is sent with the caller's answers, declaring the caller's
    capabilities, and an ``input_required`` answer goes back to it made its
    own. For any other caller, the SDK's driver puts each question to the
    link's callbacks, which find the caller in this task's context, and
    sends again until the remote has a result.

    Error handling:
        As ``send``; RuntimeError from the driver after too many rounds.
    """
    remote_round = remote_round_of(channel)
    if remote_round is not None:
        with _declaring(remote_round.capabilities):
            outcome = await send(remote_round.input_responses, remote_round.request_state)
        if isinstance(outcome, types.InputRequiredResult):
            return remote_round.pass_back(outcome)
        return outcome
    first = await send(None, None)
    if not isinstance(first, types.InputRequiredResult):
        return first

    async def dispatch(
        key: str, request: types.InputRequest
    ) -> types.InputResponse | types.ErrorData:
        # The link's callbacks, as for a request during the call: they find
        # the caller in this task's context.
        meta = request.params.meta if request.params else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        return await session.dispatch_input_request(context, request)

    result: R = await run_input_required_driver(first, dispatch=dispatch, retry=send)
    return result


async def check_alive(session: ClientSession) -> None:
    """What an idle stateless link asks its remote instead of ``ping``: ``server/discover``.

    Error handling:
        :class:`~mcp.shared.exceptions.MCPError` if the remote answers with an error.
    """
    await session.send_discover(session.protocol_version or MODERN_PROTOCOL_VERSIONS[-1])


async def keep_listening(
    connector: str, session: ClientSession, on_lost: Callable[[], None], *, ack_s: float
) -> None:
    """Keep a ``subscriptions/listen`` stream open for the list changes the remote announces.

    Those of its tools, prompts and resources lists it says change
    (``listChanged``). What arrives on it reaches the session's message
    handler. A stream that ends is opened again (with back-off) and
    ``on_lost()`` is called first: changes while none was open were not
    heard. A remote that refuses to listen, or announces no list changes, is
    not asked again on this connection. Returns only then; cancel it to stop.
    """
    capabilities = session.server_capabilities
    if capabilities is None:
        return
    tools = bool(capabilities.tools and capabilities.tools.list_changed)
    prompts = bool(capabilities.prompts and capabilities.prompts.list_changed)
    resources = bool(capabilities.resources and capabilities.resources.list_changed)
    if not (tools or prompts or resources):
        return
    lost = 0  # streams lost since one was last acknowledged
    while True:
        try:
            async with AsyncExitStack() as stack:
                with trio.fail_after(ack_s):
                    subscription = await stack.enter_async_context(
                        listen(
                            session,
                            tools_list_changed=tools,
                            prompts_list_changed=prompts,
                            resources_list_changed=resources,
                        )
                    )
                lost = 0
                async for _event in subscription:
                    pass  # the session's message handler has heard it
        except MCPError as exc:
            log.info(
                "connector %s: no subscriptions/listen (%s); list changes are not heard",
                connector,
                exc.error.message,
            )
            return
        except (SubscriptionLost, trio.TooSlowError) as exc:
            log.info("connector %s: the listen stream was lost: %s", connector, exc)
        on_lost()
        lost += 1
        await trio.sleep(_RELISTEN.delay_s(lost))
