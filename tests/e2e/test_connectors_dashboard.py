"""The Connectors pages over HTTP: what they refuse, and that a secret is never sent back.

A real agentws serves on loopback; httpx2 plays the browser. Refusals change
nothing: a form without its CSRF token (403), a URL that is not http(s), a
URL the outbound guard refuses (a private or link-local address: the
guard's decision is read, nothing is ever connected to), a credential in a
plain header. A refused form comes back filled as typed, but the secret,
which no page, notice or log line ever holds. Accepting suggested labels
applies only the suggestions the page showed (a refresh between drawing
and posting changes nothing it did not show); a connector's page counts
only its own tools' calls in its health.
"""

from __future__ import annotations

import html
import logging
import re
import urllib.parse
from pathlib import Path

import httpx2
import pytest
from cryptography.fernet import Fernet

from agentws.domain.models import AuditEntry, CachedTool, Capability, Connector, ConnectorKind
from tests.e2e.fake_slack import BOT_TOKEN, fake_slack
from tests.e2e.mcp_support import running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, ThirdParty, third_party_server, tool
from tests.e2e.test_dashboard import LOOPBACK, _browser, _signed_in

SECRET = "xoxb-never-shown-7d1e0c"
#: Each server's service key (connector secrets are sealed with it).
KEY = {"AGENTWS_SECRET_KEY": Fernet.generate_key().decode()}
HOOK_SECRET_PATH = "T0001/B0001/hooksecretpath42"


def _page(response: httpx2.Response) -> str:
    """The page's text with its entities read (``&#39;`` is ``'``)."""
    return html.unescape(response.text)


def _notice(response: httpx2.Response) -> str:
    """The one-time notice a form's answer carries (``!`` first: a warning)."""
    return urllib.parse.unquote(response.cookies.get("agentws_flash") or "")


async def _add_remote(http: httpx2.AsyncClient, csrf: str, name: str, url: str) -> None:
    added = await http.post(
        "/dashboard/w/acme/connectors",
        data={"csrf": csrf, "kind": "remote_mcp", "name": name, "url": url},
    )
    assert added.status_code == 302, added.text
    assert "Warning" not in _notice(added), _notice(added)


async def test_connector_forms_without_their_csrf_token_are_refused(tmp_path: Path) -> None:
    async with running(tmp_path, **LOOPBACK, **KEY) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        fields = {"kind": "slack", "name": "team", "secret": SECRET}
        for data in (fields, {**fields, "csrf": "forged"}):
            refused = await http.post("/dashboard/w/acme/connectors", data=data)
            assert refused.status_code == 403
            assert "security token" in refused.text and SECRET not in refused.text
        assert await server.store.select(Connector) == []
        async with fake_slack() as slack:
            added = await http.post(
                "/dashboard/w/acme/connectors",
                data={**fields, "url": slack.api_url, "csrf": csrf},
            )
            assert added.status_code == 302, added.text
            assert added.headers["location"] == "/dashboard/w/acme/connectors/team"
            for action in ("remove", "deactivate", "attach", "test"):
                refused = await http.post(
                    f"/dashboard/w/acme/connectors/team/{action}", data={"group": "ops"}
                )
                assert refused.status_code == 403, action
            refused = await http.post(
                "/dashboard/w/acme/connectors/team/labels", data={"tool": "x", "csrf": "forged"}
            )
            assert refused.status_code == 403
        (kept,) = await server.store.select(Connector)
        assert kept.active and kept.secret is not None


