"""What a remote MCP server sends during a tool call, passed on to the caller who made it.

A link's session with a remote is shared by every caller in the process,
but what the remote sends while it runs a call (progress, log messages,
``elicitation/create``, ``sampling/createMessage`` and ``roots/list``
requests) belongs to
one caller. The caller hands the call a :class:`CallerChannel` (its door
implements it); whatever the channel lacks is not relayed.

Which call a message belongs to:

- progress carries the token agentws put on the remote request (the SDK's
  ``progress_callback``: the request id on the link), so it is matched exactly;
- the SDK's Streamable HTTP client sends each request from a task that has
  the context variables of the task that sent it, and hands what arrives on
  that request's response stream to the session with them; the session runs
  its callbacks in them. :func:`calling` sets the caller's channel in a
  context variable around the call, and the link's callbacks
  (:class:`RemoteRelay`) read it there;
- legacy HTTP+SSE has one stream for everything, and a Streamable HTTP
  server may send on its standalone stream what names no request: such a
  message is the sole call in flight's, and nobody's when several are in flight.

A request for nobody, or for a caller that cannot answer it, gets a JSON-RPC
error saying so; a log message for nobody is logged here at debug level.

Over a link of the stateless revision (2026-07-28) the remote asks with an
``input_required`` result instead of requests; the link answers it through
the same callbacks (:mod:`agentws.connectors.modern_link`), unless the
caller speaks that revision too and its channel is a :class:`RoundChannel`:
then the remote's questions go back to it as they are (:class:`RemoteRound`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, runtime_checkable

import attrs
import mcp_types as types
import trio
from mcp.client.session import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT

__all__ = [
    "CallerChannel",
    "ElicitFn",
    "LogFn",
    "ProgressFn",
    "RemoteRelay",
    "RemoteRound",
    "RootsFn",
    "RoundChannel",
    "SampleFn",
    "SampleResult",
    "calling",
    "notifications_before_result",
    "remote_round_of",
]

log = logging.getLogger("agentws.connectors")

# Scheduler turns a relayed notification's callback takes to reach its caller's
# stream (a turn to start, one for the anyio stream's checkpoint before a send).
_NOTIFICATION_TURNS = 3

#: ``progress(progress, total, message)``.
ProgressFn = ProgressFnT
LogFn = Callable[[types.LoggingMessageNotificationParams], Awaitable[None]]
ElicitFn = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]
SampleResult = types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData
SampleFn = Callable[[types.CreateMessageRequestParams], Awaitable[SampleResult]]
RootsFn = Callable[[], Awaitable[types.ListRootsResult | types.ErrorData]]


class CallerChannel(Protocol):
    """How a tool call reaches back to its caller while it runs; None: not for this caller.

    ``elicit`` and ``sample`` answer with the caller's result, or an
    ``ErrorData`` the remote is given as the JSON-RPC error.
    """

    @property
    def progress(self) -> ProgressFn | None: ...

    @property
    def log(self) -> LogFn | None: ...

    @property
    def elicit(self) -> ElicitFn | None: ...

    @property
    def sample(self) -> SampleFn | None: ...

    @property
    def roots(self) -> RootsFn | None: ...

    @property
    def asks_back(self) -> bool:
        """Whether the caller declared what a remote may ask it mid-call (elicitation,
        sampling, roots): a remote of both eras is then reached over a handshake link,
        the one kind on which it can ask (:mod:`agentws.connectors.links`)."""
        ...


@attrs.frozen
class RemoteRound:
    """One round of a stateless caller's call, passed through to a remote of its revision.

    The remote's ``input_required`` answer goes back to the caller with the
    remote's own questions and keys; only its ``requestState`` is the door's
    (:attr:`pass_back` wraps it), so the caller's retry can be checked and
    unwrapped into this round's :attr:`request_state`.
    """

    #: The caller's answers to the remote's questions, by the remote's keys.
    input_responses: types.InputResponses | None
    #: The remote's own ``requestState`` for this round; None on a first call.
    request_state: str | None
    #: The client capabilities the caller declared (wire form): what the remote may ask.
    capabilities: dict[str, Any]
    #: Makes the remote's ``input_required`` answer the caller's.
    pass_back: Callable[[types.InputRequiredResult], types.InputRequiredResult]
    #: Told the remote refused the round for capabilities the caller did not
    #: declare (its ``MissingRequiredClientCapability`` error's data): the
    #: caller gets that error, not a tool result.
    refused: Callable[[Any], None]


@runtime_checkable
class RoundChannel(CallerChannel, Protocol):
    """A channel whose caller takes a remote's ``input_required`` answers itself."""

    @property
    def remote_round(self) -> RemoteRound | None: ...


