"""Finding events on a serving agentws: the admin API, the CLI and the dashboard.

Deliveries go through the real door (JSON, and a form body as GitHub and
Slack send it, with text in several scripts); the service's indexer adds
them to the search index in the background; each door filters, searches
and pages them the same way (the rules themselves are the store contract's,
``tests/contract/test_event_search.py``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
import trio

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from tests.e2e.mcp_support import Running, running
from tests.e2e.polling import wait_until
from tests.e2e.run_support import deliver, finished, hook
from tests.e2e.webhook_support import Hook, post
from tests.support import run_agentws

PASSWORD = "correct horse battery staple"


async def _form_delivery(issued: Hook, payload: dict[str, Any]) -> str:
    """Deliver ``payload`` as GitHub's form content type does: ``payload=<JSON>``."""
    body = urlencode({"payload": json.dumps(payload, ensure_ascii=False)}).encode()
    response = await post(issued.url, body, {"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 202, response.text
    return str(response.json()["event_id"])


async def _deliveries(server: Running) -> tuple[dict[str, str], Hook]:
    """A few events of webhooks ``ci`` and ``shop``, all run: name → event id; ``ci``."""
    ci, shop = await hook(server, "ci"), await hook(server, "shop")
    ids = {
        "push": await deliver(
            ci, {"ref": "refs/heads/main", "head_commit": {"message": "Fix the checkout total"}}
        ),
        "deploy": await deliver(ci, {"status": "deploy failed", "service": "checkout"}),
        "form": await _form_delivery(
            shop, {"user": "Zoë Łukasz", "order": "A-1234", "note": "東京 delivery"}
        ),
    }
    for event_id in ids.values():
        await finished(server.store, event_id)
    return ids, ci


async def test_the_service_indexes_new_events_without_a_search(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server:
        issued = await hook(server, "ci")
        for n in range(3):
            await deliver(issued, {"n": n})
        # Nobody searches: the service's indexer adds them by itself.
        await wait_until(
            server.store.unindexed_events,
            lambda left: left == 0,
            what="the indexer to take every event",
        )


async def test_events_are_searched_filtered_and_paged_through_the_api(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server:
        ids, ci = await _deliveries(server)
        await create_admin(server.store, "alice", actor="t")
        _, token = await create_admin_token(server.store, "alice", "tests", actor="t")
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1", headers=headers, timeout=10
        ) as api:

            async def listed(**params: Any) -> dict[str, Any]:
                response = await api.get("/workspaces/acme/events", params=params)
                assert response.status_code == 200, response.text
                page: dict[str, Any] = response.json()
                return page

            async def found(**params: Any) -> list[str]:
                return [e["id"] for e in (await listed(**params))["items"]]

            everything = await listed()
            assert [e["id"] for e in everything["items"]] == [
                ids["form"],
                ids["deploy"],
                ids["push"],
            ]
            assert everything["next_cursor"] is everything["previous_cursor"] is None
            assert everything["unindexed"] == 0
            row = everything["items"][0]
            assert (row["webhook"], row["status"]) == ("shop", "done")
            assert row["body_bytes"] > 0 and "body" not in row

            assert await found(q="checkout") == [ids["deploy"], ids["push"]]
            assert await found(q='"deploy failed"') == [ids["deploy"]]
            assert await found(q="check*", webhook="ci") == [ids["deploy"], ids["push"]]
            assert await found(q="checkout", status="failed") == []
            assert await found(q="checkout", status="done", webhook="shop") == []
            # The form's payload field is the event: its text, in any script, is found.
            assert await found(q="zoe lukasz") == [ids["form"]]
            assert await found(q="東京") == [ids["form"]]
            assert await found(q="a-1234") == [ids["form"]]
            assert await found(since="1h") == list(ids.values())[::-1]
            assert await found(until="1h") == []
            assert await found(since="2000-01-01", until="2999-01-01T00:00:00Z", q="main") == [
                ids["push"]
            ]

            # Pages of one, newest first, with an event arriving between two pages.
            seen: list[str] = []
            params: dict[str, Any] = {"limit": 1, "webhook": "ci"}
            while True:
                page = await listed(**params)
                seen += [e["id"] for e in page["items"]]
                if len(seen) == 1:
                    await deliver(ci, {"status": "deploy failed again"})
                if page["next_cursor"] is None:
                    break
                params["cursor"] = page["next_cursor"]
            assert seen == [ids["deploy"], ids["push"]]
            back = await listed(webhook="ci", limit=1, cursor=page["previous_cursor"])
            assert [e["id"] for e in back["items"]] == [ids["deploy"]]
            # The newer page of the first one holds the event that arrived meanwhile.
            newest = await listed(webhook="ci", limit=5, cursor=back["previous_cursor"])
            assert len(newest["items"]) == 1 and newest["previous_cursor"] is None

            for bad, says in [
                ({"q": "* ! *"}, "no word"),
                ({"q": "d*"}, "at least 2"),
                ({"since": "yesterday"}, "since must be an ISO 8601"),
                ({"since": "1h", "until": "2h"}, "since must be before until"),
                ({"limit": "0"}, "limit must be a whole number from 1 to 200"),
                ({"limit": "x"}, "whole number"),
                ({"cursor": "page2"}, "cursor"),
                ({"status": "lost"}, "status must be one of"),
            ]:
                response = await api.get("/workspaces/acme/events", params=bad)
                assert response.status_code == 400, (bad, response.text)
                assert says in response.json()["error"]["message"], (bad, response.text)
            response = await api.get("/workspaces/acme/events", params={"webhook": "nope"})
            assert response.status_code == 404

            document = (await api.get("/openapi.json")).json()
            operation = document["paths"]["/workspaces/{workspace}/events"]["get"]
            names = {p["name"] for p in operation["parameters"]}
            assert names == {
                "workspace",
                "webhook",
                "status",
                "since",
                "until",
                "q",
                "limit",
                "cursor",
            }
            page_schema = document["components"]["schemas"]["EventPage"]
            assert set(page_schema["properties"]) == {
                "items",
                "next_cursor",
                "previous_cursor",
                "unindexed",
            }


async def test_the_cli_lists_searches_and_pages_events(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server:
        ids, _ = await _deliveries(server)
        database = server.runtime.settings.database_url

        async def cli(*args: str) -> str:
            code, out, err = await run_agentws(tmp_path, database, *args)
            assert code == 0, err
            return out

        async def json_page(*args: str) -> dict[str, Any]:
            page: dict[str, Any] = json.loads(await cli(*args, "--json"))
            return page

        page = await json_page("event", "list", "acme", "--search", "checkout")
        assert [e["id"] for e in page["items"]] == [ids["deploy"], ids["push"]]
        assert (page["next_cursor"], page["previous_cursor"], page["unindexed"]) == (
            None,
            None,
            0,
        )
        page = await json_page(
            "events", "list", "acme", "-q", "Zoë", "--webhook", "shop", "--since", "1h"
        )
        assert [e["id"] for e in page["items"]] == [ids["form"]]
        page = await json_page("event", "list", "acme", "--status", "done", "--until", "1h")
        assert page["items"] == []

        first = await json_page("event", "list", "acme", "--limit", "2")
        assert [e["id"] for e in first["items"]] == [ids["form"], ids["deploy"]]
        rest = await json_page(
            "event", "list", "acme", "--limit", "2", "--cursor", first["next_cursor"]
        )
        assert [e["id"] for e in rest["items"]] == [ids["push"]]
        assert rest["next_cursor"] is None and rest["previous_cursor"]

        text = await cli("event", "list", "acme", "--limit", "2")
        assert f"--cursor {first['next_cursor']}" in text
        assert text.splitlines()[0].split() == [
            "ID",
            "WEBHOOK",
            "STATUS",
            "ATTEMPTS",
            "RECEIVED_AT",
            "ERROR",
        ]
        text = await cli("event", "list", "acme", "--search", '"deploy failed"')
        assert ids["deploy"] in text and ids["push"] not in text

        code, out, err = await run_agentws(
            tmp_path, database, "event", "list", "acme", "--since", "last week"
        )
        assert (code, out) == (2, "")
        assert "argument --since: expected an ISO 8601" in err, err
        code, _, err = await run_agentws(
            tmp_path, database, "event", "list", "acme", "--limit", "500"
        )
        assert code == 2 and "1 to 200" in err, err


async def test_the_dashboard_filters_searches_and_pages_events(tmp_path: Path) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        ids, _ = await _deliveries(server)
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        form = await http.get("/dashboard/login")
        token = re.search(r'name="login_token" value="([^"]*)"', form.text)
        assert token
        signed = await http.post(
            "/dashboard/login",
            data={"login_token": token[1], "username": "alice", "password": PASSWORD, "next": ""},
        )
        assert signed.status_code == 302

        async def shown(**params: str) -> tuple[list[str], str]:
            response = await http.get("/dashboard/w/acme/events", params=params)
            assert response.status_code == 200, response.text
            return re.findall(r"<code>(evt_\w+)</code>", response.text), response.text

        listed, page = await shown()
        assert listed == [ids["form"], ids["deploy"], ids["push"]]
        for field in (
            'name="q"',
            'name="webhook"',
            'name="status"',
            'name="since"',
            'name="until"',
        ):
            assert field in page, field
        assert 'rel="next"' not in page and "Clear" not in page

        listed, page = await shown(q="checkout", webhook="ci", status="done", since="1h")
        assert listed == [ids["deploy"], ids["push"]]
        # The form shows the filters again, as typed.
        assert 'value="checkout"' in page and 'value="1h"' in page
        assert '<option value="ci" selected>' in page
        assert '<option value="done" selected>' in page
        assert "Clear" in page

        listed, page = await shown(q="東京 delivery")
        assert listed == [ids["form"]]
        listed, page = await shown(q="nothing-like-this")
        assert listed == [] and "No events match." in page

        # More than a page (50): links to older and newer pages keep the filters.
        issued = await hook(server, "bulk")
        async with trio.open_nursery() as nursery:
            for n in range(55):
                nursery.start_soon(deliver, issued, {"word": "bulk", "n": n})
        listed, page = await shown(q="bulk", webhook="bulk")
        assert len(listed) == 50
        older = re.search(r'<a rel="next" href="([^"]+)">', page)
        assert older, page
        link = html.unescape(older[1])
        assert "q=bulk" in link and "webhook=bulk" in link and "cursor=" in link
        response = await http.get(link)
        rest = re.findall(r"<code>(evt_\w+)</code>", response.text)
        assert len(rest) == 5 and not set(rest) & set(listed)
        assert 'rel="prev"' in response.text and 'rel="next"' not in response.text

        bad = await http.get("/dashboard/w/acme/events", params={"since": "soon"})
        assert bad.status_code == 400
        assert "since must be an ISO 8601" in html.unescape(bad.text)
        assert 'value="soon"' in bad.text
