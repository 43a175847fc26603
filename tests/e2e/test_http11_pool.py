"""The links' HTTP/1.1 pool against a loopback server that shows what each connection did.

The server is a few lines of ``h11`` on trio sockets, so a test decides how
it answers (keep the connection, close it, stall, send a long body) and
counts the connections it accepted. The client is httpx2 on the pool, as a
link uses it.
"""

from __future__ import annotations

import contextlib
import datetime
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import h11
import httpx2
import pytest
import trio
import trio.testing
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agentws.connectors.http11_pool import Http11Pool
from tests.e2e.polling import wait_for

#: ``answer(request, send)``: what the server does with one request; False to hang up after.
#: ``send`` takes h11's events, or bytes to write as they are (an answer h11 would not frame).
Send = Callable[[h11.Event | bytes], Awaitable[None]]
Answer = Callable[[h11.Request, Send], Awaitable[bool]]


@attrs.define
class _Server:
    port: int
    accepted: int = 0
    requests: list[str] = attrs.field(factory=list)
    bodies: list[bytes] = attrs.field(factory=list)
    sni: list[str | None] = attrs.field(factory=list)


async def _ok(request: h11.Request, send: Callable[[h11.Event], Awaitable[None]]) -> bool:
    body = b'{"ok": true}'
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    await send(h11.Response(status_code=200, headers=headers))
    await send(h11.Data(data=body))
    await send(h11.EndOfMessage())
    return True


@asynccontextmanager
async def _serving(
    answer: Answer = _ok, tls: ssl.SSLContext | None = None
) -> AsyncIterator[_Server]:
    async def handle(stream: trio.SocketStream) -> None:
        server.accepted += 1
        # A client may hang up at any point (that is what some tests do).
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await serve(stream)

    async def serve(stream: trio.SocketStream) -> None:
        conn: trio.abc.Stream = stream
        if tls is not None:
            secure = trio.SSLStream(stream, tls, server_side=True)
            await secure.do_handshake()
            conn = secure
        http = h11.Connection(h11.SERVER)

        async def send(event: h11.Event | bytes) -> None:
            data = event if isinstance(event, bytes) else http.send(event)
            if data:
                await conn.send_all(data)

        request: h11.Request | None = None
        with trio.move_on_after(30):
            while True:
                event = http.next_event()
                if event is h11.NEED_DATA:
                    data = await conn.receive_some(65536)
                    if not data:
                        return
                    http.receive_data(data)
                elif isinstance(event, h11.Request):
                    request = event
                    server.requests.append(event.target.decode())
                    server.bodies.append(b"")
                elif isinstance(event, h11.Data):
                    server.bodies[-1] += event.data
                elif isinstance(event, h11.EndOfMessage):
                    assert request is not None
                    if not await answer(request, send) or http.our_state is h11.MUST_CLOSE:
                        await conn.aclose()
                        return
                    http.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    return

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, handle, 0)
        server = _Server(listeners[0].socket.getsockname()[1])
        yield server
        nursery.cancel_scope.cancel()


def _client(transport: Http11Pool, **timeouts: float) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(5.0, **timeouts))


def _pool(connections: int = 4) -> Http11Pool:
    return Http11Pool(max_connections=connections, ssl_context=ssl.create_default_context())


async def test_answers_come_back_on_one_kept_alive_connection() -> None:
    async with _serving() as server, _client(_pool()) as http:
        for n in range(3):
            answer = await http.post(f"http://127.0.0.1:{server.port}/mcp?n={n}", json={"n": n})
            assert answer.status_code == 200
            assert answer.json() == {"ok": True}
        assert server.requests == ["/mcp?n=0", "/mcp?n=1", "/mcp?n=2"]
        assert server.accepted == 1


async def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    async def once(request: h11.Request, send: Callable[[h11.Event], Awaitable[None]]) -> bool:
        await _ok(request, send)
        return False  # hangs up, without having said so

    pool = _pool()
    async with _serving(once) as server, _client(pool) as http:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert (await http.get(url)).status_code == 200
        # Its close reaches us before the next request is written.
        await wait_for(lambda: _idle_closed(pool), what="the server's close seen")
        assert (await http.get(url)).status_code == 200
        assert server.accepted == 2


def _idle_closed(pool: Http11Pool) -> bool:
    """Whether every connection the pool keeps idle has been closed by the server."""
    return all(c.closed_by_peer() for cs in pool._idle.values() for c in cs)


async def _closing(request: h11.Request, send: Send) -> bool:
    headers = [("content-length", "2"), ("connection", "close")]
    await send(h11.Response(status_code=200, headers=headers))
    await send(h11.Data(data=b"{}"))
    await send(h11.EndOfMessage())
    return True