def remote_round_of(channel: CallerChannel | None) -> RemoteRound | None:
    """The round a :class:`RoundChannel` passes through; None for any other channel.

    Read by attribute: ``isinstance`` against a runtime-checkable protocol
    looks up each of its members on every call, on the path of every relayed call.
    """
    round_: RemoteRound | None = getattr(channel, "remote_round", None)
    return round_


T = TypeVar("T")

_CALLER: ContextVar[CallerChannel | None] = ContextVar("agentws_remote_caller", default=None)


@contextmanager
def calling(in_flight: list[CallerChannel], channel: CallerChannel | None) -> Iterator[None]:
    """Within the block, what the remote sends for this task's requests goes to ``channel``.

    ``in_flight`` is the link's list of the channels of calls in flight.
    """
    if channel is None:
        yield
        return
    token = _CALLER.set(channel)
    in_flight.append(channel)
    try:
        yield
    finally:
        in_flight.remove(channel)
        _CALLER.reset(token)


@attrs.frozen
class RemoteRelay:
    """The callbacks of one link session: route the remote's messages to their caller.

    Args:
        connector: the connector's name, for messages.
        in_flight: the channels of the link's calls in flight.
        answer_s: how long a caller may take to answer the remote's request.
    """

    connector: str
    in_flight: list[CallerChannel]
    answer_s: float

    def session_callbacks(self) -> dict[str, Any]:
        """Keyword arguments for the link's ``ClientSession``.

        With these, the link declares sampling and elicitation to the remote:
        whether a request can be answered is the calling client's to say.
        """
        return {
            "logging_callback": self._on_log,
            "elicitation_callback": self._on_elicit,
            "sampling_callback": self._on_sample,
            "list_roots_callback": self._on_roots,
        }

    def _caller(self) -> CallerChannel | None:
        channel = _CALLER.get()
        if channel is None and len(self.in_flight) == 1:
            # Sent on a stream of no request (legacy SSE's only one, Streamable
            # HTTP's standalone GET stream, where servers that name no related
            # request send): the sole call in flight is the one it is about.
            channel = self.in_flight[0]
        return channel

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        channel = self._caller()
        if channel is None or channel.log is None:
            log.debug("connector %s logged (%s): %r", self.connector, params.level, params.data)
            return
        await channel.log(params)

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        channel = self._caller()
        if channel is None or channel.elicit is None:
            return self._refused("elicitation", channel)
        return await self._answer(channel.elicit(params), "elicitation")

    async def _on_sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> SampleResult:
        channel = self._caller()
        if channel is None or channel.sample is None:
            return self._refused("sampling", channel)
        return await self._answer(channel.sample(params), "sampling")

    async def _on_roots(
        self, context: ClientRequestContext
    ) -> types.ListRootsResult | types.ErrorData:
        channel = self._caller()
        if channel is None or channel.roots is None:
            return self._refused("roots", channel)
        return await self._answer(channel.roots(), "roots")

    async def _answer(self, asked: Awaitable[T], what: str) -> T | types.ErrorData:
        with trio.move_on_after(self.answer_s):
            return await asked
        return types.ErrorData(
            code=types.INTERNAL_ERROR,
            message=f"the calling client did not answer the {what} request "
            f"within {self.answer_s:g} s",
        )

    def _refused(self, what: str, channel: CallerChannel | None) -> types.ErrorData:
        if channel is None:
            why = "it was not sent during a tool call agentws can tell"
        else:
            why = f"the calling client does not support {what}"
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"agentws cannot pass this {what} request on: {why}",
        )


async def notifications_before_result() -> None:
    """Let the remote's progress and log messages of a call reach its caller before the result.

    The SDK's client runs each notification's callback in a task of its own,
    started as the notification arrives, before the response; the response
    wakes the calling task in the same turn of the scheduler, in no set
    order (trio shuffles them on purpose). Without a turn or two more, the
    result could be written to the caller first, and the messages sent before
    it would then find their stream closed.
    """
    for _ in range(_NOTIFICATION_TURNS):
        await trio.lowlevel.checkpoint()