async def test_a_bad_url_is_refused_and_the_form_comes_back_filled_but_the_secret(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, **LOOPBACK, **KEY) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        refused = await http.post(
            "/dashboard/w/acme/connectors",
            data={
                "csrf": csrf,
                "kind": "remote_mcp",
                "name": "tracker",
                "url": "ftp://127.0.0.1/mcp",
                "secret": SECRET,
                "headers": "X-Team: ops",
            },
        )
        assert refused.status_code == 400
        page = _page(refused)
        assert "a connector URL must be http(s)://HOST/..." in page
        assert 'value="tracker"' in page and 'value="ftp://127.0.0.1/mcp"' in page
        assert "X-Team: ops" in page
        assert SECRET not in page
        # A credential in a plain header is refused: it must be the secret.
        refused = await http.post(
            "/dashboard/w/acme/connectors",
            data={
                "csrf": csrf,
                "kind": "remote_mcp",
                "name": "tracker",
                "url": "http://127.0.0.1:9/mcp",
                "headers": "X-Api-Key: k-123",
            },
        )
        assert refused.status_code == 400 and "carries a credential" in refused.text
        assert await server.store.select(Connector) == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://10.20.30.40/mcp", "'10.20.30.40' is not a public address (private"),
        ("http://169.254.169.254/latest", "'169.254.169.254' is not a public address (link-local"),
        ("http://127.0.0.1:9/mcp", "'127.0.0.1' is not a public address (loopback"),
    ],
)
async def test_the_url_guard_refuses_addresses_that_are_not_public(
    tmp_path: Path, url: str, why: str
) -> None:
    # No allowlist: the guard's rule of every connection applies. The URLs are
    # address literals, so the decision is made without resolving or connecting.
    async with running(tmp_path, **KEY) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        for kind, fields in (
            ("remote_mcp", {"url": url}),
            ("github", {"url": url, "secret": SECRET}),
        ):
            refused = await http.post(
                "/dashboard/w/acme/connectors",
                data={"csrf": csrf, "kind": kind, "name": "probe", **fields},
            )
            assert refused.status_code == 400, refused.text
            assert why in _page(refused)
            assert SECRET not in refused.text
        # An incoming webhook's URL is its secret: the refusal names its origin only.
        hook = url.rsplit("/", 1)[0] + "/hooks/" + HOOK_SECRET_PATH
        refused = await http.post(
            "/dashboard/w/acme/connectors",
            data={"csrf": csrf, "kind": "incoming_webhook", "name": "alerts", "secret": hook},
        )
        assert refused.status_code == 400
        assert "may not be used" in refused.text
        assert HOOK_SECRET_PATH not in refused.text
        assert await server.store.select(Connector) == []


async def test_native_connectors_keep_their_secret_out_of_every_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        running(tmp_path, **LOOPBACK, **KEY) as server,
        _browser(server) as http,
        fake_slack() as slack,
    ):
        csrf = await _signed_in(server, http)
        hook_url = slack.hook_url(HOOK_SECRET_PATH)
        for kind, name, fields in (
            ("slack", "team", {"url": slack.api_url, "secret": BOT_TOKEN}),
            ("incoming_webhook", "alerts", {"secret": hook_url}),
        ):
            added = await http.post(
                "/dashboard/w/acme/connectors",
                data={"csrf": csrf, "kind": kind, "name": name, **fields},
            )
            assert added.status_code == 302, added.text
            notice = urllib.parse.unquote(added.cookies.get("agentws_flash") or "")
            assert "stored encrypted" in notice and fields["secret"] not in notice
            tested = await http.post(
                f"/dashboard/w/acme/connectors/{name}/test", data={"csrf": csrf}
            )
            assert tested.status_code == 302
            notice = urllib.parse.unquote(tested.cookies.get("agentws_flash") or "")
            assert notice.startswith(f"Connector '{name}' works:"), notice
        pages = [
            await http.get(path)
            for path in (
                "/dashboard/w/acme/connectors",
                "/dashboard/w/acme/connectors/team",
                "/dashboard/w/acme/connectors/alerts",
                "/dashboard/w/acme/connectors?kind=incoming_webhook",
                "/dashboard/w/acme/permissions",
            )
        ]
        for page in pages:
            assert page.status_code == 200
            assert BOT_TOKEN not in page.text and HOOK_SECRET_PATH not in page.text
        listing = pages[0].text
        assert slack.hook_url("").rstrip("/").rsplit("/hooks", 1)[0] in listing  # the origin
        assert "in header Authorization, stored encrypted" in pages[1].text
        assert "only its origin is shown" in pages[2].text
        # An incoming webhook's posts are not tool calls: its health says so,
        # rather than "no calls" forever.
        unmeasured = "not measured for an incoming webhook"
        alerts_row = listing.split('id="connector-alerts"', 1)[1].split("</tr>", 1)[0]
        assert unmeasured in alerts_row and "no calls" not in alerts_row
        assert unmeasured in pages[2].text and "no calls" not in pages[2].text
        # The native tools are there, with labels that are fixed: nothing to accept.
        team = await server.store.find(Connector, name="team")
        assert team is not None and team.kind is ConnectorKind.SLACK
        assert await server.store.count(CachedTool, connector_id=team.id) > 0
        assert "Accept suggested labels" not in pages[1].text
        actions = [e.action for e in await server.store.select(AuditEntry)]
        assert actions.count("connector.add") == 2
    # The HTTP client libraries' own request lines (which name URLs) are below
    # WARNING, where the service's log setup keeps them quiet (agentws.core.logs).
    logged = "\n".join(
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING or not r.name.startswith(("httpx2", "httpcore2"))
    )
    assert BOT_TOKEN not in logged and HOOK_SECRET_PATH not in logged


