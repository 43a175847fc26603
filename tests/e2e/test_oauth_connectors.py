"""Connectors that reach OAuth-protected MCP servers: authorized once by an admin, then kept.

The upstreams are servers nobody here wrote: the ``mcp`` sdist's
``simple-auth`` example (its authorization server and its resource server,
two processes), and the conformance of the client side is
``tests/e2e/test_conformance_client.py``'s. An admin starts the
authorization (the admin API, as the dashboard's Connect does), the
"browser" (an HTTP client signed in to agentws's dashboard) logs in on the
upstream's own page, which sends it back to agentws's callback; the service
keeps the grant, sealed, and the group's callers get the upstream's tools,
called with the upstream's token, never their own.
"""

from __future__ import annotations

import base64
import re
import secrets
from pathlib import Path
from urllib.parse import urljoin

import attrs
import httpx2
import pytest
import trio
from cryptography.fernet import Fernet
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.connectors.admin import ConnectorSecret, add_connector, attach_connector
from agentws.connectors.upstream_auth import UpstreamAuth
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import (
    AuditEntry,
    CachedTool,
    Capability,
    ChatMessage,
    ConnectorGrant,
    ConnectorKind,
    GrantState,
    OAuthClient,
)
from agentws.oauth.operator_clients import remove_client
from agentws.tools.admin import set_label
from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.oauth_support import PASSWORD, Browser, admin_browser
from tests.e2e.polling import wait_until
from tests.e2e.reference_servers import simple_auth_servers
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S, add_oauth_remote
from tests.loopback import serve_loopback

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ALLOW = "127.0.0.1/32,::1/128,localhost"
ENV = {
    "AGENTWS_CONNECTOR_ALLOWLIST": ALLOW,
    "AGENTWS_TOOL_TIMEOUT_S": "30",
    # Grants are sealed with the service key.
    "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
}


async def _api(server: Running) -> httpx2.AsyncClient:
    _, secret = await create_admin_token(
        server.store, "alice", f"tests-{secrets.token_hex(4)}", actor="t"
    )
    return httpx2.AsyncClient(
        base_url=f"{server.base_url}/api/v1",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=TIMEOUT_S,
    )


async def _log_in_upstream(person: httpx2.AsyncClient, authorization_url: str) -> str:
    """simple-auth's own pages: its login form, filled as its page says; where it sends
    the browser back to (agentws's callback, with the code)."""
    asked = await person.get(authorization_url)
    assert asked.status_code in (302, 307), asked.text
    login = await person.get(urljoin(authorization_url, asked.headers["location"]))
    assert login.status_code == 200, login.text
    action = re.search(r'<form action="([^"]+)"', login.text)
    state = re.search(r'name="state" value="([^"]+)"', login.text)
    assert action and state, login.text
    sent = await person.post(
        action[1],
        data={"username": "demo_user", "password": "demo_password", "state": state[1]},
    )
    assert sent.status_code == 302, sent.text
    return str(sent.headers["location"])


async def test_an_admin_connects_the_sdk_s_simple_auth_server(tmp_path: Path) -> None:
    async with (
        simple_auth_servers() as url,
        running(tmp_path, with_library=False, **ENV) as server,
        admin_browser(server) as browser,
    ):
        connector = await add_oauth_remote(
            server.store, url, "timely", allowlist=Allowlist.parse(ALLOW)
        )
        signed = await browser.sign_in()
        assert signed.status_code == 302, signed.text
        async with await _api(server) as api:
            shown = (await api.get("/workspaces/acme/connectors/timely")).json()
            assert shown["auth"] == "oauth"
            started = await api.post("/workspaces/acme/connectors/timely/authorize")
            assert started.status_code == 200, started.text
            authorization_url = started.json()["authorization_url"]
        async with httpx2.AsyncClient(timeout=TIMEOUT_S) as person:
            back = await _log_in_upstream(person, authorization_url)
        assert back.startswith(f"{server.base_url}/dashboard/connectors/authorized?"), back
        # Back at agentws, in the dashboard session: the flow takes the code.
        landed = await browser.http.get(back)
        assert landed.status_code == 302, landed.text
        assert landed.headers["location"].endswith("/dashboard/w/acme/connectors/timely")
        grant = await server.store.find(ConnectorGrant, connector_id=connector.id)
        assert grant is not None and grant.state is GrantState.CONNECTED
        assert grant.scope == "user" and grant.tokens is not None
        # The tools were fetched over the grant; a caller of the group calls one.
        await wait_until(
            lambda: server.store.find(CachedTool, connector_id=connector.id, name="get_time"),
            what="the upstream's tools in the cache",
        )
        async with sdk_session(server, "streamable") as session:
            names = [t.name for t in (await session.list_tools()).tools]
            assert "timely_get_time" in names
            with trio.fail_after(TIMEOUT_S):
                result = await session.call_tool("timely_get_time", {})
        assert not result.is_error, result
        [entry] = await server.store.select(AuditEntry, action="connector.authorize")
        assert (entry.actor, entry.target) == ("admin:alice", "acme/timely")


