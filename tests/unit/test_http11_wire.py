"""The links' HTTP/1.1 wire format: requests framed and checked as h11 would, answers parsed.

Answers are fed to :class:`Answer` whole and cut at every point (hypothesis
draws the cuts): what it reads must not depend on how the bytes arrived.
Requests written by :func:`request_head` and :class:`Framing` are read back
with ``h11``, an implementation this module does not use.
"""

from __future__ import annotations

import itertools

import h11
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentws.connectors.http11_wire import MAX_HEAD_BYTES, Answer, Framing, request_head
from tests.tiers import examples

_EVENT = b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n'
_CHUNKED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    + b"%x\r\n%b\r\n" % (len(_EVENT), _EVENT)
    + b"0\r\n\r\n"
)
_INFORMED = (
    b"HTTP/1.1 100 Continue\r\n\r\n"
    b"HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\n"
    b"HTTP/1.1 201 Created Here\r\ncontent-length: 4\r\nx-a: 1\r\n\r\nbody"
)


def _read(answer: Answer, pieces: list[bytes]) -> bytes:
    body = b""
    for piece in pieces:
        answer.feed(piece)
        body += answer.take_body()
    return body


def _cut(data: bytes, at: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(n % (len(data) + 1) for n in at)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=examples(300, 40), deadline=None)
@given(at=st.lists(st.integers(min_value=0), max_size=12))
def test_an_answer_reads_the_same_however_it_is_cut(at: list[int]) -> None:
    for raw, status, reason, body, headers in (
        (_CHUNKED, 200, b"OK", _EVENT, [(b"content-type", b"text/event-stream")]),
        (_INFORMED, 201, b"Created Here", b"body", [(b"content-length", b"4"), (b"x-a", b"1")]),
    ):
        answer = Answer()
        assert _read(answer, _cut(raw, at)) == body
        assert (answer.status, answer.reason, answer.ended, answer.reusable) == (
            status,
            reason,
            True,
            True,
        )
        assert all(pair in answer.headers for pair in headers)


def test_answers_follow_each_other_on_one_connection() -> None:
    answer = Answer()
    for n in range(3):
        answer.next_exchange(head_only=False)
        text = b"answer %d" % n
        assert _read(
            answer, [b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%b" % (len(text), text)]
        ) == (text)
        assert answer.reusable


def test_an_answer_framed_by_the_close_ends_with_it() -> None:
    answer = Answer()
    assert _read(
        answer, [b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of ", b"it"]
    ) == (b"all of it")
    assert not answer.ended
    answer.server_closed()
    assert answer.ended
    assert not answer.reusable  # the server closed it


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf", "in the middle of an answer"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhal", "in the middle"),
        (b"HTTP/1.1 200 OK\r\ncontent-le", "without answering"),
        (b"", "without answering"),
    ],
)
def test_an_answer_cut_short_is_a_protocol_error(raw: bytes, says: str) -> None:
    answer = Answer()
    answer.feed(raw)
    with pytest.raises(httpx2.RemoteProtocolError, match=says):
        answer.server_closed()


@pytest.mark.parametrize(
    "raw",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n",
    ],
)
def test_what_is_not_an_answer_is_a_protocol_error(raw: bytes) -> None:
    with pytest.raises(httpx2.RemoteProtocolError):
        Answer().feed(raw)


