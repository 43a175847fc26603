"""OAuth 2.1 in headless Chromium: the SDK client's whole flow, consent given on the real page.

A real agentws serves on loopback (:func:`tests.e2e.mcp_support.running`).
The ``mcp`` SDK's own OAuth client provider connects to a group endpoint;
its redirect handler hands the authorization URL to Chromium (driven by
Playwright on a thread of its own, :mod:`tests.e2e.browser_support`), where
an administrator signs in, chooses a scope on the dashboard's consent page
and approves. The answer redirects the browser to the client's loopback
redirect URI: a small listener of the test's own records what it was sent
(code, state, issuer) for the SDK's callback handler. The consent page's
policy names that URI's origin in ``form-action``; Chromium holding a form's
redirects to it is what this proves works. The client then lists and calls
tools, and loses access as soon as the administrator revokes its consent on
Connect → MCP Endpoints, its session still open.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import httpx2
import pytest
import trio
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from playwright.sync_api import Response as PageResponse
from playwright.sync_api import expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from agentws.admins.accounts import create_admin
from agentws.domain.models import AuditEntry, McpToken, OAuthRefreshToken
from agentws.oauth.settings import CODE_PREFIX
from tests.e2e.browser_support import DESKTOP, Browser, Tab, fits, open_browser
from tests.e2e.mcp_support import Running, running
from tests.e2e.oauth_support import (
    PASSWORD,
    MemoryStorage,
    authorize_url,
    pkce_pair,
    register_client,
)
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS
from tests.loopback import serve_loopback

#: How long one MCP request, or the browser's whole consent, may take.
REQUEST_S = 15
#: The brief a revoked client's access has: its next call fails within this.
REVOKED_S = 1.0
CLIENT_NAME = "Chromium test client"
PHONE = (390, 844)
#: What the client's redirect URI shows the browser once it is sent back.
CALLBACK_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<link rel="icon" href="data:,"><title>Connected</title></head>'
    "<body><h1>Connected</h1><p>You can close this window.</p></body></html>"
)


class ConsentAskedAgain(Exception):
    """The client asked for consent again: nobody is at the browser to give it."""


@attrs.define
class Callback:
    """The client's loopback redirect URI; the queries the browser arrived with."""

    queries: list[dict[str, str]] = attrs.field(factory=list)
    arrived: trio.Event = attrs.field(factory=trio.Event)
    base_url: str = ""

    @property
    def redirect_uri(self) -> str:
        return f"{self.base_url}/callback"

    async def page(self, request: Request) -> HTMLResponse:
        self.queries.append(dict(request.query_params))
        self.arrived.set()
        return HTMLResponse(CALLBACK_PAGE)


@asynccontextmanager
async def loopback_callback() -> AsyncIterator[Callback]:
    """A native client's redirect URI listener on a free loopback port, for the block."""
    callback = Callback()
    app = Starlette(routes=[Route("/callback", callback.page)])
    async with serve_loopback(app) as base_url:
        callback.base_url = base_url
        yield callback


