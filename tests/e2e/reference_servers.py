"""The ``mcp`` sdist's reference servers, run as real upstreams of agentws's connectors.

Servers nobody here wrote do not always answer as the project's fixtures do:
the SDK's ``everything-server`` (its conformance server) and ``simple-auth``
(an OAuth-protected resource server beside its own authorization server) are
run from ``examples/servers`` of the ``mcp`` sdist, which ``scripts/test``
fetches by hash into ``.venv/mcp-reference`` (requirements/reference-servers.txt).
Without it these tests fail, never skip.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
import trio

from tests.e2e.node_support import free_port
from tests.support import clean_env

ROOT = Path(__file__).resolve().parents[2] / ".venv" / "mcp-reference" / "servers"
# A Python server starts in about a second; a loaded CI machine gets slack.
STARTUP_S = 30.0
_STOP_S = 10.0


def server_dir(name: str) -> Path:
    """Where reference server ``name`` (``everything-server``, ``simple-auth``) lives."""
    folder = ROOT / name
    if not folder.is_dir():
        pytest.fail(f"{folder} is missing: scripts/test fetches the mcp sdist's reference servers")
    return folder


async def _listening(port: int) -> None:
    with trio.fail_after(STARTUP_S):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:  # not listening yet
                await trio.sleep(0.05)
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def reference_process(
    name: str, module: str, args: Sequence[str], port: int, **env: str
) -> AsyncIterator[None]:
    """``python -m module *args`` from reference server ``name``, until it listens on ``port``;
    killed when the block ends."""
    folder = server_dir(name)
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                [sys.executable, "-m", module, *args],
                env=clean_env(PYTHONPATH=str(folder), **env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        )
        try:
            await _listening(port)
            yield
        finally:
            process.kill()
            with trio.move_on_after(_STOP_S, shield=True):
                await process.wait()
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def everything_server() -> AsyncIterator[str]:
    """The SDK's everything-server on a free loopback port: its MCP endpoint's URL."""
    port = free_port()
    async with reference_process(
        "everything-server", "mcp_everything_server", ["--port", str(port)], port
    ):
        yield f"http://127.0.0.1:{port}/mcp"


@asynccontextmanager
async def simple_auth_servers(auth_server: str | None = None) -> AsyncIterator[str]:
    """The SDK's simple-auth example: its authorization server and its resource server,
    two processes on free loopback ports; the resource server's MCP URL (``localhost``,
    as both name themselves). ``auth_server``: another authorization server for the
    resource server (one that answers its introspection), instead of simple-auth's own."""
    as_port, rs_port = free_port(), free_port()
    async with AsyncExitStack() as stack:
        if auth_server is None:
            await stack.enter_async_context(
                reference_process(
                    "simple-auth", "mcp_simple_auth.auth_server", ["--port", str(as_port)], as_port
                )
            )
            auth_server = f"http://localhost:{as_port}"
        await stack.enter_async_context(
            reference_process(
                "simple-auth",
                "mcp_simple_auth",
                [
                    "--port",
                    str(rs_port),
                    "--auth-server",
                    auth_server,
                    "--transport",
                    "streamable-http",
                ],
                rs_port,
            )
        )
        yield f"http://localhost:{rs_port}/mcp"
