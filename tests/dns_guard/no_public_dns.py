"""No test asks DNS for a name: only loopback names and address literals resolve.

The tests run without internet, and a lookup of a public name
(``api.github.com``, ``hooks.slack.com``, ``shop.example.com``) either hangs
on a resolver that is not there or answers differently on each machine. So
:func:`install` wraps :func:`socket.getaddrinfo` (what trio, anyio, asyncio
and httpx2 resolve with) and :func:`socket.gethostbyname`: a lookup of any
other name is written to the file named by :data:`LOG_VARIABLE` (the test
process reads it after each test, see ``tests/conftest.py``) and answered
at once with "name not known", as an offline machine would.

Loaded twice: by ``tests/conftest.py`` in every test process (xdist workers
too), and by ``sitecustomize`` in this folder, which ``tests/conftest.py``
puts first on ``PYTHONPATH`` so that Python subprocesses the tests start
(``agentws serve``, the CLI) are guarded as well. So this module imports
nothing of the tests' or agentws's own.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["LOG_VARIABLE", "install", "may_resolve"]

#: Where lookups of other names are written, one line each (set by tests/conftest.py).
LOG_VARIABLE = "TESTS_DNS_GUARD_LOG"
# Set on the socket module once wrapped: the two copies of this module
# (imported as ``tests.dns_guard.no_public_dns`` and as ``no_public_dns``) wrap once.
_MARK = "_tests_dns_guard"
# Frames of the lookup's stack written with it: enough to find the caller.
_STACK_FRAMES = 30
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def may_resolve(host: object) -> bool:
    """Whether looking ``host`` up asks no DNS server: a loopback name or an address."""
    if host is None:
        return True
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
    name = name.strip().rstrip(".").lower()
    if name in ("", "localhost", socket.gethostname().lower()) or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name.strip("[]").partition("%")[0])
    except ValueError:
        return False
    return True


def _record(host: object) -> None:
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    # The frames of this checkout (a lookup in a worker thread has none: the name says it).
    frames = [
        frame
        for frame in traceback.extract_stack(limit=_STACK_FRAMES)[:-2]
        if frame.filename.startswith(_CHECKOUT) and "/site-packages/" not in frame.filename
    ]
    where = "".join(traceback.format_list(frames)).replace("\n", "\n    ")
    with open(path, "a", encoding="utf-8") as log:
        log.write(f"pid {os.getpid()} looked up {host!r}\n    {where}\x00\n")


def _refusing(lookup: Callable[..., Any], host_arg: str) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        host = kwargs.get(host_arg, args[0] if args else None)
        flags = kwargs.get("flags", args[5] if len(args) > 5 else 0)
        if not (may_resolve(host) or int(flags) & socket.AI_NUMERICHOST):
            _record(host)
            raise socket.gaierror(
                socket.EAI_NONAME, f"{host!r}: tests may not look up names in DNS"
            )
        return lookup(*args, **kwargs)

    guarded.__wrapped__ = lookup  # type: ignore[attr-defined]
    return guarded


def install() -> None:
    """Wrap the resolver functions of :mod:`socket` (once per process)."""
    if getattr(socket, _MARK, False):
        return
    socket.getaddrinfo = _refusing(socket.getaddrinfo, "host")
    socket.gethostbyname = _refusing(socket.gethostbyname, "hostname")
    socket.gethostbyname_ex = _refusing(socket.gethostbyname_ex, "hostname")
    setattr(socket, _MARK, True)
