"""Helpers of the OAuth tests: a signed-in administrator's browser, consent, and the SDK's client.

:class:`Browser` is an administrator's browser (httpx2, cookies kept): it
follows ``/oauth/authorize`` to the dashboard's consent page, signs in when
sent to the sign-in form, and posts the decision with the page's CSRF token,
exactly as the form would. :func:`sdk_oauth` is the ``mcp`` SDK's own OAuth
client provider wired to it: its redirect handler hands the authorization
URL to the browser, its callback handler returns what the browser was sent
back with.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs
import httpx2
import trio
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
)

from agentws.admins.accounts import create_admin
from agentws.connectors.upstream_auth import MemoryGrant
from tests.e2e.mcp_support import Running

__all__ = [
    "INITIALIZE",
    "PASSWORD",
    "REDIRECT",
    "Browser",
    "MemoryStorage",
    "admin_browser",
    "authorize_url",
    "code_form",
    "connected_tools",
    "exchange",
    "mcp_status",
    "pkce_pair",
    "refresh",
    "register_client",
    "sdk_oauth",
    "tokens_for",
]

PASSWORD = "correct horse battery staple"
#: A native client's loopback redirect URI (nothing listens: the browser stops there).
REDIRECT = "http://127.0.0.1:53682/callback"


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode()
    return verifier, challenge.rstrip("=")


def hidden_field(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert match, f"no hidden field {name!r} in the page"
    return html.unescape(match.group(1))


@attrs.define
class Browser:
    """An administrator's browser on ``server``'s dashboard."""

    server: Running
    http: httpx2.AsyncClient
    username: str = "alice"

    async def sign_in(self, next_path: str = "") -> httpx2.Response:
        form = await self.http.get("/dashboard/login")
        return await self.http.post(
            "/dashboard/login",
            data={
                "login_token": hidden_field(form.text, "login_token"),
                "username": self.username,
                "password": PASSWORD,
                "next": next_path,
            },
        )

    async def consent_page(self, authorization_url: str) -> httpx2.Response:
        """Follow ``/oauth/authorize`` to the consent page, signing in on the way if asked."""
        answer = await self.http.get(authorization_url)
        assert answer.status_code == 302, answer.text
        consent = answer.headers["location"]
        assert "/dashboard/oauth/consent/" in consent, consent
        page = await self.http.get(consent)
        if page.status_code == 302 and "/dashboard/login" in page.headers["location"]:
            query = parse_qs(urlsplit(page.headers["location"]).query)
            signed = await self.sign_in(query["next"][0])
            assert signed.status_code == 302, signed.text
            page = await self.http.get(signed.headers["location"])
        assert page.status_code == 200, page.text
        return page

    async def decide(
        self, page: httpx2.Response, decision: str = "approve", scope: str = "write", **form: str
    ) -> httpx2.Response:
        """Post the consent form of ``page``; the answer (a redirect to the client)."""
        data = {"csrf": hidden_field(page.text, "csrf"), "decision": decision, "scope": scope}
        data.update(form)
        return await self.http.post(str(page.url), data=data)

    async def authorize(self, authorization_url: str, scope: str = "write") -> dict[str, str]:
        """Consent to a request; the query the client's redirect URI was sent."""
        answer = await self.decide(await self.consent_page(authorization_url), scope=scope)
        assert answer.status_code == 303, answer.text
        return {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()}


@asynccontextmanager
async def admin_browser(server: Running) -> AsyncIterator[Browser]:
    """A browser whose administrator exists (not yet signed in)."""
    await create_admin(server.store, "alice", password=PASSWORD, actor="t")
    async with httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http:
        yield Browser(server, http)


#: The SDK client's token storage, in memory: agentws's own one-off grant.
MemoryStorage = MemoryGrant


def sdk_oauth(
    browser: Browser,
    url: str,
    storage: MemoryStorage,
    *,
    scope: str | list[str] = "write",
    **metadata: Any,
) -> OAuthClientProvider:
    """The SDK's OAuth client provider for ``url``, consenting through ``browser``.

    ``scope`` is what the administrator grants; a list, what it grants each
    time it is asked, in turn.
    """
    sent_back: dict[str, str] = {}
    grants = [scope] if isinstance(scope, str) else list(scope)

    async def redirect(authorization_url: str) -> None:
        granted = grants.pop(0) if len(grants) > 1 else grants[0]
        sent_back.update(await browser.authorize(authorization_url, scope=granted))

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=sent_back["code"], state=sent_back.get("state"), iss=sent_back.get("iss")
        )

    client_metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": "Test client",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
    )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=client_metadata,
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )


async def register_client(
    http: httpx2.AsyncClient, redirect_uris: list[str] | None = None, **metadata: Any
) -> dict[str, Any]:
    """Register a public client by RFC 7591; the registration answer."""
    answer = await http.post(
        "/oauth/register",
        json={
            "client_name": "Raw client",
            "redirect_uris": redirect_uris or [REDIRECT],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            **metadata,
        },
    )
    assert answer.status_code == 201, answer.text
    registered: dict[str, Any] = answer.json()
    return registered


def authorize_url(
    server: Running, client_id: str, challenge: str, *, state: str = "st-1", **extra: str
) -> str:
    """``/oauth/authorize`` for the group ``acme/ops``, as a client builds it."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "scope": "read write destructive",
        "resource": server.url,
        **extra,
    }
    return "/oauth/authorize?" + urlencode(query)


def code_form(client_id: str, code: str, verifier: str | None, **extra: str) -> dict[str, str]:
    """A code exchange's form (no ``code_verifier`` when ``verifier`` is None), plus ``extra``."""
    form = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "redirect_uri": REDIRECT,
        **extra,
    }
    if verifier is not None:
        form["code_verifier"] = verifier
    return form


async def exchange(
    http: httpx2.AsyncClient, client_id: str, code: str, verifier: str | None, **extra: str
) -> httpx2.Response:
    """Exchange a code at ``/oauth/token``; ``extra`` form fields (a secret, a resource)."""
    return await http.post("/oauth/token", data=code_form(client_id, code, verifier, **extra))


async def connected_tools(server: Running, auth: httpx2.Auth) -> list[str]:
    """Connect with ``auth`` (an SDK session), list the tools and search; the tools' names."""
    async with (
        httpx2.AsyncClient(auth=auth, timeout=15) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        with trio.fail_after(15):
            await session.initialize()
            listed = await session.list_tools()
            found = await session.call_tool("search_context", {"query": "deploy"})
        assert not found.is_error
        return [t.name for t in listed.tools]


async def refresh(http: httpx2.AsyncClient, client_id: str, token: str) -> httpx2.Response:
    return await http.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "client_id": client_id, "refresh_token": token},
    )


async def tokens_for(browser: Browser, scope: str = "write") -> tuple[str, dict[str, Any]]:
    """A client registered and consented to; its client id and token answer."""
    client = await register_client(browser.http)
    verifier, challenge = pkce_pair()
    sent = await browser.authorize(
        authorize_url(browser.server, client["client_id"], challenge), scope=scope
    )
    answer = await exchange(browser.http, client["client_id"], sent["code"], verifier)
    assert answer.status_code == 200, answer.text
    return client["client_id"], answer.json()


async def mcp_status(server: Running, token: str, url: str | None = None) -> int:
    """The status of a ``ping`` POSTed to the endpoint with ``token``."""
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.post(
            url or server.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
            },
        )
    return answer.status_code


#: The params of an ``initialize`` request (2025-06-18).
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "probe", "version": "1"},
}
