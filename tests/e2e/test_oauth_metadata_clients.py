"""Clients known by their metadata document's URL (Client ID Metadata Documents).

The document is served over HTTPS on loopback by a CA of the test's own
(``SSL_CERT_FILE``); agentws may fetch from loopback only when
``AGENTWS_CONNECTOR_ALLOWLIST`` names it, as for connectors.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest

from agentws.domain.models import ClientKind, OAuthClient
from agentws.domain.rules import utcnow
from tests.e2e.mcp_support import running
from tests.e2e.oauth_support import (
    MemoryStorage,
    admin_browser,
    connected_tools,
    pkce_pair,
    sdk_oauth,
)
from tests.e2e.tls_support import make_ca, serve_https

LOOPBACK = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}
PATH = "/clients/agentws-test.json"


@attrs.define
class DocumentServer:
    """Serves one client metadata document, and counts the requests for it."""

    document: dict[str, Any] = attrs.field(factory=dict)
    requests: int = 0
    url: str = ""
    #: Headers of the answer besides its type (Cache-Control, Expires).
    headers: dict[str, str] = attrs.field(factory=dict)
    status: int = 200

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        self.requests += 1
        body = json.dumps(self.document).encode()
        await send(
            {
                "type": "http.response.start",
                "status": self.status if scope["path"] == PATH else 404,
                "headers": [
                    (b"content-type", b"application/json"),
                    *((k.encode(), v.encode()) for k, v in self.headers.items()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def document_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **document: Any
) -> AsyncIterator[DocumentServer]:
    ca = make_ca(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca_file))
    server = DocumentServer()
    async with serve_https(server, ca) as base:
        server.url = base + PATH
        server.document = {
            "client_id": server.url,
            "client_name": "Metadata client",
            "redirect_uris": ["http://127.0.0.1:53682/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **document,
        }
        yield server


async def test_a_client_known_by_its_metadata_document_connects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        document_server(tmp_path, monkeypatch) as documents,
        running(tmp_path, **LOOPBACK) as server,
        admin_browser(server) as browser,
    ):
        metadata = (await browser.http.get("/.well-known/oauth-authorization-server")).json()
        assert metadata["client_id_metadata_document_supported"] is True
        storage = MemoryStorage()
        auth = sdk_oauth(browser, server.url, storage)
        auth.context.client_metadata_url = documents.url
        tools = await connected_tools(server, auth)
        assert "search_context" in tools
        assert storage.client_info is not None and storage.client_info.client_id == documents.url
        [client] = await server.store.select(OAuthClient)
        assert client.kind is ClientKind.METADATA and client.name == "Metadata client"
        assert documents.requests == 1  # kept, not fetched again for the token request


async def _authorize_status(server_url: str, http: httpx2.AsyncClient, client_id: str) -> int:
    _, challenge = pkce_pair()
    answer = await http.get(
        "/oauth/authorize",
        params={
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": "http://127.0.0.1:53682/callback",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s",
            "resource": server_url,
        },
    )
    return answer.status_code


async def test_a_metadata_document_on_a_private_address_is_never_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        document_server(tmp_path, monkeypatch) as documents,
        running(tmp_path) as server,
        admin_browser(server) as browser,
    ):
        assert await _authorize_status(server.url, browser.http, documents.url) == 400
        assert documents.requests == 0
        assert await server.store.select(OAuthClient) == []


async def test_a_metadata_document_naming_another_client_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        document_server(tmp_path, monkeypatch) as documents,
        running(tmp_path, **LOOPBACK) as server,
        admin_browser(server) as browser,
    ):
        documents.document["client_id"] = "https://other.example/client.json"
        assert await _authorize_status(server.url, browser.http, documents.url) == 400
        assert documents.requests == 1
        documents.document["client_id"] = documents.url
        documents.document["client_secret"] = "s3cret"
        assert await _authorize_status(server.url, browser.http, documents.url) == 400
        # A document is held to a registration's bounds and redirect URI rules.
        del documents.document["client_secret"]
        for bad in (
            {"client_name": "n" * 201},
            {"redirect_uris": [f"http://127.0.0.1:53682/callback{i}" for i in range(11)]},
            {"redirect_uris": ["http://127.0.0.1:53682/callback", "javascript:alert(1)//"]},
        ):
            documents.document.update(bad)
            assert await _authorize_status(server.url, browser.http, documents.url) == 400
            documents.document["client_name"] = "Metadata client"
            documents.document["redirect_uris"] = ["http://127.0.0.1:53682/callback"]
        assert await server.store.select(OAuthClient) == []


async def _without_registration(http: httpx2.AsyncClient) -> bool:
    """Check ``/oauth/register`` is off (404, not in the metadata); whether documents are on."""
    metadata = (await http.get("/.well-known/oauth-authorization-server")).json()
    assert "registration_endpoint" not in metadata
    registered = await http.post(
        "/oauth/register", json={"redirect_uris": ["http://127.0.0.1:5/cb"]}
    )
    assert registered.status_code == 404
    supported: bool = metadata["client_id_metadata_document_supported"]
    return supported


def _known(client_id: str, kind: ClientKind) -> OAuthClient:
    """A client as agentws kept it while registration was open."""
    return OAuthClient(
        client_id=client_id,
        kind=kind,
        name="Kept",
        metadata={
            "client_id": client_id,
            "redirect_uris": ["http://127.0.0.1:53682/callback"],
            "token_endpoint_auth_method": "none",
        },
        fetched_at=utcnow() if kind is ClientKind.METADATA else None,
    )


async def test_closed_registration_takes_neither_kind_of_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        document_server(tmp_path, monkeypatch) as documents,
        running(tmp_path, AGENTWS_OAUTH_REGISTRATION="closed", **LOOPBACK) as server,
        admin_browser(server) as browser,
    ):
        assert await _without_registration(browser.http) is False
        assert await _authorize_status(server.url, browser.http, documents.url) == 400
        assert documents.requests == 0
        # Nor those that introduced themselves while registration was open: closed
        # means the clients an operator registered, and no others.
        await server.store.insert(_known("dynamic-1", ClientKind.DYNAMIC))
        await server.store.insert(_known(documents.url, ClientKind.METADATA))
        for client_id in ("dynamic-1", documents.url):
            assert await _authorize_status(server.url, browser.http, client_id) == 400
            refreshed = await browser.http.post(
                "/oauth/token",
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": "agwor_x",
                    "client_id": client_id,
                },
            )
            assert refreshed.status_code == 401, refreshed.text
        assert documents.requests == 0
        # They may still give up what they hold.
        revoked = await browser.http.post(
            "/oauth/revoke", data={"client_id": "dynamic-1", "token": "agwor_x"}
        )
        assert revoked.status_code == 200, revoked.text
        await server.store.insert(_known("agwoi_team", ClientKind.OPERATOR))
        assert await _authorize_status(server.url, browser.http, "agwoi_team") == 302


async def test_metadata_only_registration_takes_documents_but_no_registrations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        document_server(tmp_path, monkeypatch) as documents,
        running(tmp_path, AGENTWS_OAUTH_REGISTRATION="metadata-only", **LOOPBACK) as server,
        admin_browser(server) as browser,
    ):
        assert await _without_registration(browser.http) is True
        assert await _authorize_status(server.url, browser.http, documents.url) == 302
        assert documents.requests == 1
        # A client that registered itself while registration was open is not served.
        await server.store.insert(_known("dynamic-1", ClientKind.DYNAMIC))
        assert await _authorize_status(server.url, browser.http, "dynamic-1") == 400


async def test_a_metadata_document_is_fetched_again_as_its_cache_headers_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        document_server(tmp_path, monkeypatch) as documents,
        running(tmp_path, **LOOPBACK) as server,
        admin_browser(server) as browser,
    ):

        async def kept_for_s() -> float:
            [client] = await server.store.select(OAuthClient)
            assert client.fetched_at is not None and client.fresh_until is not None
            return (client.fresh_until - client.fetched_at).total_seconds()

        async def stale() -> None:
            [client] = await server.store.select(OAuthClient)
            await server.store.update(
                attrs.evolve(client, fresh_until=utcnow() - timedelta(seconds=1))
            )

        for headers, kept_s in (
            ({"Cache-Control": "public, max-age=7200"}, 7200),
            ({"Cache-Control": "max-age=5"}, 300),  # the floor: 5 minutes
            ({"Cache-Control": "no-store"}, 300),
            ({"Cache-Control": "max-age=999999999"}, 86400),  # the ceiling: a day
            ({"Expires": format_datetime(utcnow() + timedelta(hours=2), usegmt=True)}, 7200),
            ({}, 3600),  # nothing said: an hour
        ):
            documents.headers = headers
            fetched = documents.requests
            assert await _authorize_status(server.url, browser.http, documents.url) == 302
            assert documents.requests == fetched + 1, headers
            assert abs(await kept_for_s() - kept_s) < 60, headers
            # Fresh, it is not fetched again.
            assert await _authorize_status(server.url, browser.http, documents.url) == 302
            assert documents.requests == fetched + 1, headers
            await stale()

        # A refresh that fails never lets the stale copy serve: the client waits
        # until its document can be fetched again.
        documents.status = 500
        assert await _authorize_status(server.url, browser.http, documents.url) == 400
        documents.status = 200
        documents.document["redirect_uris"] = ["http://127.0.0.1:53682/other"]
        assert await _authorize_status(server.url, browser.http, documents.url) == 400
        [client] = await server.store.select(OAuthClient)
        assert client.metadata["redirect_uris"] == ["http://127.0.0.1:53682/other"]
