"""Which IP addresses connectors may reach: the public/private decision, as one pure function.

An address is public when it is global unicast and in no block of the IANA
special-purpose address registries (IPv4 and IPv6), multicast or reserved
space. Every block of the registries is refused, those the IANA marks
globally reachable too (PCP and TURN anycast, AS112, AMT, ORCHIDv2): no
connector has a reason to reach them, and refusing is the safe side.

IPv6 has forms that carry an IPv4 address. Two of them reach that IPv4 host
when connected to, so they are judged as the IPv4 address they carry:

- IPv4-mapped ``::ffff:a.b.c.d`` (a dual-stack socket connects to ``a.b.c.d``);
- NAT64 ``64:ff9b::a.b.c.d`` (what DNS64 answers on an IPv6-only network;
  the translator connects to ``a.b.c.d``).

The others are refused whatever they carry: IPv4-compatible ``::/96`` and
site-local ``fec0::/10`` are deprecated, IPv4-translated ``::ffff:0:0:0/96``
and local-use NAT64 ``64:ff9b:1::/48`` are not global, 6to4 ``2002::/16`` and
Teredo ``2001::/32`` are tunnels whose relays choose where the packet goes.

The standard library's ``is_global`` is consulted as well (so an address it
knows to be special is refused even if missing here), but never relied on
alone: its tables change between Python releases and miss the forms above.
"""

from __future__ import annotations

import ipaddress

__all__ = ["Address", "is_public", "refusal"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# IANA IPv4 Special-Purpose Address Registry, plus multicast and reserved space.
_IPV4_BLOCKS: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(cidr), what)
    for cidr, what in (
        ("0.0.0.0/8", "'this network'"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (where cloud metadata lives)"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.31.196.0/24", "AS112"),
        ("192.52.193.0/24", "AMT"),
        ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("192.175.48.0/24", "AS112"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # 255.255.255.255 (broadcast) included
    )
)

# IANA IPv6 Special-Purpose Address Registry, plus deprecated and multicast space.
_IPV6_BLOCKS: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(cidr), what)
    for cidr, what in (
        ("::1/128", "loopback"),
        ("::/128", "unspecified"),
        ("::/96", "deprecated IPv4-compatible"),
        ("::ffff:0:0:0/96", "IPv4-translated"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("100:0:0:1::/64", "dummy prefix"),
        ("2001::/32", "Teredo"),
        ("2001::/23", "IETF protocol assignments"),
        ("2001:db8::/32", "documentation"),
        ("2002::/16", "6to4"),
        ("2620:4f:8000::/48", "AS112"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing SIDs"),
        ("fc00::/7", "unique local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "deprecated site-local"),
        ("ff00::/8", "multicast"),
    )
)
# The only IPv6 space allocated for global unicast; the rest is unassigned or special.
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def _low32(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)


def _carried(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    # For the message only: local-use NAT64 may put the IPv4 address elsewhere
    # (RFC 6052 allows shorter prefixes); the last 32 bits are what is shown.
    if any(address in n for n in (_MAPPED, _NAT64, _TRANSLATED, _LOCAL_NAT64)):
        return _low32(address)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client; the server is the other half
    if address in _COMPATIBLE and int(address) > 1:
        return _low32(address)
    return None


def refusal(address: Address) -> str | None:
    """Why connectors may not reach ``address`` (a few words), or None when it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _MAPPED or address in _NAT64:
            carried = _low32(address)
            why = refusal(carried)
            form = "IPv4-mapped" if address in _MAPPED else "NAT64"
            return None if why is None else f"{form} {carried}, {why}"
        for network, what in _IPV6_BLOCKS:
            if address in network:
                inner = _carried(address)
                return f"{what} (carrying {inner})" if inner else what
        if address not in _GLOBAL_UNICAST:
            return "not global unicast"
    else:
        for block, what in _IPV4_BLOCKS:
            if address in block:
                return what
    return None if address.is_global else "not globally reachable"


def is_public(address: Address) -> bool:
    """Whether connectors may reach ``address`` without the allowlist naming it."""
    return refusal(address) is None
