"""The service's own HTTP/1.1 wire format: requests read as h11 reads them, answers framed.

Requests are fed to :class:`RequestReader` whole and cut at every point
(hypothesis draws the cuts), and compared with what ``h11``, the parser
Hypercorn ships with, reads from the same bytes. Answers written by
:class:`AnswerFraming` are read back with ``h11`` as a client would.
"""

from __future__ import annotations

import itertools

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentws.bridges.http11_server_wire import (
    AnswerFraming,
    BodyPiece,
    FramingError,
    MessageEnd,
    ReadFailure,
    RequestHead,
    RequestReader,
    informational,
)
from tests.tiers import examples

_MAX_HEAD = 16 * 1024
_BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'
_PIPELINED = (
    b"POST /mcp/g/w/g HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
    b"Authorization: Bearer aw_x\r\nX-Spaced:  a  b \t\r\n"
    b"Content-Length: %d\r\n\r\n%b"
    % (len(_BODY), _BODY)
    + b"POST /hooks/t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
    + b"GET /healthz?x=1 HTTP/1.1\r\nhost: h\r\nConnection: close\r\n\r\n"
)

Read = tuple[bytes, bytes, str, list[tuple[bytes, bytes]], bytes, bool]


def _cut(data: bytes, at: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(n % (len(data) + 1) for n in at)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _ours(pieces: list[bytes]) -> tuple[list[Read], ReadFailure | None]:
    reader = RequestReader(max_head_bytes=_MAX_HEAD)
    requests: list[Read] = []
    failure = None
    head: RequestHead | None = None
    body = b""
    for piece in [*pieces, b""]:
        if piece:
            reader.feed(piece)
        else:
            reader.feed_eof()
        while (event := reader.next_event()) is not None:
            if isinstance(event, RequestHead):
                head, body = event, b""
            elif isinstance(event, BodyPiece):
                body += event.data
            elif isinstance(event, MessageEnd):
                assert head is not None
                requests.append(
                    (
                        head.method,
                        head.target,
                        head.http_version,
                        head.headers,
                        body,
                        head.keep_alive,
                    )
                )
            else:
                failure = event
    return requests, failure


def _h11s(data: bytes) -> list[Read]:
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(data)
    requests: list[Read] = []
    while True:
        event = connection.next_event()
        if isinstance(event, h11.Request):
            head, body = event, b""
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            requests.append(
                (
                    head.method,
                    head.target,
                    head.http_version.decode(),
                    list(head.headers),
                    body,
                    connection.our_state is not h11.MUST_CLOSE
                    and connection.their_state is not h11.MUST_CLOSE,
                )
            )
            # Answer it, as the server does before reading on.
            connection.send(h11.Response(status_code=204, headers=[]))
            connection.send(h11.EndOfMessage())
            if connection.our_state is h11.MUST_CLOSE:
                return requests
            connection.start_next_cycle()
        else:
            return requests


def test_pipelined_requests_read_as_h11_reads_them() -> None:
    requests, failure = _ours([_PIPELINED])
    assert failure is None
    assert requests == _h11s(_PIPELINED)
    assert [r[4] for r in requests] == [_BODY, b"hello world", b""]
    assert (b"x-spaced", b"a  b") in requests[0][3]
    assert [r[5] for r in requests] == [True, True, False]


@settings(max_examples=examples(300, 40), deadline=None)
@given(at=st.lists(st.integers(min_value=0), max_size=12))
def test_requests_read_the_same_however_they_are_cut(at: list[int]) -> None:
    assert _ours(_cut(_PIPELINED, at)) == _ours([_PIPELINED])


@settings(max_examples=examples(200, 30), deadline=None)
@given(
    method=st.sampled_from([b"GET", b"POST", b"DELETE", b"OPTIONS", b"PUT"]),
    target=st.from_regex(rb"\A/[a-zA-Z0-9/?=&%._~-]{0,40}\Z"),
    names=st.lists(st.from_regex(rb"\Ax-[a-z0-9-]{1,12}\Z"), max_size=5, unique=True),
    values=st.lists(st.from_regex(rb"\A[!-~]([ !-~]{0,20}[!-~])?\Z"), min_size=5, max_size=5),
    body=st.binary(max_size=200),
    chunked=st.booleans(),
    http10=st.booleans(),
)
def test_any_simple_request_reads_as_h11_reads_it(
    method: bytes,
    target: bytes,
    names: list[bytes],
    values: list[bytes],
    body: bytes,
    chunked: bool,
    http10: bool,
) -> None:
    headers = b"".join(b"%b: %b\r\n" % pair for pair in zip(names, values, strict=False))
    if chunked and not http10:
        framed = b"transfer-encoding: chunked\r\n\r\n"
        framed += (b"%x\r\n%b\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    else:
        framed = b"content-length: %d\r\n\r\n%b" % (len(body), body)
    version = b"1.0" if http10 else b"1.1"
    raw = b"%b %b HTTP/%b\r\nhost: h\r\n%b%b" % (method, target, version, headers, framed)
    ours, failure = _ours([raw])
    assert failure is None
    assert ours == _h11s(raw)


def _h11_refusal(raw: bytes) -> int | None:
    """The status h11 answers ``raw`` with when it refuses it (its input then ends)."""
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(raw)
    connection.receive_data(b"")
    try:
        while connection.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            if connection.their_state is h11.CLOSED:
                return None
    except h11.RemoteProtocolError as exc:
        return exc.error_status_hint
    return None


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET / HTTP/1.1\r\n\r\n", 400),  # no Host
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: v\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 400),
        (b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    ],
)
def test_what_h11_refuses_fails_with_its_status(raw: bytes, status: int) -> None:
    assert _h11_refusal(raw) == status
    requests, failure = _ours([raw])
    assert requests == []
    assert failure is not None
    assert failure.status == status


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        # h11 bounds a head still arriving only; a whole one is bounded here too.
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"v" * _MAX_HEAD + b"\r\n\r\n", 431),
        # Both a length and chunked: h11 lets chunked win; llhttp refuses (no smuggling).
        (
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"0\r\n\r\n",
            400,
        ),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n folded\r\n\r\n", 400),  # obsolete folding
        (b"GET / HTTP/1.1\nHost: a\n\n", 400),  # bare line feeds
        (b"GET / HTTP/1.2\r\nHost: a\r\n\r\n", 400),
        # A method llhttp does not know: 400, as for bytes that are no request line (uvicorn's
        # answer too; llhttp tells neither apart).
        (b"BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ],
)
def test_what_h11_would_read_may_still_be_refused(raw: bytes, status: int) -> None:
    assert _h11_refusal(raw) is None
    requests, failure = _ours([raw])
    assert requests == []
    assert failure is not None
    assert failure.status == status


