"""Plain-ASGI plumbing the doors share: types, headers, refusals (with the
common error body, :func:`agentws.core.errors.error_body`), JSON answers and a
bounded body reader.

The MCP door, the webhook door and the request-id middleware sit in front of
Quart as plain ASGI handlers (see docs/architecture.md); what they have in
common lives here, once. Nothing here knows about a door's rules.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

import attrs
import trio

from agentws.core.errors import error_body

__all__ = [
    "ASGIApp",
    "BodyReader",
    "BodyRefusals",
    "HttpRefusal",
    "Receive",
    "Scope",
    "Send",
    "base_url_of",
    "header",
    "late_body",
    "replaying",
    "respond",
    "respond_json",
]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON = (b"content-type", b"application/json")


class HttpRefusal(Exception):
    """A request refused with an HTTP status and the common error body."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        self.headers: list[tuple[str, str]] = list(pairs)

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message)


def late_body(
    timeout_s: float, *, what: str = "the body", headers: Iterable[tuple[str, str]] = ()
) -> HttpRefusal:
    """408 ``body_read_timeout``: ``what`` did not all arrive within ``timeout_s``.

    Every door words it so (the app's Quart pages too), naming what it reads
    (a body, a request body, a message).
    """
    return HttpRefusal(
        408,
        "body_read_timeout",
        f"{what} did not all arrive within {timeout_s:g} s; send it again, "
        "whole and without pauses",
        headers,
    )


def replaying(first: dict[str, Any], receive: Receive) -> Receive:
    """``receive``, with ``first`` (a message read already) given again before the rest.

    For a door that read a request's body (or its first message) to check it,
    then hands the request on to an app that reads it itself.
    """
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return first
        return await receive()

    return replay


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case) in ``scope``, or None."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class _BaseUrlSetting(Protocol):
    @property
    def base_url(self) -> str | None: ...


