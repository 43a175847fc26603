"""A ``tools/call`` over a stateless link, sent as one HTTP exchange of the link's own.

Over the stateless revision (2026-07-28) a call is one self-contained POST:
no session, no server-to-client request (a remote that needs input answers
``input_required``), and nothing on the response stream but progress, log
messages and the answer. The SDK's client session still runs each call
through its dispatcher, a task per POST and memory streams both ways, which
costs more CPU than the remote spends serving the call (``scripts/bench
gateway``). :class:`DirectCaller` sends the first round of a call itself,
on the link's own HTTP transport (the URL guard, the connection pool):

- the request is stamped by the link's session (protocol version, client
  info and capabilities in ``_meta``; ``Mcp-Method``, ``Mcp-Name`` and
  ``Mcp-Param-*`` headers), exactly as the SDK would send it;
- a JSON answer is read whole; an SSE answer is read event by event, its
  progress and log messages handed to the caller's channel as they come;
- answers are bounded in size by the link's transport, a result's lists
  in length (:mod:`agentws.connectors.answer_bounds`), before the result
  is checked as the SDK checks it (the revision's result schema, through
  the session; the tool's output schema is the tool runner's to check);
- HTTP and JSON-RPC errors become the :class:`MCPError` the SDK would raise.

A first round passed through for a caller of the stateless revision goes
this way too, declaring that caller's capabilities instead of the link's
(as the session does for it); later rounds of an ``input_required``
exchange go through the SDK's session (:mod:`agentws.connectors.modern_link`).
Where the session lacks what the stamp and the checks need (another SDK
release), the link uses the SDK for every call
(:meth:`DirectCaller.for_session`). The stamp and the result parser are
the session's private parts, reached through
:mod:`agentws.bridges.mcp_sdk_bridge`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any, cast

import attrs
import httpx2
import mcp_types as types
import trio
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types import methods as mcp_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentws.bridges.mcp_sdk_bridge import can_stamp_requests, parse_call_tool_result, stamp_request
from agentws.connectors.answer_bounds import ANSWER_REFUSED, too_many_items
from agentws.connectors.relay import LogFn, ProgressFn

__all__ = ["DirectCaller"]

log = logging.getLogger("agentws.connectors")

Outcome = types.CallToolResult | types.InputRequiredResult

# Request ids of direct calls: each call is its own exchange, so they need
# only differ from each other; far from the session's own ids, for logs.
_IDS = itertools.count(1 << 40)
_ACCEPT = "application/json, text/event-stream"
# Bound on closing an answer, cancelled or not.
_CLOSE_S = 5.0
# An answer this large is parsed and checked on a worker thread: parsing and
# checking the largest one a remote may send (AGENTWS_TOOL_MAX_RESULT_BYTES)
# holds the loop for most of a tenth of a second.
_OFF_LOOP_BYTES = 64 * 1024


@attrs.frozen
class DirectCaller:
    """Sends a stateless link's calls on its transport; see the module docstring.

    Args:
        session: the link's session, which stamps requests and checks results.
        url: the remote's MCP endpoint.
        headers: the connector's headers (its credential among them).
        transport: the link's transport (URL guard and pool).
        timeout_s: connect, write and pool timeout; reading is bounded by
            the call's own deadline.
    """

    session: ClientSession
    #: Parsed once: every call's request is made for it.
    url: httpx2.URL = attrs.field(converter=httpx2.URL)
    headers: dict[str, str]
    transport: httpx2.AsyncBaseTransport
    timeout_s: float
    #: How requests are authenticated upstream (an OAuth connector's), as the link's client does.
    auth: httpx2.Auth | None = None

    @classmethod
    def for_session(
        cls,
        session: ClientSession,
        url: str,
        headers: dict[str, str],
        transport: httpx2.AsyncBaseTransport,
        timeout_s: float,
        auth: httpx2.Auth | None = None,
    ) -> DirectCaller | None:
        """A caller for ``session``'s link, or None when its calls must go through the SDK.

        That is when it does not speak a stateless revision, or its session
        lacks the request stamp and result checks this module relies on.
        """
        if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        if not can_stamp_requests(session):
            log.info("this mcp release has no request stamp: calls go through its session")
            return None
        return cls(session, url, dict(headers), transport, timeout_s, auth)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        meta: dict[str, Any] | None,
        progress: ProgressFn | None,
        on_log: LogFn | None,
        declared: dict[str, Any] | None = None,
    ) -> Outcome:
        """Call the remote's tool ``name`` once; its result, or ``input_required``.

        ``declared``: the capabilities of the caller the call is passed through
        for (a caller of the stateless revision), declared instead of the link's.

        Error handling:
            :class:`MCPError` for the remote's JSON-RPC error, an HTTP error
            answer or a stream that ended without an answer, and
            ``CONNECTION_CLOSED`` when the exchange failed; RuntimeError
            for a result that breaks the tool's output schema (as the SDK).
        """
        request_id = next(_IDS)
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        request_meta = dict(meta or {})
        if progress is not None:
            # As the SDK does: the request id is the progress token.
            request_meta["progressToken"] = request_id
        if request_meta:
            params["_meta"] = request_meta
        data: dict[str, Any] = {"method": "tools/call", "params": params}
        # The session's own stamp (a private method: see for_session).
        options: CallOptions = {}
        stamp_request(self.session, data, options)
        if declared is not None:
            # As the link's session writes a passed-through call (modern_link's DeclaringStream).
            stamped = data["params"]
            stamped["_meta"] = {**stamped.get("_meta", {}), CLIENT_CAPABILITIES_META_KEY: declared}
        headers = {
            **self.headers,
            **options.get("headers", {}),
            "content-type": "application/json",
            "accept": _ACCEPT,
        }
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, **data}).encode()
        timeout = {"connect": self.timeout_s, "write": self.timeout_s, "pool": self.timeout_s}
        request = httpx2.Request(
            "POST", self.url, headers=headers, content=body, extensions={"timeout": timeout}
        )
        try:
            response = await self._send(request)
            try:
                answer, size = await self._answer(response, request_id, progress, on_log)
            finally:
                # Closed even when the call is cancelled (its connection then
                # closes, which tells the remote); closing does not wait on it.
                with trio.move_on_after(_CLOSE_S, shield=True):
                    await response.aclose()
        except httpx2.TransportError as exc:
            # What the SDK's session makes of a failed exchange: the link is
            # lost (it connects again; a read call goes once more).
            raise MCPError(types.CONNECTION_CLOSED, f"Connection closed: {exc}") from None
        if "error" in answer:
            raise MCPError.from_error_data(types.ErrorData.model_validate(answer["error"]))
        raw = answer.get("result")
        if not isinstance(raw, dict):
            raise MCPError(types.INVALID_REQUEST, "the remote answered without a result")
        return await self._checked(name, raw, large=size > _OFF_LOOP_BYTES)

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        """``request`` sent on the transport, authenticated as the link's client would:
        the auth flow's own requests (a refresh, a retry after a 401) sent as it asks,
        their answers read and closed; the last answer, unread."""
        if self.auth is None:
            response = await self.transport.handle_async_request(request)
            response.request = request
            return response
        flow = self.auth.async_auth_flow(request)
        outgoing = await flow.__anext__()
        while True:
            response = await self.transport.handle_async_request(outgoing)
            response.request = outgoing
            try:
                if self.auth.requires_response_body:
                    await response.aread()
                outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return response
            except BaseException:
                with trio.move_on_after(_CLOSE_S, shield=True):
                    await response.aclose()
                raise
            await response.aread()
            await response.aclose()

    async def _answer(
        self,
        response: httpx2.Response,
        request_id: int,
        progress: ProgressFn | None,
        on_log: LogFn | None,
    ) -> tuple[dict[str, Any], int]:
        """The JSON-RPC answer to ``request_id`` in ``response``, read as the SDK reads
        it, and its size in bytes (characters, of an event)."""
        status = response.status_code
        content_type = response.headers.get("content-type", "").lower()
        if status >= 400 or status == 202:
            if status >= 400 and content_type.startswith("application/json"):
                body = await response.aread()
                message = await _parsed(body)
                if isinstance(message, dict) and isinstance(message.get("error"), dict):
                    return message, len(body)
            if status == 404:
                raise MCPError(types.METHOD_NOT_FOUND, "Not Found")
            if status == 202:
                raise MCPError(types.INVALID_REQUEST, "server answered a request with 202 Accepted")
            raise MCPError(types.INTERNAL_ERROR, "Server returned an error response")
        if content_type.startswith("application/json"):
            body = await _body(response)
            message = await _parsed(body)
            if not isinstance(message, dict):
                raise MCPError(types.PARSE_ERROR, "the remote's answer is not a JSON-RPC message")
            return message, len(body)
        if not content_type.startswith("text/event-stream"):
            raise MCPError(types.INVALID_REQUEST, f"Unexpected content type: {content_type}")
        # Closed explicitly: the answer returns from inside the loop.
        events = cast(AsyncGenerator[Any, None], httpx2.EventSource(response).__aiter__())
        async with contextlib.aclosing(events):
            async for event in events:
                if event.event != "message" or not event.data:
                    continue  # a priming event (an id, no data), or another kind
                message = await _parsed(event.data)
                if not isinstance(message, dict):
                    raise MCPError(types.PARSE_ERROR, "an event of the call's stream is not JSON")
                if message.get("id") == request_id and ("result" in message or "error" in message):
                    return message, len(event.data)
                await _notify(message, request_id, progress, on_log)
        raise MCPError(types.CONNECTION_CLOSED, "the remote ended the call's stream unanswered")

    async def _checked(self, name: str, raw: dict[str, Any], *, large: bool) -> Outcome:
        """``raw`` checked and parsed as the session checks a ``tools/call`` result
        (on a worker thread if its answer was ``large``)."""
        problem = too_many_items(raw)
        if problem is not None:
            # Before the result is validated: each item costs the loop.
            raise MCPError(ANSWER_REFUSED, problem)
        if large:
            return await trio.to_thread.run_sync(self._check, raw)
        return self._check(raw)

    def _check(self, raw: dict[str, Any]) -> Outcome:
        session = self.session
        version = session.protocol_version or ""
        with contextlib.suppress(KeyError):  # a revision with no schema for it
            mcp_methods.validate_server_result("tools/call", version, raw)
        return parse_call_tool_result(session, raw)


async def _notify(
    message: dict[str, Any],
    request_id: int,
    progress: ProgressFn | None,
    on_log: LogFn | None,
) -> None:
    """Hand a notification on the call's stream to the caller's channel."""
    method = message.get("method")
    params = message.get("params")
    if not isinstance(params, dict):
        return
    if method == "notifications/progress" and progress is not None:
        if params.get("progressToken") != request_id:
            return
        parsed = types.ProgressNotificationParams.model_validate(params, by_name=False)
        await progress(parsed.progress, parsed.total, parsed.message)
    elif method == "notifications/message" and on_log is not None:
        await on_log(types.LoggingMessageNotificationParams.model_validate(params, by_name=False))
    else:
        log.debug("a remote sent %r on a call's stream; not passed on", method)


async def _body(response: httpx2.Response) -> bytes:
    """The whole body of an answer, read off its stream (still bounded by the link's cap).

    httpx2's ``aread`` passes each piece through a decoder and a chunker even
    when the body is not encoded, on the path of every call; an encoded one
    (which agentws does not ask for), or one read already (by an auth flow),
    is read that way.
    """
    if response.is_stream_consumed or "content-encoding" in response.headers:
        return await response.aread()
    response.is_stream_consumed = True
    stream = cast(httpx2.AsyncByteStream, response.stream)
    return b"".join([piece async for piece in stream])


async def _parsed(body: bytes | str) -> Any:
    """``body`` parsed; a large one on a worker thread."""
    if len(body) > _OFF_LOOP_BYTES:
        return await trio.to_thread.run_sync(_json, body)
    return _json(body)


def _json(body: bytes | str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise MCPError(types.PARSE_ERROR, "the remote's answer is not JSON") from None
