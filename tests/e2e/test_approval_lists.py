"""The approval queue's lists, on a serving agentws: small whatever they list, paged, named.

A caller that queued many calls with large arguments must not make the
approvals page or ``GET /api/v1/approvals`` slow or huge: both carry a
preview of each call's arguments (the whole arguments only on the call's own
page and in ``GET /api/v1/approvals/<id>``) and go page by page with
next/previous cursors. The page keeps the dashboard's menu, names callers by
their token's or webhook's name, and decides many calls at once (each
decision made and audited as on the call's own page).
"""

from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest

from agentws.admins.access import create_admin_token
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    AuditEntry,
    Capability,
    McpToken,
    Webhook,
    arguments_hash,
)
from agentws.domain.previews import PREVIEW_CHARS, json_bytes
from agentws.domain.rules import utcnow
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import hook
from tests.e2e.test_dashboard import LOOPBACK, _browser, _hidden, _signed_in

#: The target of issue 21: a list answers in under 1 MB whatever the queue holds.
MAX_LIST_BYTES = 1_000_000
LARGE = 256 * 1024


async def _seed(server: Running, n: int, size: int) -> list[Approval]:
    """``n`` pending calls of the token ``tests``, each with ``size`` bytes of arguments."""
    group = await server.store.group_by_slug("acme", "ops")
    token = await server.store.find(McpToken, name="tests")
    assert token is not None
    now = utcnow()
    calls = []
    for i in range(n):
        arguments = {"q": f"{i:04d}" + "x" * (size - 12)}
        calls.append(
            Approval(
                group_id=group.id,
                token_id=token.id,
                requested_by=f"mcp:{token.id}",
                tool_name="third_send",
                capability=Capability.WRITE,
                definition_hash="d" * 64,
                arguments=arguments,
                arguments_hash=arguments_hash("third_send", arguments),
                created_at=now - timedelta(minutes=n - i),
                expires_at=now + timedelta(days=1),
            )
        )
    await server.store.insert_many(calls)
    return calls


def _rows(page: str) -> list[str]:
    return re.findall(r'name="id" value="(apr_[a-z0-9]+)"', page)


async def test_the_page_and_the_api_stay_small_and_page_through_large_calls(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        calls = await _seed(server, 61, LARGE)
        assert json_bytes(calls[0].arguments) == LARGE
        ids = [c.id for c in calls]
        await _signed_in(server, http)

        first = await http.get("/dashboard/approvals")
        assert first.status_code == 200
        assert len(first.content) < MAX_LIST_BYTES / 10
        assert "Waiting (61)" in first.text
        assert _rows(first.text) == ids[:50]
        assert "x" * PREVIEW_CHARS not in first.text  # previews only
        assert "256.0 KiB in all" in first.text
        following = re.search(r'rel="next" href="([^"]+)"', first.text)
        assert following and 'rel="prev"' not in first.text
        second = await http.get(html.unescape(following.group(1)))
        assert _rows(second.text) == ids[50:]
        assert 'rel="next"' not in second.text
        back = re.search(r'rel="prev" href="([^"]+)"', second.text)
        assert back
        assert _rows((await http.get(html.unescape(back.group(1)))).text) == ids[:50]
        smaller = await http.get("/dashboard/approvals", params={"limit": "5"})
        assert _rows(smaller.text) == ids[:5]
        # A cursor that no page gave starts at the top.
        odd = await http.get("/dashboard/approvals", params={"cursor": "nope"})
        assert odd.status_code == 200 and _rows(odd.text) == ids[:50]
        # So does a page size that is no number ('²' is a digit to str.isdigit(), not to int()).
        for limit in ("²", "\u0663", "x"):
            odd = await http.get("/dashboard/approvals", params={"limit": limit})
            assert odd.status_code == 200 and _rows(odd.text) == ids[:50], limit

        _, secret = await create_admin_token(server.store, "alice", "tests", actor="t")
        api = httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {secret}"},
            timeout=10,
        )
        async with api:
            listed = await api.get("/approvals", params={"status": "pending"})
            assert listed.status_code == 200
            assert len(listed.content) < MAX_LIST_BYTES / 10
            page = listed.json()
            assert [a["id"] for a in page["items"]] == ids[:50]
            assert page["previous_cursor"] is None
            for item in page["items"]:
                assert "arguments" not in item and "result" not in item
                assert len(item["arguments_preview"]) == PREVIEW_CHARS
                assert item["arguments_preview"].endswith("…")
                assert item["arguments_bytes"] == LARGE
                assert item["caller"] == "token tests"
            seen = [a["id"] for a in page["items"]]
            cursor = page["next_cursor"]
            while cursor:
                page = (await api.get("/approvals", params={"cursor": cursor})).json()
                seen += [a["id"] for a in page["items"]]
                cursor = page["next_cursor"]
            assert seen == ids
            previous = (
                await api.get("/approvals", params={"cursor": page["previous_cursor"]})
            ).json()
            assert [a["id"] for a in previous["items"]] == ids[:50]
            one = (await api.get("/approvals", params={"limit": "1"})).json()
            assert [a["id"] for a in one["items"]] == ids[:1] and one["next_cursor"]
            for bad in (
                *({"cursor": "n1"}, {"limit": "0"}, {"limit": "201"}, {"limit": "x"}),
                *({"limit": "²"}, {"limit": "\u0663"}, {"limit": "1_0"}, {"limit": "9" * 30}),
            ):
                refused = await api.get("/approvals", params=bad)
                assert refused.status_code == 400, bad
                assert refused.json()["error"]["code"] == "invalid"
                assert refused.json()["error"]["message"].startswith(tuple(bad)), bad
            # The whole arguments are on the call's own page and in its own answer.
            whole = await api.get(f"/approvals/{ids[0]}")
            assert whole.json()["arguments"] == calls[0].arguments
        page = await http.get(f"/dashboard/approvals/{ids[0]}")
        assert calls[0].arguments["q"] in page.text


