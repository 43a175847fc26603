"""The audit viewer's workspace, group and OAuth-client filters, and its header link, over HTTP.

A real agentws serves on loopback; httpx2 plays the browser. Tool calls are
made over MCP by a static token of ``acme/ops``, by one of ``acme/sales``,
and by an OAuth client that an admin consented to (its token issued by the
real authorization server), so the gate writes their audit entries. The
viewer filters them by group and by OAuth client, its export keeps the same
entries, a group or token of another workspace is left out of the filter
and said so (not a page silently empty), and the header's Audit link
filters to the workspace only on that workspace's pages.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.domain.models import AuditEntry, McpToken
from agentws.libraries import attach_library
from agentws.workspaces.admin import create_token, create_workspace, endpoint_url
from tests.e2e.mcp_support import running, sdk_session
from tests.e2e.oauth_support import admin_browser, tokens_for
from tests.e2e.polling import wait_until
from tests.e2e.test_audit_viewer import _rows, make_calls


def _audit_link(page: str) -> str:
    """Where the header's Audit link points."""
    nav = page.split('aria-label="Sections"', 1)[1].split("</nav>", 1)[0]
    match = re.search(r'<a href="([^"]*)"[^>]*>Audit</a>', nav)
    assert match, "no Audit link in the header"
    return html.unescape(match.group(1))


def _notice(page: str) -> str:
    match = re.search(r'<p class="notice( error)?" role="status">(.*?)</p>', page, re.S)
    return html.unescape(match.group(2)) if match else ""


async def test_filters_by_group_oauth_client_and_workspace_and_the_export_keeps_them(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        store = server.store
        counts = await make_calls(server)
        # An OAuth client's call, through the real authorization server and gate.
        client_id, issued = await tokens_for(browser)
        async with sdk_session(server, "streamable", token=issued["access_token"]) as session:
            assert not (await session.call_tool("search_context", {"query": "oauth"})).is_error
        # A call through another group's token.
        await attach_library(store, "acme", "sales", "handbook", actor="t")
        sales = await create_token(store, "acme", "sales", name="crm", actor="t")
        url = endpoint_url(server.base_url, "acme", "sales")
        async with (
            httpx2.AsyncClient(headers=server.headers(sales.secret), timeout=10) as mcp_http,
            streamable_http_client(url, http_client=mcp_http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert not (await session.call_tool("search_context", {"query": "sales"})).is_error
        total = sum(counts.values()) + 2

        async def calls() -> list[AuditEntry]:
            return await store.select(AuditEntry, action="tool.call")

        await wait_until(calls, lambda found: len(found) >= total, what="every call's entry")
        signed = await browser.sign_in()
        assert signed.status_code == 302, signed.text
        http = browser.http

        by_client = await http.get("/dashboard/audit", params={"oauth_client": client_id})
        (row,) = _rows(by_client.text)
        assert "OAuth client Raw client" in row and "search_context" in row, row

        in_sales = await http.get(
            "/dashboard/audit", params={"workspace": "acme", "group": "sales"}
        )
        (row,) = _rows(in_sales.text)
        assert "token crm (sales)" in row and "group sales" in row, row
        in_ops = await http.get(
            "/dashboard/audit", params={"workspace": "acme", "group": "ops", "action": "tool.call"}
        )
        rows = _rows(in_ops.text)
        assert len(rows) == sum(counts.values()) + 1  # the static token's and the client's
        assert all("group ops" in r for r in rows) and not any("crm" in r for r in rows)

        # The export keeps what the filters keep, whichever they are.
        for params, expected in [
            ({"oauth_client": client_id}, 1),
            ({"workspace": "acme", "group": "sales"}, 1),
            ({"workspace": "acme", "group": "ops", "decision": "deny"}, counts["deny"]),
        ]:
            export = await http.get("/dashboard/audit.jsonl", params=params)
            assert export.status_code == 200, (params, export.text)
            lines = [json.loads(line) for line in export.text.splitlines()]
            assert len(lines) == expected, (params, lines)
            if "oauth_client" in params:
                assert all(e["detail"]["oauth_client"] == client_id for e in lines)
            if "decision" in params:
                assert all(e["detail"]["decision"] == "deny" for e in lines)

        # A group and a token of acme, left chosen when the workspace became beta
        # (no script to clear them): filtered on beta alone, and said so.
        beta = await create_workspace(store, "beta", name=None, actor="t")
        await store.insert(
            AuditEntry(workspace_id=beta.id, actor="admin:alice", action="group.create", target="x")
        )
        (token,) = await store.select(McpToken, name="tests")
        moved = {"workspace": "beta", "group": "ops", "token": token.id}
        page = await http.get("/dashboard/audit", params=moved)
        assert page.status_code == 200, page.text
        notice = _notice(page.text)
        assert "group 'ops' is not in workspace 'beta'" in notice, notice
        assert "token 'tests' is not of workspace 'beta'" in notice, notice
        rows = _rows(page.text)
        assert rows and all("tool.call" not in r for r in rows), rows
        assert any("group.create" in r for r in rows), rows
        assert f'value="{token.id}" selected' not in page.text
        export = await http.get("/dashboard/audit.jsonl", params=moved)
        assert export.status_code == 400 and "not in workspace 'beta'" in export.text


async def test_the_header_audit_link_filters_only_on_a_workspace_s_pages(tmp_path: Path) -> None:
    async with running(tmp_path) as server, admin_browser(server) as browser:
        assert (await browser.sign_in()).status_code == 302
        http = browser.http
        for path in (
            "/dashboard/audit?workspace=acme",
            "/dashboard/admins",
            "/dashboard/workspaces",
            "/dashboard/approvals?workspace=acme",
        ):
            page = await http.get(path)
            assert page.status_code == 200, path
            assert _audit_link(page.text) == "/dashboard/audit", path
        for path in ("/dashboard/w/acme/groups", "/dashboard/w/acme/libraries"):
            page = await http.get(path)
            assert _audit_link(page.text) == "/dashboard/audit?workspace=acme", path
        # From the admins page the link shows what has no workspace: the admin's creation.
        admins = await http.get("/dashboard/admins")
        log = await http.get(_audit_link(admins.text))
        assert any("admin.create" in r and "alice" in r for r in _rows(log.text))
