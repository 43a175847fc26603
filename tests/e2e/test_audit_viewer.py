"""The audit viewer, the admin API's audit log and the admins page, over plain HTTP.

A real agentws serves on loopback; httpx2 plays the browser. Tool calls
made over MCP with a token are filtered by token, tool, decision and time
in ``/dashboard/audit``, paged, and exported as JSON lines (each line the
JSON of ``agentws audit tail --json``); ``GET /api/v1/audit`` takes the
same filters. The admins page creates admins and admin API tokens (their
secrets shown once), revokes tokens and never deletes the last admin. The
browser tests (``test_audit_browser.py``, ``test_admins_browser.py``) walk
the same pages in Chromium.
"""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
import trio
from mcp.shared.exceptions import MCPError

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import Admin, AdminToken, AuditEntry, McpToken, Permission
from agentws.domain.rules import utcnow
from agentws.doors.views import audit_json
from agentws.tools.admin import set_permission
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.polling import wait_until

PASSWORD = "correct horse battery staple"


def _hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert match, f"no hidden field {name!r} in the page"
    return match.group(1)


async def _signed_in(server: Running, http: httpx2.AsyncClient) -> str:
    """Sign ``alice`` in; the session's CSRF token."""
    await create_admin(server.store, "alice", password=PASSWORD, actor="t")
    form = await http.get("/dashboard/login")
    response = await http.post(
        "/dashboard/login",
        data={
            "login_token": _hidden(form.text, "login_token"),
            "username": "alice",
            "password": PASSWORD,
            "next": "",
        },
    )
    assert response.status_code == 302, response.text
    page = await http.get("/dashboard/audit")
    assert page.status_code == 200, page.text
    return _hidden(page.text, "csrf")


async def make_calls(server: Running) -> dict[str, int]:
    """Tool calls over MCP with the seeded token: run, then denied, then queued.

    Returns how many of each decision were made.
    """
    store = server.store
    async with sdk_session(server, "streamable") as session:
        for q in ("refunds", "deploys", "holidays"):
            assert not (await session.call_tool("search_context", {"query": q})).is_error
    await set_permission(
        store, "acme", "read_context_document", Permission.DENY, group_slug="ops", actor="t"
    )
    await set_permission(
        store, "acme", "search_context", Permission.REQUIRES_APPROVAL, group_slug="ops", actor="t"
    )
    async with sdk_session(server, "streamable") as session:
        for _ in range(2):
            with pytest.raises(MCPError, match="permission denied"):
                await session.call_tool("read_context_document", {"id": "doc_x"})
        await session.call_tool("search_context", {"query": "queued"})
    counts = {"run": 3, "deny": 2, "queue": 1}

    async def calls() -> list[AuditEntry]:
        return await store.select(AuditEntry, action="tool.call")

    await wait_until(calls, lambda found: len(found) >= 6, what="the calls' audit entries")
    return counts


def _rows(page: str) -> list[str]:
    """The audit table's entries (their text, tags and relative times removed).

    A relative time ("0 s ago") moves between two requests; the entry does not.
    """
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    body = re.sub(r"<time[^>]*>.*?</time>", "", body, flags=re.S)
    rows = re.findall(r"<tr id=[^>]*>(.*?)</tr>", body, re.S)
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", r)).split()) for r in rows]


