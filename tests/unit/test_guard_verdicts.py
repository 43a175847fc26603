"""The MCP door remembers its Host/Origin guard's verdicts (``doors/mcp/transports/endpoint.py``).

Clients send the same ``Host`` and ``Origin`` with every request, and the
guard's verdict is a function of them and the address the request arrived
on: the door asks the guard once per such triple, and answers exactly as
the guard does, refusals included, with a bounded memory.
"""

from __future__ import annotations

import attrs
import pytest

from agentws.doors.mcp.transports.endpoint import GuardVerdicts
from agentws.doors.mcp.transports.guard import HostOriginGuard
from agentws.settings.config import Settings

GUARD = HostOriginGuard.from_settings(Settings.from_env({"AGENTWS_BIND": "127.0.0.1:8000"}))

CASES = [
    ("127.0.0.1:8000", None, ("127.0.0.1", 8000)),
    ("localhost:8000", "http://localhost:6274", ("127.0.0.1", 8000)),
    ("evil.example:8000", None, ("127.0.0.1", 8000)),  # a rebinding page's name
    ("127.0.0.1:8000", "https://evil.example", ("127.0.0.1", 8000)),
    ("127.0.0.1:9000", None, ("127.0.0.1", 9000)),  # the port it arrived on
    ("127.0.0.1:9000", None, None),  # no address (a Unix socket)
    (None, None, ("127.0.0.1", 8000)),  # no Host at all
    ("127.0.0.1:9001", None, ["127.0.0.1", 9001]),  # a server giving a list
]


@attrs.define
class _Counting:
    """A guard that counts the questions it is asked."""

    guard: HostOriginGuard
    asked: int = 0

    def refusal(self, host: str | None, origin: str | None, server: object = None) -> str | None:
        self.asked += 1
        return self.guard.refusal(host, origin, server)


@pytest.mark.parametrize(("host", "origin", "server"), CASES)
def test_the_verdict_is_the_guards(host: str | None, origin: str | None, server: object) -> None:
    verdicts = GuardVerdicts(GUARD)
    expected = GUARD.refusal(host, origin, server)
    assert verdicts.refusal(host, origin, server) == expected
    assert verdicts.refusal(host, origin, server) == expected  # remembered, unchanged


def test_each_triple_is_asked_once() -> None:
    counting = _Counting(GUARD)
    verdicts = GuardVerdicts(counting)
    for _ in range(3):
        for case in CASES:
            verdicts.refusal(*case)
    assert counting.asked == len(CASES)


def test_an_address_that_cannot_be_remembered_is_asked_every_time() -> None:
    counting = _Counting(GUARD)
    verdicts = GuardVerdicts(counting)
    odd = ("127.0.0.1", {"port": 8000})  # no ASGI server gives this; it is still answered
    for _ in range(2):
        assert verdicts.refusal("127.0.0.1:8000", None, odd) == GUARD.refusal(
            "127.0.0.1:8000", None, odd
        )
    assert counting.asked == 2


def test_memory_is_bounded() -> None:
    verdicts = GuardVerdicts(GUARD, most=8)
    for n in range(100):
        assert verdicts.refusal(f"host{n}.example:8000", None, ("127.0.0.1", 8000)) is not None
        assert len(verdicts) <= 8
    assert verdicts.refusal("127.0.0.1:8000", None, ("127.0.0.1", 8000)) is None
