"""The dashboard's finish, in Chromium: copy buttons, filled-in snippets, messages, times.

A new token's page fills the token into every client's configuration, each
with a copy button a screen reader can name and a live status that says
"Copied" (and the clipboard holds the text); a channel's hostile message is
drawn as harmless Markdown (no script runs, no image loads, links are
marked); a relative time carries the moment itself. At both widths, with
axe's check.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.domain.models import ChatMessage
from tests.e2e.axe_support import assert_accessible
from tests.e2e.browser_support import Tab, open_browser, sign_in
from tests.e2e.mcp_support import running
from tests.e2e.run_support import hook

PASSWORD = "correct horse battery staple"
WIDTHS = ((1280, 800), (390, 844))
HOSTILE = (
    "*ci*: deploy _finished_ <https://ci.example.com/run/7|run 7>\n\n"
    "<script>window.alert('xss')</script>\n"
    "<img src=x onerror=\"window.alert('img')\">\n"
    "[click](javascript:window.alert('link')) [data](data:text/html,<script>alert(1)</script>)\n"
    "![pixel](https://tracker.example/pixel.gif)\n"
    "invoice\u202efdp.exe"
)
#: The clients a new token's page gives a configuration for, by their snippet's id.
CLIENTS = {
    "claude": "Claude Desktop",
    "cursor": "Cursor",
    "vscode": "VS Code",
    "inspector": "MCP Inspector",
}


async def test_a_new_token_is_filled_into_every_client_snippet_each_with_a_copy_button(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, with_library=False) as server, open_browser("polish") as browser:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        tab = await browser.new_tab()
        base = server.base_url

        def new_token() -> dict[str, str]:
            page = tab.page
            tab.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
            sign_in(tab, base, "alice", PASSWORD, path="/dashboard/w/acme/endpoints")
            ops = page.locator("#group-ops")
            # The listing's snippets read the token from the environment; each has its button.
            ops.locator("summary").click()
            for key, client in CLIENTS.items():
                button = ops.get_by_role("button", name=f"Copy the {client} configuration")
                expect(button).to_be_visible()
                expect(ops.locator(f"#snippet-ops-{key}")).not_to_contain_text(
                    re.compile(r"agws_\w")
                )
            url = ops.locator("#url-ops").inner_text()
            ops.get_by_label("New token").fill("laptop")
            ops.get_by_role("button", name="Create token").click()
            expect(page.get_by_role("heading", level=1)).to_have_text("Token laptop created")
            secret = page.locator("#token-secret").inner_text()
            shown = {key: page.locator(f"#snippet-{key}").inner_text() for key in CLIENTS}
            # Copying the token: the button names what it copies, the status says it did.
            page.get_by_role("button", name="Copy the token").click()
            expect(page.locator('[data-copy-status="token-secret"]')).to_have_text("Copied")
            assert page.evaluate("() => navigator.clipboard.readText()") == secret
            page.get_by_role("button", name="Copy the VS Code configuration").click()
            expect(page.locator('[data-copy-status="snippet-vscode"]')).to_have_text("Copied")
            assert page.evaluate("() => navigator.clipboard.readText()") == shown["vscode"]
            tab.assert_clean("the new token's page")
            for width, height in WIDTHS:
                page.set_viewport_size({"width": width, "height": height})
                assert_accessible(tab, f"the new token's page at {width} px")
            browser.screenshot(tab, "token-snippets")
            return {"secret": secret, "url": url, **shown}

        shown = await browser.run(new_token)
        secret = shown["secret"]
        assert secret.startswith("agws_")
        url = shown["url"]
        assert url.endswith("/mcp/g/acme/ops"), url
        claude = json.loads(shown["claude"])["mcpServers"]["acme-ops"]
        assert claude["args"] == [
            "-y",
            "mcp-remote",
            url,
            "--header",
            "Authorization: Bearer ${AGENTWS_TOKEN}",
        ]
        assert claude["env"] == {"AGENTWS_TOKEN": secret}
        cursor = json.loads(shown["cursor"])["mcpServers"]["acme-ops"]
        assert cursor == {"url": url, "headers": {"Authorization": f"Bearer {secret}"}}
        vscode = json.loads(shown["vscode"])["servers"]["acme-ops"]
        assert vscode == {
            "type": "http",
            "url": url,
            "headers": {"Authorization": f"Bearer {secret}"},
        }
        assert f'--server-url "{url}"' in shown["inspector"]
        assert f'--header "Authorization: Bearer {secret}"' in shown["inspector"]


async def test_a_hostile_message_is_drawn_as_harmless_markdown(tmp_path: Path) -> None:
    async with running(tmp_path, with_library=False) as server, open_browser("polish") as browser:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        issued = await hook(server, "ci", group="ops")
        await server.store.post_chat_message(
            ChatMessage(workspace_id=issued.webhook.workspace_id, channel="local:ops", text=HOSTILE)
        )
        tab = await browser.new_tab()
        base = server.base_url
        loads: list[str] = []

        def channel() -> None:
            page = tab.page
            page.on("request", lambda request: loads.append(request.url))
            sign_in(tab, base, "alice", PASSWORD, path="/dashboard/w/acme/channels")
            body = page.locator("ul.messages .message-body").first
            expect(body.locator("strong").first).to_have_text("ci")
            expect(body.locator("em").first).to_have_text("finished")
            link = body.get_by_role("link", name="run 7")
            expect(link).to_have_attribute("href", "https://ci.example.com/run/7")
            expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
            pixel = body.get_by_role("link", name="image: pixel")
            expect(pixel).to_have_attribute("href", "https://tracker.example/pixel.gif")
            # What would have been markup is text; the only links are the two above.
            expect(body).to_contain_text("<script>window.alert('xss')</script>")
            expect(body).to_contain_text("[click](javascript:window.alert('link'))")
            expect(body.locator("script, img, iframe")).to_have_count(0)
            expect(body.locator("a")).to_have_count(2)
            expect(body).to_contain_text("invoice\\u202efdp.exe")
            _times_carry_the_moment(tab)
            tab.assert_clean("a hostile message")
            for width, height in WIDTHS:
                page.set_viewport_size({"width": width, "height": height})
                assert_accessible(tab, f"the channel at {width} px")
                browser.screenshot(tab, "channel-markdown")

        await browser.run(channel)
        assert tab.dialogs == []  # no alert() ran
        assert not [u for u in loads if not u.startswith(base)], loads


def _times_carry_the_moment(tab: Tab) -> None:
    """A relative time is a <time> with the absolute UTC moment as its title."""
    time = tab.page.locator("ul.messages time").first
    expect(time).to_have_text(re.compile(r"^\d+ (s|min|h|d) ago$"))
    expect(time).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))
    expect(time).to_have_attribute("datetime", re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"))