async def test_the_viewer_filters_pages_and_exports_tool_calls(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        counts = await make_calls(server)
        await _signed_in(server, http)
        (token,) = await server.store.select(McpToken, name="tests")

        everything = await http.get("/dashboard/audit")
        assert everything.status_code == 200
        assert 'href="/dashboard/audit?' in everything.text or "Audit</a>" in everything.text
        assert "<time datetime=" in everything.text

        by_token = await http.get("/dashboard/audit", params={"token": token.id})
        rows = _rows(by_token.text)
        assert len(rows) == sum(counts.values())
        assert all("token tests (ops)" in r for r in rows)

        denied = await http.get(
            "/dashboard/audit",
            params={"workspace": "acme", "token": token.id, "decision": "deny"},
        )
        rows = _rows(denied.text)
        assert len(rows) == counts["deny"]
        assert all("read_context_document" in r and "group ops" in r for r in rows), rows

        tool = await http.get(
            "/dashboard/audit", params={"tool": "search_context", "action": "tool.call"}
        )
        assert len(_rows(tool.text)) == counts["run"] + counts["queue"]

        # A time range: everything up to an hour ago holds none of the calls.
        past = await http.get("/dashboard/audit", params={"until": "1h", "action": "tool.call"})
        assert "No entries match." in past.text
        recent = await http.get("/dashboard/audit", params={"since": "1h", "action": "tool.call"})
        assert len(_rows(recent.text)) == sum(counts.values())

        # Pages of two, newest first, forward to the end and back again.
        pages: list[list[str]] = []
        url = "/dashboard/audit?action=tool.call&limit=2"
        while True:
            page = await http.get(url)
            pages.append(_rows(page.text))
            older = re.search(r'<a rel="next" href="([^"]+)"', page.text)
            if older is None:
                break
            url = html.unescape(older.group(1))
            assert "action=tool.call" in url and "limit=2" in url
        assert [len(p) for p in pages] == [2, 2, 2]
        newer = re.search(r'<a rel="prev" href="([^"]+)"', page.text)
        assert newer is not None
        back = await http.get(html.unescape(newer.group(1)))
        assert _rows(back.text) == pages[1]

        # The export: every entry the filters keep, as `agentws audit tail --json` prints.
        export = await http.get("/dashboard/audit.jsonl", params={"token": token.id})
        assert export.status_code == 200
        assert export.headers["content-type"].startswith("application/x-ndjson")
        assert export.headers["content-disposition"].startswith("attachment; filename=")
        lines = [json.loads(line) for line in export.text.splitlines()]
        stored = await server.store.select(AuditEntry, actor=f"mcp:{token.id}")
        expected = sorted(stored, key=lambda e: (e.created_at, e.id), reverse=True)
        assert lines == [json.loads(json.dumps(audit_json(e))) for e in expected]
        assert {line["detail"]["decision"] for line in lines} == {"run", "deny", "queue"}


async def test_the_viewer_refuses_bad_filters_and_escapes_what_entries_hold(
    tmp_path: Path,
) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        await _signed_in(server, http)
        await server.store.insert(
            AuditEntry(
                actor="mcp:tok_x",
                action="tool.call",
                target="<script>alert(1)</script>invoice\u202efdp.exe",
                detail={"decision": "run", "outcome": "<b>ok</b>"},
            )
        )
        page = await http.get("/dashboard/audit")
        assert "<script>alert(1)" not in page.text and "&lt;script&gt;" in page.text
        assert "\u202e" not in page.text and "\\u202e" in page.text
        assert "<b>ok</b>" not in page.text

        for params, message in [
            ({"since": "yesterday-ish"}, "since must be"),
            ({"decision": "maybe"}, "decision must be one of"),
            ({"workspace": "nope"}, "nope"),
            ({"group": "ops"}, "give the workspace too"),
            ({"since": "1h", "until": "2h"}, "must be before"),
            ({"cursor": "garbage"}, "cursor must be"),
        ]:
            refused = await http.get("/dashboard/audit", params=params)
            assert refused.status_code == 400, params
            assert message in html.unescape(refused.text), (params, refused.text)
            exported = await http.get("/dashboard/audit.jsonl", params=params)
            if "cursor" not in params:  # the export has no pages to start at
                assert exported.status_code == 400 and message in exported.text

        # Signed out: the export, like the page, asks to sign in first.
        async with httpx2.AsyncClient(base_url=server.base_url, timeout=10) as stranger:
            assert (await stranger.get("/dashboard/audit.jsonl")).status_code == 302


async def test_the_api_reads_the_audit_log_with_the_same_filters(tmp_path: Path) -> None:
    async with running(tmp_path) as server:
        counts = await make_calls(server)
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        _, secret = await create_admin_token(server.store, "alice", "script", actor="t")
        (token,) = await server.store.select(McpToken, name="tests")
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {secret}"},
            timeout=10,
        ) as api:
            page = (
                await api.get(
                    "/audit", params={"token": "tests", "workspace": "acme", "group": "ops"}
                )
            ).json()
            assert len(page["items"]) == sum(counts.values())
            assert page["next_cursor"] is None and page["previous_cursor"] is None
            denied = (await api.get("/audit", params={"decision": "deny", "limit": 1})).json()
            assert [e["target"] for e in denied["items"]] == ["read_context_document"]
            older = (
                await api.get(
                    "/audit",
                    params={"decision": "deny", "limit": 1, "cursor": denied["next_cursor"]},
                )
            ).json()
            assert len(older["items"]) == 1 and older["next_cursor"] is None
            assert older["previous_cursor"] is not None
            hour_ago = (utcnow() - timedelta(hours=1)).isoformat()
            assert (await api.get("/audit", params={"until": hour_ago})).json()["items"] == []
            by_id = await api.get("/audit", params={"token": token.id, "tool": "search_context"})
            assert len(by_id.json()["items"]) == counts["run"] + counts["queue"]
            for params in (
                {"limit": "0"},
                {"limit": "201"},
                {"limit": "x"},
                {"decision": "maybe"},
                {"since": "soon"},
                {"cursor": "nope"},
                {"tool": "a\x00b"},
            ):
                refused = await api.get("/audit", params=params)
                assert refused.status_code == 400, (params, refused.text)
                assert refused.json()["error"]["code"] == "invalid"
            assert (await api.get("/audit", params={"workspace": "nope"})).status_code == 404
            document = (await api.get("/openapi.json")).json()
            names = {p["name"] for p in document["paths"]["/audit"]["get"]["parameters"]}
            assert {"workspace", "group", "token", "tool", "decision", "since", "until"} <= names
        async with httpx2.AsyncClient(base_url=f"{server.base_url}/api/v1") as anonymous:
            assert (await anonymous.get("/audit")).status_code == 401


