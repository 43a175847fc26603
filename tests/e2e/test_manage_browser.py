"""Workspaces, groups and libraries managed in headless Chromium, and seen over MCP.

An admin creates a workspace, a group and a library and renames each;
uploads a document, reads its preview and removes it; uploads a skill as
a folder and another as a zip; attaches the library and a connector to the
group, and an MCP client of the group's endpoint sees its resources,
prompts and tools come and go. Every page is checked at 1280 by 800 and
390 by 844: axe-core, console errors, horizontal overflow, a screenshot in
``test-artifacts/screenshots/``. The refusals are in ``test_manage_pages.py``.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import httpx2
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.connectors.admin import add_connector
from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
from agentws.domain.models import ConnectorKind
from agentws.tools.cache_sync import sync_tool_cache
from agentws.workspaces.admin import create_token, endpoint_url
from tests.e2e.browser_support import Browser, Tab, fits, open_browser, sign_in
from tests.e2e.mcp_support import REQUEST_S, Running, running
from tests.e2e.remote_support import (
    LOOPBACK,
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    third_party_server,
    tool,
)

PASSWORD = "correct horse battery staple"
WIDTHS = ((1280, 800), (390, 844))
SETTINGS = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
JOURNEY_TOLERATES = ("/favicon.ico",)
SKILL = "---\nname: {name}\ndescription: {description}\n---\n{prompt}\n"


@attrs.frozen
class Seen:
    """What an MCP client of a group's endpoint lists."""

    resources: frozenset[str]
    prompts: frozenset[str]
    tools: frozenset[str]


@asynccontextmanager
async def _client(url: str, secret: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=REQUEST_S) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        with trio.fail_after(REQUEST_S):
            await session.initialize()
        yield session


async def _seen(url: str, secret: str) -> Seen:
    """A new session's view of the endpoint (each list is read at once, by a new session)."""
    async with _client(url, secret) as session:
        with trio.fail_after(REQUEST_S):
            resources = await session.list_resources()
            prompts = await session.list_prompts()
            tools = await session.list_tools()
    return Seen(
        frozenset(str(r.uri) for r in resources.resources),
        frozenset(p.name for p in prompts.prompts),
        frozenset(t.name for t in tools.tools),
    )


def _skill_folder(root: Path) -> Path:
    folder = root / "release-notes"
    (folder / "templates").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        SKILL.format(
            name="release-notes",
            description="Write release notes from merged pull requests",
            prompt="List what changed, for users first.",
        )
    )
    (folder / "templates" / "notes.md").write_text("## Added\n\n## Fixed\n")
    (folder / "style.txt").write_text("Short sentences.\n")
    return folder


def _skill_zip(root: Path) -> Path:
    path = root / "on-call.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "on-call/SKILL.md",
            SKILL.format(
                name="on-call", description="Hand over the pager", prompt="Summarise the week."
            ),
        )
        archive.writestr("on-call/handover.md", "# Handover\n")
    return path


def _check(browser: Browser, tab: Tab, name: str) -> None:
    """The page is photographed (and checked with axe), fits its width, logged no error."""
    shot = browser.screenshot(tab, name)
    ok, measures = fits(tab)
    assert ok, f"{name} overflows at {measures['innerWidth']} px: {measures} (see {shot.name})"
    tab.assert_clean(name)


def _nav(tab: Tab, section: str) -> None:
    tab.page.get_by_role("navigation", name="Sections").get_by_role("link", name=section).click()


