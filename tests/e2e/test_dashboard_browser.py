"""The dashboard in headless Chromium: the journeys of ``test_dashboard.py``, clicked through.

A real agentws serves on loopback (:func:`tests.e2e.mcp_support.running`);
Chromium, driven by Playwright on a thread of its own
(:mod:`tests.e2e.browser_support`), signs in, fills the forms, accepts the
confirmation dialogs and reads the pages, while the test's trio loop plays
the world around it: a webhook's sender, an MCP client, a third-party MCP
server. Every page is also checked at a desktop and a phone width for
horizontal overflow, console errors and script errors, and its layout
measured (the sections on one line at 1280 px, no cluster's line at a
row's edge; on a phone the tokens and permissions tables without sideways
scrolling, endpoint URLs wrapping after a slash), and photographed into
``test-artifacts/screenshots/``.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
import trio
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.approvals import decisions
from agentws.domain.models import Approval, ApprovalStatus, EventStatus
from agentws.workspaces.admin import create_group
from tests.e2e.axe_support import accessibility_violations
from tests.e2e.browser_support import Tab, fits, open_browser, sign_in
from tests.e2e.mcp_support import Running, legacy_stream, running, sdk_session
from tests.e2e.polling import wait_until
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)
from tests.e2e.run_support import deliver, finished, hook

PASSWORD = "correct horse battery staple"
LOOPBACK = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
#: The offline model posts at once; a delivered event is done well within this.
EVENT_S = 10.0
#: A revoked token's streams close within a second (test_mcp_transport), plus a round trip.
REVOKED_STREAM_S = 3.0
WIDTHS = ((1280, 800), (390, 844))
HOOK_NAME = "github_pull_request_events"
TOOL = "third_create_pull_request_review"
#: The journeys leave the missing /favicon.ico to the every-page test, which reports it.
JOURNEY_TOLERATES = ("/favicon.ico",)
#: Every page the every-page test opens (at both widths: overflow, console errors, axe,
#: screenshots): its name (the screenshot's) and its path, where ``{hook}`` is the seeded
#: webhook's name, ``{event}`` its finished event, ``{pending}`` and ``{executed}`` an
#: approval of each kind. A new page is one more line.
EVERY_PAGE: dict[str, str] = {
    "overview": "/dashboard/w/acme/overview",
    "overview-7d": "/dashboard/w/acme/overview?range=7d",
    "webhooks": "/dashboard/w/acme/webhooks",
    "webhook": "/dashboard/w/acme/webhooks/{hook}",
    "webhook-deliveries": "/dashboard/w/acme/webhooks/{hook}/deliveries",
    "endpoints": "/dashboard/w/acme/endpoints",
    "permissions": "/dashboard/w/acme/permissions?group=ops",
    "approvals": "/dashboard/approvals",
    "approval-pending": "/dashboard/approvals/{pending}",
    "approval-executed": "/dashboard/approvals/{executed}",
    "events": "/dashboard/w/acme/events",
    "event": "/dashboard/events/{event}",
    "libraries": "/dashboard/w/acme/libraries",
    "channels": "/dashboard/w/acme/channels",
    "groups": "/dashboard/w/acme/groups",
    "connectors": "/dashboard/w/acme/connectors",
    "workspaces": "/dashboard/workspaces",
    "audit": "/dashboard/audit",
    "audit-acme": "/dashboard/audit?workspace=acme",
    "admins": "/dashboard/admins",
}


async def _admin(server: Running) -> None:
    await create_admin(server.store, "alice", password=PASSWORD, actor="t")


def _signed_in(tab: Tab, base_url: str) -> None:
    """Sign alice in; she lands on her first workspace's overview."""
    sign_in(tab, base_url, "alice", PASSWORD)
    expect(tab.page).to_have_url(f"{base_url}/dashboard/w/acme/overview")
    expect(tab.page.get_by_role("heading", level=1)).to_contain_text("Overview")
    tab.assert_clean("signing in")


def _nav(tab: Tab, section: str) -> None:
    tab.page.get_by_role("navigation", name="Sections").get_by_role("link", name=section).click()


