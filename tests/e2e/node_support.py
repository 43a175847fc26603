"""Node.js for the interop tests: the ``node`` executable and the locked npm packages.

``tests/node/package-lock.json`` pins Node's MCP SDK and the third-party
``server-everything``; ``scripts/test`` installs them (``npm ci``). Without
them the tests that need them fail, never skip: an interop check that
quietly does not run is worse than none.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
import trio

NODE_DIR = Path(__file__).resolve().parent.parent / "node"


def require_node(package: str) -> str:
    """The ``node`` executable, with ``package`` installed as locked; fails the test otherwise."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not on PATH: install Node.js 20 or newer, then run scripts/test "
            "(it installs tests/node with `npm ci`)",
            pytrace=False,
        )
    require_package(package)
    return node


def require_package(package: str) -> Path:
    """Where the npm ``package`` is installed as locked in tests/node; fails the test otherwise."""
    installed = NODE_DIR / "node_modules" / package / "package.json"
    if not installed.is_file():
        pytest.fail(
            f"{package} is not installed in {NODE_DIR}: run scripts/test "
            "(it runs `npm ci` there), or `npm ci` in tests/node",
            pytrace=False,
        )
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())
    locked = lock["packages"][f"node_modules/{package}"]["version"]
    version = json.loads(installed.read_text())["version"]
    if version != locked:
        pytest.fail(
            f"{NODE_DIR / 'node_modules'} holds {package} {version}, the lock file says "
            f"{locked}: run scripts/test (or `npm ci` in tests/node)",
            pytrace=False,
        )
    return installed.parent


def free_port() -> int:
    """A TCP port free on loopback just now (for servers that take a port, not a socket)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Lines:
    """Lines of a child's stdout, read as they come."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""

    async def next(self) -> str | None:
        """The next line without its newline; None at the end of the stream."""
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some()
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()