async def test_admins_and_their_api_tokens_from_the_dashboard(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        csrf = await _signed_in(server, http)
        store = server.store
        page = await http.get("/dashboard/admins")
        assert page.status_code == 200 and "the only admin" in page.text

        # The last admin is never deleted.
        refused = await http.post("/dashboard/admins/alice/delete", data={"csrf": csrf})
        assert refused.status_code == 302
        notice = await http.get("/dashboard/admins")
        assert "only admin" in html.unescape(notice.text)
        assert await store.find(Admin, username="alice") is not None

        # Without the form's CSRF token nothing happens.
        forged = await http.post("/dashboard/admins", data={"username": "mallory"})
        assert forged.status_code == 403
        assert await store.find(Admin, username="mallory") is None

        # A generated password is shown once; a typed one is never shown.
        made = await http.post("/dashboard/admins", data={"csrf": csrf, "username": "bob"})
        assert made.status_code == 200
        shown = re.search(r'<code id="admin-password">([^<]+)</code>', made.text)
        assert shown is not None and len(shown.group(1)) >= 20
        typed = "a long typed password"
        carol = await http.post(
            "/dashboard/admins", data={"csrf": csrf, "username": "carol", "password": typed}
        )
        assert carol.status_code == 200 and typed not in carol.text
        short = await http.post(
            "/dashboard/admins", data={"csrf": csrf, "username": "dave", "password": "short"}
        )
        assert short.status_code == 302
        assert "at least 12 characters" in (await http.get("/dashboard/admins")).text
        assert await store.find(Admin, username="dave") is None

        # An admin API token: shown once, works, is listed without its secret, revoked.
        created = await http.post(
            "/dashboard/admins/tokens", data={"csrf": csrf, "admin": "bob", "name": "deploy"}
        )
        secret = re.search(r"(agwa_[A-Za-z0-9_\-]+)", created.text)
        assert secret is not None
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {secret.group(1)}"},
        ) as api:
            assert (await api.get("/workspaces")).status_code == 200
            listed = await http.get("/dashboard/admins")
            assert "deploy" in listed.text and secret.group(1) not in listed.text
            (record,) = await store.select(AdminToken, name="deploy")
            revoked = await http.post(
                f"/dashboard/admins/tokens/{record.id}/revoke", data={"csrf": csrf}
            )
            assert revoked.status_code == 302
            assert (await api.get("/workspaces")).status_code == 401

        # Deleting bob: allowed now that others are left; audited as alice.
        gone = await http.post("/dashboard/admins/bob/delete", data={"csrf": csrf})
        assert gone.status_code == 302
        assert await store.find(Admin, username="bob") is None
        actions = {
            (e.action, e.target) for e in await store.select(AuditEntry, actor="admin:alice")
        }
        assert {
            ("admin.create", "bob"),
            ("admin.create", "carol"),
            ("admin_token.create", "bob/deploy"),
            ("admin_token.revoke", record.id),
            ("admin.delete", "bob"),
        } <= actions


async def test_pages_of_ten_thousand_entries(tmp_path: Path) -> None:
    """The page's whole answer over 10,000 audit rows, timed (printed, not asserted)."""
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=30) as http,
    ):
        await _signed_in(server, http)
        store = server.store
        (token,) = await store.select(McpToken, name="tests")
        workspace = await store.workspace_by_slug("acme")
        group = await store.group_by_slug("acme", "ops")
        start = utcnow() - timedelta(days=7)
        decisions = ["run", "run", "run", "queue", "deny", "confirm"]
        await store.insert_many(
            [
                AuditEntry(
                    workspace_id=workspace.id,
                    actor=f"mcp:{token.id}" if n % 3 else "admin:alice",
                    action="tool.call" if n % 3 else "tool.label",
                    target=f"tool_{n % 20}",
                    detail={"group_id": group.id, "decision": decisions[n % 6], "outcome": "ok"},
                    created_at=start + timedelta(seconds=60 * n),
                )
                for n in range(10_000)
            ]
        )
        for params in (
            {},
            {"workspace": "acme", "group": "ops", "token": token.id, "decision": "deny"},
            {"tool": "tool_7", "since": "3d", "limit": "200"},
            {"until": "5d", "action": "tool.label"},
        ):
            began = trio.current_time()
            page = await http.get("/dashboard/audit", params=params)
            took = trio.current_time() - began
            assert page.status_code == 200 and "No entries match." not in page.text
            print(f"/dashboard/audit over 10,000 entries {params}: {took * 1000:.0f} ms")