def test_a_head_larger_than_the_bound_is_refused() -> None:
    answer = Answer()
    answer.feed(b"HTTP/1.1 200 OK\r\n")
    line = b"x-padding: " + b"a" * 1000 + b"\r\n"
    for _ in range(MAX_HEAD_BYTES // len(line)):
        answer.feed(line)
    with pytest.raises(httpx2.RemoteProtocolError, match="head larger"):
        answer.feed(line)


def test_a_head_then_a_large_body_in_one_read_is_fine() -> None:
    body = b"b" * (4 * MAX_HEAD_BYTES)
    answer = Answer()
    assert _read(answer, [b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%b" % (len(body), body)])
    assert answer.ended


def test_bytes_after_the_answer_make_the_connection_not_reusable() -> None:
    for after in (b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", b"junk"):
        answer = Answer()
        answer.feed(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}" + after)
        assert answer.ended
        assert answer.take_body() == b"{}"
        assert not answer.reusable


def test_connection_close_and_http_1_0_are_not_kept() -> None:
    for raw in (
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n",
    ):
        answer = Answer()
        answer.feed(raw)
        assert answer.ended
        assert not answer.reusable


def test_an_answer_to_head_has_no_body_whatever_it_says() -> None:
    answer = Answer()
    answer.next_exchange(head_only=True)
    answer.feed(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n")
    assert (answer.status, answer.ended, answer.take_body()) == (200, True, b"")
    assert not answer.reusable


def test_no_content_ends_at_its_head() -> None:
    answer = Answer()
    answer.feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert (answer.status, answer.ended, answer.reusable) == (204, True, True)


def _read_back(data: bytes) -> tuple[h11.Request, bytes]:
    """A request as an h11 server reads it: its head and its whole body."""
    server = h11.Connection(h11.SERVER)
    server.receive_data(data)
    request = server.next_event()
    assert isinstance(request, h11.Request)
    body = b""
    while not isinstance(event := server.next_event(), h11.EndOfMessage):
        assert isinstance(event, h11.Data), event
        body += event.data
    return request, body


_HEADERS = [(b"Host", b"remote.test"), (b"Accept", b"application/json, text/event-stream")]


def test_a_request_with_a_length_reads_back_whole() -> None:
    head, framing = request_head(b"POST", b"/mcp?x=1", [*_HEADERS, (b"Content-Length", b"11")])
    request, body = _read_back(
        head + framing.piece(b"hello ") + framing.piece(b"world") + framing.end()
    )
    assert (request.method, request.target, body) == (b"POST", b"/mcp?x=1", b"hello world")
    assert (b"accept", b"application/json, text/event-stream") in request.headers


def test_a_chunked_request_reads_back_whole() -> None:
    head, framing = request_head(b"POST", b"/mcp", [*_HEADERS, (b"Transfer-Encoding", b"chunked")])
    pieces = [framing.piece(p) for p in (b"one ", b"", b"two")]
    assert _read_back(head + b"".join(pieces) + framing.end())[1] == b"one two"


def test_a_request_without_a_body_sends_none() -> None:
    head, framing = request_head(b"GET", b"/mcp", _HEADERS)
    assert _read_back(head + framing.end())[1] == b""
    with pytest.raises(httpx2.LocalProtocolError, match="longer"):
        framing.piece(b"x")


def test_a_body_off_its_length_is_refused() -> None:
    _, framing = request_head(b"POST", b"/", [*_HEADERS, (b"content-length", b"3")])
    with pytest.raises(httpx2.LocalProtocolError, match="longer"):
        framing.piece(b"four")
    _, framing = request_head(b"POST", b"/", [*_HEADERS, (b"content-length", b"3")])
    framing.piece(b"tw")
    with pytest.raises(httpx2.LocalProtocolError, match="shorter"):
        framing.end()


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [
        (b"PO ST", b"/", _HEADERS),
        (b"POST", b"/a b", _HEADERS),
        (b"POST", b"/a\r\nx", _HEADERS),
        (b"POST", b"/", [*_HEADERS, (b"x-a", b"one\r\nInjected: yes")]),
        (b"POST", b"/", [*_HEADERS, (b"x-a", b" padded")]),
        (b"POST", b"/", [*_HEADERS, (b"x a", b"1")]),
        (b"POST", b"/", [*_HEADERS, (b"content-length", b"-1")]),
        (b"POST", b"/", [*_HEADERS, (b"content-length", b"1"), (b"content-length", b"2")]),
        (b"POST", b"/", [*_HEADERS, (b"transfer-encoding", b"gzip")]),
        (b"POST", b"/", [(b"accept", b"*/*")]),
    ],
)
def test_what_h11_would_not_send_is_refused(
    method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    with pytest.raises(httpx2.LocalProtocolError):
        request_head(method, target, headers)


def test_a_refusal_does_not_echo_a_header_value() -> None:
    with pytest.raises(httpx2.LocalProtocolError) as refused:
        request_head(b"GET", b"/", [*_HEADERS, (b"authorization", b"Bearer s3cret\r\n")])
    assert b"s3cret" not in str(refused.value).encode()


def test_framing_a_length_of_zero_needs_no_end() -> None:
    assert Framing(0, chunked=False).end() == b""