def base_url_of(settings: _BaseUrlSetting, scope: Scope) -> str:
    """The service's base URL as this request sees it (``AGENTWS_BASE_URL`` first)."""
    if settings.base_url:
        return settings.base_url.rstrip("/")
    host = header(scope, b"host") or f"{scope['server'][0]}:{scope['server'][1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def encode_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def respond(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]]
) -> None:
    """Send a whole response: ``headers`` as given, plus its ``content-length``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def respond_json(
    send: Send,
    status: int,
    document: Any,
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    """Send ``document`` as a JSON response (an already encoded ``bytes`` goes as is)."""
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    await respond(send, status, body, [_JSON, *encode_headers(headers)])


@attrs.frozen
class BodyRefusals:
    """How a door words its refusals of a body; built once per door, each
    refusal made only when a body is refused."""

    #: The body is over ``limit`` bytes.
    too_large: Callable[[int], HttpRefusal]
    #: The body did not all arrive within ``timeout_s``.
    late: Callable[[float], HttpRefusal]
    #: The client went away before the body ended. Made when raised, as the
    #: others: a refusal raised holds its request's frames (its traceback).
    gone: Callable[[], HttpRefusal]


@attrs.define(eq=False)
class BodyReader:
    """Reads a request body up to a limit, within one deadline for the whole of it.

    One deadline for the whole body, not one per chunk: a deadline that each
    chunk renews lets a client sending a byte now and then hold the connection
    (and a task) for as long as it likes, which is the attack. Hypercorn's own
    timers do not help here: its keep-alive timer stops once the headers are
    in, and a read timeout would cut the idle SSE streams the doors keep open.
    """

    receive: Receive
    #: The whole body must be there this long after reading starts.
    timeout_s: float
    #: Whether the body was read to its end (or the client left): if not, the
    #: connection cannot carry another request.
    complete: bool = False

    _chunks: list[bytes] = attrs.field(factory=list, init=False)
    _size: int = attrs.field(default=0, init=False)

    @property
    def received(self) -> int:
        """Bytes of the body received so far."""
        return self._size

    async def read(self, length: str | None, limit: int, refusals: BodyRefusals) -> bytes:
        """The body, or a refusal: over ``limit`` bytes (or a ``Content-Length``
        announcing more), past the deadline, or the client left."""
        if length is not None and length.strip().isdigit() and int(length) > limit:
            raise refusals.too_large(limit)
        # What has arrived already is taken without a deadline (there is
        # nothing to wait for): a small body comes with its headers, and a
        # cancel scope would cost more than the rest of reading it.
        receive_nowait = _nowait(self.receive)
        if receive_nowait is not None:
            try:
                while True:
                    body = self._take(receive_nowait(), limit, refusals)
                    if body is not None:
                        return body
            except trio.WouldBlock:
                pass
        with trio.move_on_after(self.timeout_s):
            while True:
                body = self._take(await self.receive(), limit, refusals)
                if body is not None:
                    return body
        raise refusals.late(self.timeout_s)

    async def _answer_dropping_rest(self, answer: Callable[[], Awaitable[None]]) -> None:
        """Send ``answer()`` for a request whose body is still coming, dropping the rest.

        The server hands the body over through a small queue: while nobody
        reads it, a full queue stalls the connection (and the server cannot
        even tell the app the client left). So the rest is read and dropped
        while the answer goes out; the answer must say the connection closes
        (``Connection: close``), so the upload stops there.
        """

        async def discard() -> None:
            while (await self.receive())["type"] != "http.disconnect":
                pass

        async with trio.open_nursery() as nursery:
            nursery.start_soon(discard)
            await answer()
            nursery.cancel_scope.cancel()

    def answering(self, scope: Scope, send: Send) -> Send:
        """``send``, for a door that may answer before it has read the body.

        An answer that starts while the body is still coming says
        ``Connection: close`` and is ended while the rest is read and dropped
        (:meth:`_answer_dropping_rest`). Without that, a client uploading more
        than the server's queue holds stalls: the server ends a request by
        putting ``http.disconnect`` into that queue, full of body nobody
        reads, so neither the end of the answer nor the connection's close
        comes, and the client writes on until its own timeout. A body all
        there already is dropped at once, and the connection kept.
        """
        dropping = False

        async def send_answer(message: dict[str, Any]) -> None:
            nonlocal dropping
            if message["type"] == "http.response.start" and self._still_coming(scope):
                dropping = True
                message = {**message, "headers": _closing(message.get("headers", ()))}
            elif (
                dropping
                and message["type"] == "http.response.body"
                and not message.get("more_body", False)
            ):
                await self._answer_dropping_rest(lambda: send(message))
                return
            await send(message)

        return send_answer

    def _still_coming(self, scope: Scope) -> bool:
        """Whether the request has a body not all received; what did arrive is dropped."""
        if self.complete or not _has_body(scope):
            return False
        receive_nowait = _nowait(self.receive)
        if receive_nowait is None:
            return True
        try:
            while True:
                message = receive_nowait()
                if message["type"] == "http.disconnect" or not message.get("more_body", False):
                    self.complete = True
                    return False
        except trio.WouldBlock:
            return True

    def _take(self, message: dict[str, Any], limit: int, refusals: BodyRefusals) -> bytes | None:
        """Add ``message`` to the body; the whole body once it has ended."""
        if message["type"] == "http.disconnect":
            self.complete = True
            raise refusals.gone()
        chunk = message.get("body", b"")
        self._size += len(chunk)
        if self._size > limit:
            raise refusals.too_large(limit)
        self._chunks.append(chunk)
        if message.get("more_body", False):
            return None
        self.complete = True
        return b"".join(self._chunks)


def _has_body(scope: Scope) -> bool:
    """Whether the request's headers announce a body (chunked, or a non-zero length)."""
    length = header(scope, b"content-length")
    if length is not None:
        return not length.strip().isdigit() or int(length) > 0
    return header(scope, b"transfer-encoding") is not None


def _closing(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` saying ``Connection: close`` (instead of any other ``Connection``)."""
    return [*(h for h in headers if h[0].lower() != b"connection"), (b"connection", b"close")]


def _nowait(receive: Receive) -> Callable[[], dict[str, Any]] | None:
    """A ``receive`` that raises :class:`trio.WouldBlock` instead of waiting, if the server has one.

    Hypercorn's trio worker hands the app the ``receive`` of a memory channel
    into which it puts the body as it reads it off the connection; anything
    else (another server, a wrapper) is read by waiting.
    """
    channel = getattr(receive, "__self__", None)
    if isinstance(channel, trio.MemoryReceiveChannel) and receive == channel.receive:
        nowait: Callable[[], dict[str, Any]] = channel.receive_nowait
        return nowait
    return None