async def test_sign_in_create_a_webhook_and_follow_its_event_to_the_channel(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as server, open_browser("webhook") as browser:
        await _admin(server)
        tab = await browser.new_tab(tolerate=JOURNEY_TOLERATES)
        base = server.base_url

        def wrong_password_then_right() -> None:
            sign_in(tab, base, "alice", "not the password")
            expect(tab.page.get_by_role("alert")).to_have_text("Wrong username or password.")
            expect(tab.page).to_have_url(f"{base}/dashboard/login")
            # The form is back, with a fresh token: the right password goes through.
            expect(tab.page.locator("#password")).to_have_value("")
            # The refusal is a 401 (as test_dashboard.py wants), which Chromium logs as a
            # failed load of the page; nothing else may be logged.
            refused, tab.errors[:] = list(tab.errors), []
            assert len(refused) == 1 and "status of 401" in refused[0], refused
            tab.page.fill("#username", "alice")
            tab.page.fill("#password", PASSWORD)
            with tab.page.expect_navigation():
                tab.page.get_by_role("button", name="Sign in").click()
            expect(tab.page).to_have_url(f"{base}/dashboard/w/acme/overview")
            _nav(tab, "Automations → Webhooks")
            expect(tab.page.get_by_text("No webhooks yet")).to_be_visible()
            tab.assert_clean("signing in")

        def create_webhook() -> str:
            page = tab.page
            page.get_by_label("Name").fill("ci")
            page.get_by_label("Channel").fill("local:ops")
            page.get_by_label("Prompt").fill("Summarise the build.")
            page.get_by_role("button", name="Create webhook").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Webhook ci created")
            url = page.locator("#webhook-url").inner_text()
            tab.assert_clean("the created webhook")
            # Shown once: the listing names the webhook but not its URL.
            page.get_by_role("link", name="Back to the webhooks").click()
            expect(page.get_by_role("link", name="ci", exact=True)).to_be_visible()
            assert url.split("/hooks/")[1] not in page.content()
            return url

        await browser.run(wrong_password_then_right)
        shown = await browser.run(create_webhook)
        assert "/hooks/agwh_" in shown, shown
        async with httpx2.AsyncClient(timeout=10) as http:
            sent = await http.post(
                base + "/hooks/" + shown.split("/hooks/")[1], json={"build": 7, "ok": True}
            )
        assert sent.status_code == 202, sent.text
        event_id = str(sent.json()["event_id"])

        def event_status() -> str:
            """The event's badge on the Events page, once it is finished ('' before)."""
            if "/events" in tab.page.url:
                tab.page.reload()
            else:
                _nav(tab, "Events")
            row = tab.page.get_by_role("row").filter(has_text=event_id)
            status = row.locator(".badge").inner_text()
            return status if status in {s.value for s in EventStatus if s.finished} else ""

        status = await wait_until(
            lambda: browser.run(event_status),
            what=f"event {event_id} to finish",
            timeout_s=EVENT_S,
            interval_s=0.05,
        )
        assert status == "done"

        def timeline_and_channel() -> tuple[str, str]:
            page = tab.page
            page.get_by_role("link", name=event_id).click()
            expect(page).to_have_url(f"{base}/dashboard/events/{event_id}")
            expect(page.get_by_role("heading", level=1)).to_contain_text("done")
            expect(page.locator("ol.timeline")).to_contain_text('"build": 7')
            message = page.locator("#message").inner_text()
            tab.assert_clean("the event's timeline")
            _nav(tab, "Channels")
            expect(page.get_by_label("Channel")).to_have_value("local:ops")
            # Drawn from its Markdown: the digest's *ci* (Slack's bold) is bold.
            body = page.locator("ul.messages .message-body").first
            expect(body.locator("strong").first).to_have_text("ci")
            posted = body.inner_text()
            tab.assert_clean("the channels page")
            return message, posted

        message, posted = await browser.run(timeline_and_channel)
        assert "build" in message.lower(), message
        assert message.startswith("*ci*: "), message
        assert posted.startswith("ci: ") and "build" in posted.lower(), posted
        assert (await finished(server.store, event_id)).status is EventStatus.DONE


async def test_revoking_a_token_in_the_dashboard_closes_its_client_stream(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, with_library=False) as server, open_browser("token") as browser:
        await _admin(server)
        tab = await browser.new_tab(tolerate=JOURNEY_TOLERATES)
        base = server.base_url

        def create_token() -> str:
            _signed_in(tab, base)
            _nav(tab, "Connect → MCP Endpoints")
            ops = tab.page.locator("#group-ops")
            expect(ops.locator("#url-ops")).to_contain_text("/mcp/g/acme/ops")
            ops.get_by_label("New token").fill("cursor-ada")
            ops.get_by_label("Scope").select_option("write")
            ops.get_by_role("button", name="Create token").click()
            expect(tab.page.get_by_role("heading", level=1)).to_have_text(
                "Token cursor-ada created"
            )
            secret = tab.page.locator("#token-secret").inner_text()
            tab.assert_clean("the created token")
            return secret

        def revoke() -> None:
            page = tab.page
            page.get_by_role("link", name="Back to the endpoints").click()
            row = page.locator("#group-ops tbody tr").filter(has_text="cursor-ada")
            expect(row.locator(".badge")).to_have_text("active")
            row.get_by_role("button", name="Revoke").click()  # the dialog is accepted
            expect(page.get_by_role("status")).to_have_text(
                "Revoked token 'cursor-ada': its sessions are closing now."
            )
            expect(row.locator(".badge")).to_have_text("revoked")
            tab.assert_clean("revoking the token")

        secret = await browser.run(create_token)
        assert secret.startswith("agws_"), secret
        ended: dict[str, float] = {}
        revoked_closed = trio.Event()

        async def hold(name: str, token: str, *, task_status: trio.TaskStatus[str]) -> None:
            async with legacy_stream(server, token) as (session_id, stream):
                task_status.started(session_id)
                await stream.read_to_end()
            ended[name] = trio.current_time()
            if name == "revoked":
                revoked_closed.set()

        async with trio.open_nursery() as nursery:
            revoked_id = await nursery.start(hold, "revoked", secret)
            kept_id = await nursery.start(hold, "kept", server.token)
            assert server.runtime.sessions.get(revoked_id) is not None
            await browser.run(revoke)
            revoked_at = trio.current_time()
            with trio.move_on_after(REVOKED_STREAM_S):
                await revoked_closed.wait()
            assert "revoked" in ended, (
                f"the revoked token's SSE stream was still open {REVOKED_STREAM_S} s "
                "after the dashboard said its sessions were closing"
            )
            assert ended["revoked"] - revoked_at < REVOKED_STREAM_S
            assert server.runtime.sessions.get(revoked_id) is None
            # Another token's stream is untouched.
            assert "kept" not in ended
            assert server.runtime.sessions.get(kept_id) is not None
            nursery.cancel_scope.cancel()
        assert tab.dialogs == ["Revoke cursor-ada? Its sessions close at once."]


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_approving_a_queued_call_in_the_dashboard_runs_it_once(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    async with (
        running(tmp_path, with_library=False, **LOOPBACK) as server,
        third_party_server(state) as url,
        open_browser("approval") as browser,
    ):
        await attach_remote(server.store, url, {})  # unlabeled: a write, approval first
        await _admin(server)
        async with sdk_session(server, "streamable") as session:
            queued = await session.call_tool("third_send", {"q": "page"})
        approval_id = (queued.structured_content or {})["approval_id"]
        assert state.calls == []
        tab = await browser.new_tab(tolerate=JOURNEY_TOLERATES)
        base = server.base_url

        def approve() -> str:
            page = tab.page
            _signed_in(tab, base)
            _nav(tab, "Approvals")
            expect(page.get_by_role("heading", level=2).first).to_have_text("Waiting (1)")
            row = page.get_by_role("row").filter(has_text="third_send")
            expect(row).to_contain_text('"q": "page"')
            row.get_by_role("link", name="Decide").click()
            expect(page).to_have_url(f"{base}/dashboard/approvals/{approval_id}")
            expect(page.get_by_role("heading", level=1)).to_contain_text("pending")
            page.get_by_label("Reason (optional)").fill("paging ops is fine")
            page.get_by_role("button", name="Approve and run").click()
            expect(page.get_by_role("status")).to_have_text("third_send: executed.")
            expect(page.get_by_role("heading", level=1)).to_contain_text("executed")
            expect(page.get_by_role("button", name="Approve and run")).to_have_count(0)
            result = page.locator("#result").inner_text()
            tab.assert_clean("the decided approval")
            return result

        result = await browser.run(approve)
        assert result.strip() == "third-party found: page"
        assert state.calls == ["send"]
        assert state.arguments == [{"q": "page"}]
        decided = await server.store.get(Approval, approval_id)
        assert decided.status is ApprovalStatus.EXECUTED
        assert decided.decided_by == "admin:alice"
        assert decided.reason == "paging ops is fine"


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_denying_every_waiting_call_at_once_in_the_dashboard(tmp_path: Path) -> None:
    state = ThirdParty([tool("send", "Send a page")])
    async with (
        running(tmp_path, with_library=False, **LOOPBACK) as server,
        third_party_server(state) as url,
        open_browser("bulk") as browser,
    ):
        await attach_remote(server.store, url, {})
        await _admin(server)
        async with sdk_session(server, "streamable") as session:
            queued = [await session.call_tool("third_send", {"q": f"page {n}"}) for n in range(3)]
        ids = [(r.structured_content or {})["approval_id"] for r in queued]
        tab = await browser.new_tab(tolerate=JOURNEY_TOLERATES)
        base = server.base_url

        def deny_all() -> None:
            page = tab.page
            _signed_in(tab, base)
            _nav(tab, "Approvals")
            expect(page.get_by_role("heading", level=2).first).to_have_text("Waiting (3)")
            # The menu is the workspace's, as on every other page.
            _nav(tab, "Permissions")
            expect(page).to_have_url(f"{base}/dashboard/w/acme/permissions")
            _nav(tab, "Approvals")
            expect(page.get_by_role("row").filter(has_text="page 1")).to_contain_text("token tests")
            page.get_by_label("Select every call on this page").check()
            page.get_by_label("Reason (optional)").fill("not during the freeze")
            page.get_by_role("button", name="Deny selected").click()
            expect(page.get_by_role("status")).to_have_text("Denied 3 calls.")
            expect(page.get_by_role("heading", level=2).first).to_have_text("Waiting (0)")
            tab.assert_clean("the bulk decision")

        await browser.run(deny_all)
        for approval_id in ids:
            denied = await server.store.get(Approval, approval_id)
            assert denied.status is ApprovalStatus.DENIED
            assert (denied.decided_by, denied.reason) == ("admin:alice", "not during the freeze")
        assert state.calls == []


#: Pages whose tables show every column, their selects and buttons too, within a phone's
#: width, each row a block of labelled lines (no sideways scrolling to reach Revoke or Set).
STACKED_PAGES = ("endpoints", "permissions")
#: Measures the page's layout (browser thread): the section links' rows, whether a
#: cluster's line is drawn at a row's start, tables that scroll sideways, controls past
#: the viewport's edge, and after which characters the endpoint URLs break their lines.
_LAYOUT_JS = """() => {
  // Signed out (the sign-in page), there are no sections.
  const nav = document.querySelector('nav[aria-label="Sections"]') || document.createElement("nav");
  const middle = (box) => (box.top + box.bottom) / 2;
  const links = [...nav.querySelectorAll("a")].map((a) => a.getBoundingClientRect());
  const rows = [];
  for (const link of links) {
    if (!rows.some((row) => Math.abs(row - middle(link)) < 4)) rows.push(middle(link));
  }
  const clip = nav.getBoundingClientRect();
  const dangling = [];
  for (const group of nav.querySelectorAll(".nav-group + .nav-group")) {
    const line = getComputedStyle(group, "::before");
    const box = group.getBoundingClientRect();
    const x = box.left + parseFloat(line.left);
    const shown = line.content !== "none" && x >= clip.left && x < clip.right;
    const first = group.querySelector("a").getBoundingClientRect();
    const before = links.some((l) => Math.abs(middle(l) - middle(first)) < 4 && l.right <= x);
    if (shown && !before) dangling.push(group.textContent.trim().replace(/\\s+/g, " "));
  }
  const scrolling = [...document.querySelectorAll(".table-wrap")]
    .filter((wrap) => wrap.scrollWidth > wrap.clientWidth + 1)
    .map((wrap) => wrap.getAttribute("aria-label"));
  const past = [...document.querySelectorAll("table button, table select")]
    .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
    .map((el) => el.getAttribute("aria-label") || el.textContent.trim());
  const breaks = [];
  for (const code of document.querySelectorAll("code[id^='url-']")) {
    const text = code.textContent;
    const range = document.createRange();
    let top = null;
    let offset = 0;
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++, offset++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const at = range.getBoundingClientRect().top;
        if (top !== null && at > top + 2) {
          breaks.push(text.slice(0, offset) + " | " + text.slice(offset));
        }
        top = at;
      }
    }
  }
  return {rows: rows.length, dangling, scrolling, past, breaks};
}"""


def _layout_problems(tab: Tab, name: str) -> list[str]:
    """(Browser thread.) What is wrong with the page's layout at its width, one line each."""
    layout = tab.page.evaluate(_LAYOUT_JS)
    width = tab.page.viewport_size["width"] if tab.page.viewport_size else 0
    where = f"{name} at {width} px"
    problems = [f"{where}: a cluster's line begins a row: {g}" for g in layout["dangling"]]
    if width >= 1280 and layout["rows"] > 1:
        problems.append(f"{where}: the sections take {layout['rows']} lines, not one")
    if width < 640 and name in STACKED_PAGES:
        problems += [f"{where}: {t} scrolls sideways" for t in layout["scrolling"]]
        problems += [f"{where}: {c!r} is past the edge" for c in layout["past"]]
    # An endpoint URL that does not fit breaks after a slash, not inside a name.
    if width < 640 and name == "endpoints" and not layout["breaks"]:
        problems.append(f"{where}: no endpoint URL wraps, so none was checked")
    problems += [
        f"{where}: the URL breaks inside a name: {b}"
        for b in layout["breaks"]
        if not b.split(" | ")[0].endswith("/")
    ]
    return problems


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_every_page_fits_a_desktop_and_a_phone_without_errors(tmp_path: Path) -> None:
    # Names as people give them: snake_case, long enough to need wrapping on a phone.
    state = ThirdParty([tool("create_pull_request_review", "Review a pull request")])
    async with (
        running(tmp_path, with_library=True, **LOOPBACK) as server,
        third_party_server(state) as url,
        open_browser("layout") as browser,
    ):
        # Some of everything: a webhook with a finished event and its message, tokens
        # (seeded), documents and a skill (seeded), a pending and an executed approval.
        await attach_remote(server.store, url, {})
        await _admin(server)
        # A group whose endpoint URL is too long for a phone's line.
        await create_group(
            server.store, "acme", "customer-operations-emea", name=None, actor="admin:alice"
        )
        ci = await hook(server, HOOK_NAME, group="ops")
        event_id = await deliver(ci, {"build": 7, "branch": "main", "ok": False})
        assert (await finished(server.store, event_id)).status is EventStatus.DONE
        async with sdk_session(server, "streamable") as session:
            first = await session.call_tool(TOOL, {"q": "looks good to me"})
            second = await session.call_tool(TOOL, {"q": "a longer review " * 20})
        pending_id = (first.structured_content or {})["approval_id"]
        executed_id = (second.structured_content or {})["approval_id"]
        await decisions.approve(server.store, executed_id, actor="admin:alice", reason="fine")
        with trio.fail_after(10):
            executed = await server.runtime.approval_runs.outcome(executed_id)
        assert executed.status is ApprovalStatus.EXECUTED

        base = server.base_url
        ids = {"hook": HOOK_NAME, "event": event_id, "pending": pending_id, "executed": executed_id}
        pages = {name: path.format(**ids) for name, path in EVERY_PAGE.items()}
        tab = await browser.new_tab()
        problems: list[str] = []

        def note_errors(where: str) -> None:
            if tab.errors:
                problems.append(f"{where}: " + "; ".join(tab.errors))
                tab.errors.clear()

        def check(name: str) -> None:
            """Photograph the page; note whether it overflows, logged errors or fails axe."""
            browser.screenshot(tab, name, accessible=False)  # axe below, reported together
            ok, measures = fits(tab)
            width = measures["innerWidth"]
            if not ok:
                shot = browser.save(tab, name)
                problems.append(f"{name} at {width} px overflows: {measures} (see {shot.name})")
            problems.extend(_layout_problems(tab, name))
            for found in accessibility_violations(tab):
                nodes = "\n    ".join(found["nodes"])
                problems.append(
                    f"{name} at {width} px: {found['impact']} {found['id']}: {found['help']}"
                    f"\n    {nodes}"
                )
            note_errors(f"{name} at {width} px")

        def visit_all() -> None:
            sign_in(tab, base, "alice", PASSWORD)
            expect(tab.page).to_have_url(f"{base}/dashboard/w/acme/overview")
            note_errors("signing in")
            for width, height in WIDTHS:
                tab.page.set_viewport_size({"width": width, "height": height})
                for name, path in pages.items():
                    response = tab.page.goto(base + path)
                    assert response is not None and response.status == 200, (
                        f"{name}: {response.status if response else 'no response'}"
                    )
                    check(name)
                # The dashboard's own error page (Chromium logs the 404 as a failed load).
                response = tab.page.goto(f"{base}/dashboard/w/acme/no-such-page")
                assert response is not None and response.status == 404
                refused, tab.errors[:] = list(tab.errors), []
                assert all("status of 404" in error for error in refused), refused
                check("not-found")
                # The pages only a form's answer shows: a new token, a new webhook.
                tab.page.goto(f"{base}/dashboard/w/acme/endpoints")
                ops = tab.page.locator("#group-ops")
                ops.get_by_label("New token").fill(f"laptop-{width}")
                ops.get_by_role("button", name="Create token").click()
                expect(tab.page.locator("#token-secret")).to_contain_text("agws_")
                check("token-created")
                tab.page.goto(f"{base}/dashboard/w/acme/webhooks")
                tab.page.get_by_label("Name").fill(f"production_deploys_{width}")
                tab.page.get_by_label("Channel").fill("local:ops")
                tab.page.get_by_label("Prompt").fill("Say which deploys went out.")
                tab.page.get_by_role("button", name="Create webhook").click()
                expect(tab.page.locator("#webhook-url")).to_contain_text("/hooks/agwh_")
                check("webhook-created")
            # Signed out: the sign-in form, at both widths.
            tab.page.get_by_role("button", name="Sign out").click()
            expect(tab.page.get_by_role("heading", level=1)).to_have_text("Sign in")
            for width, height in WIDTHS:
                tab.page.set_viewport_size({"width": width, "height": height})
                tab.page.reload()
                check("login")

        await browser.run(visit_all)
        assert not problems, "\n".join(problems)
        assert state.calls == ["create_pull_request_review"]  # only the approved call ran


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_a_right_to_left_override_in_arguments_shows_as_an_escape(tmp_path: Path) -> None:
    # Drawn raw, "invoice\u202efdp.exe" reads "invoiceexe.pdf": the admin must see what runs.
    state = ThirdParty([tool("send", "Send a file")])
    async with (
        running(tmp_path, with_library=False, **LOOPBACK) as server,
        third_party_server(state) as url,
        open_browser("bidi") as browser,
    ):
        await attach_remote(server.store, url, {})
        await _admin(server)
        async with sdk_session(server, "streamable") as session:
            queued = await session.call_tool("third_send", {"q": "invoice\u202efdp.exe\u200b"})
        approval_id = (queued.structured_content or {})["approval_id"]
        tab = await browser.new_tab(tolerate=JOURNEY_TOLERATES)
        base = server.base_url

        def arguments_as_drawn() -> tuple[str, str]:
            _signed_in(tab, base)
            tab.page.goto(f"{base}/dashboard/approvals/{approval_id}")
            shown = tab.page.locator("dd pre").first.inner_text()
            _nav(tab, "Approvals")
            row = tab.page.get_by_role("row").filter(has_text="third_send")
            listed = row.locator("pre").inner_text()
            tab.assert_clean("the approval with a bidi override")
            return shown, listed

        shown, listed = await browser.run(arguments_as_drawn)
        for text in (shown, listed):
            assert "invoice\\u202efdp.exe\\u200b" in text, text
            assert "\u202e" not in text and "\u200b" not in text, text
