"""An OAuth connector served by a PostgreSQL pair: one refresher at a time, one loss for both.

Two ``agentws serve`` processes share a PostgreSQL schema; their connector
``peer`` reaches a third agentws whose authorization server rotates refresh
tokens and revokes a whole grant when a spent refresh token comes back, and
whose access tokens live a second, so calls keep finding their token due. Both
instances call at once, round after round: had both spent one refresh
token, the peer would have revoked the grant and calls would fail. The
peer's admin then revokes agentws's access: both instances say *needs
authorization*, one alert is posted, and authorizing again (on either
instance) restores both.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import trio
from cryptography.fernet import Fernet
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import (
    CachedTool,
    Capability,
    ChatMessage,
    ConnectorGrant,
    GrantState,
    OAuthClient,
)
from agentws.oauth.operator_clients import remove_client
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store import open_store
from agentws.tools.admin import set_label
from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.mcp_support import running, seed
from tests.e2e.oauth_support import PASSWORD, Browser, admin_browser
from tests.e2e.polling import wait_until
from tests.e2e.process_support import serve_processes
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S, add_oauth_remote
from tests.support import migrated_schema

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)]

ALLOW = "127.0.0.1/32"


@asynccontextmanager
async def _session(base_url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        streamable_http_client(f"{base_url}/mcp/g/acme/ops", http_client=http) as (r, w),
        ClientSession(r, w) as session,
    ):
        with trio.fail_after(TIMEOUT_S):
            await session.initialize()
        yield session


async def _authorize(
    base_url: str, admin_token: str, here: httpx2.AsyncClient, peer: Browser
) -> None:
    """Start on ``base_url``'s API, consent on the peer, come back signed in (``here``)."""
    async with httpx2.AsyncClient(
        base_url=f"{base_url}/api/v1",
        headers={"Authorization": f"Bearer {admin_token}"},
        timeout=TIMEOUT_S,
    ) as api:
        started = await api.post("/workspaces/acme/connectors/peer/authorize")
    assert started.status_code == 200, started.text
    page = await peer.consent_page(started.json()["authorization_url"])
    decided = await peer.decide(page, scope="read")
    assert decided.status_code == 303, decided.text
    landed = await here.get(decided.headers["location"])
    assert landed.status_code == 302, landed.text
    assert landed.headers["location"].endswith("/dashboard/w/acme/connectors/peer")


async def _sign_in(http: httpx2.AsyncClient) -> None:
    form = await http.get("/dashboard/login")
    token = form.text.split('name="login_token" value="', 1)[1].split('"', 1)[0]
    data = {"login_token": token, "username": "alice", "password": PASSWORD, "next": ""}
    signed = await http.post("/dashboard/login", data=data)
    assert signed.status_code == 302, signed.text


async def test_a_postgres_pair_refreshes_one_at_a_time_and_loses_authorization_once(
    tmp_path: Path,
) -> None:
    key = Fernet.generate_key().decode()
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": ALLOW, "AGENTWS_SECRET_KEY": key}
    (tmp_path / "peer").mkdir()
    async with (
        running(tmp_path / "peer", AGENTWS_OAUTH_ACCESS_TTL_S="1") as peer,
        admin_browser(peer) as peer_browser,
        migrated_schema() as url,
    ):
        async with open_store(url) as store:
            token, _ = await seed(store, tmp_path, with_library=False)
            settings = Settings.from_env(
                {"AGENTWS_SECRET_KEY": key, "AGENTWS_DATA_DIR": str(tmp_path)}
            )
            connector = await add_oauth_remote(
                store, peer.url, "peer", allowlist=Allowlist.parse(ALLOW)
            )
            await create_webhook(
                store,
                settings,
                Keys.load(settings),
                "acme",
                name="deploys",
                channel="local:ops",
                prompt="p",
                options=WebhookOptions(alerts_channel="local:alerts"),
                actor="t",
            )
            await create_admin(store, "alice", password=PASSWORD, actor="t")
            _, admin_token = await create_admin_token(
                store, "alice", f"t-{secrets.token_hex(3)}", actor="t"
            )
        async with serve_processes(tmp_path, url, "inst-a", "inst-b", **env) as (a, b):
            async with httpx2.AsyncClient(base_url=a.base_url, timeout=TIMEOUT_S) as here:
                await _sign_in(here)
                await _authorize(a.base_url, admin_token, here, peer_browser)
            async with open_store(url) as store:
                await wait_until(
                    lambda: store.find(ConnectorGrant, connector_id=connector.id),
                    lambda grant: grant is not None and grant.state is GrantState.CONNECTED,
                    what="the grant",
                )
                await wait_until(
                    lambda: store.find(
                        CachedTool, connector_id=connector.id, name="search_context"
                    ),
                    what="the peer's tools in the cache",
                )
                await set_label(store, "acme", "peer_search_context", Capability.READ, actor="t")
                async with _session(a.base_url, token) as one, _session(b.base_url, token) as two:
                    await wait_until(
                        lambda: two.list_tools(),
                        lambda listed: "peer_search_context" in [t.name for t in listed.tools],
                        what="the peer's tools on the second instance",
                    )
                    failed: list[str] = []

                    async def call(session: ClientSession) -> None:
                        with trio.fail_after(TIMEOUT_S):
                            result = await session.call_tool(
                                "peer_search_context", {"query": "deploy"}
                            )
                        if result.is_error:
                            failed.append(str(result.content))

                    start = await store.find(ConnectorGrant, connector_id=connector.id)
                    assert start is not None
                    # Rounds of calls on both at once, until the token was refreshed
                    # twice (each halfway through its second of life).
                    with trio.fail_after(TIMEOUT_S * 2):
                        while True:
                            async with trio.open_nursery() as nursery:
                                nursery.start_soon(call, one)
                                nursery.start_soon(call, two)
                            assert failed == []
                            grant = await store.find(ConnectorGrant, connector_id=connector.id)
                            assert grant is not None and grant.state is GrantState.CONNECTED
                            if grant.version >= start.version + 2:
                                break

                    # The peer's admin revokes agentws's access: both say so, one alert.
                    [client] = await peer.store.select(OAuthClient)
                    await remove_client(peer.store, client.client_id, actor="t")
                    for session in (one, two):
                        with trio.fail_after(TIMEOUT_S):
                            refused = await session.call_tool("peer_search_context", {"query": "x"})
                        assert refused.is_error
                        text = refused.content[0].text  # type: ignore[union-attr]
                        assert "connector 'peer' needs authorization" in text, text
                    # Posted beside the call that found the loss, not within it.
                    await wait_until(
                        lambda: store.select(ChatMessage, channel="local:alerts"),
                        what="the alert",
                    )
                    alerts = await store.select(ChatMessage, channel="local:alerts")
                    assert len(alerts) == 1, [m.text for m in alerts]

                    # Authorized again, on the other instance this time: both work again.
                    async with httpx2.AsyncClient(base_url=b.base_url, timeout=TIMEOUT_S) as there:
                        await _sign_in(there)
                        await _authorize(b.base_url, admin_token, there, peer_browser)
                    for session in (one, two):
                        again = await wait_until(
                            lambda s=session: s.call_tool("peer_search_context", {"query": "x"}),
                            lambda result: not result.is_error,
                            what="a call after authorizing again",
                        )
                        assert not again.is_error
