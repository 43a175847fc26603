"""The connector allowlist: hosts and networks connectors may reach though not public.

Parsed from ``AGENTWS_CONNECTOR_ALLOWLIST`` by the settings; consulted by the
URL guard (:mod:`agentws.connectors.url_guard`) before it refuses a private
or special-purpose address. A pure record: no I/O, nothing resolved here.
"""

from __future__ import annotations

import ipaddress
from fnmatch import fnmatchcase

import attrs

__all__ = ["Address", "Allowlist", "Network"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@attrs.frozen
class Allowlist:
    """Hosts and networks connectors may reach even though they are not public."""

    hosts: tuple[str, ...] = ()
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, value: str) -> Allowlist:
        """Parse ``AGENTWS_CONNECTOR_ALLOWLIST``.

        Raises:
            ValueError: naming the entry that is neither a host pattern nor a CIDR.
        """
        hosts: list[str] = []
        networks: list[Network] = []
        for entry in (item.strip().lower() for item in value.split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            label = entry.removeprefix("*.")
            if not label or not all(c.isalnum() or c in "-." for c in label):
                raise ValueError(f"{entry!r} is neither a host name pattern nor a CIDR")
            hosts.append(entry)
        return cls(tuple(hosts), tuple(networks))

    def __bool__(self) -> bool:
        return bool(self.hosts or self.networks)

    def names_host(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(fnmatchcase(host, pattern) for pattern in self.hosts)

    def names_address(self, address: Address) -> bool:
        return any(address in network for network in self.networks)