async def _answering_twice(request: h11.Request, send: Send) -> bool:
    await send(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n")
    await trio.sleep_forever()  # open, but answering nothing more
    return True


@pytest.mark.parametrize("answer", [_closing, _answering_twice], ids=["close", "bytes-after"])
async def test_a_connection_its_answer_leaves_unfit_is_not_reused(answer: Answer) -> None:
    """``Connection: close`` is honoured; bytes after an answer are not taken for the next."""
    async with _serving(answer) as server, _client(_pool()) as http:
        url = f"http://127.0.0.1:{server.port}/mcp"
        for _ in range(2):
            assert (await http.get(url)).json() == {}
        assert server.accepted == 2


async def test_an_answer_closed_before_its_end_closes_its_connection() -> None:
    async def streaming(request: h11.Request, send: Callable[[h11.Event], Awaitable[None]]) -> bool:
        await send(h11.Response(status_code=200, headers=[("content-type", "text/event-stream")]))
        if request.target == b"/long":
            await send(h11.Data(data=b"data: 0\n\n"))
            await trio.sleep_forever()  # the rest never comes: the client hangs up first
        await send(h11.EndOfMessage())
        return True

    async with _serving(streaming) as server, _client(_pool()) as http:
        base = f"http://127.0.0.1:{server.port}"
        async with http.stream("GET", base + "/long") as answer:
            chunks = answer.aiter_raw()
            async with contextlib.aclosing(chunks):  # type: ignore[type-var]
                async for _ in chunks:
                    break  # the rest is never read
        async with http.stream("GET", base + "/short") as answer:
            assert await answer.aread() == b""
        assert server.accepted == 2
        assert (await http.get(base + "/short")).status_code == 200
        assert server.accepted == 2  # the short one's connection was kept


async def test_a_chunked_request_body_arrives_whole() -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for piece in (b'{"a": ', b"", b"1}"):
            yield piece

    async with _serving() as server, _client(_pool()) as http:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert (await http.post(url, content=pieces())).status_code == 200
        assert (await http.post(url, content=b"[]")).status_code == 200
        assert server.bodies == [b'{"a": 1}', b"[]"]
        assert server.accepted == 1


async def test_a_request_larger_than_the_socket_takes_at_once_arrives_whole() -> None:
    # The kernel takes part of it at once; the rest goes out as the server reads.
    body = bytes(range(256)) * (32 * 1024)  # 8 MiB, twice what loopback takes at once

    async with _serving() as server, _client(_pool()) as http:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert (await http.post(url, content=body)).status_code == 200
        assert (await http.post(url, content=b"[]")).status_code == 200
        assert server.bodies == [body, b"[]"]
        assert server.accepted == 1


async def test_an_answer_framed_by_its_close_is_read_to_the_close() -> None:
    async def until_close(request: h11.Request, send: Send) -> bool:
        await send(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of ")
        await send(b"it")
        return False

    async with _serving(until_close) as server, _client(_pool()) as http:
        url = f"http://127.0.0.1:{server.port}/mcp"
        for _ in range(2):
            assert (await http.get(url)).content == b"all of it"
        assert server.accepted == 2


async def test_informational_answers_come_before_the_answer() -> None:
    async def informing(request: h11.Request, send: Callable[[h11.Event], Awaitable[None]]) -> bool:
        await send(h11.InformationalResponse(status_code=103, headers=[("link", "</a>")]))
        await _ok(request, send)
        return True

    async with _serving(informing) as server, _client(_pool()) as http:
        url = f"http://127.0.0.1:{server.port}/mcp"
        for _ in range(2):
            answer = await http.get(url)
            assert (answer.status_code, answer.json()) == (200, {"ok": True})
            assert "link" not in answer.headers
        assert server.accepted == 1


async def test_a_silent_server_times_the_read_out(autojump_clock: trio.testing.MockClock) -> None:
    async def silent(request: h11.Request, send: Callable[[h11.Event], Awaitable[None]]) -> bool:
        await trio.sleep_forever()
        return False

    async with _serving(silent) as server, _client(_pool(), read=2.0) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.get(f"http://127.0.0.1:{server.port}/mcp")


async def test_exchanges_beyond_the_pool_wait_for_a_free_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with _serving() as server, _client(_pool(connections=1), pool=1.0) as http:
        url = f"http://127.0.0.1:{server.port}/mcp"
        async with http.stream("GET", url):
            with pytest.raises(httpx2.PoolTimeout):
                await http.get(url)
        # Freed once the first was closed.
        assert (await http.get(url)).status_code == 200


async def test_a_server_that_hangs_up_unanswered_is_a_protocol_error() -> None:
    async def hang_up(request: h11.Request, send: Callable[[h11.Event], Awaitable[None]]) -> bool:
        return False

    async with _serving(hang_up) as server, _client(_pool()) as http:
        with pytest.raises(httpx2.RemoteProtocolError):
            await http.get(f"http://127.0.0.1:{server.port}/mcp")


async def test_a_refused_connection_is_a_connect_error() -> None:
    with trio.socket.socket() as unused:
        await unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    async with _client(_pool()) as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/mcp")


def _certificate(name: str) -> tuple[bytes, bytes]:
    """A self-signed certificate for ``name`` and its key, in PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        certificate.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


async def test_tls_checks_the_name_the_guard_gives_not_the_address(tmp_path: Path) -> None:
    """The guard connects to the address it checked and keeps the name for SNI and the check."""
    cert, key = _certificate("remote.test")
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert)
    key_file.write_bytes(key)
    server_tls.load_cert_chain(cert_file, key_file)
    client_tls = ssl.create_default_context(cadata=cert.decode())
    pool = Http11Pool(max_connections=2, ssl_context=client_tls)
    async with _serving(tls=server_tls) as server, _client(pool) as http:
        url = f"https://127.0.0.1:{server.port}/mcp"
        named = await http.get(url, extensions={"sni_hostname": "remote.test"})
        assert named.json() == {"ok": True}
        again = await http.get(url, extensions={"sni_hostname": "remote.test"})
        assert again.status_code == 200
        assert server.accepted == 1
        # Without the name, the certificate does not match the address.
        with pytest.raises(httpx2.ConnectError):
            await http.get(url)