async def _add_connector(server: Running, url: str) -> None:
    """Remote MCP connector ``third`` of workspace ``beta``, its tools fetched, attached nowhere."""
    connector = await add_connector(
        server.store,
        "beta",
        "third",
        kind=ConnectorKind.REMOTE_MCP,
        url=url,
        headers={},
        secret=None,
        box=None,
        allowlist=LOOPBACK,
        actor="t",
    )
    with remote_deadline(connector, REQUEST_S):
        tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
    await sync_tool_cache(server.store, connector, tools, actor="t")


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
# Thorough tier only: a slow journey through pages whose actions
# test_manage_pages.py::test_creating_renaming_and_attaching_are_stored_and_audited check in every
# run.
@pytest.mark.thorough
async def test_create_rename_attach_upload_and_see_it_over_mcp(tmp_path: Path) -> None:
    state = ThirdParty([tool("lookup", "Look a customer up", readOnlyHint=True)])
    async with (
        running(tmp_path, **SETTINGS) as server,
        third_party_server(state) as third_url,
        open_browser("manage") as browser,
    ):
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        base = server.base_url
        tab = await browser.new_tab(tolerate=JOURNEY_TOLERATES)
        page = tab.page
        document = tmp_path / "returns.md"
        document.write_text("# Returns\n\nReturns within <30> days & no questions.\n")
        folder, archive = _skill_folder(tmp_path), _skill_zip(tmp_path)

        def notice() -> str:
            return page.get_by_role("status").inner_text()

        def create(what: str, slug: str, name: str | None = None) -> None:
            form = page.locator("section", has=page.get_by_role("heading", name=f"New {what}"))
            form.get_by_label("Slug").fill(slug)
            if name:
                form.get_by_label("Display name").fill(name)
            form.get_by_role("button", name=f"Create {what}").click()

        def create_and_rename() -> None:
            sign_in(tab, base, "alice", PASSWORD)
            expect(page).to_have_url(f"{base}/dashboard/w/acme/overview")
            _nav(tab, "Workspaces")
            expect(page.get_by_role("heading", level=1)).to_have_text("Workspaces")
            _check(browser, tab, "workspaces")
            create("workspace", "beta", "Beta")
            expect(page).to_have_url(f"{base}/dashboard/w/beta/groups")
            assert "Created workspace 'beta'" in notice()
            expect(page.get_by_text("No groups yet")).to_be_visible()
            _check(browser, tab, "groups-empty")

            _nav(tab, "Workspaces")
            row = page.locator("#ws-beta")
            row.get_by_label("New display name of beta").fill("Beta Corp")
            row.get_by_role("button", name="Rename").click()
            assert notice() == "Workspace 'beta' is now called 'Beta Corp'."
            expect(page.locator("#ws-beta")).to_contain_text("Beta Corp")
            page.locator("#ws-beta").get_by_role("link", name="beta").click()

            create("group", "web")
            assert notice().startswith("Created group 'web'")
            card = page.locator("#group-web")
            expect(card.locator("#group-url-web")).to_have_text(
                endpoint_url(server.runtime.settings.public_base_url, "beta", "web")
            )
            card.get_by_label("Display name").fill("Website")
            card.get_by_role("button", name="Rename").click()
            assert notice() == "Group 'web' is now called 'Website'."
            expect(page.locator("#group-title-web")).to_contain_text("Website")

            _nav(tab, "Libraries")
            expect(page.get_by_text("No libraries yet")).to_be_visible()
            create("library", "faq", "FAQ")
            assert notice().startswith("Created library 'faq'")
            shelf = page.locator("#library-faq")
            shelf.get_by_label("Display name").fill("Questions")
            shelf.get_by_role("button", name="Rename").click()
            assert notice() == "Library 'faq' is now called 'Questions'."
            expect(page.locator("#library-title-faq")).to_contain_text("Questions")

        def upload_document_and_skills() -> None:
            shelf = page.locator("#library-faq")
            shelf.get_by_label("Upload a document").set_input_files(document)
            shelf.get_by_label("Title").fill("Returns")
            shelf.get_by_role("button", name="Upload", exact=True).click()
            assert notice() == "Added 'Returns' (on_demand) to faq."
            shelf = page.locator("#library-faq")
            # The folder, as the browser sends a webkitdirectory input's files.
            shelf.get_by_label("Upload a skill's folder").set_input_files(folder)
            shelf.get_by_role("button", name="Upload skill").click()
            assert notice() == "Added skill 'release-notes' with 2 assets in faq."
            shelf = page.locator("#library-faq")
            shelf.get_by_label("or a .zip of it").set_input_files(archive)
            shelf.get_by_role("button", name="Upload skill").click()
            assert notice() == "Added skill 'on-call' with 1 asset in faq."
            skills = page.locator("#library-faq table").nth(1)
            expect(skills).to_contain_text("templates/notes.md")
            expect(skills).to_contain_text("style.txt")
            expect(skills).to_contain_text("handover.md")
            _check(browser, tab, "libraries")

            page.get_by_role("link", name="Returns").click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("Returns")
            expect(page.locator("#document-text")).to_have_text(document.read_text())
            _check(browser, tab, "document")
            page.get_by_role("link", name="← Questions").click()

        def attach(kind: str, name: str) -> None:
            _nav(tab, "Groups")
            card = page.locator("#group-web")
            card.get_by_label(f"Attach a {kind}").select_option(name)
            card.get_by_role("button", name=f"Attach {kind}").click()
            assert notice().startswith(f"Attached {kind} '{name}' to 'web'")

        def detach(kind: str, name: str) -> None:
            _nav(tab, "Groups")
            card = page.locator("#group-web")
            card.get_by_role("button", name=f"Detach {kind} {name} from web").click()
            assert notice() == f"Detached {kind} '{name}' from 'web'."
            assert tab.dialogs[-1].startswith(f"Detach {kind} {name} from web?")

        def never_policy() -> None:
            _nav(tab, "Libraries")
            shelf = page.locator("#library-faq")
            shelf.get_by_label("Policy of returns", exact=True).select_option("never")
            shelf.get_by_role("button", name="Set the policy of returns").click()
            assert notice() == "'Returns' is now never."
            expect(page.get_by_label("Policy of returns", exact=True)).to_have_value("never")

        def sign_out() -> None:
            page.get_by_role("button", name="Sign out").click()
            expect(page).to_have_url(re.compile(r"/dashboard/login"))
            expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")

        def remove_document() -> None:
            _nav(tab, "Libraries")
            page.get_by_role("link", name="Returns").click()
            page.get_by_role("button", name="Remove document").click()
            assert notice() == "Removed 'Returns' from faq."
            assert tab.dialogs[-1].startswith("Remove the document Returns?")
            expect(page.locator("#library-faq")).to_contain_text("No documents.")

        def remove_skill() -> None:
            page.get_by_role("button", name="Remove the skill on-call").click()
            assert notice() == "Removed skill 'on-call' from faq."

        await browser.run(create_and_rename)
        await browser.run(upload_document_and_skills)
        await _add_connector(server, third_url)
        issued = await create_token(server.store, "beta", "web", name="laptop", actor="t")
        url = endpoint_url(server.base_url, "beta", "web")
        secret = issued.secret

        nothing = await _seen(url, secret)
        assert not nothing.resources and not nothing.prompts
        assert "third_lookup" not in nothing.tools
        await browser.run(attach, "library", "faq")
        await browser.run(attach, "connector", "third")
        await browser.run(_check, browser, tab, "groups")
        seen = await _seen(url, secret)
        assert "agentws://faq/returns" in seen.resources
        assert {"release-notes", "on-call"} <= seen.prompts
        assert "third_lookup" in seen.tools

        # A document set to `never` is kept, and exists for MCP no more.
        await browser.run(never_policy)
        assert "agentws://faq/returns" not in (await _seen(url, secret)).resources

        await browser.run(remove_document)
        await browser.run(remove_skill)
        after = await _seen(url, secret)
        assert "agentws://faq/returns" not in after.resources
        assert after.prompts == {"release-notes"}

        await browser.run(detach, "library", "faq")
        await browser.run(detach, "connector", "third")
        gone = await _seen(url, secret)
        assert not gone.prompts and "third_lookup" not in gone.tools
        await browser.run(sign_out)
        await browser.run(tab.assert_clean, "the journey")