@attrs.define
class ChromiumConsent:
    """The administrator at the browser: signs in and approves on the consent page."""

    server: Running
    browser: Browser
    tab: Tab
    callback: Callback
    scope: str = "write"
    #: The authorization URLs the client sent the browser to, and when (trio's clock).
    asked: list[str] = attrs.field(factory=list)
    asked_at: list[float] = attrs.field(factory=list)

    async def redirect(self, authorization_url: str) -> None:
        """The SDK's redirect handler: consent once; asked again (revoked), nobody answers."""
        self.asked.append(authorization_url)
        self.asked_at.append(trio.current_time())
        if len(self.asked) > 1:
            raise ConsentAskedAgain(authorization_url)
        await self.browser.run(self._consent, authorization_url)

    async def sent_back(self) -> AuthorizationCodeResult:
        with trio.fail_after(REQUEST_S):
            await self.callback.arrived.wait()
        query = self.callback.queries[-1]
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    def _consent(self, authorization_url: str) -> None:
        """(Browser thread.) From the authorization URL to the client's redirect URI."""
        base, page = self.server.base_url, self.tab.page
        page.goto(authorization_url)
        # Nobody is signed in: the consent page sends the browser to sign in first.
        expect(page).to_have_url(re.compile(re.escape(f"{base}/dashboard/login?next=")))
        page.fill("#username", "alice")
        page.fill("#password", PASSWORD)

        def is_consent(response: PageResponse) -> bool:
            return "/dashboard/oauth/consent/" in response.url and response.request.method == "GET"

        with page.expect_response(is_consent) as shown:
            page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(
            f"Connect {CLIENT_NAME} to acme/ops?"
        )
        policy = shown.value.headers["content-security-policy"]
        assert f"form-action 'self' {self.callback.base_url};" in policy, policy
        expect(page.locator("#redirect-uri")).to_have_text(self.callback.redirect_uri)
        expect(page.get_by_label("Scope")).to_have_value("read")  # the least, unless chosen
        self.browser.screenshot(self.tab, "consent")
        self.tab.assert_clean("the consent page")

        page.get_by_label("Scope").select_option(self.scope)
        page.get_by_role("button", name="Approve").click()
        # A form's redirect the policy did not allow would stop here, the error logged.
        expect(page).to_have_url(re.compile(re.escape(self.callback.redirect_uri + "?")))
        expect(page.get_by_role("heading", level=1)).to_have_text("Connected")
        self.tab.assert_clean("approving on the consent page")

    def provider(self, storage: MemoryStorage) -> OAuthClientProvider:
        """The SDK's OAuth client provider for the group ``acme/ops``, consenting here."""
        metadata = OAuthClientMetadata.model_validate(
            {
                "client_name": CLIENT_NAME,
                "redirect_uris": [self.callback.redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }
        )
        return OAuthClientProvider(
            server_url=self.server.url,
            client_metadata=metadata,
            storage=storage,
            redirect_handler=self.redirect,
            callback_handler=self.sent_back,
        )


def _revoke(browser: Browser, tab: Tab, base: str, client_id: str) -> None:
    """(Browser thread.) Revoke the client's consent on Connect → MCP Endpoints."""
    page = tab.page
    page.goto(f"{base}/dashboard")
    page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name="Connect → MCP Endpoints"
    ).click()
    expect(page).to_have_url(f"{base}/dashboard/w/acme/endpoints")
    row = page.locator("#group-ops tbody tr").filter(has_text=client_id)
    # One row for the consent, its client named, at the scope chosen.
    expect(row).to_have_count(1)
    expect(row.locator("td").nth(0)).to_have_text(CLIENT_NAME)
    expect(row.locator("td").nth(2)).to_have_text("write")
    expires = row.locator("td").nth(5)
    expect(expires).to_contain_text("in ")
    # The moment itself on hover, as every other time of the dashboard.
    expect(expires.locator("time")).to_have_attribute("title", re.compile(r"^\d{4}-.* UTC$"))
    browser.screenshot(tab, "endpoints")
    # The consent's row, client id and all, fits a phone too (its table scrolls).
    page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    browser.screenshot(tab, "endpoints")
    ok, measures = fits(tab)
    assert ok, f"the endpoints page overflows a phone: {measures}"
    page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
    tab.assert_clean("the endpoints page")
    row.get_by_role("button", name="Revoke").click()  # the dialog is accepted
    expect(page.get_by_role("status")).to_have_text(
        f"Revoked the OAuth access of {CLIENT_NAME!r}: its sessions are closing now; "
        "it must ask for consent again."
    )
    expect(row).to_have_count(0)
    browser.screenshot(tab, "endpoints-revoked")
    tab.assert_clean("the endpoints page after revoking")


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_consent_in_chromium_then_tools_then_revocation_on_the_endpoints_page(
    tmp_path: Path,
) -> None:
    async with (
        running(tmp_path) as server,
        loopback_callback() as callback,
        open_browser("oauth") as browser,
    ):
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        tab = await browser.new_tab()
        consent = ChromiumConsent(server, browser, tab, callback)
        storage = MemoryStorage()
        revoked_at = refused_at = 0.0
        client_id = ""
        try:
            async with (
                httpx2.AsyncClient(auth=consent.provider(storage), timeout=REQUEST_S) as http,
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                with trio.fail_after(REQUEST_S):
                    await session.initialize()
                    listed = await session.list_tools()
                    found = await session.call_tool("search_context", {"query": "deploy"})
                assert "search_context" in [t.name for t in listed.tools]
                assert not found.is_error, found

                # The browser went through the consent page once, and came back with a code.
                assert len(consent.asked) == 1
                [query] = callback.queries
                assert query["iss"] == f"{server.base_url}/oauth"
                assert query["code"].startswith(CODE_PREFIX) and query["state"]
                assert storage.tokens is not None and storage.tokens.scope == "read write"
                assert storage.client_info is not None
                client_id = str(storage.client_info.client_id)
                [issued] = await server.store.select(McpToken, oauth_client_id=client_id)
                assert (issued.name, issued.scope.value) == (CLIENT_NAME, "write")
                consented = await server.store.select(AuditEntry, action="oauth.consent")
                assert [e.actor for e in consented] == ["admin:alice"]

                await browser.run(_revoke, browser, tab, server.base_url, client_id)
                revoked_at = trio.current_time()

                async def next_call() -> str | None:
                    """Why the client's next call failed; None if it went through."""
                    try:
                        with trio.fail_after(REQUEST_S):
                            result = await session.call_tool("search_context", {"query": "x"})
                    except Exception as exc:
                        return repr(exc)
                    return f"an error result: {result.content}" if result.is_error else None

                await wait_until(
                    next_call,
                    lambda why: why is not None,
                    what="the revoked client's next call to fail",
                    timeout_s=REVOKED_S,
                )
                refused_at = trio.current_time()
        except* ConsentAskedAgain:
            # Refused (401) and its refresh token refused too, the SDK's client asks for
            # consent again; nobody gives it, and its transport ends with the call on it.
            refused_at = consent.asked_at[1]
        assert revoked_at and refused_at, "the client never lost its access"
        assert refused_at - revoked_at < REVOKED_S
        access_tokens = await server.store.select(McpToken, oauth_client_id=client_id)
        assert access_tokens and all(t.revoked for t in access_tokens)
        refresh_tokens = await server.store.select(OAuthRefreshToken, client_id=client_id)
        assert refresh_tokens and all(t.revoked_at for t in refresh_tokens)


async def test_deny_on_the_consent_page_at_a_desktop_and_a_phone_then_approve_on_a_phone(
    tmp_path: Path,
) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        loopback_callback() as callback,
        open_browser("oauth-deny") as browser,
    ):
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        async with httpx2.AsyncClient(base_url=server.base_url, timeout=REQUEST_S) as http:
            client = await register_client(http, [callback.redirect_uri], client_name=CLIENT_NAME)
        client_id = client["client_id"]
        base = server.base_url
        tab = await browser.new_tab()
        problems: list[str] = []

        def deny(authorization_url: str, width: int, height: int) -> None:
            """(Browser thread.) To the consent page (signing in the first time), then Deny."""
            page = tab.page
            page.set_viewport_size({"width": width, "height": height})
            page.goto(authorization_url)
            if "/dashboard/login" in page.url:
                page.fill("#username", "alice")
                page.fill("#password", PASSWORD)
                page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("heading", level=1)).to_have_text(
                f"Connect {CLIENT_NAME} to acme/ops?"
            )
            expect(page.locator("#redirect-uri")).to_have_text(callback.redirect_uri)
            shot = browser.screenshot(tab, "consent")
            ok, measures = fits(tab)
            if not ok:
                problems.append(f"the consent page overflows: {measures} (see {shot.name})")
            tab.assert_clean("the consent page")
            page.get_by_role("button", name="Deny").click()
            # Back at the client, told it was refused (a policy that held the redirect
            # back would leave the browser here, the error logged).
            expect(page).to_have_url(re.compile(re.escape(callback.redirect_uri + "?")))
            tab.assert_clean("denying on the consent page")
            # The request is decided: its page says so, and offers no decision.
            page.go_back()
            page.reload()
            expect(page.get_by_text("This request was decided already")).to_be_visible()
            expect(page.get_by_role("button", name="Deny")).to_have_count(0)
            tab.assert_clean("the decided request")

        for width, height in (DESKTOP, PHONE):
            _, challenge = pkce_pair()
            asked = authorize_url(
                server,
                client_id,
                challenge,
                state=f"st-{width}",
                redirect_uri=callback.redirect_uri,
            )
            await browser.run(deny, base + asked, width, height)

        def approve_on_a_phone(authorization_url: str) -> None:
            """(Browser thread.) Approve, at 390 wide, signed in already."""
            page = tab.page
            page.goto(authorization_url)
            page.get_by_role("button", name="Approve").click()
            expect(page).to_have_url(re.compile(re.escape(callback.redirect_uri + "?")))
            tab.assert_clean("approving on a phone")

        _, challenge = pkce_pair()
        asked = authorize_url(
            server, client_id, challenge, state="st-ok", redirect_uri=callback.redirect_uri
        )
        await browser.run(approve_on_a_phone, base + asked)

        *refused, approved = callback.queries
        assert [(q["error"], q["state"], q["iss"]) for q in refused] == [
            ("access_denied", f"st-{width}", f"{base}/oauth") for width, _ in (DESKTOP, PHONE)
        ]
        assert all("code" not in q for q in refused)
        assert approved["state"] == "st-ok" and approved["code"] and "error" not in approved
        denied = await server.store.select(AuditEntry, action="oauth.deny")
        assert [e.actor for e in denied] == ["admin:alice", "admin:alice"]
        assert await server.store.select(McpToken, oauth_client_id=client_id) == []
    assert not problems, "\n".join(problems)
