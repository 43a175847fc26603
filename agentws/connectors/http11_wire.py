"""HTTP/1.1 on the wire for the links' pool: a request framed for sending, an answer parsed.

:mod:`agentws.connectors.http11_pool` speaks HTTP/1.1 to remote MCP
servers. Framing a request and parsing an answer is most of what a proxied
call costs in HTTP/1.1 on the client side (``scripts/bench gateway``), so
the answer is parsed by ``httptools`` (llhttp, the parser of Node.js and of
uvicorn), and the request is written here, checked as ``h11`` checks one:

- :func:`request_head` writes a request's head, after checking its method,
  target and headers (a token for a name, no control characters or
  surrounding blanks in a value, a ``Host``), and says how its body is
  framed (:class:`Framing`: a ``Content-Length``, ``chunked``, or none);
- :class:`Framing` frames the body's pieces and its end, refusing a body
  longer or shorter than its stated length;
- :class:`Answer` is one connection's reading side: fed what the server
  sends, it gives the answer's head (informational answers skipped), then
  its body, a piece at a time, then its end. A head larger than
  ``MAX_HEAD_BYTES`` is refused, as ``h11`` refuses one. An answer framed
  by the connection's end (neither a length nor ``chunked``) ends when the
  server closes. An answer to ``HEAD`` has no body, whatever its headers say.

Errors are ``httpx2``'s (:class:`httpx2.LocalProtocolError` for a request
that cannot be sent, :class:`httpx2.RemoteProtocolError` for an answer that
cannot be read), which the pool's callers expect of a transport.
"""

from __future__ import annotations

import re

import httptools
import httpx2

__all__ = ["MAX_HEAD_BYTES", "Answer", "Framing", "request_head"]

#: The most an answer's head may take (``h11``'s default bound).
MAX_HEAD_BYTES = 16 * 1024

# RFC 9110's token (methods, header names); h11's request target and field value.
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_VALUE = re.compile(rb"(?:[\x21-\x7e\x80-\xff](?:[ \t\x21-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?")
_DIGITS = re.compile(rb"[0-9]{1,18}")
_CHUNK_END = b"\r\n"
_LAST_CHUNK = b"0\r\n\r\n"


class Framing:
    """How a request's body goes on the wire: its pieces framed, its length kept to."""

    __slots__ = ("_chunked", "_left")

    def __init__(self, length: int | None, *, chunked: bool) -> None:
        self._chunked = chunked
        self._left = length

    def piece(self, data: bytes) -> bytes:
        """``data``, a piece of the body, as it is written."""
        if not data:
            return b""  # an empty chunk would end a chunked body
        if self._chunked:
            return b"%x\r\n%b\r\n" % (len(data), data)
        if self._left is None or len(data) > self._left:
            raise httpx2.LocalProtocolError("a request body longer than its Content-Length")
        self._left -= len(data)
        return data

    def end(self) -> bytes:
        """What ends the body."""
        if self._chunked:
            return _LAST_CHUNK
        if self._left:
            raise httpx2.LocalProtocolError("a request body shorter than its Content-Length")
        return b""


def request_head(
    method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]
) -> tuple[bytes, Framing]:
    """The request line and headers, and the framing its body takes.

    Error handling:
        :class:`httpx2.LocalProtocolError` for a method, target or header
        ``h11`` would not send, or a request without ``Host``.
    """
    if not _TOKEN.fullmatch(method):
        raise httpx2.LocalProtocolError(f"not a method: {method!r}")
    if not _TARGET.fullmatch(target):
        raise httpx2.LocalProtocolError("a request target with blanks or control characters")
    parts = [method, b" ", target, b" HTTP/1.1\r\n"]
    host = chunked = False
    length: int | None = None
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or not _VALUE.fullmatch(value):
            raise httpx2.LocalProtocolError(f"a header that cannot be sent: {name!r}")
        lowered = name.lower()
        if lowered == b"host":
            host = True
        elif lowered == b"content-length":
            if not _DIGITS.fullmatch(value) or (length is not None and int(value) != length):
                raise httpx2.LocalProtocolError("a request with a bad Content-Length")
            length = int(value)
        elif lowered == b"transfer-encoding":
            if value.lower() != b"chunked":
                raise httpx2.LocalProtocolError("only chunked transfer coding is sent")
            chunked = True
        parts += (name, b": ", value, b"\r\n")
    if not host:
        raise httpx2.LocalProtocolError("a request without Host")
    parts.append(b"\r\n")
    # RFC 9112 6.3: the coding wins over a length; neither means no body.
    return b"".join(parts), Framing(None if chunked else length or 0, chunked=chunked)


