"""The outbound URL guard, with a real HTTP server on loopback and resolvers the tests control.

Host names are resolved by the test's resolver, so "evil.test → 127.0.0.1"
is a real connection to the loopback server whenever the guard lets it through.
The table of the IANA special-purpose registries is checked by the guard's
decision alone: a request it lets through goes to a fake transport, never to
the address.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import h11
import httpx2
import pytest
import trio
import trio.testing

from agentws.connectors.url_guard import (
    Allowlist,
    GuardedTransport,
    Resolver,
    check_saved_url,
    check_url,
    is_public,
)
from agentws.core.errors import ConfigError, UnsafeUrlError
from agentws.settings.config import Settings

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


async def test_a_saved_url_needs_a_port_a_connection_can_use() -> None:
    async def no_lookup(host: str, port: int) -> list[str]:
        raise AssertionError(f"looked up {host!r}: the port alone refuses it")

    allow = Allowlist.parse("127.0.0.0/8, *.corp.test")
    for port in ("0", "65536", "99999", "²", "00"):
        for url in (f"http://127.0.0.1:{port}/mcp", f"https://mcp.corp.test:{port}/mcp"):
            with pytest.raises(UnsafeUrlError, match=f"port {port} .*1 to 65535"):
                await check_saved_url(url, allow, no_lookup)
            with pytest.raises(UnsafeUrlError, match=f"port {port} "):
                check_url(url, allow)
    for url in ("http://127.0.0.1:1/mcp", "http://127.0.0.1:65535/mcp", "https://mcp.corp.test/"):
        assert await check_saved_url(url, allow, no_lookup) == url


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


# Every block of the IANA IPv4 and IPv6 special-purpose address registries,
# the IPv6 forms that carry an IPv4 address, and public addresses beside them:
# (address, whether connectors may reach it, what it is).
ADDRESSES: list[tuple[str, bool, str]] = [
    ("0.0.0.0", False, "this host on this network, 0/8"),
    ("0.1.2.3", False, "this network, 0/8"),
    ("10.0.0.1", False, "private, 10/8"),
    ("100.64.0.1", False, "shared address space (CGNAT), 100.64/10"),
    ("100.127.255.254", False, "shared address space, 100.64/10"),
    ("127.0.0.1", False, "loopback, 127/8"),
    ("127.255.255.254", False, "loopback, 127/8"),
    ("169.254.169.254", False, "link-local, 169.254/16: cloud metadata"),
    ("172.16.0.1", False, "private, 172.16/12"),
    ("172.31.255.254", False, "private, 172.16/12"),
    ("192.0.0.1", False, "IETF protocol assignments, 192.0.0/24"),
    ("192.0.0.9", False, "PCP anycast in 192.0.0/24: refused with its block"),
    ("192.0.0.10", False, "TURN anycast in 192.0.0/24: refused with its block"),
    ("192.0.0.170", False, "NAT64 discovery, 192.0.0.170/31"),
    ("192.0.2.1", False, "documentation TEST-NET-1, 192.0.2/24"),
    ("192.31.196.1", False, "AS112-v4, 192.31.196/24"),
    ("192.52.193.1", False, "AMT, 192.52.193/24"),
    ("192.88.99.1", False, "deprecated 6to4 relay anycast, 192.88.99/24"),
    ("192.168.1.1", False, "private, 192.168/16"),
    ("192.175.48.1", False, "AS112 direct delegation, 192.175.48/24"),
    ("198.18.0.1", False, "benchmarking, 198.18/15"),
    ("198.19.255.254", False, "benchmarking, 198.18/15"),
    ("198.51.100.1", False, "documentation TEST-NET-2, 198.51.100/24"),
    ("203.0.113.1", False, "documentation TEST-NET-3, 203.0.113/24"),
    ("224.0.0.1", False, "multicast, 224/4"),
    ("239.255.255.250", False, "multicast, 224/4"),
    ("240.0.0.1", False, "reserved, 240/4"),
    ("255.255.255.255", False, "limited broadcast"),
    ("8.8.8.8", True, "public"),
    ("93.184.216.34", True, "public"),
    ("100.128.0.1", True, "public, just past 100.64/10"),
    ("172.32.0.1", True, "public, just past 172.16/12"),
    ("192.0.3.1", True, "public, just past 192.0.2/24"),
    ("198.20.0.1", True, "public, just past 198.18/15"),
    ("::1", False, "loopback"),
    ("::", False, "unspecified"),
    ("::ffff:127.0.0.1", False, "IPv4-mapped loopback"),
    ("::ffff:169.254.169.254", False, "IPv4-mapped cloud metadata"),
    ("::ffff:10.0.0.1", False, "IPv4-mapped private"),
    ("::ffff:8.8.8.8", True, "IPv4-mapped public: judged as its IPv4"),
    ("::ffff:0:a9fe:a9fe", False, "IPv4-translated, ::ffff:0:0:0/96"),
    ("::ffff:0:808:808", False, "IPv4-translated, refused whatever it carries"),
    ("::a9fe:a9fe", False, "deprecated IPv4-compatible, ::/96"),
    ("::808:808", False, "deprecated IPv4-compatible, refused whatever it carries"),
    ("64:ff9b::a9fe:a9fe", False, "NAT64 of cloud metadata, 64:ff9b::/96"),
    ("64:ff9b::7f00:1", False, "NAT64 of loopback"),
    ("64:ff9b::a00:1", False, "NAT64 of private"),
    ("64:ff9b::808:808", True, "NAT64 of public: judged as its IPv4"),
    ("64:ff9b:1::a9fe:a9fe", False, "local-use NAT64, 64:ff9b:1::/48"),
    ("64:ff9b:1::808:808", False, "local-use NAT64, refused whatever it carries"),
    ("100::1", False, "discard-only, 100::/64"),
    ("2001::a9fe:a9fe", False, "Teredo, 2001::/32"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False, "Teredo of a public host"),
    ("2001:1::1", False, "PCP anycast in 2001::/23: refused with its block"),
    ("2001:2::1", False, "benchmarking, 2001:2::/48"),
    ("2001:10::1", False, "deprecated ORCHID, 2001:10::/28"),
    ("2001:20::1", False, "ORCHIDv2 in 2001::/23: refused with its block"),
    ("2001:db8::1", False, "documentation, 2001:db8::/32"),
    ("2002:a9fe:a9fe::1", False, "6to4 of cloud metadata, 2002::/16"),
    ("2002:7f00:1::1", False, "6to4 of loopback"),
    ("2002:808:808::1", False, "6to4, refused whatever it carries"),
    ("2620:4f:8000::1", False, "AS112-v6 direct delegation, 2620:4f:8000::/48"),
    ("3fff::1", False, "documentation, 3fff::/20"),
    ("5f00::1", False, "segment routing SIDs, 5f00::/16"),
    ("4000::1", False, "not global unicast (outside 2000::/3)"),
    ("fc00::1", False, "unique local, fc00::/7"),
    ("fd00:ec2::254", False, "unique local: cloud metadata"),
    ("fe80::1", False, "link-local, fe80::/10"),
    ("fec0::1", False, "deprecated site-local, fec0::/10"),
    ("ff02::1", False, "multicast, ff00::/8"),
    ("ff0e::1", False, "global-scope multicast, ff00::/8"),
    ("2606:4700::1111", True, "public"),
    ("2001:4860:4860::8888", True, "public, just past 2001::/23"),
    ("2a00:1450:4001::1", True, "public"),
]


@pytest.mark.parametrize(
    ("address", "public"), [pytest.param(a, p, id=f"{a} {what}") for a, p, what in ADDRESSES]
)
async def test_the_special_purpose_address_table(address: str, public: bool) -> None:
    """One decision for an address, as a literal or behind a name, on save and on connect."""
    parsed = ipaddress.ip_address(address)
    assert is_public(parsed) is public
    reached: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        reached.append(request.url.host)
        return httpx2.Response(200)

    # What the guard lets through goes to this fake transport, not to the address.
    inner = httpx2.MockTransport(answer)
    literal = f"[{address}]" if parsed.version == 6 else address
    _, resolve = resolver([address])
    for url in (f"http://{literal}/mcp", "http://name.test/mcp"):
        transport = GuardedTransport(resolve=resolve, inner=inner)
        if public:
            assert await check_saved_url(url, Allowlist(), resolve) == url
            assert (await _get(transport, url)).status_code == 200
        else:
            with pytest.raises(UnsafeUrlError, match="AGENTWS_CONNECTOR_ALLOWLIST"):
                await check_saved_url(url, Allowlist(), resolve)
            with pytest.raises(UnsafeUrlError, match="not a public address"):
                await _get(transport, url)
    assert [ipaddress.ip_address(host) for host in reached] == ([parsed] * 2 if public else [])


async def test_a_refusal_says_what_the_address_is() -> None:
    cases = {
        "http://[64:ff9b::a9fe:a9fe]/": "NAT64 169.254.169.254, link-local",
        "http://[::ffff:127.0.0.1]/": "IPv4-mapped 127.0.0.1, loopback",
        "http://[2002:a9fe:a9fe::1]/": "6to4 (carrying 169.254.169.254)",
        "http://[2001::a9fe:a9fe]/": "Teredo (carrying",
        "http://[fec0::1]/": "deprecated site-local",
        "http://192.0.2.7/": "documentation",
    }
    for url, why in cases.items():
        with pytest.raises(UnsafeUrlError) as caught:
            await check_saved_url(url, Allowlist())
        assert why in caught.value.message, caught.value.message


async def test_a_saved_url_is_checked_as_a_connection_would_be() -> None:
    none = Allowlist()
    with pytest.raises(UnsafeUrlError, match=r"169\.254\.169\.254.*AGENTWS_CONNECTOR_ALLOWLIST"):
        await check_saved_url("http://169.254.169.254/mcp", none)
    # One non-public answer among public ones fails every connection: refused now.
    _, mixed = resolver(["93.184.216.34", "10.0.0.7"])
    with pytest.raises(UnsafeUrlError, match=r"10\.0\.0\.7"):
        await check_saved_url("https://mixed.test/mcp", none, mixed)
    # The allowlist lets a name or a network in; a named host is not even resolved.
    asked, internal = resolver(["10.0.0.7"])
    allow = Allowlist.parse("mcp.corp.test")
    assert await check_saved_url("http://mcp.corp.test/mcp", allow, internal)
    assert asked == []
    by_network = Allowlist.parse("10.0.0.0/8")
    assert await check_saved_url("http://10.1.2.3:8080/mcp", by_network, internal)
    # ... but an allowlist still limits the hosts a URL may name.
    for outside in ("http://169.254.169.254/", "http://other.test/mcp"):
        with pytest.raises(UnsafeUrlError, match="AGENTWS_CONNECTOR_ALLOWLIST"):
            await check_saved_url(outside, by_network, internal)


async def test_a_name_that_does_not_resolve_now_is_saved_and_checked_on_connecting() -> None:
    async def nowhere(host: str, port: int) -> list[str]:
        raise httpx2.ConnectError(f"cannot resolve {host!r}")

    url = "https://not-yet.test/mcp"
    assert await check_saved_url(url, Allowlist(), nowhere) == url


async def test_resolving_a_saved_url_is_bounded_in_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def hangs(host: str, port: int) -> list[str]:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    url = "https://slow-dns.test/mcp"
    started = trio.current_time()
    assert await check_saved_url(url, Allowlist(), hangs) == url
    assert trio.current_time() - started <= 10
