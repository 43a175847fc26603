"""Connecting an OAuth-protected MCP server from the dashboard, in headless Chromium.

The upstream is the ``mcp`` sdist's ``simple-auth`` example: its
authorization server and its resource server, two processes. The admin
opens the connector's page (it says *needs authorization*), clicks Connect,
signs in on simple-auth's own page, and is sent back to agentws's callback,
which shows the page again: connected. The group's callers then get the
upstream's tool, called with the upstream's token.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import (
    CachedTool,
    Capability,
    ConnectorGrant,
    GrantState,
)
from agentws.tools.admin import set_label
from tests.e2e.browser_support import Tab, open_browser, sign_in
from tests.e2e.mcp_support import running, sdk_session
from tests.e2e.oauth_support import PASSWORD
from tests.e2e.polling import wait_until
from tests.e2e.reference_servers import simple_auth_servers
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, TIMEOUT_S, add_oauth_remote
from tests.e2e.test_oauth_connectors import ALLOW, ENV

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

#: How long a page may take to load or to move on, on a loaded machine.
PAGE_MS = 20_000


async def test_an_admin_connects_simple_auth_from_the_connector_page(tmp_path: Path) -> None:
    async with (
        simple_auth_servers() as url,
        running(tmp_path, with_library=False, **ENV) as server,
        open_browser("oauth-connector") as browser,
    ):
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        connector = await add_oauth_remote(
            server.store, url, "timely", allowlist=Allowlist.parse(ALLOW)
        )
        # simple-auth's page has no icon: its 404 is the upstream's, not agentws's.
        tab = await browser.new_tab(tolerate=("/favicon.ico",))
        page_path = "/dashboard/w/acme/connectors/timely"

        def connect(tab: Tab) -> None:
            sign_in(tab, server.base_url, "alice", PASSWORD, path=page_path)
            state = tab.page.locator("#connector-authorization")
            expect(state).to_contain_text("needs authorization", timeout=PAGE_MS)
            tab.page.locator("#connector-connect").click()
            # simple-auth's own sign-in page, filled in as it says.
            tab.page.wait_for_url("**/login?**", timeout=PAGE_MS)
            expect(tab.page.locator("h2")).to_have_text("MCP Demo Authentication")
            tab.page.get_by_role("button", name="Sign In").click()
            tab.page.wait_for_url(f"**{page_path}", timeout=PAGE_MS)
            expect(tab.page.locator("#connector-authorization")).to_contain_text(
                "connected", timeout=PAGE_MS
            )
            expect(tab.page.locator("#connector-disconnect")).to_be_visible()
            browser.screenshot(tab, "connected")
            tab.assert_clean("the connector page, connected")

        await browser.run(connect, tab)
        grant = await server.store.find(ConnectorGrant, connector_id=connector.id)
        assert grant is not None and grant.state is GrantState.CONNECTED
        await wait_until(
            lambda: server.store.find(CachedTool, connector_id=connector.id, name="get_time"),
            what="the upstream's tools in the cache",
        )
        await set_label(server.store, "acme", "timely_get_time", Capability.READ, actor="t")
        async with sdk_session(server, "streamable") as session:
            with trio.fail_after(TIMEOUT_S):
                result = await session.call_tool("timely_get_time", {})
        assert not result.is_error, result