class Answer:
    """The reading side of one connection: answers parsed as the server sends them.

    Feed it what arrives (:meth:`feed`) and :meth:`server_closed` when the
    server closes; read :attr:`status`, :attr:`reason` and :attr:`headers`
    once :attr:`head_done`, then :meth:`take_body` until :attr:`ended`.
    :meth:`next_exchange` readies it for the connection's next request.
    """

    __slots__ = (
        "_framed",
        "_head_bytes",
        "_head_only",
        "_keep_alive",
        "_parser",
        "_pieces",
        "_stray",
        "ended",
        "head_done",
        "headers",
        "reason",
        "status",
    )

    _parser: httptools.HttpResponseParser | None
    _pieces: list[bytes]
    headers: list[tuple[bytes, bytes]]

    def __init__(self) -> None:
        self._parser = httptools.HttpResponseParser(self)
        self._stray = False
        self.next_exchange(head_only=False)

    def close(self) -> None:
        """The connection is closed: let go of the parser (which points back here)."""
        self._parser = None

    def next_exchange(self, *, head_only: bool) -> None:
        """Ready for the answer to the next request (``head_only``: a ``HEAD``'s)."""
        self._head_only = head_only
        self._head_bytes = 0
        self._pieces = []
        self._keep_alive = False
        self._framed = False
        self.ended = False
        self.head_done = False
        self.status = 0
        self.reason = b""
        self.headers = []

    @property
    def reusable(self) -> bool:
        """Whether the connection may carry another exchange once this answer is read."""
        return self.ended and self._keep_alive and not self._stray and not self._head_only

    def feed(self, data: bytes) -> None:
        """Parse ``data``, the next bytes the server sent.

        Error handling:
            :class:`httpx2.RemoteProtocolError` for what is not an answer, or
            a head over ``MAX_HEAD_BYTES``. Bytes after the answer's end
            only make the connection not reusable.
        """
        if self.ended:
            self._stray = True  # nothing is asked: the connection is not used again
            return
        parser = self._parser
        if parser is None:
            raise httpx2.RemoteProtocolError("the connection is closed")
        if not self.head_done:
            self._head_bytes += len(data)
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            raise httpx2.RemoteProtocolError("the server switched protocols unasked") from None
        except httptools.HttpParserError as exc:
            if self.ended:  # what follows the answer is not an answer: never mind it
                self._stray = True
                return
            raise httpx2.RemoteProtocolError(f"not an HTTP/1.1 answer: {exc}") from None
        if not self.head_done and self._head_bytes > MAX_HEAD_BYTES:
            raise httpx2.RemoteProtocolError(
                f"an answer's head larger than {MAX_HEAD_BYTES // 1024} KiB"
            )

    def server_closed(self) -> None:
        """The server closed its side: the end of an answer framed by it, else an error.

        Error handling:
            :class:`httpx2.RemoteProtocolError` when the answer was cut short.
        """
        if self.ended:
            return
        if not self.head_done:
            raise httpx2.RemoteProtocolError("the server disconnected without answering")
        if self._framed:
            raise httpx2.RemoteProtocolError("the server disconnected in the middle of an answer")
        self.ended = True
        self._keep_alive = False

    def take_body(self) -> bytes:
        """The body that has arrived since the last call (empty: wait for more, or the end)."""
        pieces = self._pieces
        if not pieces:
            return b""
        self._pieces = []
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    # --- httptools' callbacks ------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.head_done:
            # A second answer to one request: the server is not to be trusted
            # with another; this one's end still stands.
            self._stray = True

    def on_status(self, status: bytes) -> None:
        if not self.head_done:
            self.reason += status  # llhttp may hand it over in pieces

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.head_done:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.head_done:
            return
        parser = self._parser
        if parser is None:  # cannot be: it is the parser calling
            return
        status = parser.get_status_code()
        if status < 200:
            # Informational (100 Continue, 103 Early Hints): the answer follows.
            self.reason = b""
            self.headers = []
            return
        self.status = status
        self.head_done = True
        self._keep_alive = parser.should_keep_alive()
        self._framed = any(
            name.lower() in (b"content-length", b"transfer-encoding") for name, _ in self.headers
        ) or status in (204, 304)
        if self._head_only:
            self.ended = True

    def on_body(self, body: bytes) -> None:
        if not self.ended:
            self._pieces.append(body)

    def on_message_complete(self) -> None:
        if self.head_done:
            self.ended = True
