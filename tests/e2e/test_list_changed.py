"""List-changed notifications: an open session hears when its group's lists change.

The capabilities say ``listChanged``; adding a document, a skill, or
detaching the library (which takes the context built-ins with it) reaches
the group's open sessions as ``notifications/{resources,prompts,tools}/list_changed``,
over both transports and both stores (PostgreSQL: through the change feed).
Sessions of another group hear nothing of it.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws import libraries
from agentws.workspaces.admin import endpoint_url
from tests.e2e.mcp_support import ACTOR, REQUEST_S, Running, running, sdk_session
from tests.e2e.notifications_support import Heard, add_handbook_document, change_until_heard
from tests.support import migrated_schema_sync


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lists.db'}"
    else:
        with migrated_schema_sync() as url:
            yield url


@asynccontextmanager
async def sales_session(server: Running, heard: Heard) -> AsyncIterator[ClientSession]:
    """A session of the other group, ``sales``."""
    async with (
        httpx2.AsyncClient(headers=server.headers(server.other_token), timeout=REQUEST_S) as http,
        streamable_http_client(
            endpoint_url(server.base_url, "acme", "sales"), http_client=http
        ) as (read, write),
        ClientSession(read, write, message_handler=heard.handle) as session,
    ):
        with trio.fail_after(REQUEST_S):
            await session.initialize()
        yield session


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_capabilities_say_lists_change(tmp_path: Path, transport: str) -> None:
    async with running(tmp_path) as server, sdk_session(server, transport) as session:
        capabilities = session.server_capabilities
        assert capabilities is not None
        assert capabilities.tools is not None and capabilities.tools.list_changed is True
        assert capabilities.prompts is not None and capabilities.prompts.list_changed is True
        assert capabilities.resources is not None
        assert capabilities.resources.list_changed is True
        assert capabilities.resources.subscribe is True
        assert capabilities.completions is not None


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_sessions_hear_their_group_lists_change(
    tmp_path: Path, transport: str, database_url: str
) -> None:
    heard, other = Heard(), Heard()
    n = itertools.count()
    async with (
        running(tmp_path, database_url=database_url) as server,
        sdk_session(server, transport, message_handler=heard.handle) as session,
        sales_session(server, other) as sales,
    ):
        store = server.store
        with trio.fail_after(REQUEST_S):
            await session.list_resources()
            await sales.list_resources()

        async def add_document() -> None:
            await add_handbook_document(store, f"new-{next(n)}")

        await change_until_heard(
            heard, add_document, lambda: "notifications/resources/list_changed" in heard.methods()
        )
        listed = {str(r.uri) for r in (await session.list_resources()).resources}
        assert "agentws://handbook/new-0" in listed

        async def add_skill() -> None:
            folder = tmp_path / f"skill-{next(n)}"
            folder.mkdir()
            (folder / "SKILL.md").write_text(
                f"---\nname: {folder.name}\ndescription: Another skill\n---\nDo it.\n"
            )
            await libraries.add_skill(store, "acme", "handbook", folder, actor=ACTOR)

        await change_until_heard(
            heard, add_skill, lambda: "notifications/prompts/list_changed" in heard.methods()
        )

        async def detach() -> None:
            await libraries.detach_library(store, "acme", "ops", "handbook", actor=ACTOR)

        await change_until_heard(
            heard, detach, lambda: "notifications/tools/list_changed" in heard.methods()
        )
        with trio.fail_after(REQUEST_S):
            assert (await session.list_tools()).tools == []
            # Sales never had the library: its lists did not change.
            await sales.send_ping()
        assert other.methods() == []