async def test_every_manage_page_at_both_widths(tmp_path: Path) -> None:
    async with running(tmp_path) as server, open_browser("manage-pages") as browser:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        base = server.base_url
        pages = {
            "workspaces": "/dashboard/workspaces",
            "groups": "/dashboard/w/acme/groups",
            "libraries": "/dashboard/w/acme/libraries",
            "document": "/dashboard/w/acme/libraries/handbook/documents/refunds",
        }
        tab = await browser.new_tab(tolerate=JOURNEY_TOLERATES)

        def visit_all() -> None:
            sign_in(tab, base, "alice", PASSWORD)
            tab.assert_clean("signing in")
            for width, height in WIDTHS:
                tab.page.set_viewport_size({"width": width, "height": height})
                for name, path in pages.items():
                    response = tab.page.goto(base + path)
                    assert response is not None and response.status == 200, name
                    _check(browser, tab, name)

        await browser.run(visit_all)


async def test_the_main_actions_on_a_phone(tmp_path: Path) -> None:
    """At 390 by 844: a workspace, a group and a library created, a document uploaded and its
    policy changed from the library page and from its own page, a skill's zip uploaded."""
    async with running(tmp_path) as server, open_browser("manage-phone") as browser:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        base = server.base_url
        tab = await browser.new_tab(WIDTHS[1], tolerate=JOURNEY_TOLERATES)
        page = tab.page
        document = tmp_path / "returns.md"
        document.write_text("# Returns\n\nWithin 30 days.\n")
        archive = _skill_zip(tmp_path)

        def notice() -> str:
            return page.get_by_role("status").inner_text()

        def create(what: str, slug: str) -> None:
            form = page.locator("section", has=page.get_by_role("heading", name=f"New {what}"))
            form.get_by_label("Slug").fill(slug)
            form.get_by_role("button", name=f"Create {what}").click()
            assert notice().startswith(f"Created {what} '{slug}'"), notice()

        def on_a_phone() -> None:
            sign_in(tab, base, "alice", PASSWORD, path="/dashboard/workspaces")
            create("workspace", "gamma")
            create("group", "web")
            _check(browser, tab, "phone-group-created")
            page.goto(f"{base}/dashboard/w/gamma/libraries")
            create("library", "faq")
            shelf = page.locator("#library-faq")
            shelf.get_by_label("Upload a document").set_input_files(document)
            shelf.get_by_label("Title").fill("Returns")
            shelf.get_by_role("button", name="Upload", exact=True).click()
            assert notice() == "Added 'Returns' (on_demand) to faq.", notice()
            shelf = page.locator("#library-faq")
            shelf.get_by_label("Policy of returns", exact=True).select_option("spine")
            shelf.get_by_role("button", name="Set the policy of returns").click()
            assert notice() == "'Returns' is now spine.", notice()
            expect(page.get_by_label("Policy of returns", exact=True)).to_have_value("spine")
            shelf = page.locator("#library-faq")
            shelf.get_by_label("or a .zip of it").set_input_files(archive)
            shelf.get_by_role("button", name="Upload skill").click()
            assert notice() == "Added skill 'on-call' with 1 asset in faq.", notice()
            _check(browser, tab, "phone-library")
            page.get_by_role("link", name="Returns").click()
            page.get_by_label("Policy", exact=True).select_option("never")
            page.get_by_role("button", name="Set policy").click()
            assert notice() == "'Returns' is now never.", notice()
            expect(page.get_by_role("heading", level=1)).to_contain_text("Returns")
            expect(page.get_by_label("Policy", exact=True)).to_have_value("never")
            _check(browser, tab, "phone-document")

        await browser.run(on_a_phone)
