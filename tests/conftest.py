"""Fixtures every test package may use: a SQLite URL and a fresh PostgreSQL schema.

And a guard every test runs under: no test asks DNS for a name
(:mod:`tests.dns_guard.no_public_dns`). Each test process (xdist workers
too) wraps its resolver functions, and puts ``tests/dns_guard`` first on
``PYTHONPATH`` so that the Python subprocesses tests start wrap theirs; a
lookup of anything but a loopback name or an address literal fails the test
it happened in (or, from a module's fixture, the next test that checks).

In-process, admin passwords are hashed with argon2's cheapest parameters.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import argon2
import attrs
import pytest

from agentws.admins import accounts
from tests.dns_guard import no_public_dns
from tests.support import migrated_schema_sync
from tests.tiers import THOROUGH

_GUARD_DIR = Path(__file__).resolve().parent / "dns_guard"
_NO_PUBLIC_CA = Path(__file__).resolve().parent / "no_public_ca.pem"


@attrs.define
class _Lookups:
    """This process's lookup log (a test may point the variable elsewhere for a while),
    and how far it has been read: the lookups after that are the next check's."""

    path: Path | None = None
    offset: int = 0

    def new(self) -> list[str]:
        """Lookups of names logged since the last check."""
        if self.path is None:
            return []
        with self.path.open("rb") as file:
            file.seek(self.offset)
            text = file.read()
        self.offset += len(text)
        return [entry for entry in text.decode().split("\x00\n") if entry.strip()]


_lookups = _Lookups()


def pytest_configure(config: pytest.Config) -> None:
    """Guard this process and its Python subprocesses against DNS lookups, and
    have them trust no public certificate authority (``tests/no_public_ca.pem``)."""
    os.environ["SSL_CERT_FILE"] = str(_NO_PUBLIC_CA)
    handle, log = tempfile.mkstemp(prefix="agentws-tests-dns-", suffix=".log")
    os.close(handle)
    os.environ[no_public_dns.LOG_VARIABLE] = log
    _lookups.path = Path(log)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(_GUARD_DIR) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(_GUARD_DIR), *paths) if p)
    no_public_dns.install()
    # Admin passwords hashed with argon2's cheapest parameters (the defaults
    # take about 0.2 s of CPU a hash or a check, and the suite does some 300).
    # The services started as subprocesses keep the defaults.
    accounts.password_hasher = argon2.PasswordHasher.from_parameters(argon2.profiles.CHEAPEST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Outside the thorough tier, leave out the tests marked ``thorough`` (tests/tiers.py)."""
    if THOROUGH:
        return
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        (left if item.get_closest_marker("thorough") else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the Chromium the browser tests of this process shared, if they started one."""
    browsers = sys.modules.get("tests.e2e.browser_support")
    if browsers is not None:
        browsers.close_shared_browser()


def pytest_unconfigure(config: pytest.Config) -> None:
    os.environ.pop(no_public_dns.LOG_VARIABLE, None)
    if _lookups.path is not None:
        _lookups.path.unlink(missing_ok=True)


def _fail_on_lookups() -> None:
    lookups = _lookups.new()
    if lookups:
        pytest.fail(
            "tests may not look up names in DNS (use loopback addresses, with "
            "AGENTWS_CONNECTOR_ALLOWLIST where a connector needs one):\n" + "\n".join(lookups),
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail the test if it (or a subprocess of it) asked DNS for a name.

    A trio test's async fixtures run in this phase too.
    """
    yield
    _fail_on_lookups()


@pytest.fixture(autouse=True)
def _no_public_dns() -> Iterator[None]:
    """The same after the test's sync fixtures are torn down (an error at teardown)."""
    yield
    _fail_on_lookups()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, migrated PostgreSQL schema of this test's own.

    A sync fixture, so that it may call ``trio.run``.
    """
    with migrated_schema_sync() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agentws.db'}"
