"""The tool catalog at the endpoint: listings reused between changes, never stale after one.

agentws keeps each group's built tool list (and the SDK's wire form of it)
in memory while the store's catalog version stands still. These tests make
the changes an operator makes, from another process (the CLI), between
listings of sessions that stay open, on both transports and both stores:
every listing must show the change at once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio
from mcp.client.session import ClientSession

from agentws.domain.models import CachedTool, Capability
from tests.e2e.mcp_support import REQUEST_S, running, sdk_session
from tests.e2e.notifications_support import Heard
from tests.support import migrated_schema_sync, run_agentws_program

# With connector tools comes get_approval, for the outcome of queued calls.
GITHUB_TOOLS = {
    "gh_search_issues",
    "gh_list_repos",
    "gh_create_issue",
    "gh_delete_branch",
    "get_approval",
}
BUILTINS = {"search_context", "read_context_document"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'catalog.db'}"
    else:
        with migrated_schema_sync() as url:
            yield url


async def _cli(tmp_path: Path, database_url: str, *args: str) -> None:
    # The GitHub Enterprise host below, allow-listed: saved without asking DNS (no test may).
    # A program of its own, as an operator's: on SQLite the sessions are told of
    # changes by a poll (every 0.5 s) that compares with what it last saw, and
    # changes made and undone within one poll are not told; commands run in this
    # process follow each other that fast.
    allow = {"AGENTWS_CONNECTOR_ALLOWLIST": "github.example.com"}
    code, _, err = await run_agentws_program(tmp_path, database_url, *args, **allow)
    assert code == 0, err


async def _listed(*sessions: ClientSession) -> dict[str, str]:
    """Each tool's description, as every session lists it (they must agree)."""
    seen = []
    for session in sessions:
        for _ in range(2):  # the second listing is the reused one
            with trio.fail_after(REQUEST_S):
                tools = (await session.list_tools()).tools
            seen.append({tool.name: tool.description or "" for tool in tools})
    assert all(listing == seen[0] for listing in seen), seen
    return seen[0]


_TOOLS_CHANGED = "notifications/tools/list_changed"


def _told_since(heard: Heard, before: int) -> bool:
    return heard.methods().count(_TOOLS_CHANGED) > before


async def test_listings_show_every_change_at_once(tmp_path: Path, database_url: str) -> None:
    heard_legacy, heard_current = Heard(), Heard()
    async with (
        running(tmp_path, with_library=False, database_url=database_url) as server,
        sdk_session(server, "sse", message_handler=heard_legacy.handle) as legacy,
        sdk_session(server, "streamable", message_handler=heard_current.handle) as current,
    ):
        assert await _listed(legacy, current) == {}
        url = "https://github.example.com/api/v3"
        await _cli(
            tmp_path,
            database_url,
            "connector",
            "add",
            "acme",
            "gh",
            "--kind",
            "github",
            "--url",
            url,
        )
        assert await _listed(legacy, current) == {}  # added, not attached
        await _cli(tmp_path, database_url, "connector", "attach", "acme", "ops", "gh")
        listed = await _listed(legacy, current)
        assert set(listed) == GITHUB_TOOLS
        assert listed["gh_create_issue"].startswith("[capability: write]")

        await _cli(tmp_path, database_url, "library", "create", "acme", "handbook")
        await _cli(tmp_path, database_url, "library", "attach", "acme", "ops", "handbook")
        assert set(await _listed(legacy, current)) == GITHUB_TOOLS | BUILTINS

        # An admin's label (in this process) shows in the very next listing.
        store = server.store
        cached = await store.find(CachedTool, name="create_issue")
        assert cached is not None
        await store.update(attrs.evolve(cached, label=Capability.READ))
        assert (await _listed(legacy, current))["gh_create_issue"].startswith("[capability: read]")

        await _cli(tmp_path, database_url, "connector", "detach", "acme", "ops", "gh")
        assert set(await _listed(legacy, current)) == BUILTINS
        await _cli(tmp_path, database_url, "connector", "attach", "acme", "ops", "gh")
        await _cli(tmp_path, database_url, "connector", "remove", "acme", "gh")
        assert set(await _listed(legacy, current)) == BUILTINS
        told = [heard.methods().count(_TOOLS_CHANGED) for heard in (heard_legacy, heard_current)]
        await _cli(tmp_path, database_url, "library", "detach", "acme", "ops", "handbook")
        assert await _listed(legacy, current) == {}
        # The listing shows the change before the sessions are told of it; the
        # SDK's clients fail on a notification that arrives as they close.
        with trio.fail_after(REQUEST_S):
            for heard, before in zip((heard_legacy, heard_current), told, strict=True):
                await heard.wait_for(functools.partial(_told_since, heard, before))
