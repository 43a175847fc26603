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

__all__ = ["Server", "alive", "free_port", "serve_process", "serve_processes", "wait_ready"]

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
    async with serve_processes(tmp_path, database_url, instance_id, **env) as (server,):
        yield server


@asynccontextmanager
async def serve_processes(
    tmp_path: Path, database_url: str, *instance_ids: str, **env: str
) -> AsyncIterator[list[Server]]:
    """One :func:`serve_process` per instance id, started side by side; ready together.

    Each process starts on its own (imports, opening the store), so they
    are launched at once and waited for together rather than one after the other.

    Resource handling:
        The processes still running when the block exits are killed and reaped,
        also when one of them failed to start.
    """
    servers: list[Server] = []
    try:
        for instance_id in instance_ids:
            servers.append(await _spawn(tmp_path, database_url, instance_id, **env))
        async with trio.open_nursery() as nursery:
            for server in servers:
                nursery.start_soon(wait_ready, server)
        yield servers
    finally:
        with trio.move_on_after(5.0, shield=True):
            for server in servers:
                if server.process.returncode is None:
                    server.process.kill()
                await server.process.wait()


async def _spawn(tmp_path: Path, database_url: str, instance_id: str, **env: str) -> Server:
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
    return Server(process, f"http://127.0.0.1:{port}", stderr_path)


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
