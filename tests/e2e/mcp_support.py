"""A real agentws server on a loopback port, seeded for MCP tests, and SDK clients for it.

The server runs in-process (``agentws.server.serve`` with Hypercorn's trio
worker, on port 0) so tests can look at the running service, for instance to
count its sessions; every byte still goes over a real TCP connection.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import h11
import httpx2
import trio
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from agentws.server import serve
from agentws.service import Runtime, run_service
from agentws.settings.config import Settings
from agentws.store.union import Store
from agentws.workspaces.admin import create_group, create_token, create_workspace, endpoint_url
from tests.e2e.loop_steps import serving
from tests.support import migrated_sqlite_url

GRACE_S = 3.0
# Every request of these tests is answered at once; this bounds a hang.
REQUEST_S = 15.0
#: The stateless revision.
MODERN = "2026-07-28"
ACTOR = "test"

HANDBOOK_DOCS = {
    "refunds": (
        "Refund policy",
        "# Refund policy\n\nCustomers may ask for a refund within 30 days of purchase. "
        "Refunds go back to the original payment method within five business days.\n",
        "on_demand",
    ),
    "onboarding": (
        "Onboarding checklist",
        "# Onboarding checklist\n\nCreate accounts, pair with a buddy, read the handbook.\n",
        "spine",
    ),
    "salaries": (
        "Salary bands",
        "# Salary bands\n\nConfidential: refund of expenses is handled by finance.\n",
        "never",
    ),
}
SKILL_PROMPT = "Triage the incoming issue: label it, find an owner, and reply politely."
SKILL_ASSETS = {
    "checklist.md": "- label\n- owner\n- reply\n",
    "data/labels.json": '["bug", "feature"]\n',
}


@attrs.frozen
class Running:
    """A serving agentws and what the tests seeded into it."""

    base_url: str
    runtime: Runtime
    token: str
    other_token: str

    @property
    def store(self) -> Store:
        return self.runtime.store

    @property
    def url(self) -> str:
        return endpoint_url(self.base_url, "acme", "ops")

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}


def settings_for(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env(
        {
            "AGENTWS_BIND": "127.0.0.1:0",
            "AGENTWS_DATABASE_URL": env.pop("database_url", f"sqlite:///{tmp_path / 'mcp.db'}"),
            "AGENTWS_SHUTDOWN_GRACE_S": str(GRACE_S),
            "AGENTWS_INSTANCE_ID": "test-1",
            **env,
        }
    )


async def seed(store: Store, tmp_path: Path, *, with_library: bool = True) -> tuple[str, str]:
    """Workspace ``acme`` with groups ``ops`` (library, docs, skill) and ``sales``; two tokens."""
    await create_workspace(store, "acme", name="Acme", actor=ACTOR)
    await create_group(store, "acme", "ops", name=None, actor=ACTOR)
    await create_group(store, "acme", "sales", name=None, actor=ACTOR)
    token = await create_token(store, "acme", "ops", name="tests", actor=ACTOR)
    other = await create_token(store, "acme", "sales", name="sales", actor=ACTOR)
    if with_library:
        from agentws import libraries

        await libraries.create_library(store, "acme", "handbook", name="Handbook", actor=ACTOR)
        await libraries.attach_library(store, "acme", "ops", "handbook", actor=ACTOR)
        for slug, (title, body, policy) in HANDBOOK_DOCS.items():
            await libraries.add_document(
                store,
                "acme",
                "handbook",
                slug=slug,
                title=title,
                body=body,
                mime_type="text/markdown",
                policy=policy,
                actor=ACTOR,
            )
        folder = tmp_path / "triage"
        (folder / "data").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: triage\ndescription: Triage an incoming issue\n---\n{SKILL_PROMPT}\n"
        )
        for name, text in SKILL_ASSETS.items():
            (folder / name).write_text(text)
        await libraries.add_skill(store, "acme", "handbook", folder, actor=ACTOR)
    return token.secret, other.secret


@asynccontextmanager
async def running(
    tmp_path: Path, *, with_library: bool = True, model: Any = None, **env: str
) -> AsyncIterator[Running]:
    """Serve agentws on a free loopback port until the block ends, then shut it down.

    ``model`` is the agent's model for webhook runs (default: the offline model).
    """
    if "database_url" not in env:
        env["database_url"] = await migrated_sqlite_url(tmp_path / "mcp.db")
    settings = settings_for(tmp_path, **env)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        # Its tasks are the service's: the ones tests/e2e/loop_steps.py watches.
        with serving():
            runtime: Runtime = await nursery.start(
                functools.partial(run_service, settings, model=model)
            )
        token, other = await seed(runtime.store, tmp_path, with_library=with_library)
        with serving():
            binds = await nursery.start(
                functools.partial(serve, settings, shutdown_trigger=stop.wait, runtime=runtime)
            )
        try:
            yield Running(binds[0], runtime, token, other)
        finally:
            stop.set()


@asynccontextmanager
async def sdk_session(
    server: Running, transport: str, *, token: str | None = None, **client: Any
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session over ``sse`` or ``streamable`` HTTP.

    ``client`` goes to :class:`ClientSession` (callbacks for elicitation, logging...).
    """
    headers = server.headers(token)
    if transport == "sse":
        async with (
            sse_client(server.url, headers=headers) as (read, write),
            ClientSession(read, write, **client) as session,
        ):
            with trio.fail_after(REQUEST_S):
                await session.initialize()
            yield session
    else:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=REQUEST_S) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write, **client) as session,
        ):
            with trio.fail_after(REQUEST_S):
                await session.initialize()
            yield session


