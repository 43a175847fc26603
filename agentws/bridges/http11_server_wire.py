"""HTTP/1.1 on the wire for the service's own connections: requests read, answers framed.

Hypercorn reads and writes HTTP/1.1 with ``h11``, which parses in Python:
about 70 µs of a request's cycle on this project's machine, a twentieth of
what a proxied call costs the service (``scripts/bench gateway``). Here a
request is read by ``httptools`` (llhttp, the parser of Node.js and of
uvicorn) and an answer framed as ``h11`` frames one, for
:class:`agentws.bridges.hypercorn_bridge.HttpToolsProtocol`:

- :class:`RequestReader` is one connection's reading side. Fed what the
  client sends, it gives events in order: a request's head
  (:class:`RequestHead`), the pieces of its body (:class:`BodyPiece`), its
  end (:class:`MessageEnd`), or why the input cannot be read
  (:class:`ReadFailure`, with the status to answer). Besides what llhttp
  refuses (a bad request line, a bad header, both a length and
  ``chunked``), it refuses what ``h11`` refuses: a head larger than its
  bound (431), an HTTP/1.1 request without exactly one ``Host`` (400), a
  ``Transfer-Encoding`` other than ``chunked`` (501).
- :class:`AnswerFraming` writes one answer's head and frames its body as
  ``h11`` does for the request it answers: by its ``Content-Length``,
  ``chunked`` when it gives none to an HTTP/1.1 client, by the connection's
  close to an HTTP/1.0 one; no body for ``HEAD``, 204 or 304; ``Connection:
  close`` when the connection will not be kept. Its header names must be
  tokens and its values free of control characters, as ``h11`` checks.

A connection is kept alive as ``h11`` keeps one: an HTTP/1.1 request and
answer, neither asking to close.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import httptools

__all__ = [
    "H2_PREFACE",
    "AnswerFraming",
    "BodyPiece",
    "FramingError",
    "MessageEnd",
    "ReadFailure",
    "RequestHead",
    "RequestReader",
    "informational",
]

#: What a client speaking HTTP/2 with prior knowledge sends first.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# RFC 9110's token (header names); h11's field value.
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_VALUE = re.compile(rb"(?:[\x21-\x7e\x80-\xff](?:[ \t\x21-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?")
_DIGITS = re.compile(rb"[0-9]{1,18}")
_LAST_CHUNK = b"0\r\n\r\n"
# Per header on the wire beyond its name and value: ": " and CRLF.
_HEADER_OVERHEAD = 4


class FramingError(ValueError):
    """An answer that cannot be written as given (a bad header, a body off its length)."""


class RequestHead:
    """A request's line and headers (names lowercased, values stripped, as ``h11`` gives them)."""

    __slots__ = (
        "expects_continue",
        "headers",
        "http_version",
        "keep_alive",
        "method",
        "target",
        "trailing",
        "upgrade",
    )

    def __init__(
        self,
        method: bytes,
        target: bytes,
        http_version: str,
        headers: list[tuple[bytes, bytes]],
    ) -> None:
        self.method = method
        self.target = target
        self.http_version = http_version
        self.headers = headers
        close = False
        self.expects_continue = False
        for name, value in headers:
            if name == b"connection":
                close = close or any(t.strip() == b"close" for t in value.lower().split(b","))
            elif name == b"expect" and http_version == "1.1":
                self.expects_continue = value.lower() == b"100-continue"
        self.keep_alive = http_version == "1.1" and not close
        #: The protocol the client asks to switch to (its ``Upgrade``), once llhttp saw it.
        self.upgrade: bytes | None = None
        #: What followed the head of a request that switches protocol.
        self.trailing = b""


class BodyPiece:
    """A piece of the current request's body."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class MessageEnd:
    """The current request's body is whole."""

    __slots__ = ()


class ReadFailure:
    """The input cannot be read further; ``status`` is what to answer if nothing was yet."""

    __slots__ = ("in_head", "status")

    def __init__(self, status: int, *, in_head: bool) -> None:
        self.status = status
        #: Whether it came before a request's head was whole (a new request's).
        self.in_head = in_head


Event = RequestHead | BodyPiece | MessageEnd | ReadFailure

