"""Two agentws instances on PostgreSQL behind nginx, configured as ``deploy/nginx-agentws.conf``.

nginx (Debian's package, run unprivileged from a directory of its own)
routes requests that name an MCP session to the session's owner and the
rest to either instance; MCP clients over both transports work through it,
with their sessions spread over both instances.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import httpx2
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from agentws.store import open_store
from tests.e2e.mcp_support import seed
from tests.e2e.process_support import Server, free_port, serve_process
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS
from tests.support import fresh_schema

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)]

CONFIG = Path(__file__).parents[2] / "deploy" / "nginx-agentws.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def _nginx_conf(directory: Path, port: int, a: Server, b: Server) -> Path:
    """The deploy snippet with these instances' ports, in a main config of its own."""
    snippet = CONFIG.read_text()
    for old, new in (
        ("127.0.0.1:8081", a.base_url.removeprefix("http://")),
        ("127.0.0.1:8082", b.base_url.removeprefix("http://")),
        ("agentws-1 ", "inst-a "),
        ("agentws-2 ", "inst-b "),
        ("listen 80;", f"listen 127.0.0.1:{port};"),
    ):
        assert old in snippet, f"{old!r} is no longer in {CONFIG}"
        snippet = snippet.replace(old, new)
    (directory / "agentws.conf").write_text(snippet)
    temp = directory / "temp"
    temp.mkdir()
    main = directory / "nginx.conf"
    main.write_text(
        f"""
daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {directory}/agentws.conf;
}}
"""
    )
    return main


async def _serve_nginx(directory: Path, config: Path, port: int, nursery: trio.Nursery) -> None:
    command = [NGINX, "-c", str(config), "-p", str(directory)]
    await nursery.start(functools.partial(trio.run_process, command, check=False))
    with trio.fail_after(10):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.02)
                continue
            await stream.aclose()
            return


async def test_mcp_clients_over_both_transports_through_nginx(tmp_path: Path) -> None:
    async with fresh_schema() as url:
        async with open_store(url) as store:
            token, _ = await seed(store, tmp_path, with_library=True)
        headers = {"Authorization": f"Bearer {token}"}
        port = free_port()
        public = {"AGENTWS_BASE_URL": f"http://127.0.0.1:{port}"}
        async with (
            serve_process(tmp_path, url, "inst-a", **public) as a,
            serve_process(tmp_path, url, "inst-b", **public) as b,
            trio.open_nursery() as nursery,
        ):
            config = _nginx_conf(tmp_path, port, a, b)
            await _serve_nginx(tmp_path, config, port, nursery)
            endpoint = f"http://127.0.0.1:{port}/mcp/g/acme/ops"
            for _ in range(4):
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=10) as http,
                    streamable_http_client(endpoint, http_client=http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    # Every request of the session reaches its owner, whichever nginx picked.
                    for _ in range(3):
                        listed = await session.list_tools()
                        assert "search_context" in {t.name for t in listed.tools}
                    found = await session.call_tool("search_context", {"query": "refund"})
                    assert not found.is_error
            # nginx spread the sessions over both instances (each logs the ones it opens).
            opened = {s.process.pid: s.stderr().count(" opened (streamable)") for s in (a, b)}
            assert all(n >= 1 for n in opened.values()), opened

            for _ in range(2):
                async with (
                    sse_client(endpoint, headers=headers) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    for _ in range(3):
                        listed = await session.list_tools()
                        assert "search_context" in {t.name for t in listed.tools}
            nursery.cancel_scope.cancel()
    errors = (tmp_path / "error.log").read_text() if (tmp_path / "error.log").exists() else ""
    assert "[error]" not in errors, errors
