"""OAuth 2.1 for MCP clients, end to end: discovery, registration, consent, tokens, revocation.

A real agentws serves on loopback. The ``mcp`` SDK's own OAuth client
provider drives the flow a desktop client runs: it meets the endpoint's
401, reads the protected-resource and authorization-server metadata,
registers itself (RFC 7591), sends the "browser" to ``/oauth/authorize``
(an administrator's httpx2 browser signs in and consents on the dashboard's
page) and exchanges the code with its PKCE verifier.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import attrs
import httpx2
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.domain.models import AuditEntry, McpToken
from agentws.domain.rules import hash_secret, utcnow
from tests.e2e.mcp_support import running
from tests.e2e.oauth_support import (
    MemoryStorage,
    admin_browser,
    connected_tools,
    sdk_oauth,
)
from tests.e2e.polling import wait_until

REQUEST_S = 15


async def test_a_group_endpoint_points_clients_to_its_metadata(tmp_path: Path) -> None:
    async with running(tmp_path) as server, httpx2.AsyncClient(base_url=server.base_url) as http:
        refused = await http.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        prm_url = f"{server.base_url}/.well-known/oauth-protected-resource/mcp/g/acme/ops"
        assert f'resource_metadata="{prm_url}"' in challenge
        assert 'scope="read write destructive"' in challenge

        prm = (await http.get(prm_url)).json()
        assert prm["resource"] == server.url
        assert prm["authorization_servers"] == [f"{server.base_url}/oauth"]
        assert prm["scopes_supported"] == ["read", "write", "destructive"]

        spoofed = await http.get(
            "/.well-known/oauth-authorization-server", headers={"Host": "evil.example"}
        )
        assert spoofed.status_code == 403  # no issuer is ever made from a foreign Host
        for path in (
            "/.well-known/oauth-authorization-server/oauth",
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration/oauth",
            "/oauth/.well-known/openid-configuration",
        ):
            metadata = await http.get(path)
            assert metadata.status_code == 200, path
            document = metadata.json()
            assert document["issuer"] == f"{server.base_url}/oauth"
            assert document["code_challenge_methods_supported"] == ["S256"]
            assert "none" in document["token_endpoint_auth_methods_supported"]
            assert document["authorization_response_iss_parameter_supported"] is True
            assert document["token_endpoint"] == f"{server.base_url}/oauth/token"
            assert document["registration_endpoint"] == f"{server.base_url}/oauth/register"
            assert document["revocation_endpoint"] == f"{server.base_url}/oauth/revoke"


async def test_the_sdk_client_registers_gets_consent_and_calls_tools(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        storage = MemoryStorage()
        tools = await connected_tools(server, sdk_oauth(browser, server.url, storage))
        assert "search_context" in tools
        assert storage.tokens is not None and storage.tokens.refresh_token
        assert storage.tokens.access_token.startswith("agwo_")
        assert storage.tokens.scope == "read write"

        # The token is a token of that group, at the scope the administrator chose.
        [issued] = [t for t in await server.store.select(McpToken) if t.oauth_client_id is not None]
        assert issued.name == "Test client"
        assert issued.scope.value == "write" and issued.expires_at is not None
        assert (
            storage.client_info is not None
            and issued.oauth_client_id == storage.client_info.client_id
        )
        consented = await server.store.select(AuditEntry, action="oauth.consent")
        assert [e.actor for e in consented] == ["admin:alice"]
        # The audit log is written in batches, a moment after the call.
        [call] = await wait_until(
            lambda: server.store.select(AuditEntry, action="tool.call"), what="the call audited"
        )
        assert call.actor == f"mcp:{issued.id}"
        assert call.detail["oauth_client"] == issued.oauth_client_id

        # A second connection reuses the stored token: no consent asked again.
        again = await connected_tools(server, sdk_oauth(browser, server.url, storage))
        assert again == tools


async def test_a_token_works_at_its_own_group_only(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        storage = MemoryStorage()
        await connected_tools(server, sdk_oauth(browser, server.url, storage))
        assert storage.tokens is not None
        bearer = {"Authorization": f"Bearer {storage.tokens.access_token}"}
        other = server.url.replace("/ops", "/sales")
        async with httpx2.AsyncClient() as http:
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            refused = await http.post(other, json=ping, headers=bearer)
        assert refused.status_code == 401
        assert 'error="invalid_token"' in refused.headers["www-authenticate"]


async def test_an_authorize_request_for_another_server_is_refused(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        from tests.e2e.oauth_support import REDIRECT, pkce_pair, register_client

        client = await register_client(browser.http)
        _, challenge = pkce_pair()
        query = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s1",
            "resource": "https://elsewhere.example/mcp/g/acme/ops",
        }
        answer = await browser.http.get("/oauth/authorize?" + urlencode(query))
        assert answer.status_code == 302
        assert "error=invalid_request" in answer.headers["location"]
        assert answer.headers["location"].startswith(REDIRECT)


async def test_the_sdk_client_refreshes_an_expired_token_without_asking_again(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        storage = MemoryStorage()
        auth = sdk_oauth(browser, server.url, storage)
        await connected_tools(server, auth)
        assert storage.tokens is not None
        first = storage.tokens
        # An hour later: the token has expired, here and as the client counts.
        stored = await server.store.find(McpToken, token_hash=hash_secret(first.access_token))
        assert stored is not None
        await server.store.update(attrs.evolve(stored, expires_at=utcnow() - timedelta(seconds=1)))
        auth.context.token_expiry_time = time.time() - 1

        await connected_tools(server, auth)
        assert storage.tokens.access_token != first.access_token
        assert storage.tokens.refresh_token != first.refresh_token
        # The refresh token did it: the administrator was not asked again.
        assert len(await server.store.select(AuditEntry, action="oauth.consent")) == 1


async def test_a_session_carries_on_when_its_token_is_refreshed(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        storage = MemoryStorage()
        auth = sdk_oauth(browser, server.url, storage)
        async with (
            httpx2.AsyncClient(auth=auth, timeout=REQUEST_S) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            with trio.fail_after(REQUEST_S):
                await session.initialize()
                assert storage.tokens is not None
                first = storage.tokens.access_token
                auth.context.token_expiry_time = time.time() - 1  # an hour later
                found = await session.call_tool("search_context", {"query": "deploy"})
            assert not found.is_error
            assert storage.tokens.access_token != first
        [opened] = await server.store.select(AuditEntry, action="oauth.consent")
        assert opened.actor == "admin:alice"