async def _authorize_at_peer(
    server: Running, browser: Browser, peer_browser: Browser, connector: str
) -> None:
    """Start ``connector``'s authorization on ``server``; consent on the peer as its admin."""
    async with await _api(server) as api:
        started = await api.post(f"/workspaces/acme/connectors/{connector}/authorize")
        assert started.status_code == 200, started.text
        authorization_url = started.json()["authorization_url"]
    page = await peer_browser.consent_page(authorization_url)
    decided = await peer_browser.decide(page, scope="read")
    assert decided.status_code == 303, decided.text
    back = decided.headers["location"]
    assert back.startswith(f"{server.base_url}/dashboard/connectors/authorized?"), back
    landed = await browser.http.get(back)
    assert landed.status_code == 302, landed.text


async def test_an_agentws_upstream_s_tokens_are_refreshed_revoked_and_authorized_again(
    tmp_path: Path,
) -> None:
    # Another agentws is the upstream: its authorization server rotates refresh
    # tokens, and its access tokens live one second here, so calls keep finding
    # their token due and refresh it first; none fails. Revoked there, the connector
    # needs authorization here, says why, and calls fail at once naming it;
    # authorized again, it works again.
    (tmp_path / "peer").mkdir()
    (tmp_path / "here").mkdir()
    async with (
        running(tmp_path / "peer", AGENTWS_OAUTH_ACCESS_TTL_S="1") as peer,
        running(tmp_path / "here", with_library=False, **ENV) as server,
        admin_browser(peer) as peer_browser,
        admin_browser(server) as browser,
    ):
        connector = await add_oauth_remote(
            server.store, peer.url, "peer", allowlist=Allowlist.parse(ALLOW)
        )
        # Where the workspace's alerts go: a loss is said there, once.
        runtime = server.runtime
        await create_webhook(
            server.store,
            runtime.settings,
            runtime.keys,
            "acme",
            name="deploys",
            channel="local:ops",
            prompt="p",
            options=WebhookOptions(alerts_channel="local:alerts"),
            actor="t",
        )
        assert (await browser.sign_in()).status_code == 302
        await _authorize_at_peer(server, browser, peer_browser, "peer")
        await wait_until(
            lambda: server.store.find(CachedTool, connector_id=connector.id, name="search_context"),
            what="the peer's tools in the cache",
        )
        await set_label(server.store, "acme", "peer_search_context", Capability.READ, actor="t")
        first = await server.store.find(ConnectorGrant, connector_id=connector.id)
        assert first is not None
        async with sdk_session(server, "streamable") as session:
            # Calls go on until the token was refreshed twice (each halfway through
            # its second of life); not one of them fails.
            with trio.fail_after(TIMEOUT_S):
                while True:
                    found = await session.call_tool("peer_search_context", {"query": "deploy"})
                    assert not found.is_error, found
                    refreshed = await server.store.find(ConnectorGrant, connector_id=connector.id)
                    assert refreshed is not None
                    if refreshed.version >= first.version + 2:
                        break
            assert refreshed.state is GrantState.CONNECTED

            # The peer's admin revokes agentws's client there: every token it holds.
            [client] = await peer.store.select(OAuthClient)
            await remove_client(peer.store, client.client_id, actor="t")
            with trio.fail_after(TIMEOUT_S):
                refused = await session.call_tool("peer_search_context", {"query": "deploy"})
            assert refused.is_error
            text = refused.content[0].text  # type: ignore[union-attr]
            assert "connector 'peer' needs authorization" in text, text
            lost = await server.store.find(ConnectorGrant, connector_id=connector.id)
            assert lost is not None and lost.state is GrantState.NEEDS_AUTHORIZATION
            # Its client was removed there: the refresh was refused, and that is the reason.
            assert lost.tokens is None, lost
            assert "refused to refresh the token (invalid_client" in (lost.reason or "")
            # Posted beside the call that found the loss, not within it.
            await wait_until(
                lambda: server.store.select(ChatMessage, channel="local:alerts"),
                what="the alert",
            )
            [alert] = await server.store.select(ChatMessage, channel="local:alerts")
            assert "Connector *peer* lost its authorization upstream" in alert.text
            assert "/dashboard/w/acme/connectors/peer" in alert.text
            # A second call finds it lost already: no second alert.
            with trio.fail_after(TIMEOUT_S):
                again_refused = await session.call_tool("peer_search_context", {"query": "x"})
            assert again_refused.is_error
            assert len(await server.store.select(ChatMessage, channel="local:alerts")) == 1
            page = await browser.http.get("/dashboard/w/acme/connectors/peer")
            assert "needs authorization" in page.text and "Connect" in page.text
            async with await _api(server) as api:
                shown = (await api.get("/workspaces/acme/connectors/peer")).json()
            assert shown["authorization"]["state"] == "needs_authorization"
            assert "refused to refresh" in shown["authorization"]["reason"]

            # Authorized again: the same callers' calls work again.
            await _authorize_at_peer(server, browser, peer_browser, "peer")
            again = await wait_until(
                lambda: session.call_tool("peer_search_context", {"query": "deploy"}),
                lambda result: not result.is_error,
                what="a call after authorizing again",
            )
            assert not again.is_error

            # Disconnected: revoked at the peer (RFC 7009), the grant gone here.
            async with await _api(server) as api:
                gone = await api.delete("/workspaces/acme/connectors/peer/authorization")
            assert gone.status_code == 200, gone.text
            assert gone.json()["revoked"] is True
            assert await server.store.find(ConnectorGrant, connector_id=connector.id) is None
            entries = await server.store.select(AuditEntry, action="connector.disconnect")
            assert [e.detail for e in entries] == [{"revoked": True}]