async def test_the_page_keeps_the_menu_and_names_callers(tmp_path: Path) -> None:
    async with running(tmp_path) as server, _browser(server) as http:
        (by_token,) = await _seed(server, 1, 100)
        ci = await hook(server, group="ops")
        webhook = await server.store.find(Webhook, name="ci")
        assert webhook is not None
        by_hook = await server.store.insert(
            Approval(
                group_id=by_token.group_id,
                requested_by=f"webhook:{webhook.id}",
                tool_name="third_send",
                capability=Capability.WRITE,
                definition_hash="d" * 64,
                arguments={"q": "page"},
                arguments_hash=arguments_hash("third_send", {"q": "page"}),
                expires_at=utcnow() + timedelta(days=1),
            )
        )
        assert ci.url
        await _signed_in(server, http)
        for path in ("/dashboard/approvals", "/dashboard/approvals?workspace=acme"):
            page = (await http.get(path)).text
            menu = page[page.index('aria-label="Sections"') : page.index("</nav>")]
            for section in ("webhooks", "endpoints", "permissions", "events", "libraries"):
                assert f'href="/dashboard/w/acme/{section}' in menu, section
            assert 'href="/dashboard/approvals?workspace=acme"' in menu
            assert ">token tests<" in page and ">webhook ci<" in page
            assert f">mcp:{by_token.token_id}<" not in page
        own = (await http.get(f"/dashboard/approvals/{by_token.id}")).text
        assert ">token tests<" in own
        own = (await http.get(f"/dashboard/approvals/{by_hook.id}")).text
        assert ">webhook ci<" in own


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_many_calls_are_decided_at_once_each_as_on_its_own_page(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    async with (
        running(tmp_path, **LOOPBACK) as server,
        third_party_server(state) as url,
        _browser(server) as http,
    ):
        await attach_remote(server.store, url, {})
        async with sdk_session(server, "streamable") as session:
            queued = [await session.call_tool("third_send", {"q": f"page {n}"}) for n in range(4)]
        ids = [(r.structured_content or {})["approval_id"] for r in queued]
        csrf = await _signed_in(server, http)
        page = (await http.get("/dashboard/approvals")).text
        assert _rows(page) == ids
        assert _hidden(page, "csrf") == csrf

        forged = await http.post(
            "/dashboard/approvals/bulk", data={"id": ids[:2], "decision": "approve"}
        )
        assert forged.status_code == 403
        assert state.calls == []

        approved = await http.post(
            "/dashboard/approvals/bulk",
            data={"csrf": csrf, "id": ids[:2], "decision": "approve", "reason": "fine"},
        )
        assert approved.status_code == 302
        after = await http.get(approved.headers["location"])
        assert "Approved 2 calls: 2 executed." in after.text
        assert state.calls == ["send", "send"]

        denied = await http.post(
            "/dashboard/approvals/bulk",
            data={"csrf": csrf, "id": [ids[2], ids[0]], "decision": "deny", "reason": "no"},
        )
        notice = (await http.get(denied.headers["location"])).text
        assert "Denied 1 call. 1 not decided: approval " in notice
        assert f"{ids[0]} is already executed by admin:alice" in html.unescape(notice)
        assert _rows(notice) == ids[3:]
        nothing = await http.post(
            "/dashboard/approvals/bulk", data={"csrf": csrf, "decision": "deny"}
        )
        assert "Tick at least one call" in (await http.get(nothing.headers["location"])).text

        for approval_id, status, reason in (
            (ids[0], ApprovalStatus.EXECUTED, "fine"),
            (ids[1], ApprovalStatus.EXECUTED, "fine"),
            (ids[2], ApprovalStatus.DENIED, "no"),
            (ids[3], ApprovalStatus.PENDING, None),
        ):
            decided = await server.store.get(Approval, approval_id)
            assert (decided.status, decided.reason) == (status, reason)

        # Decisions audited one by one, with the admin's name, as single ones are.
        def decisions(entries: list[AuditEntry]) -> list[tuple[str, str, str]]:
            return [(e.action, e.target, e.actor) for e in entries]

        entries = await wait_until(
            lambda: server.store.audit_log(limit=50, action_prefix="approval."),
            lambda found: len(found) >= 5,
            timeout_s=5.0,
            what="the decisions in the audit log",
        )
        assert sorted(decisions(entries)) == sorted(
            [
                ("approval.approve", ids[0], "admin:alice"),
                ("approval.execute", ids[0], "system:approvals"),  # the service ran it
                ("approval.approve", ids[1], "admin:alice"),
                ("approval.execute", ids[1], "system:approvals"),
                ("approval.deny", ids[2], "admin:alice"),
            ]
        )
