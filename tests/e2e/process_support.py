"""agentws servers as separate processes (`python -m agentws serve`): crash and scale-out tests."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import httpx2
import trio

from tests.support import clean_env

__all__ = ["Server", "alive", "free_port", "serve_process", "wait_ready"]

# From exec to answering /readyz: imports, opening the store, binding.
STARTUP_S = 30.0
REQUEST_S = 15.0
POLL_S = 0.02


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@attrs.define
class Server:
    process: trio.Process
    base_url: str
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text()


@asynccontextmanager
async def serve_process(
    tmp_path: Path, database_url: str, instance_id: str, **env: str
) -> AsyncIterator[Server]:
    """``python -m agentws serve`` on a free port, once ``/readyz`` answers 200.

    ``env`` adds to the server's environment (``AGENTWS_*`` settings).

    Resource handling:
        A process still running when the block exits is killed and reaped.
    """
    port = free_port()
    environment = clean_env(
        AGENTWS_DATABASE_URL=database_url,
        AGENTWS_BIND=f"127.0.0.1:{port}",
        AGENTWS_INSTANCE_ID=instance_id,
        **env,
    )
    stdout_path = tmp_path / f"{instance_id}.stdout"
    stderr_path = tmp_path / f"{instance_id}.stderr"
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "agentws", "serve"],
            stdout=stdout,
            stderr=stderr,
            cwd=tmp_path,
            env=environment,
        )
    server = Server(process, f"http://127.0.0.1:{port}", stderr_path)
    try:
        await wait_ready(server)
        yield server
    finally:
        with trio.move_on_after(5.0, shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()


async def wait_ready(server: Server) -> None:
    async with httpx2.AsyncClient(timeout=REQUEST_S) as client:
        with trio.fail_after(STARTUP_S):
            while True:
                assert server.process.returncode is None, (
                    f"serve exited ({server.process.returncode}) before it was ready:\n"
                    f"{server.stderr()}"
                )
                try:
                    response = await client.get(f"{server.base_url}/readyz")
                except httpx2.TransportError:
                    pass
                else:
                    if response.status_code == 200:
                        return
                await trio.sleep(POLL_S)


def alive(servers: list[Server]) -> Callable[[str], None]:
    """For :func:`~tests.e2e.polling.wait_until`: give up at once if one of ``servers`` exited."""

    def check(what: str) -> None:
        for server in servers:
            assert server.process.returncode is None, (
                f"serve exited ({server.process.returncode}) while waiting for {what}:\n"
                f"{server.stderr()}"
            )

    return check