async def queued_call(server: Running, tool: str, arguments: dict[str, Any]) -> str:
    """Call a write tool over Streamable HTTP; the id of the approval it was queued as."""
    async with sdk_session(server, "streamable") as session:
        queued = await session.call_tool(tool, arguments)
    data = queued.structured_content or {}
    assert data.get("status") == "queued", queued
    return str(data["approval_id"])


ACCEPT = "application/json, text/event-stream"


async def raw_session(
    http: httpx2.AsyncClient, server: Running, version: str = "2025-06-18"
) -> dict[str, str]:
    """Initialize a session with plain HTTP: the headers of its next requests.

    For tests that send bodies made beforehand, or read answers an SDK
    client would check itself.
    """
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    headers = {**server.headers(), "Accept": ACCEPT}
    response = await http.post(server.url, json=initialize, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == version
    return {
        **headers,
        "Content-Type": "application/json",
        "Mcp-Session-Id": response.headers["mcp-session-id"],
    }


def jsonrpc_answer(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a response: its JSON body, or its SSE stream's last message."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
        return dict(json.loads([d for d in data if d][-1]))
    return dict(response.json())


def result_text(answer: dict[str, Any]) -> str:
    """The text of a ``tools/call`` answer's content."""
    return " ".join(c.get("text", "") for c in answer["result"]["content"])


@asynccontextmanager
async def modern_client(
    server: Running, *, token: str | None = None, mode: str = MODERN, **options: Any
) -> AsyncIterator[Client]:
    """The SDK's high-level client of the group endpoint in ``mode`` (default: 2026-07-28).

    ``options`` go to :class:`~mcp.client.client.Client` (``elicitation_callback``...).
    """
    async with httpx2.AsyncClient(headers=server.headers(token), timeout=REQUEST_S) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, mode=mode, **options) as client:
            yield client


@attrs.define
class RawStream:
    """An HTTP response read over a plain TCP connection with h11.

    For SSE streams: tests read exactly as far as they want, or stop reading
    altogether (a stalled client), without a client library's buffering.
    """

    status: int
    headers: dict[str, str]
    _stream: trio.SocketStream
    _conn: h11.Connection
    _buffer: bytes = b""
    ended: bool = False

    async def _more(self) -> bool:
        while True:
            event = self._conn.next_event()
            if event is h11.NEED_DATA:
                data = await self._stream.receive_some(65536)
                self._conn.receive_data(data)
                continue
            if isinstance(event, h11.Data):
                self._buffer += bytes(event.data)
                return True
            self.ended = True
            return False

    async def read_line(self) -> str | None:
        """The next line (without its newline), or None once the response has ended."""
        while b"\n" not in self._buffer:
            if self.ended or not await self._more():
                return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode().rstrip("\r")

    def dropped_by_server(self) -> bool:
        """Whether the server's end of this connection is gone (Linux: ``/proc/net/tcp``).

        Checked without reading, since reading would unblock a stalled server.
        """
        local_port = self._stream.socket.getsockname()[1]
        server_port = self._stream.socket.getpeername()[1]
        wanted = (f"{server_port:04X}", f"{local_port:04X}")
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            ends = (fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1])
            if ends == wanted:
                return False
        return True

    async def read_body(self) -> bytes:
        """The rest of the response, whole (a JSON body has no final newline)."""
        while not self.ended and await self._more():
            pass
        body, self._buffer = self._buffer, b""
        return body

    async def read_to_end(self) -> list[str]:
        lines = []
        while (line := await self.read_line()) is not None:
            lines.append(line)
        return lines


@asynccontextmanager
async def raw_request(
    server: Running, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> AsyncIterator[RawStream]:
    """Send one request on a fresh connection; yield its response once the head has arrived."""
    host, port = server.base_url.removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        conn = h11.Connection(h11.CLIENT)
        all_headers = [("Host", f"{host}:{port}"), *headers.items()]
        if body:
            all_headers.append(("Content-Length", str(len(body))))
        await stream.send_all(
            conn.send(h11.Request(method=method, target=path, headers=all_headers)) or b""
        )
        await stream.send_all((conn.send(h11.Data(data=body)) if body else b"") or b"")
        await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
                continue
            break
        assert isinstance(event, h11.Response), event
        response_headers = {k.decode().lower(): v.decode() for k, v in event.headers}
        yield RawStream(event.status_code, response_headers, stream, conn)


@asynccontextmanager
async def legacy_stream(
    server: Running, token: str | None = None
) -> AsyncIterator[tuple[str, RawStream]]:
    """A legacy SSE stream on its own connection: session id, and the stream past ``endpoint``."""
    headers = {**server.headers(token), "Accept": "text/event-stream"}
    async with raw_request(server, "GET", "/mcp/g/acme/ops", headers) as response:
        assert response.status == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert await response.read_line() == "event: endpoint"
        data = await response.read_line()
        assert data is not None
        assert data.startswith("data: /mcp/g/acme/ops/messages?session_id=")
        session_id = data.rsplit("=", 1)[1]
        assert response.headers["mcp-session-id"] == session_id
        assert await response.read_line() == ""
        yield session_id, response