_MESSAGE_END = MessageEnd()


class RequestReader:
    """One connection's reading side (see the module docstring)."""

    __slots__ = ("_parser", "_reading")

    def __init__(self, *, max_head_bytes: int) -> None:
        # The parser holds its callbacks' object; that object holds the parser
        # only while it parses, so a connection's reader is freed as it ends,
        # without the cycle collector (ten thousand streams may end at once).
        self._reading = _Reading(max_head_bytes)
        self._parser = httptools.HttpRequestParser(self._reading)

    @property
    def failed(self) -> bool:
        """Whether the input broke HTTP/1.1 (nothing more is read)."""
        return self._reading.failed

    def feed(self, data: bytes) -> None:
        """Read ``data``, the next bytes the client sent; its events queue up."""
        self._reading.feed(self._parser, data)

    def feed_eof(self) -> None:
        """The client's side ended; a request cut short fails."""
        self._reading.feed_eof()

    def next_event(self) -> Event | None:
        """The next event read, or None when more input is needed."""
        reading = self._reading
        events, index = reading.events, reading.next
        if index < len(events):
            reading.next = index + 1
            return events[index]
        if events:
            events.clear()
            reading.next = 0
        return None


class _Reading:
    """What llhttp calls back as it parses, and the events it makes of it."""

    # A connection holds one for its life: kept small (no __dict__, a list not a deque).
    __slots__ = (
        "_current",
        "_failed",
        "_head_bytes",
        "_headers",
        "_in_head",
        "_max_head",
        "_url",
        "events",
        "next",
        "parser",
    )

    def __init__(self, max_head_bytes: int) -> None:
        self._max_head = max_head_bytes
        self.parser: httptools.HttpRequestParser | None = None
        #: Events read and not yet taken, from ``next`` on.
        self.events: list[Event] = []
        self.next = 0
        self._failed = False
        self._in_head = True  # between messages counts: the next byte starts a head
        self._head_bytes = 0
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._current: RequestHead | None = None

    @property
    def failed(self) -> bool:
        return self._failed

    @property
    def mid_message(self) -> bool:
        return not self._in_head or self._head_bytes > 0

    def feed(self, parser: httptools.HttpRequestParser, data: bytes) -> None:
        if self._failed:
            return
        if self._in_head:
            self._head_bytes += len(data)
        self.parser = parser
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade as switch:
            self._switched(data, switch)
            return
        except httptools.HttpParserError:
            self._fail(400)
            return
        finally:
            self.parser = None
        if self._in_head and self._head_bytes > self._max_head:
            self._fail(431)  # a head still arriving, already too large

    def feed_eof(self) -> None:
        if not self._failed and self.mid_message:
            self._fail(400)  # a request cut short

    # llhttp's callbacks, called from feed_data.

    def on_message_begin(self) -> None:
        self._in_head = True
        self._url = b""
        self._headers = []
        self._current = None

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value.rstrip(b" \t")))

    def on_headers_complete(self) -> None:
        if self._failed:
            return
        size = len(self._url) + sum(len(n) + len(v) + _HEADER_OVERHEAD for n, v in self._headers)
        if size > self._max_head:
            return self._fail(431)
        parser = self.parser
        if parser is None:
            return  # called back only while parsing
        version = parser.get_http_version()
        if version not in ("1.1", "1.0"):
            return self._fail(505)
        hosts = sum(1 for name, _ in self._headers if name == b"host")
        if hosts > 1 or (hosts == 0 and version == "1.1"):
            return self._fail(400)  # exactly one Host, as h11 asks
        for name, value in self._headers:
            if name == b"transfer-encoding" and value.lower() != b"chunked":
                return self._fail(501)  # only chunked is implemented, as in h11
        method = parser.get_method()
        head = RequestHead(method, self._url, version, self._headers)
        self._current = head
        self.events.append(head)
        self._in_head = False
        self._head_bytes = 0

    def on_body(self, body: bytes) -> None:
        if not self._failed:
            self.events.append(BodyPiece(body))

    def on_message_complete(self) -> None:
        if not self._failed:
            self.events.append(_MESSAGE_END)
            self._in_head = True
            self._head_bytes = 0

    def _fail(self, status: int) -> None:
        if not self._failed:
            self._failed = True
            self.events.append(ReadFailure(status, in_head=self._in_head))

    def _switched(self, data: bytes, switch: httptools.HttpParserUpgrade) -> None:
        """A request switching protocol (``Upgrade``, ``CONNECT``): no HTTP/1.1 after it."""
        head = self._current
        if head is None or self._failed:
            self._fail(400)
            return
        offset = switch.args[0] if switch.args and isinstance(switch.args[0], int) else len(data)
        head.upgrade = next((v.lower() for n, v in head.headers if n == b"upgrade"), b"")
        head.trailing = data[offset:]
        head.keep_alive = False
        self._failed = True  # reads nothing more: the connection closes after the answer


