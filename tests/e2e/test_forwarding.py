"""Requests for an MCP session that reach another instance are forwarded to its owner.

Two agentws processes on one PostgreSQL schema, and no session-aware load
balancer in front: the clients' transport sends each request to the next
instance in turn, as a round-robin balancer would.

- A Streamable HTTP session opened on one instance works whichever instance
  its requests reach (POSTs, the standalone GET stream, DELETE).
- A legacy SSE stream held on one instance gets the answers to the POSTs the
  client sends to the other.
- A session whose instance was killed answers 404 (the client initializes
  again), as does a session of an instance nobody knows, and a forwarded
  request is never forwarded a second time.
- A stateless (2026-07-28) call waiting for its client's input on one
  instance continues when the client's next round reaches the other.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from agentws.domain.models import Capability
from agentws.store import open_store
from tests.e2e.mcp_support import MODERN, seed
from tests.e2e.process_support import Server, serve_process
from tests.e2e.relay_support import Remote, remote_server
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, attach_remote
from tests.support import migrated_schema

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)]

ACCEPT = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "forwarding-test", "version": "1"},
    },
}


def _port(server: Server) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


class _Balancer(httpx2.AsyncBaseTransport):
    """A load balancer that knows nothing of sessions: ``route`` picks each request's instance."""

    def __init__(self, route: Callable[[httpx2.Request], int]) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._route = route
        #: (method, port it went to, the session it named) of every request.
        self.sent: list[tuple[str, int, str | None]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self._route(request)
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        session = request.headers.get("mcp-session-id") or request.url.params.get("session_id")
        self.sent.append((request.method, port, session))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _round_robin(ports: list[int]) -> Callable[[httpx2.Request], int]:
    turn = iter(range(1_000_000))
    return lambda request: ports[next(turn) % len(ports)]


async def _two_instances(tmp_path: Path, url: str) -> tuple[str, Any, Any]:
    async with open_store(url) as store:
        token, _ = await seed(store, tmp_path, with_library=True)
    return token, serve_process(tmp_path, url, "inst-a"), serve_process(tmp_path, url, "inst-b")


async def test_a_streamable_session_works_whichever_instance_its_requests_reach(
    tmp_path: Path,
) -> None:
    async with migrated_schema() as url:
        token, first, second = await _two_instances(tmp_path, url)
        async with first as a, second as b:
            balancer = _Balancer(_round_robin([_port(a), _port(b)]))
            async with (
                httpx2.AsyncClient(
                    transport=balancer, headers={"Authorization": f"Bearer {token}"}, timeout=10
                ) as http,
                streamable_http_client(f"{a.base_url}/mcp/g/acme/ops", http_client=http) as (
                    read,
                    write,
                ),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for _ in range(4):
                    listed = await session.list_tools()
                    assert "search_context" in {t.name for t in listed.tools}
                found = await session.call_tool("search_context", {"query": "refund"})
                assert not found.is_error
                assert "Refund policy" in str(found.content)
                prompt = await session.get_prompt("triage")
                assert prompt.messages
            owner_id = next(s for _, _, s in balancer.sent if s).partition(".")[0]
            owner, other = (a, b) if owner_id == "inst-a" else (b, a)
            named = [(m, p) for m, p, s in balancer.sent if s]
            # Requests of the session reached the instance that does not hold it, and worked.
            assert ("POST", _port(other)) in named, balancer.sent
            assert any(m == "DELETE" for m, _ in named), balancer.sent
            assert owner.stderr().count(" opened (streamable)") == 1
            assert " opened (streamable)" not in other.stderr()
            assert "Traceback" not in a.stderr() + b.stderr()


async def test_a_legacy_stream_gets_the_answers_to_posts_sent_to_the_other_instance(
    tmp_path: Path,
) -> None:
    async with migrated_schema() as url:
        token, first, second = await _two_instances(tmp_path, url)
        async with first as a, second as b:
            # The stream goes to A; every POST goes to B.
            balancer = _Balancer(lambda r: _port(a) if r.method == "GET" else _port(b))

            def client_factory(
                headers: dict[str, str] | None = None,
                timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None,
            ) -> httpx2.AsyncClient:
                return httpx2.AsyncClient(
                    transport=balancer, headers=headers, timeout=timeout, auth=auth
                )

            async with (
                sse_client(
                    f"{a.base_url}/mcp/g/acme/ops",
                    headers={"Authorization": f"Bearer {token}"},
                    httpx_client_factory=client_factory,
                ) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                assert "read_context_document" in {t.name for t in listed.tools}
                found = await session.call_tool("search_context", {"query": "onboarding"})
                assert "Onboarding checklist" in str(found.content)
            posts = [(p, s) for m, p, s in balancer.sent if m == "POST"]
            assert posts and all(p == _port(b) and s and s.startswith("inst-a.") for p, s in posts)
            assert " opened (sse)" in a.stderr()
            assert "Traceback" not in a.stderr() + b.stderr()


async def test_a_session_whose_instance_is_gone_answers_404(tmp_path: Path) -> None:
    async with migrated_schema() as url:
        token, first, second = await _two_instances(tmp_path, url)
        headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        async with first as a, second as b, httpx2.AsyncClient(timeout=10) as http:
            opened = await http.post(
                f"{a.base_url}/mcp/g/acme/ops", json=INITIALIZE, headers=headers
            )
            assert opened.status_code == 200, opened.text
            session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            assert session["Mcp-Session-Id"].startswith("inst-a.")
            via_b = await http.post(f"{b.base_url}/mcp/g/acme/ops", json=listing, headers=session)
            assert via_b.status_code == 200, via_b.text
            assert via_b.json()["result"]["tools"]

            # Forwarded once, never twice: B does not hold it, so it does not exist.
            hopped = {**session, "Agentws-Forwarded-By": "inst-a"}
            again = await http.post(f"{b.base_url}/mcp/g/acme/ops", json=listing, headers=hopped)
            assert again.status_code == 404
            # A session of an instance that never was.
            nobody = {**headers, "Mcp-Session-Id": "inst-z.abcdefghijklmnop"}
            unknown = await http.post(f"{b.base_url}/mcp/g/acme/ops", json=listing, headers=nobody)
            assert unknown.status_code == 404
            assert "initialize again" in unknown.json()["error"]["message"]
            # A wrong token is refused before any hop.
            wrong = {**session, "Authorization": "Bearer agws_wrong"}
            refused = await http.post(f"{b.base_url}/mcp/g/acme/ops", json=listing, headers=wrong)
            assert refused.status_code == 401

            a.process.send_signal(signal.SIGKILL)
            with trio.fail_after(5):
                await a.process.wait()
            gone = await http.post(f"{b.base_url}/mcp/g/acme/ops", json=listing, headers=session)
            assert gone.status_code == 404, gone.text
            assert gone.json()["error"]["code"] == "session_not_found"
            assert "gone" in gone.json()["error"]["message"]
            # The client initializes again, on the instance that is left.
            again = await http.post(
                f"{b.base_url}/mcp/g/acme/ops", json=INITIALIZE, headers=headers
            )
            assert again.status_code == 200
            assert again.headers["mcp-session-id"].startswith("inst-b.")
        assert "Traceback" not in b.stderr(), b.stderr()


async def test_a_stateless_call_waiting_for_input_continues_on_any_instance(
    tmp_path: Path,
) -> None:
    """2026-07-28: the round that answers a remote's question may reach the other instance."""
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}
    async with migrated_schema() as url, remote_server(Remote()) as remote:
        async with open_store(url) as store:
            token, _ = await seed(store, tmp_path, with_library=False)
            await attach_remote(store, remote, {"third_ask": Capability.READ})
        first = serve_process(tmp_path, url, "inst-a", **env)
        second = serve_process(tmp_path, url, "inst-b", **env)
        async with first as a, second as b:
            balancer = _Balancer(_round_robin([_port(a), _port(b)]))
            async with (
                httpx2.AsyncClient(
                    transport=balancer, headers={"Authorization": f"Bearer {token}"}, timeout=10
                ) as http,
                Client(
                    streamable_http_client(f"{a.base_url}/mcp/g/acme/ops", http_client=http),
                    mode=MODERN,
                    elicitation_callback=elicit,
                ) as client,
            ):
                answered = await client.call_tool("third_ask", {"who": "me"})
            assert answered.content[0].text == "accept: Ada"  # type: ignore[union-attr]
            assert asked == ["Connector 'third' asks: Your name? (me)"]
            # The question came from one instance, the answer went to the other
            # (the call and its retry are the last two requests).
            ports = [port for method, port, _ in balancer.sent if method == "POST"]
            assert ports[-1] != ports[-2], balancer.sent
            assert "Traceback" not in a.stderr() + b.stderr()
