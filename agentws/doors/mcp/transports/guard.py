"""DNS-rebinding protection for the MCP door: which ``Host`` and ``Origin`` it answers.

A web page an operator visits could make their browser send requests to a
server on their own machine (DNS rebinding) or to an intranet one; the MCP
transport specification therefore requires servers to check ``Origin``, and
binding to loopback is not enough on its own. Requests with a ``Host`` or
an ``Origin`` outside the configured sets are refused with 403 before
anything else happens. Requests with no ``Origin`` (every non-browser MCP
client) pass that half of the check.

Unless ``AGENTWS_ALLOWED_HOSTS`` lists the hosts, the address a connection
arrived on (ASGI's ``scope["server"]``) is answered too: a bare
``hypercorn 'agentws.app:create_app()'`` binds where agentws cannot see,
and an address literal is never what a rebinding page sends.

Patterns are ``host``, ``host:port``, ``host:*`` (any port) and ``*`` (any)
for hosts, and ``scheme://host[:port]`` or ``scheme://host:*`` for origins.
Origins granted CORS (``AGENTWS_CORS_ORIGINS``, :mod:`agentws.doors.mcp.transports.cors`)
are allowed too.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import attrs

from agentws.settings.config import Settings

__all__ = ["HostOriginGuard", "origin_matches"]

_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def _host_port(value: str) -> tuple[str, str]:
    """Split ``host[:port]`` (``[v6]:port`` too); the port is "" when absent."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1], value[end + 2 :] if end >= 0 else ""
    host, _, port = value.partition(":")
    return host, port


def _matches(pattern: str, value: str) -> bool:
    if pattern == "*":
        return True
    pattern_host, pattern_port = _host_port(pattern)
    host, port = _host_port(value)
    if pattern_host != host:
        return False
    return pattern_port in ("*", port) or (not pattern_port and not port)


def _served_hosts(server: object) -> list[str]:
    """``Host`` values naming the address a connection arrived on (ASGI ``scope["server"]``).

    The address literal and its port; on a loopback address, the loopback
    names too. A rebinding page's requests carry the attacker's host name,
    never these.
    """
    if not isinstance(server, tuple | list) or len(server) != 2:
        return []  # no server address (a Unix socket)
    address, port = server
    try:
        ip = ipaddress.ip_address(str(address).partition("%")[0])
    except ValueError:
        return []
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # a dual-stack socket's IPv4 client
    literal = f"[{ip}]" if ip.version == 6 else str(ip)
    names = [literal, *(_LOOPBACK_HOSTS if ip.is_loopback else ())]
    hosts = [f"{name}:{port}" for name in names]
    if port in (80, 443):  # where a Host header may leave the port out
        hosts += names
    return hosts


def origin_matches(pattern: str, origin: str) -> bool:
    """Whether ``origin`` matches the pattern ``scheme://host[:port]`` (``:*``, or ``*``)."""
    if pattern == "*":
        return True
    scheme, _, rest = pattern.partition("://")
    origin_scheme, _, origin_rest = origin.lower().partition("://")
    return scheme == origin_scheme and _matches(rest, origin_rest)


@attrs.frozen
class HostOriginGuard:
    """The ``Host`` and ``Origin`` values the MCP door answers."""

    hosts: tuple[str, ...]
    origins: tuple[str, ...]
    #: Whether the address each request arrived on is answered too.
    served: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> HostOriginGuard:
        """Configured patterns, or defaults from the public URL and bind address.

        By default the door answers its public URL's host, the bind address
        (what a reverse proxy sends unless told otherwise) and, when bound
        ``localhost``/``127.0.0.1``/``[::1]`` on the bound port; browser
        origins are the public URL's and, when bound to loopback, local
        pages on any port (the MCP Inspector). The internal URL's host is
        always answered: other instances forward to it. Unless
        ``AGENTWS_ALLOWED_HOSTS`` is set, so is the address each request
        arrived on (see :meth:`refusal`).
        """
        base = urlsplit(settings.public_base_url)
        bind_host = settings.bind_host
        # Port 0 means "any free port", known only once bound: accept any.
        bind_port = str(settings.bind_port or "*")
        base_netloc = base.netloc.lower().removesuffix(":0") + (":*" if base.port == 0 else "")
        loopback = bind_host in ("127.0.0.1", "::1", "localhost") or base.hostname in (
            "127.0.0.1",
            "::1",
            "localhost",
        )
        hosts = [base_netloc]
        bind_netloc = (
            f"[{bind_host}]:{bind_port}" if ":" in bind_host else f"{bind_host}:{bind_port}"
        )
        if bind_host not in ("", "0.0.0.0", "::"):  # noqa: S104 - naming the wildcard
            hosts.append(bind_netloc)
        # A rebinding attack arrives with the attacker's host name, never a
        # loopback literal, so those are safe to accept (local tools, proxies).
        hosts += [f"{h}:{bind_port}" for h in _LOOPBACK_HOSTS]
        origins = [f"{base.scheme}://{base_netloc}"]
        if loopback:
            origins += [f"http://{h}:*" for h in _LOOPBACK_HOSTS]
        if settings.allowed_hosts:
            hosts = list(settings.allowed_hosts)
        # Other instances forward requests for this one's sessions to its
        # internal URL (agentws.doors.mcp.transports.forward); that name is never an attacker's.
        # Configured hosts replace the derived one, but not one configured too.
        if settings.internal_url or not settings.allowed_hosts:
            internal = urlsplit(settings.internal_url_for(settings.bind_port)).netloc.lower()
            hosts.append(internal.removesuffix(":0") + (":*" if internal.endswith(":0") else ""))
        # Origins granted CORS are allowed origins too (agentws.doors.mcp.transports.cors).
        allowed = (*(settings.allowed_origins or origins), *(settings.cors_origins or ()))
        return cls(
            hosts=tuple(dict.fromkeys(hosts)),
            origins=tuple(dict.fromkeys(allowed)),
            served=not settings.allowed_hosts,
        )

    def refusal(self, host: str | None, origin: str | None, server: object = None) -> str | None:
        """Why a request with these headers is refused, or None if it may proceed.

        Args:
            server: the address the request arrived on (ASGI ``scope["server"]``,
                ``(host, port)``): its literal and port (and, on loopback, the
                loopback names on that port) are answered when :attr:`served`.
        """
        hosts = [*self.hosts, *(_served_hosts(server) if self.served else ())]
        if not host or not any(_matches(p, host) for p in hosts):
            return (
                f"Host {host!r} is not allowed here; set AGENTWS_BASE_URL to the public URL "
                "or add it to AGENTWS_ALLOWED_HOSTS"
            )
        if origin and not any(origin_matches(p, origin) for p in self.origins):
            return (
                f"Origin {origin!r} is not allowed here; add it to AGENTWS_ALLOWED_ORIGINS "
                "(or AGENTWS_CORS_ORIGINS, for a page that calls from the browser)"
            )
        return None