class AnswerFraming:
    """One answer's head and body, framed for its request (see the module docstring)."""

    __slots__ = ("_bodyless", "_chunked", "_http11", "_left", "keep_alive")

    def __init__(self, request: RequestHead | None) -> None:
        self._bodyless = request is not None and request.method == b"HEAD"
        #: Whether the connection may serve another request after this answer.
        self.keep_alive = request is not None and request.keep_alive
        self._http11 = request is None or request.http_version == "1.1"
        self._chunked = False
        self._left: int | None = None

    def head(self, status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
        """The status line and headers of the answer (``status`` 200 or more)."""
        length: bytes | None = None
        chunked = False
        close = False
        lines = [b"HTTP/1.1 %d \r\n" % status]  # no reason phrase, as h11 writes it
        for name, value in headers:
            _check(name, value)
            lowered = name.lower()
            if lowered == b"content-length":
                if not _DIGITS.fullmatch(value) or (length is not None and value != length):
                    raise FramingError(f"a bad Content-Length: {value!r}")
                length = value
                continue  # written below, once for repeats of one length (as h11 does)
            elif lowered == b"transfer-encoding":
                if value.lower() != b"chunked":
                    raise FramingError("only Transfer-Encoding: chunked can be written")
                chunked = True
                continue  # written below, once the framing is chosen
            elif lowered == b"connection":
                tokens = [t.strip() for t in value.lower().split(b",")]
                close = close or b"close" in tokens
                continue  # written below
            lines.append(b"%b: %b\r\n" % (name, value))
        if close:
            self.keep_alive = False
        if status in (204, 304) or self._bodyless:
            self._left = 0
            if self._bodyless and length is None and not chunked and self._http11:
                # As h11: a HEAD's answer has the headers its GET's would have.
                lines.append(b"transfer-encoding: chunked\r\n")
            elif length is not None:
                lines.append(b"content-length: %b\r\n" % length)
        elif chunked or (length is None and self._http11):
            self._chunked = True
            lines.append(b"transfer-encoding: chunked\r\n")
        elif length is not None:
            self._left = int(length)
            lines.append(b"content-length: %b\r\n" % length)
        else:  # framed by the connection's close
            self.keep_alive = False
        if not self.keep_alive:
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    @property
    def gives_length(self) -> bool:
        """Whether the body's length is known from the head (it follows at once)."""
        return self._left is not None

    def piece(self, data: bytes) -> bytes:
        """``data``, a piece of the body, as written."""
        if not data:
            return b""
        if self._chunked:
            return b"%x\r\n%b\r\n" % (len(data), data)
        if self._left is not None:
            if len(data) > self._left:
                raise FramingError("too much data for the declared Content-Length")
            self._left -= len(data)
        return data

    def end(self) -> bytes:
        """What ends the body."""
        if self._chunked:
            return _LAST_CHUNK
        if self._left:
            raise FramingError("too little data for the declared Content-Length")
        return b""


def informational(status: int, headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """An informational (1xx) answer's head."""
    for name, value in headers:
        _check(name, value)
    return b"".join(
        [b"HTTP/1.1 %d \r\n" % status, *(b"%b: %b\r\n" % pair for pair in headers), b"\r\n"]
    )


def _check(name: bytes, value: bytes) -> None:
    if not _TOKEN.fullmatch(name):
        raise FramingError(f"a header name that is not a token: {name!r}")
    if not _VALUE.fullmatch(value):
        raise FramingError(f"a header value h11 would refuse, for {name!r}")
