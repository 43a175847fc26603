"""OAuth consents on Connect → MCP Endpoints: one row a consent, however often it refreshed.

A real agentws on loopback; clients consented through the real dashboard
page (:mod:`tests.e2e.oauth_support`'s signed-in httpx2 browser) refresh
their tokens as clients do. The page must list each consent once, beside
the static tokens, and its Revoke must end the consent: every access
token and the refresh token with them.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from agentws.domain.rules import hash_secret
from tests.e2e.mcp_support import running
from tests.e2e.oauth_support import (
    admin_browser,
    hidden_field,
    mcp_status,
    refresh,
    tokens_for,
)

PAGE = "/dashboard/w/acme/endpoints"


def _ops_section(page: str) -> str:
    """The ``ops`` group's card of the endpoints page."""
    start = page.index('id="group-ops"')
    return page[start : page.index("</section>", start)]


def _revoke_actions(section: str, client_id: str) -> list[str]:
    """The Revoke forms' actions in the rows naming ``client_id``."""
    rows = [row for row in section.split("<tr>") if f"<code>{client_id}</code>" in row]
    return [html.unescape(a) for row in rows for a in re.findall(r'action="([^"]+)"', row)]


async def test_a_refreshed_consent_is_one_row_and_its_revoke_ends_it(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        client_id, first = await tokens_for(browser)
        second = (await refresh(browser.http, client_id, first["refresh_token"])).json()
        third = (await refresh(browser.http, client_id, second["refresh_token"])).json()
        other_id, other = await tokens_for(browser, scope="read")

        page = (await browser.http.get(PAGE)).text
        section = _ops_section(page)
        # The static token is listed as ever; each consent once, however many tokens it had.
        assert '<td data-label="Name">tests</td>' in section
        [action] = _revoke_actions(section, client_id)
        newest = await server.store.token_by_hash(hash_secret(third["access_token"]))
        assert newest is not None
        assert action == f"{PAGE}/ops/tokens/{newest.id}/revoke"
        assert len(_revoke_actions(section, other_id)) == 1
        assert section.count('<td data-label="Client">Raw client</td>') == 2

        revoked = await browser.http.post(action, data={"csrf": hidden_field(page, "csrf")})
        assert revoked.status_code == 302, revoked.text
        after = await browser.http.get(PAGE)
        assert "Revoked the OAuth access of &#39;Raw client&#39;" in after.text
        assert _revoke_actions(_ops_section(after.text), client_id) == []
        assert len(_revoke_actions(_ops_section(after.text), other_id)) == 1

        # The whole consent ended: its access tokens and its refresh token.
        for tokens in (first, second, third):
            assert await mcp_status(server, tokens["access_token"]) == 401
        again = await refresh(browser.http, client_id, third["refresh_token"])
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        # The other client's consent is untouched.
        assert await mcp_status(server, other["access_token"]) == 200