@attrs.define
class ClientCredentialsServer:
    """An authorization server of the client-credentials grant (RFC 6749 §4.4), on loopback,
    with the introspection (RFC 7662) simple-auth's resource server asks it.

    Its tokens stop being accepted after ``uses`` introspections, as an expired
    one would: the client must get another without a call failing.
    """

    client_id: str = "agentws-bot"
    client_secret: str = "bot-secret-1"
    uses: int = 2
    issued: list[str] = attrs.field(factory=list)
    seen: dict[str, int] = attrs.field(factory=dict)
    audiences: dict[str, str] = attrs.field(factory=dict)
    base: str = ""

    def app(self) -> Starlette:
        async def metadata(request: Request) -> JSONResponse:
            return JSONResponse(
                {
                    # As the resource's metadata names it (RFC 8414 §3.3: exactly).
                    "issuer": f"{self.base}/",
                    "authorization_endpoint": f"{self.base}/authorize",
                    "token_endpoint": f"{self.base}/token",
                    "introspection_endpoint": f"{self.base}/introspect",
                    "grant_types_supported": ["client_credentials"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                    "response_types_supported": ["code"],
                }
            )

        async def token(request: Request) -> JSONResponse:
            form = await request.form()
            pair = f"{self.client_id}:{self.client_secret}".encode()
            expected = "Basic " + base64.b64encode(pair).decode()
            if request.headers.get("authorization") != expected:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            if form.get("grant_type") != "client_credentials" or not form.get("resource"):
                return JSONResponse({"error": "invalid_request"}, status_code=400)
            issued = f"cc-{len(self.issued) + 1}"
            self.issued.append(issued)
            self.audiences[issued] = str(form["resource"])
            return JSONResponse(
                {"access_token": issued, "token_type": "Bearer", "expires_in": 3600}
            )

        async def introspect(request: Request) -> JSONResponse:
            given = str((await request.form()).get("token"))
            self.seen[given] = self.seen.get(given, 0) + 1
            active = given in self.issued and self.seen[given] <= self.uses
            if not active:
                return JSONResponse({"active": False})
            return JSONResponse(
                {
                    "active": True,
                    "client_id": self.client_id,
                    "scope": "user",
                    "sub": "bot",
                    # The resource (RFC 8707) it was issued for: the server checks it is its own.
                    "aud": self.audiences[given],
                }
            )

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/token", token, methods=["POST"]),
                Route("/introspect", introspect, methods=["POST"]),
            ]
        )


async def test_a_client_credentials_connector_gets_a_new_token_without_a_failed_call(
    tmp_path: Path,
) -> None:
    issuer = ClientCredentialsServer()
    async with serve_loopback(issuer.app()) as base:
        issuer.base = base
        async with (
            simple_auth_servers(auth_server=base) as url,
            running(tmp_path, with_library=False, **ENV) as server,
        ):
            runtime = server.runtime
            await create_admin(server.store, "alice", password=PASSWORD, actor="t")
            await add_connector(
                server.store,
                "acme",
                "bot",
                kind=ConnectorKind.REMOTE_MCP,
                url=url,
                headers={},
                secret=ConnectorSecret(issuer.client_secret),
                box=runtime.keys.box(),
                allowlist=Allowlist.parse(ALLOW),
                actor="t",
                auth=UpstreamAuth(
                    mode="client_credentials",
                    client_id=issuer.client_id,
                    client_auth="client_secret_basic",
                ),
            )
            await attach_connector(server.store, "acme", "ops", "bot", actor="t")
            async with await _api(server) as api:
                done = await api.post("/workspaces/acme/connectors/bot/authorize")
            assert done.status_code == 200, done.text
            assert done.json()["authorization_url"] is None  # no person: authorized at once
            assert done.json()["authorization"]["state"] == "connected"
            await wait_until(
                lambda: server.store.find(CachedTool, name="get_time"),
                what="the upstream's tools in the cache",
            )
            await set_label(server.store, "acme", "bot_get_time", Capability.READ, actor="t")
            async with sdk_session(server, "streamable") as session:
                for _ in range(5):
                    with trio.fail_after(TIMEOUT_S):
                        result = await session.call_tool("bot_get_time", {})
                    assert not result.is_error, result
    # Each token served two requests: new ones were fetched, the client's secret never sent on.
    assert len(issuer.issued) >= 3, issuer.issued
    assert all(count <= issuer.uses + 1 for count in issuer.seen.values()), issuer.seen
