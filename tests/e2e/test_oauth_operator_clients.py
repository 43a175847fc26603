"""Clients an operator registered: the allow-list of closed registration, secrets, removal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import attrs
import httpx2
from cryptography.fernet import Fernet

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.oauth.operator_clients import register_client, remove_client
from tests.e2e.mcp_support import Running, running
from tests.e2e.oauth_support import (
    INITIALIZE,
    REDIRECT,
    admin_browser,
    authorize_url,
    code_form,
    mcp_status,
    pkce_pair,
)

CLOSED = {"AGENTWS_OAUTH_REGISTRATION": "closed"}


@asynccontextmanager
async def _admin_api(server: Running) -> AsyncIterator[httpx2.AsyncClient]:
    """The admin API, as an administrator with an API token calls it."""
    await create_admin(server.store, "alice", password="correct horse battery", actor="t")
    _, secret = await create_admin_token(server.store, "alice", "tests", actor="t")
    async with httpx2.AsyncClient(
        base_url=server.base_url + "/api/v1", headers={"Authorization": f"Bearer {secret}"}
    ) as api:
        yield api


# A service key: confidential clients' secrets are sealed with it.
KEY = {"AGENTWS_SECRET_KEY": Fernet.generate_key().decode()}


async def test_closed_registration_serves_the_clients_an_operator_registered(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, **CLOSED) as server, admin_browser(server) as browser:
        box = server.runtime.keys.optional()
        registered = await register_client(
            server.store, box, name="Team client", redirect_uris=[REDIRECT], actor="t"
        )
        client_id = registered.client.client_id
        verifier, challenge = pkce_pair()
        page = await browser.consent_page(authorize_url(server, client_id, challenge))
        assert "Team client" in page.text
        answer = await browser.decide(page, scope="read")
        code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
        form = code_form(client_id, code, verifier)
        tokens = (await browser.http.post("/oauth/token", data=form)).json()
        assert tokens["scope"] == "read"
        assert await mcp_status(server, tokens["access_token"]) == 200

        # Removing the client ends what it holds, at once.
        await remove_client(server.store, client_id, actor="t")
        assert await mcp_status(server, tokens["access_token"]) == 401
        again = await browser.http.get(authorize_url(server, client_id, challenge))
        assert again.status_code == 400

        # A client registered when ids had the prefix confirm tokens had keeps working.
        legacy = attrs.evolve(registered.client, id="ocl_legacy", client_id="agwc_legacy-id")
        await server.store.insert(legacy)
        page = await browser.consent_page(authorize_url(server, legacy.client_id, challenge))
        assert "Team client" in page.text


async def test_a_confidential_client_must_present_its_secret(tmp_path: Path) -> None:
    async with running(tmp_path, **KEY) as server, admin_browser(server) as browser:
        box = server.runtime.keys.optional()
        registered = await register_client(
            server.store,
            box,
            name="Server app",
            redirect_uris=[REDIRECT],
            confidential=True,
            actor="t",
        )
        assert registered.secret is not None
        client_id = registered.client.client_id
        verifier, challenge = pkce_pair()
        sent = await browser.authorize(authorize_url(server, client_id, challenge))
        form = code_form(client_id, sent["code"], verifier)
        without = await browser.http.post("/oauth/token", data=form)
        assert without.status_code == 401
        assert without.json()["error"] == "invalid_client"
        wrong = await browser.http.post("/oauth/token", data={**form, "client_secret": "nope"})
        assert wrong.status_code == 401
        right = await browser.http.post(
            "/oauth/token", data={**form, "client_secret": registered.secret}
        )
        assert right.status_code == 200, right.text


async def test_the_admin_api_registers_lists_and_removes_clients(tmp_path: Path) -> None:
    async with running(tmp_path, **KEY) as server, _admin_api(server) as api:
        added = await api.post(
            "/oauth/clients",
            json={"name": "Team", "redirect_uris": [REDIRECT], "confidential": True},
        )
        assert added.status_code == 201, added.text
        client = added.json()
        assert client["client_secret"] and client["confidential"] is True
        listed = (await api.get("/oauth/clients")).json()["items"]
        assert [c["client_id"] for c in listed] == [client["client_id"]]
        assert "client_secret" not in listed[0]
        refused = await api.post("/oauth/clients", json={"name": "x", "redirect_uris": []})
        assert refused.status_code == 400
        removed = await api.delete(f"/oauth/clients/{client['id']}")
        assert removed.status_code == 200
        assert (await api.get("/oauth/clients")).json()["items"] == []


async def test_a_shared_clients_other_token_cannot_take_a_session(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        registered = await register_client(
            server.store, None, name="Shared app", redirect_uris=[REDIRECT], actor="t"
        )
        client_id = registered.client.client_id
        tokens = []
        for _ in range(2):  # two people, each with their own consent
            verifier, challenge = pkce_pair()
            sent = await browser.authorize(authorize_url(server, client_id, challenge))
            form = code_form(client_id, sent["code"], verifier)
            tokens.append((await browser.http.post("/oauth/token", data=form)).json())
        async with httpx2.AsyncClient(timeout=10) as http:
            headers = {"Accept": "application/json, text/event-stream"}
            opened = await http.post(
                server.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
                headers={**headers, "Authorization": f"Bearer {tokens[0]['access_token']}"},
            )
            session_id = opened.headers["mcp-session-id"]
            taken = await http.post(
                server.url,
                json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                headers={
                    **headers,
                    "Authorization": f"Bearer {tokens[1]['access_token']}",
                    "Mcp-Session-Id": session_id,
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
        assert taken.status_code == 404


async def test_without_a_service_key_a_confidential_client_is_refused_plainly(
    tmp_path: Path,
) -> None:
    # No key: neither the variable nor a key file in the data directory.
    no_key = {"AGENTWS_SECRET_KEY": "", "AGENTWS_DATA_DIR": str(tmp_path)}
    async with running(tmp_path, **no_key) as server, _admin_api(server) as api:
        refused = await api.post(
            "/oauth/clients",
            json={"name": "Team", "redirect_uris": [REDIRECT], "confidential": True},
        )
        assert refused.status_code == 400, refused.text
        assert "service key" in refused.json()["error"]["message"]
        public = await api.post(
            "/oauth/clients", json={"name": "Team", "redirect_uris": [REDIRECT]}
        )
        assert public.status_code == 201
