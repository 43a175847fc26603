"""The outbound URL guard, with a real HTTP server on loopback and resolvers the tests control.

Host names are resolved by the test's resolver, so "evil.test → 127.0.0.1"
is a real connection to the loopback server whenever the guard lets it through.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import h11
import httpx2
import pytest
import trio

from agentws.config import Settings
from agentws.connectors.url_guard import (
    Allowlist,
    GuardedTransport,
    Resolver,
    check_url,
    is_public,
)
from agentws.errors import ConfigError, UnsafeUrlError

REQUEST_S = 10.0


@attrs.define
class Seen:
    """What the loopback server received."""

    hosts: list[str] = attrs.field(factory=list)
    targets: list[str] = attrs.field(factory=list)


async def _handle(seen: Seen, redirect_to: str | None, stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
            continue
        if isinstance(event, h11.Request):
            seen.hosts.append(dict(event.headers)[b"host"].decode())
            seen.targets.append(event.target.decode())
            continue
        if isinstance(event, h11.EndOfMessage):
            break
    if redirect_to:
        head = h11.Response(
            status_code=302, headers=[("Location", redirect_to), ("Content-Length", "0")]
        )
        body = b""
    else:
        body = b"hello"
        head = h11.Response(status_code=200, headers=[("Content-Length", str(len(body)))])
    await stream.send_all(
        (conn.send(head) or b"")
        + (conn.send(h11.Data(data=body)) or b"")
        + (conn.send(h11.EndOfMessage()) or b"")
    )
    await stream.aclose()


@asynccontextmanager
async def loopback_server(redirect_to: str | None = None) -> AsyncIterator[tuple[int, Seen]]:
    seen = Seen()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(
                trio.serve_tcp, functools.partial(_handle, seen, redirect_to), 0, host="127.0.0.1"
            )
        )
        yield listeners[0].socket.getsockname()[1], seen
        nursery.cancel_scope.cancel()


def resolver(*answers: list[str]) -> tuple[list[str], Resolver]:
    """A resolver giving ``answers`` in turn (the last one forever); records the names asked."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    return asked, resolve


async def _get(transport: GuardedTransport, url: str, *, follow: bool = False) -> httpx2.Response:
    with trio.fail_after(REQUEST_S):
        async with httpx2.AsyncClient(transport=transport, follow_redirects=follow) as client:
            return await client.get(url)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "169.254.169.254",
        "10.0.0.1",
        "::1",
        "100.64.0.1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "224.0.0.1",
        "fd00:ec2::254",
    ],
)
async def test_names_resolving_to_non_public_addresses_are_refused(address: str) -> None:
    _, resolve = resolver([address])
    with pytest.raises(UnsafeUrlError, match="not a public address"):
        await _get(GuardedTransport(resolve=resolve), "http://evil.test/latest/meta-data")


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/", "http://[::1]:9/", "http://169.254.169.254/"]
)
async def test_address_literals_are_checked_too(url: str) -> None:
    with pytest.raises(UnsafeUrlError):
        await _get(GuardedTransport(), url)


async def test_one_private_answer_among_public_ones_is_refused() -> None:
    _, resolve = resolver(["93.184.216.34", "127.0.0.1"])
    with pytest.raises(UnsafeUrlError):
        await _get(GuardedTransport(resolve=resolve), "http://mixed.test/")


async def test_allow_listed_names_and_networks_pass_and_keep_their_host_header() -> None:
    async with loopback_server() as (port, seen):
        _, resolve = resolver(["127.0.0.1"])
        by_name = GuardedTransport(Allowlist.parse("*.corp.test"), resolve=resolve)
        response = await _get(by_name, f"http://mcp.corp.test:{port}/tools")
        assert response.status_code == 200
        assert response.text == "hello"
        by_network = GuardedTransport(Allowlist.parse("127.0.0.0/8"), resolve=resolve)
        assert (await _get(by_network, f"http://other.test:{port}/x")).status_code == 200
        assert (await _get(by_network, f"http://127.0.0.1:{port}/y")).status_code == 200
    assert seen.hosts == [f"mcp.corp.test:{port}", f"other.test:{port}", f"127.0.0.1:{port}"]
    assert seen.targets == ["/tools", "/x", "/y"]


async def test_the_connection_goes_to_the_address_that_was_checked() -> None:
    async with loopback_server() as (port, seen):
        # A rebinding resolver: the first answer passes the check, later ones would not.
        asked, resolve = resolver(["127.0.0.1"], ["10.9.9.9"])
        transport = GuardedTransport(Allowlist.parse("127.0.0.1/32"), resolve=resolve)
        response = await _get(transport, f"http://rebind.test:{port}/")
        assert response.status_code == 200
    assert asked == ["rebind.test"]  # resolved once: the connect did not ask again
    assert seen.hosts == [f"rebind.test:{port}"]


async def test_a_redirect_to_a_private_address_is_refused() -> None:
    async with loopback_server(redirect_to="http://169.254.169.254/latest/meta-data/") as (
        port,
        seen,
    ):
        _, resolve = resolver(["127.0.0.1"])
        transport = GuardedTransport(Allowlist.parse("good.test"), resolve=resolve)
        with pytest.raises(UnsafeUrlError, match=r"169\.254\.169\.254"):
            await _get(transport, f"http://good.test:{port}/", follow=True)
    assert seen.targets == ["/"]


def test_urls_are_checked_when_saved() -> None:
    none = Allowlist()
    assert check_url("https://mcp.example.com/mcp", none) == "https://mcp.example.com/mcp"
    for bad in (
        "ftp://example.com/",
        "https://user:pw@example.com/",
        "not a url",
        "file:///etc/passwd",
    ):
        with pytest.raises(UnsafeUrlError):
            check_url(bad, none)
    allow = Allowlist.parse("api.github.com, *.corp.example, 10.0.0.0/8")
    assert check_url("https://api.github.com/", allow)
    assert check_url("http://mcp.corp.example:8000/mcp", allow)
    assert check_url("http://10.1.2.3/", allow)
    with pytest.raises(UnsafeUrlError, match="AGENTWS_CONNECTOR_ALLOWLIST"):
        check_url("https://evil.example/", allow)


def test_public_addresses() -> None:
    import ipaddress

    assert is_public(ipaddress.ip_address("93.184.216.34"))
    assert is_public(ipaddress.ip_address("2606:4700::1111"))
    assert not is_public(ipaddress.ip_address("192.168.1.1"))


def test_a_malformed_allowlist_is_named_at_start() -> None:
    with pytest.raises(ConfigError, match="AGENTWS_CONNECTOR_ALLOWLIST"):
        Settings.from_env({"AGENTWS_CONNECTOR_ALLOWLIST": "good.example, bad host!"})
    settings = Settings.from_env({"AGENTWS_CONNECTOR_ALLOWLIST": "a.example,10.0.0.0/8"})
    assert settings.connector_allowlist.names_host("a.example")
