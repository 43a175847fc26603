"""The MCP door's ``Host`` check answers the address a request arrived on
(``doors/mcp/transports/guard.py``).

Under a bare ``hypercorn 'agentws.app:create_app()'`` agentws cannot see
where Hypercorn binds; each request's ASGI ``scope["server"]`` says where it
arrived. Its address literal (and on loopback the loopback names) on that
port are answered; any other name is refused still (DNS rebinding), and
``AGENTWS_ALLOWED_HOSTS`` replaces it all.
"""

from __future__ import annotations

import pytest

from agentws.doors.mcp.transports.guard import HostOriginGuard
from agentws.settings.config import Settings

# Neither AGENTWS_BIND nor AGENTWS_BASE_URL: the defaults say 127.0.0.1:8080.
UNSET = HostOriginGuard.from_settings(Settings.from_env({}))


@pytest.mark.parametrize(
    ("server", "host"),
    [
        (("127.0.0.1", 8000), "127.0.0.1:8000"),
        (("127.0.0.1", 8000), "localhost:8000"),
        (("127.0.0.1", 8000), "[::1]:8000"),
        (("::1", 8000), "[::1]:8000"),
        (("192.0.2.7", 8000), "192.0.2.7:8000"),
        (("::ffff:192.0.2.7", 8000), "192.0.2.7:8000"),
        (("192.0.2.7", 80), "192.0.2.7"),
    ],
)
def test_the_address_a_request_arrived_on_is_answered(server: tuple[str, int], host: str) -> None:
    assert UNSET.refusal(host, None) is not None  # refused, not knowing where it arrived
    assert UNSET.refusal(host, None, server) is None


@pytest.mark.parametrize(
    ("server", "host"),
    [
        (("127.0.0.1", 8000), "evil.example:8000"),  # a rebinding page's name
        (("127.0.0.1", 8000), "127.0.0.1:9000"),  # another port
        (("192.0.2.7", 8000), "localhost:8000"),  # loopback names only on loopback
        (("192.0.2.7", 8000), "192.0.2.8:8000"),
        (None, "127.0.0.1:8000"),  # no server address (a Unix socket)
        (("/run/agentws.sock", None), "127.0.0.1:8000"),
    ],
)
def test_other_hosts_are_refused_still(server: tuple[str, int] | None, host: str) -> None:
    refusal = UNSET.refusal(host, None, server)
    assert refusal is not None
    assert "is not allowed here" in refusal


def test_configured_hosts_replace_it() -> None:
    guard = HostOriginGuard.from_settings(
        Settings.from_env({"AGENTWS_ALLOWED_HOSTS": "agents.example.com"})
    )
    assert guard.refusal("127.0.0.1:8000", None, ("127.0.0.1", 8000)) is not None
    assert guard.refusal("agents.example.com", None, ("127.0.0.1", 8000)) is None
