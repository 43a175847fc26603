"""A group's tool names are never ambiguous.

Tools are named ``<connector>_<action>``, so connector ``third`` with a tool
``party_search`` and connector ``third_party`` with a tool ``search`` both
make ``third_party_search``. Attaching the second to a group that has the
first is refused, naming both; a tool a remote adds later under a taken name
is left out of listings and reported (``connector refresh``, ``connector
show``, ``doctor``); ``tool label`` and a workspace-wide ``tool permission``
refuse a name that means two tools. Real third-party MCP servers on loopback,
agentws serving, and the CLI in another process.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import trio

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.connectors.admin import attach_connector
from agentws.connectors.remote_mcp import SyncReport, fetch_tools, remote_deadline
from agentws.core.errors import ValidationError
from agentws.domain.models import (
    CachedTool,
    Capability,
    Connector,
    ConnectorKind,
    GroupConnector,
    Permission,
)
from agentws.tools.admin import set_label, set_permission
from agentws.tools.cache_sync import sync_tool_cache
from tests.e2e.mcp_support import Running, running, sdk_session
from tests.e2e.remote_support import (
    LOOPBACK,
    SDK_CLIENT_WARNINGS,
    TIMEOUT_S,
    ThirdParty,
    add_remote,
    third_party_server,
    tool,
)
from tests.support import run_agentws

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ENV = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
CLASH = "third_party_search"


@asynccontextmanager
async def two_remotes(
    tmp_path: Path, first: ThirdParty, second: ThirdParty
) -> AsyncIterator[tuple[Running, Connector, Connector]]:
    """agentws serving, with remote connectors ``third`` and ``third_party``, tools cached."""
    async with (
        running(tmp_path, with_library=False, **ENV) as server,
        third_party_server(first) as first_url,
        third_party_server(second) as second_url,
    ):
        third = await add_remote(server.store, first_url, name="third")
        third_party = await add_remote(server.store, second_url, name="third_party")
        for connector in (third, third_party):
            await refresh(server, connector)
        yield server, third, third_party


async def refresh(server: Running, connector: Connector) -> SyncReport:
    with trio.fail_after(TIMEOUT_S):
        with remote_deadline(connector, TIMEOUT_S):
            tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
    return await sync_tool_cache(server.store, connector, tools, actor="t")


async def listed(server: Running) -> list[tuple[str, str]]:
    """``tools/list`` of acme/ops over MCP: (name, description) pairs."""
    async with sdk_session(server, "streamable") as session:
        with trio.fail_after(TIMEOUT_S):
            result = await session.list_tools()
    # Less the capability tag in front, which is for clients without annotations.
    return [(t.name, (t.description or "").rpartition("] ")[2]) for t in result.tools]


async def test_attaching_a_connector_whose_tool_name_is_taken_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    first = ThirdParty([tool("party_search", "Search the party")])
    second = ThirdParty([tool("search", "Search the third party"), tool("send", "Send")])
    async with two_remotes(tmp_path, first, second) as (server, _, _):
        await attach_connector(server.store, "acme", "ops", "third", actor="t")
        with pytest.raises(ValidationError) as refused:
            await attach_connector(server.store, "acme", "ops", "third_party", actor="t")
        names = [name for name, _ in await listed(server)]
    message = refused.value.message
    assert CLASH in message
    assert "'party_search' of connector 'third'" in message
    assert "'search' of connector 'third_party'" in message
    # Nothing was attached: one tool of that name, none of third_party's.
    assert names.count(CLASH) == 1
    assert "third_party_send" not in names


async def test_a_tool_added_later_under_a_taken_name_is_left_out_and_reported(
    tmp_path: Path,
) -> None:
    first = ThirdParty([tool("other", "Other things")])
    second = ThirdParty([tool("search", "Search the third party")])
    async with two_remotes(tmp_path, first, second) as (server, third, _):
        await attach_connector(server.store, "acme", "ops", "third_party", actor="t")
        await attach_connector(server.store, "acme", "ops", "third", actor="t")
        # The remote behind `third` adds a tool whose name is taken in ops.
        first.tools.append(tool("party_search", "Search the party (new)"))
        report = await refresh(server, third)
        tools = await listed(server)
        # Refreshing again changes nothing: the tool that was there keeps its name.
        await refresh(server, third)
        again = await listed(server)
        database = server.runtime.settings.database_url
        code, shown, err = await run_agentws(
            tmp_path, database, "connector", "show", "acme", "third", "--json"
        )
        assert code == 0, err
        _, doctor, _ = await run_agentws(tmp_path, database, "doctor", "--json")
        # It is listed once the clash is gone.
        second.tools.clear()
        await refresh(server, await _connector(server, "third_party"))
        await refresh(server, third)
        after = await listed(server)

    assert report.added == ("party_search",)
    (why,) = report.left_out
    assert why.startswith(f"{CLASH}: left out")
    assert "'search' of connector 'third_party'" in why and "group ops" in why
    assert [d for n, d in tools if n == CLASH] == ["Search the third party"]
    assert again == tools
    (marked,) = [t for t in json.loads(shown)["tools"] if t["name"] == CLASH]
    assert marked["left_out"] == why
    checks = {c["check"]: c for c in json.loads(doctor)["checks"]}
    assert checks["tool names"]["status"] == "warn"
    assert CLASH in checks["tool names"]["detail"]
    assert [d for n, d in after if n == CLASH] == ["Search the party (new)"]


async def _connector(server: Running, name: str) -> Connector:
    (found,) = await server.store.select(Connector, name=name)
    return found


async def test_label_and_workspace_permission_refuse_a_name_that_means_two_tools(
    tmp_path: Path,
) -> None:
    # Different groups: no group is ambiguous, but labels and workspace-wide
    # permissions go by name across the workspace.
    first = ThirdParty([tool("party_search", "Search the party")])
    second = ThirdParty([tool("search", "Search the third party")])
    async with two_remotes(tmp_path, first, second) as (server, _, _):
        await attach_connector(server.store, "acme", "ops", "third", actor="t")
        await attach_connector(server.store, "acme", "sales", "third_party", actor="t")
        database = server.runtime.settings.database_url
        code, _, err = await run_agentws(tmp_path, database, "tool", "label", "acme", CLASH, "read")
        with pytest.raises(ValidationError) as permission:
            await set_permission(
                server.store, "acme", CLASH, Permission.ALLOW, group_slug=None, actor="t"
            )
        # The admin API refuses the same way.
        await create_admin(server.store, "alice", actor="t")
        _, secret = await create_admin_token(server.store, "alice", "tests", actor="t")
        async with httpx2.AsyncClient(
            base_url=f"{server.base_url}/api/v1",
            headers={"Authorization": f"Bearer {secret}"},
            timeout=TIMEOUT_S,
        ) as api:
            api_label = await api.put(
                f"/workspaces/acme/tools/{CLASH}/label", json={"label": "read"}
            )
            api_permission = await api.put(
                f"/workspaces/acme/tools/{CLASH}/permission", json={"permission": "allow"}
            )
        # Named by connector, the label goes to that one tool; in a group, the name is clear.
        await set_label(server.store, "acme", "third_party/search", Capability.READ, actor="t")
        await set_permission(
            server.store, "acme", CLASH, Permission.ALLOW, group_slug="sales", actor="t"
        )
        labels = {t.name: t.label for t in await server.store.select(CachedTool)}
    assert code != 0
    assert f"{CLASH!r} is ambiguous" in err
    assert "'party_search' of connector 'third'" in err
    assert "'search' of connector 'third_party'" in err
    assert "third/party_search" in err and "third_party/search" in err
    assert f"{CLASH!r} is ambiguous" in permission.value.message
    assert "--group" in permission.value.message
    assert labels == {"party_search": None, "search": Capability.READ}
    for answer in (api_label, api_permission):
        assert answer.status_code in (400, 422), answer.text
        assert f"{CLASH!r} is ambiguous" in answer.json()["error"]["message"]


async def test_a_name_that_already_means_two_tools_is_listed_for_neither(tmp_path: Path) -> None:
    # Two tools of one name cached and attached before names were checked.
    async with running(tmp_path, with_library=False, **ENV) as server:
        store = server.store
        ops = await store.group_by_slug("acme", "ops")
        for name, action in (("third", "party_search"), ("third_party", "search")):
            connector = await store.insert(
                Connector(
                    workspace_id=ops.workspace_id,
                    name=name,
                    kind=ConnectorKind.REMOTE_MCP,
                    # Nothing listens there: listing may try the connector in the
                    # background, and a test may not look a name up in DNS.
                    url="http://127.0.0.1:9/mcp",
                )
            )
            await store.insert(
                CachedTool(connector_id=connector.id, name=action, definition_hash=name)
            )
            await store.insert(GroupConnector(group_id=ops.id, connector_id=connector.id))
        names = [name for name, _ in await listed(server)]
        _, doctor, _ = await run_agentws(
            tmp_path, server.runtime.settings.database_url, "doctor", "--json"
        )
    assert CLASH not in names
    checks = {c["check"]: c for c in json.loads(doctor)["checks"]}
    assert checks["tool names"]["status"] == "warn"
    assert f"group ops: {CLASH} means 2 tools" in checks["tool names"]["detail"]