async def test_a_remote_that_is_down_is_saved_with_the_warning(tmp_path: Path) -> None:
    async with running(tmp_path, **LOOPBACK, **KEY) as server, _browser(server) as http:
        csrf = await _signed_in(server, http)
        # Port 9 (discard) of loopback: nothing listens, the connection is refused.
        added = await http.post(
            "/dashboard/w/acme/connectors",
            data={
                "csrf": csrf,
                "kind": "remote_mcp",
                "name": "down",
                "url": "http://127.0.0.1:9/mcp",
            },
        )
        assert added.status_code == 302
        assert added.headers["location"] == "/dashboard/w/acme/connectors/down"
        notice = urllib.parse.unquote(added.cookies.get("agentws_flash") or "")
        assert notice.startswith("!Added Remote MCP connector 'down'. Warning: connector 'down'")
        assert notice.endswith("Refresh it when it is up."), notice
        assert await server.store.find(Connector, name="down") is not None
        (failed,) = await server.store.select(AuditEntry, action="connector.refresh")
        assert failed.target == "acme/down" and "cannot" in failed.detail["error"]
        page = _page(await http.get("/dashboard/w/acme/connectors/down"))
        assert "last error" in page and "refresh: connector 'down'" in page
        assert "No tools cached yet: refresh it." in page
        # Its requests to callers: passed on, until the admin stops them.
        assert "passed on to callers (elicitation, sampling, roots)" in page
        assert "Stop relaying its requests" in page
        stopped = await http.post(
            "/dashboard/w/acme/connectors/down/relay_off", data={"csrf": csrf}
        )
        assert stopped.status_code == 302
        assert "refuses its requests to callers" in _notice(stopped)
        page = _page(await http.get("/dashboard/w/acme/connectors/down"))
        assert "refused: callers are never asked" in page and "Relay its requests" in page
        down = await server.store.find(Connector, name="down")
        assert down is not None and down.relay_requests is False


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_accepting_labels_applies_only_the_suggestions_the_page_showed(
    tmp_path: Path,
) -> None:
    state = ThirdParty(
        tools=[
            tool("search", "Search.", read_only_hint=True),
            tool("create_issue", "Open an issue."),
            tool("delete_repo", "Delete a repository.", destructive_hint=True),
        ]
    )
    async with (
        running(tmp_path, **LOOPBACK, **KEY) as server,
        third_party_server(state) as remote_url,
        _browser(server) as http,
    ):
        csrf = await _signed_in(server, http)
        await _add_remote(http, csrf, "third", remote_url)
        drawn = (await http.get("/dashboard/w/acme/connectors/third")).text
        # What the browser posts: the ticked boxes (read and write), and the
        # destructive one the admin ticks by hand.
        boxes = [
            html.unescape(v)
            for v in re.findall(r'type="checkbox" name="tool" value="([^"]*)"', drawn)
        ]
        assert len(boxes) == 3, boxes
        # Meanwhile the remote changes its annotations (create_issue its definition
        # too), and a refresh stores the new suggestions.
        state.tools = [
            tool("search", "Search.", read_only_hint=True),
            tool("create_issue", "Open an issue, or close one.", destructive_hint=True),
            tool("delete_repo", "Delete a repository.", read_only_hint=True),
        ]
        refreshed = await http.post(
            "/dashboard/w/acme/connectors/third/refresh", data={"csrf": csrf}
        )
        assert "1 changed" in _notice(refreshed), _notice(refreshed)
        third = await server.store.find(Connector, name="third")
        assert third is not None
        suggested = {
            t.name: t.suggested_label
            for t in await server.store.select(CachedTool, connector_id=third.id)
        }
        assert suggested == {
            "search": Capability.READ,
            "create_issue": Capability.DESTRUCTIVE,
            "delete_repo": Capability.READ,
        }
        accepted = await http.post(
            "/dashboard/w/acme/connectors/third/labels", data={"csrf": csrf, "tool": boxes}
        )
        assert accepted.status_code == 302
        notice = _notice(accepted)
        labels = {
            t.name: t.label for t in await server.store.select(CachedTool, connector_id=third.id)
        }
        # The write suggestion shown is now destructive: not applied without its own
        # choice; the destructive one ticked is now read: not applied either (looser).
        assert labels == {"search": Capability.READ, "create_issue": None, "delete_repo": None}
        assert notice.startswith("!Labeled 1: third_search (read)."), notice
        assert "Skipped third_create_issue, third_delete_repo" in notice, notice
        assert "their suggestion changed" in notice, notice
        audited = await server.store.select(AuditEntry, action="tool.label")
        assert [e.target for e in audited] == ["third_search"]
        # Drawn again, the page offers the new suggestions; the destructive one unticked.
        again = (await http.get("/dashboard/w/acme/connectors/third")).text
        assert 'value="create_issue:destructive"' in again
        assert re.search(r'value="delete_repo:read"[^>]* checked', again)
        assert not re.search(r'value="create_issue:destructive"[^>]* checked', again)
        # A label chosen by hand, one tool at a time, though no group lists the tool.
        chosen = await http.post(
            "/dashboard/w/acme/connectors/third/label",
            data={"csrf": csrf, "tool": "create_issue", "label": "destructive"},
        )
        assert _notice(chosen) == "third_create_issue is labeled destructive.", _notice(chosen)
        labeled = await server.store.find(CachedTool, connector_id=third.id, name="create_issue")
        assert labeled is not None and labeled.label is Capability.DESTRUCTIVE
        audited = await server.store.select(AuditEntry, action="tool.label")
        assert [e.target for e in audited] == ["third_search", "third_create_issue"]


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_connectors_page_counts_only_its_own_tools_calls(tmp_path: Path) -> None:
    state = ThirdParty(tools=[tool("search", "Search.", read_only_hint=True)])
    async with (
        running(tmp_path, **LOOPBACK, **KEY) as server,
        third_party_server(state) as remote_url,
        _browser(server) as http,
    ):
        csrf = await _signed_in(server, http)
        # ``gh_two_search`` starts with ``gh_``: it is gh_two's tool, not gh's.
        for name in ("gh", "gh_two"):
            await _add_remote(http, csrf, name, remote_url)
            attached = await http.post(
                f"/dashboard/w/acme/connectors/{name}/attach", data={"csrf": csrf, "group": "ops"}
            )
            assert not _notice(attached).startswith("!"), _notice(attached)
        labeled = await http.post(
            "/dashboard/w/acme/permissions",
            data={"csrf": csrf, "tool": "gh_two_search", "label": "read", "group": "ops"},
        )
        assert not _notice(labeled).startswith("!"), _notice(labeled)
        async with sdk_session(server, "streamable") as session:
            ran = await session.call_tool("gh_two_search", {"q": "x"})
            assert not ran.is_error

        async def page(name: str) -> str:
            return _page(await http.get(f"/dashboard/w/acme/connectors/{name}"))

        # The gate audits the call as its answer goes out: wait for it to show.
        await wait_until(
            lambda: page("gh_two"),
            lambda text: "1 call in the last hour" in text,
            what="the call in gh_two's health",
        )
        gh = await page("gh")
        listing = _page(await http.get("/dashboard/w/acme/connectors"))
        assert "no calls in the last hour" in gh and "1 call" not in gh
        # The listing agrees.
        row = listing.split('id="connector-gh"', 1)[1].split("</tr>", 1)[0]
        assert "no calls in the last hour" in row
