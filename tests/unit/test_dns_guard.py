"""The tests' own guard: no test asks DNS for a name (``tests/dns_guard``).

Loopback names and address literals resolve; any other lookup, in the test
process (trio's resolver too) or in a Python subprocess it starts, is
answered "name not known" at once and logged, which fails the test that
made it (``tests/conftest.py``). Here the log is redirected to a file of
the test's own, so the lookups made on purpose fail nothing.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.dns_guard.no_public_dns import LOG_VARIABLE, may_resolve
from tests.support import clean_env


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lookups.log"
    monkeypatch.setenv(LOG_VARIABLE, str(path))
    return path


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST.", "ops.localhost", "127.0.0.1", "::1", "[::1]", "", None]
)
def test_loopback_names_and_addresses_may_resolve(host: str | None) -> None:
    assert may_resolve(host)
    assert may_resolve(socket.gethostname())


@pytest.mark.parametrize("host", ["api.github.com", "shop.example.com", b"hooks.slack.com", "db"])
def test_other_names_may_not(host: str | bytes) -> None:
    assert not may_resolve(host)


def test_a_lookup_in_the_test_is_refused_at_once_and_logged(log: Path) -> None:
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("api.github.com", 443)
    with pytest.raises(socket.gaierror):
        socket.gethostbyname("shop.example.com")
    assert socket.getaddrinfo("127.0.0.1", 80)[0][4][0] == "127.0.0.1"
    text = log.read_text()
    assert "api.github.com" in text
    assert "shop.example.com" in text


async def test_trios_resolver_is_guarded(log: Path) -> None:
    with pytest.raises(socket.gaierror):
        await trio.socket.getaddrinfo("hooks.slack.com", 443)
    # An address literal still resolves (trio's numeric-only lookup first).
    assert (await trio.socket.getaddrinfo("127.0.0.1", 80))[0][4][0] == "127.0.0.1"
    assert "hooks.slack.com" in await trio.Path(log).read_text()


def test_a_lookup_in_a_python_subprocess_is_logged_too(log: Path) -> None:
    program = "import socket\ntry:\n    socket.getaddrinfo('api.stripe.com', 443)\n"
    program += "except OSError:\n    pass"
    subprocess.run([sys.executable, "-c", program], env=clean_env(), check=True, timeout=60)
    assert "api.stripe.com" in log.read_text()