def test_a_head_too_large_fails_while_it_still_streams_in() -> None:
    reader = RequestReader(max_head_bytes=_MAX_HEAD)
    reader.feed(b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: ")
    for _ in range(_MAX_HEAD // 1024 + 1):
        reader.feed(b"v" * 1024)
    event = reader.next_event()
    assert isinstance(event, ReadFailure)
    assert (event.status, event.in_head) == (431, True)
    reader.feed(b"\r\n\r\n")  # nothing more is read
    assert reader.next_event() is None


def test_a_head_just_under_the_bound_is_read() -> None:
    head = b"GET / HTTP/1.1\r\nHost: a\r\nX: "
    raw = head + b"v" * (_MAX_HEAD - len(head) - 8) + b"\r\n\r\n"
    requests, failure = _ours([raw[:100], raw[100:]])
    assert failure is None
    assert len(requests) == 1


def test_the_end_of_input_fails_only_a_request_cut_short() -> None:
    assert _ours([b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]) == (
        [(b"GET", b"/", "1.1", [(b"host", b"a")], b"", True)],
        None,
    )
    _, failure = _ours([b"GET / HTTP/1.1\r\nHo"])
    assert failure is not None and failure.in_head
    _, failure = _ours([b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nab"])
    assert failure is not None and not failure.in_head


def test_a_request_switching_protocol_ends_what_is_read() -> None:
    reader = RequestReader(max_head_bytes=_MAX_HEAD)
    reader.feed(
        b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\r\n"
        b"\x81\x85frame GET / HTTP/1.1\r\n\r\n"
    )
    head = reader.next_event()
    assert isinstance(head, RequestHead)
    assert isinstance(reader.next_event(), MessageEnd)
    assert reader.next_event() is None
    assert (head.upgrade, head.keep_alive) == (b"websocket", False)
    assert head.trailing == b"\x81\x85frame GET / HTTP/1.1\r\n\r\n"
    assert reader.failed


def test_expect_100_continue_is_read_on_http11_only() -> None:
    for version, expected in ((b"1.1", True), (b"1.0", False)):
        reader = RequestReader(max_head_bytes=_MAX_HEAD)
        reader.feed(
            b"POST / HTTP/%b\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n"
            % version
        )
        head = reader.next_event()
        assert isinstance(head, RequestHead)
        assert head.expects_continue is expected


def _request(method: bytes = b"GET", version: bytes = b"1.1", extra: bytes = b"") -> RequestHead:
    reader = RequestReader(max_head_bytes=_MAX_HEAD)
    reader.feed(b"%b / HTTP/%b\r\nHost: a\r\n%b\r\n" % (method, version, extra))
    head = reader.next_event()
    assert isinstance(head, RequestHead)
    return head


def _client_reads(
    request: RequestHead, wire: bytes, *, closed: bool
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """What an h11 client reads of ``wire``, its answer to ``request``."""
    client = h11.Connection(h11.CLIENT)
    client.send(
        h11.Request(
            method=request.method,
            target=request.target,
            headers=request.headers,
            # An h11 client speaks HTTP/1.1 only; how it reads an answer does not depend on it.
            http_version=b"1.1",
        )
    )
    client.send(h11.EndOfMessage())
    client.receive_data(wire)
    if closed:
        client.receive_data(b"")
    status, headers, body = 0, [], b""
    while True:
        event = client.next_event()
        if isinstance(event, h11.Response):
            status, headers = event.status_code, list(event.headers)
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            break
        else:
            raise AssertionError(f"the answer did not end: {event!r}")
    return status, headers, body, client.our_state is h11.DONE and client.their_state is h11.DONE


@settings(max_examples=examples(200, 30), deadline=None)
@given(
    method=st.sampled_from([b"GET", b"HEAD", b"POST"]),
    version=st.sampled_from([b"1.1", b"1.0"]),
    close=st.booleans(),
    status=st.sampled_from([200, 201, 204, 304, 404, 500]),
    pieces=st.lists(st.binary(max_size=50), max_size=4),
    gives_length=st.booleans(),
    says_close=st.booleans(),
)
def test_an_answer_reads_back_as_h11_frames_it(
    method: bytes,
    version: bytes,
    close: bool,
    status: int,
    pieces: list[bytes],
    gives_length: bool,
    says_close: bool,
) -> None:
    request = _request(method, version, b"Connection: close\r\n" if close else b"")
    bodyless = method == b"HEAD" or status in (204, 304)
    body = b"" if bodyless else b"".join(pieces)
    headers = [(b"content-type", b"text/plain"), (b"x-request-id", b"r1")]
    if gives_length:
        headers.append((b"content-length", str(len(body)).encode()))
    if says_close:
        headers.append((b"connection", b"close"))
    framing = AnswerFraming(request)
    wire = framing.head(status, headers)
    wire += b"".join(framing.piece(p) for p in ([] if bodyless else pieces))
    wire += framing.end()
    got_status, got_headers, got_body, reusable = _client_reads(
        request, wire, closed=not framing.keep_alive
    )
    assert (got_status, got_body) == (status, body)
    assert (b"x-request-id", b"r1") in got_headers
    assert framing.keep_alive is (version == b"1.1" and not close and not says_close)
    assert framing.keep_alive is reusable
    assert ((b"connection", b"close") in got_headers) is not framing.keep_alive


def test_a_body_off_its_length_or_a_bad_header_is_not_written() -> None:
    framing = AnswerFraming(_request())
    framing.head(200, [(b"content-length", b"3")])
    with pytest.raises(FramingError, match="too much"):
        framing.piece(b"abcd")
    framing.piece(b"ab")
    with pytest.raises(FramingError, match="too little"):
        framing.end()
    for headers in (
        [(b"bad name", b"v")],
        [(b"x", b"a\r\nInjected: 1")],
        [(b"x", b" padded")],
        [(b"content-length", b"1"), (b"content-length", b"2")],
        [(b"content-length", b"x")],
        [(b"transfer-encoding", b"gzip")],
    ):
        with pytest.raises(FramingError):
            AnswerFraming(_request()).head(200, headers)
    framing = AnswerFraming(_request(b"HEAD"))
    framing.head(200, [])
    with pytest.raises(FramingError, match="too much"):
        framing.piece(b"body")


def test_an_informational_answer_is_a_head_alone() -> None:
    assert informational(100, [(b"date", b"d")]) == b"HTTP/1.1 100 \r\ndate: d\r\n\r\n"
    with pytest.raises(FramingError):
        informational(103, [(b"link", b"\x00")])
